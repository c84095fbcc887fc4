"""Secrets redacted, not dropped (issue 14 item 4) on every surface: the real CLI, the
shared daemon (LSP over its socket, and the CLI through it) and the MCP server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.daemon_helpers import Daemon, cli, fresh_daemon
from tests.e2e.test_mcp import mcp_session, read, text
from tests.helpers import seeded_secrets, write_tree

daemon = fresh_daemon
FORMATS = ("separator", "heredoc", "xml", "json")
ALL = ["--max-total-chars", "1000000", "--max-total-files", "100", "."]


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, list[str]]:
    files, secrets = seeded_secrets(seed=7)
    root = tmp_path / "ws"
    write_tree(root, files)
    return root, secrets


def _leaks(answer: str, secrets: list[str]) -> list[str]:
    return [s for s in secrets if s in answer]


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_in_process(corpus: Any, readmany: Any, fmt: str) -> None:
    root, secrets = corpus
    run: Callable[..., Any] = readmany
    plain = run("read", "--no-daemon", "--root", str(root), "--format", fmt, *ALL).stdout
    whole = run("read", "--no-daemon", "--json", "--root", str(root), "--format", fmt, *ALL)
    assert _leaks(plain, secrets) == [] and _leaks(whole.stdout, secrets) == []
    assert "«redacted:" in plain and "Secrets redacted: " in plain
    # the password of a URL goes, its user and host stay; XML keeps its tags
    assert "postgres://admin:«redacted:password:" in plain and "@db.example.com:5432" in plain
    assert "<password>«redacted:password:" in plain
    assert any(f.get("redactions") for f in json.loads(whole.stdout)["files"])
    shown = run(
        "read", "--no-daemon", "--root", str(root), "--format", fmt, "--no-redact-secrets", *ALL
    ).stdout
    assert _leaks(shown, secrets) == secrets


def test_daemon_every_format_and_the_cli_through_it(corpus: Any, daemon: Daemon) -> None:
    root, secrets = corpus
    daemon.start()
    with daemon.session(root) as client:
        for fmt in FORMATS:
            params = {"paths": ["."], "format": fmt, "maxTotalChars": 10**6, "maxTotalFiles": 100}
            r = client.request("readMany/read", params)
            assert _leaks(json.dumps(r, ensure_ascii=False), secrets) == []
            off = client.request("readMany/read", {**params, "redactSecrets": False})
            assert _leaks(off["llmContent"], secrets) == secrets
    via = cli(daemon.env, "read", "--root", str(root), *ALL)
    assert via.returncode == 0, via.stderr
    assert _leaks(via.stdout, secrets) == [] and "Secrets redacted: " in via.stdout
    env_off = {**daemon.env, "READMANY_REDACT_SECRETS": "false"}
    shown = cli(env_off, "read", "--root", str(root), *ALL)
    assert _leaks(shown.stdout, secrets) == secrets


def test_mcp_tool(corpus: Any, env: dict[str, str]) -> None:
    root, secrets = corpus

    async def main() -> None:
        async with mcp_session(env, "--root", str(root)) as session:
            for fmt in FORMATS:
                r = await read(
                    session, paths=["."], format=fmt, maxTotalChars=10**6, maxTotalFiles=100
                )
                assert _leaks(json.dumps(r, ensure_ascii=False), secrets) == []
                assert "Secrets redacted: " in text(r)
            off = await read(session, paths=["."], maxTotalChars=10**6, redactSecrets=False)
            assert _leaks(text(off), secrets) == secrets

    anyio.run(main)


def test_ordinary_code_is_shown_as_it_is_and_the_misses_are_not(
    tmp_path: Path, readmany: Any
) -> None:
    """Issue 23 item 6 through the real CLI: the lines real packages hold that are
    ordinary code come back verbatim, with no redaction notice; Django's startproject key,
    a URL password without a user and an Authorization header do not."""
    from tests.unit.engine.test_redact_rules import ORDINARY, SECRETS

    root = tmp_path / "ws"
    write_tree(root, {"lib/code.py": "\n".join(ORDINARY) + "\n"})
    run: Callable[..., Any] = readmany
    out = run("read", "--no-daemon", "--json", "--root", str(root), "lib/code.py").stdout
    answer = json.loads(out)
    assert answer["files"][0].get("redactions") is None
    assert "Secrets redacted" not in answer["llmContent"]
    assert all(line in answer["llmContent"] for line in ORDINARY)
    write_tree(root, {"app/settings.py": "\n".join(s.format(v=v) for s, v, _ in SECRETS) + "\n"})
    shown = run("read", "--no-daemon", "--root", str(root), "app/settings.py").stdout
    assert [v for _, v, _ in SECRETS if v in shown] == []
    assert len(re.findall(r"«redacted:[a-z-]+:[0-9a-f]{8}»", shown)) == len(SECRETS)
