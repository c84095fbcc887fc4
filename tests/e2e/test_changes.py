"""``changes`` through the real surfaces (issue 26 items 3-4): the MCP read tool with the
MCP SDK client and a real server process (advertised, answered, ``null`` not given, a
base git does not know refused), ``readMany/read`` over pytest-lsp, and ``readmany read
--changes REF`` through the daemon."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.test_mcp import _dump, call, mcp_session, read, text
from tests.e2e.test_server_stdio import lsp_session
from tests.helpers import committed_tree, write_tree

APP = "".join(f"def fn{i}(x):\n    return x + {i}\n\n\n" for i in range(20))


def _repo(root: Path) -> str:
    base = committed_tree(root, {"src/app.py": APP, "gone.txt": "x\n"})
    write_tree(root, {"src/app.py": APP.replace("x + 5\n", "x * 5\n"), "new.md": "# New\n"})
    (root / "gone.txt").unlink()
    return base


async def test_changes_through_the_read_tool(env: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "ws"
    base = _repo(root)
    async with mcp_session(env, "--root", str(root)) as session:
        listed = _dump((await session.list_tools()).tools[0])
        assert listed["inputSchema"]["properties"]["changes"]["properties"] == {
            "base": {"type": "string"}
        }
        assert "changes" in listed["outputSchema"]["properties"]
        got = await read(session, changes={"base": None}, paths=None, lineNumbers=True)
        structured = got["structuredContent"]
        assert structured["changes"] == {"base": base, "deleted": ["gone.txt"], "renamed": []}
        rows = [(f["path"], f["status"], f.get("spans")) for f in structured["files"]]
        assert rows == [("new.md", "ok", None), ("src/app.py", "partial", [[21, 22]])]
        assert "    22\t    return x * 5\n" in text(got)
        assert "[Outline of the rest (not shown):]" in text(got)
        plain = await read(session, paths=["src/app.py"], changes=None)
        assert "changes" not in plain["structuredContent"]
        bad = await call(session, "read_many_files", {"changes": {"base": "no-such"}})
        assert bad["isError"] is True and "$.changes.base" in text(bad)


def test_the_changes_flag_through_the_daemon(
    tmp_path: Path, readmany: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    root = tmp_path / "ws"
    base = _repo(root)
    try:
        out = readmany("read", "--root", str(root), "--changes", "HEAD", "--json", "src").stdout
    finally:
        readmany("stop", check=False)
    got: dict[str, Any] = json.loads(out)
    assert got["changes"]["base"] == base
    assert [(f["path"], f["spans"]) for f in got["files"]] == [("src/app.py", [[21, 22]])]
    assert "    return x * 5\n" in got["llmContent"]


async def test_changes_through_lsp_read_many(env: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "ws"
    base = _repo(root)
    async with lsp_session(env, root) as client:
        got = await client.call("readMany/read", {"changes": {"base": "main"}, "paths": None})
        assert got["changes"] == {"base": base, "deleted": ["gone.txt"], "renamed": []}
        assert [(f["path"], f.get("spans")) for f in got["files"]] == [
            ("new.md", None),
            ("src/app.py", [[21, 22]]),
        ]
        with pytest.raises(JsonRpcException) as exc:
            await client.call("readMany/read", {"changes": {"base": "v9"}})
        assert "$.changes.base" in str(exc.value)
