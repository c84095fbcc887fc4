"""The MCP registration snippets in docs/mcp.md work as written, where a client's config
can be checked offline: each JSON or TOML snippet parses, and the command it names (with
its args and env) starts and answers ``initialize`` and ``tools/list``.

The snippet's ``readmany`` (a bare name or a path of the reader's own) is this
checkout's; ``/path/to/project`` is a temporary tree.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.editor_support import REPO, readmany_cmd
from tests.helpers import write_tree

DOC = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")


def _fenced(lang: str) -> list[str]:
    return re.findall(rf"^ *```{lang}\n(.*?)^ *```", DOC, re.M | re.S)


def _servers() -> list[tuple[str, dict[str, Any]]]:
    """(where, {command, args, env}) for every registration snippet of the page."""
    found: list[tuple[str, dict[str, Any]]] = []
    for block in _fenced("json"):
        if '"mcpServers"' not in block:
            continue  # an example answer, not a client config
        config = json.loads(block)
        for name, server in config.get("mcpServers", {}).items():
            found.append((f"mcpServers.{name}", server))
    # VS Code's .vscode/mcp.json, given inline: `{"servers": {...}}`.
    for inline in re.findall(r"`(\{\"servers\":.*?\})`", DOC, re.S):
        for name, server in json.loads(inline.replace("\n  ", " "))["servers"].items():
            assert server.get("type") == "stdio"
            found.append((f".vscode/mcp.json servers.{name}", server))
    for block in _fenced("toml"):
        for name, server in tomllib.loads(block).get("mcp_servers", {}).items():
            found.append((f"codex mcp_servers.{name}", server))
    # Claude Code: `claude mcp add NAME -- COMMAND ARGS…`.
    for line in re.findall(r"`claude mcp add \S+ -- ([^`]+)`", DOC):
        command, *args = line.split()
        found.append(("claude mcp add", {"command": command, "args": args}))
    return found


SERVERS = _servers()


def test_the_page_has_the_snippets() -> None:
    kinds = {re.split(r"[ .]", where.lstrip("."))[0] for where, _ in SERVERS}
    assert {"mcpServers", "codex", "claude", "vscode/mcp"} <= kinds, SERVERS
    assert all(s["command"].endswith("readmany") for _, s in SERVERS), SERVERS


def _rpc(proc: subprocess.Popen[str], message: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed stdout"
        reply = json.loads(line)
        if reply.get("id") == message.get("id"):
            return dict(reply)


@pytest.mark.parametrize(("where", "server"), SERVERS, ids=[w for w, _ in SERVERS])
def test_the_snippet_starts_a_server_that_answers(
    where: str, server: dict[str, Any], env: dict[str, str], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    write_tree(project, {"a.txt": "alpha\n"})
    args = [str(project) if a == "/path/to/project" else a for a in server.get("args", [])]
    proc = subprocess.Popen(
        [*readmany_cmd(), *args],
        cwd=project,
        env={**env, **server.get("env", {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        init = _rpc(
            proc,
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "snippet-test", "version": "0"},
                },
            },
        )
        assert init["result"]["serverInfo"]["name"], init
        assert "tools" in init["result"]["capabilities"], init
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write("\n")
        tools = _rpc(proc, {"id": 2, "method": "tools/list", "params": {}})
        assert "read_many_files" in {t["name"] for t in tools["result"]["tools"]}, where
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
