"""``null`` is "not given" (PROTOCOL §2, issue 27) on every surface: the MCP SDK's
client (all three tools), pytest-lsp over ``readmany serve --stdio`` (the readMany
methods), and ``readmany read --params``. Several MCP clients send ``null`` for every
optional argument; a ``null`` required member is still an error naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.test_mcp import call, mcp_session, read, text
from tests.e2e.test_server_stdio import lsp_session
from tests.helpers import write_tree

#: Every optional argument of the read tool as a client that fills them all sends it.
NULLS: dict[str, Any] = {
    "files": None,
    "include": None,
    "exclude": None,
    "recursive": None,
    "file_filtering_options": {"respect_git_ignore": None, "respect_gemini_ignore": None},
    "maxTotalTokens": None,
    "per_file_max_lines": None,
    "format": None,
    "root": None,
    "cursor": None,
    "known": None,
    "redactSecrets": None,
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "alpha\n", "src/b.py": "print('b')\n"})
    return root


async def test_mcp_tools_take_null_as_absent(env: dict[str, str], ws: Path) -> None:
    async with mcp_session(env, "--root", str(ws)) as session:
        r = await read(session, paths=["a.txt"], files=None)
        assert "--- a.txt ---\nalpha\n" in text(r)
        r = await read(
            session, paths=["a.txt"], **NULLS | {"files": [{"path": "src/b.py", "offset": None}]}
        )
        assert [f["path"] for f in r["structuredContent"]["files"]] == ["a.txt", "src/b.py"]
        listed = await call(
            session,
            "list_files",
            {"patterns": None, "root": None, "limit": None, "fileFilteringOptions": None},
        )
        assert not listed["isError"] and listed["structuredContent"]["total"] == 2
        changed = await call(session, "changed_since", {"clock": None, "root": None, "limit": None})
        assert not changed["isError"] and changed["structuredContent"]["isFreshInstance"]
        bad = await call(session, "read_many_files", {"files": [{"path": None, "limit": None}]})
        assert bad["isError"] and "$.files[0]" in text(bad) and "`path`" in text(bad)


async def test_lsp_methods_take_null_as_absent(env: dict[str, str], ws: Path) -> None:
    async with lsp_session(env, ws) as client:
        answer = await client.call("readMany/read", {"paths": ["a.txt"], **NULLS})
        assert [f["path"] for f in answer["files"]] == ["a.txt"]
        listed = await client.call(
            "readMany/files", {"patterns": None, "fileFilteringOptions": {"respectGitIgnore": None}}
        )
        assert [f["path"] for f in listed["files"]] == ["a.txt", "src/b.py"]
        await client.call("readMany/rescan", {"root": None})
        await client.call("readMany/status", {})
        with pytest.raises(JsonRpcException) as exc:
            await client.call("readMany/read", {"paths": ["a.txt"], "known": [{"path": None}]})
        assert "$.known[0]" in str(exc.value)


def test_cli_params_take_null_as_absent(readmany: Any, ws: Path) -> None:
    params = json.dumps({"paths": ["a.txt"], **NULLS})
    out = readmany("read", "--no-daemon", "--json", "--root", str(ws), "--params", params)
    assert [f["path"] for f in json.loads(out.stdout)["files"]] == ["a.txt"]
    bad = json.dumps({"files": [{"path": None}]})
    proc = readmany("read", "--no-daemon", "--root", str(ws), "--params", bad, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "$.files[0]" in proc.stderr and "`path`" in proc.stderr
