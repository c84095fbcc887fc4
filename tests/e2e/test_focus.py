"""``focus`` end to end with the real ranking (PROTOCOL §3 ``focus``, §4 "Focus"): the
file whose content matches the focus ranks first through the daemon (``readMany/read``
over its socket), through the MCP read tool (the official SDK's client) and in process
(``readmany read --no-daemon --focus``); a focused cursor walk delivers every matched
file once and needs the same focus beside each cursor; bad ``focus`` and a cursor
without it are -32602 naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.client import RpcError
from tests.e2e.daemon_helpers import Daemon, cli, fresh_daemon, wait_for
from tests.e2e.test_mcp import _conforms, _dump, call, mcp_session, read, text
from tests.helpers import git, write_tree

daemon = fresh_daemon  # the fixture (tests/e2e/daemon_helpers.py)

FOCUS = "invoice total with the discount applied"

#: Files whose paths say nothing of the focus: only src/m/q.py's content matches it.
TREE = {
    "src/a/one.py": "def spin(x):\n    return x * 2\n" * 8,
    "src/a/two.py": "class Wheel:\n    radius = 3\n" * 8,
    "src/m/q.py": (
        "def total(lines, discount):\n"
        "    # the invoice total, with the discount applied\n"
        "    invoice = sum(lines)\n"
        "    return invoice - invoice * discount\n"
    ),
    "src/z/three.py": "def colour():\n    return 'red'\n" * 8,
    "src/z/four.py": "import os\nPATH = os.sep\n" * 8,
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(root, TREE)
    git(root, "init", "-q")
    return root


def _ranked_first(result: dict[str, Any]) -> str | None:
    """The path ranked 1 once the full-text index is complete, else None (ask again)."""
    ranking = result["summary"]["ranking"]
    if ranking["pendingFiles"] or "content" not in ranking["signals"]:
        return None
    first = [f for f in result["files"] if f.get("rank") == 1]
    return first[0]["path"] if first else None


def test_through_the_daemon_the_matching_file_ranks_first(daemon: Daemon, tree: Path) -> None:
    daemon.start()
    with daemon.session(tree) as client:
        request = {"paths": ["src/**/*.py"], "focus": FOCUS, "order": "rank", "maxTotalFiles": 2}

        def ask() -> dict[str, Any] | None:
            result: dict[str, Any] = client.request("readMany/read", request)
            return result if _ranked_first(result) else None

        result = wait_for(ask, timeout=30)
        assert _ranked_first(result) == "src/m/q.py"
        files = result["files"]
        assert files[0]["path"] == "src/m/q.py" and files[0]["status"] == "ok"
        assert 0 < len(files[0]["why"]) <= 80
        assert sorted(f["rank"] for f in files) == [1, 2, 3, 4, 5]
        assert result["summary"]["ranking"]["indexedFiles"] == 5
        assert result["llmContent"].startswith("--- src/m/q.py ---")
        # A cursor goes beside the same focus; without it, -32602 naming $.cursor.
        cursor = result["nextCursor"]
        with pytest.raises(RpcError) as err:
            client.request("readMany/read", {"cursor": cursor})
        assert err.value.code == -32602 and "$.cursor" in str(err.value)
        seen = [f["path"] for f in files if f["status"] == "ok"]
        while cursor is not None:
            page = client.request("readMany/read", {"cursor": cursor, "focus": FOCUS})
            seen += [f["path"] for f in page["files"] if f["status"] == "ok"]
            cursor = page.get("nextCursor")
        assert sorted(seen) == sorted(TREE)
        # Bad focus: -32602 naming it; order rank without focus: naming $.order.
        for bad, field in (({"focus": ""}, "$.focus"), ({"order": "rank"}, "$.order")):
            with pytest.raises(RpcError) as err:
                client.request("readMany/read", {"paths": ["src/**/*.py"], **bad})
            assert err.value.code == -32602 and field in str(err.value)


def test_in_process_the_cli_ranks_with_focus(daemon: Daemon, tree: Path) -> None:
    def ask() -> dict[str, Any] | None:
        proc = cli(daemon.env, "read", "--no-daemon", "--root", str(tree), "--json",
                   "--focus", FOCUS, "--max-total-files", "1", "src/**/*.py")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        result: dict[str, Any] = json.loads(proc.stdout)
        return result if _ranked_first(result) else None

    result = wait_for(ask, timeout=60)
    assert [f["path"] for f in result["files"] if f["status"] == "ok"] == ["src/m/q.py"]
    assert result["packing"]["strategy"] == "rank"
    omitted = next(x for x in result["llmContent"].splitlines() if x.startswith("[Omitted"))
    assert "best-ranked first" in omitted


async def test_the_mcp_read_tool_ranks_with_focus(env: dict[str, str], tree: Path) -> None:
    async with mcp_session(env, "--root", str(tree)) as session:
        tools = {t["name"]: t for t in (_dump(t) for t in (await session.list_tools()).tools)}
        tool = tools["read_many_files"]
        assert {"focus", "order"} <= set(tool["inputSchema"]["properties"])
        item = tool["outputSchema"]["properties"]["files"]["items"]["properties"]
        assert {"rank", "why"} <= set(item)
        args = {"paths": ["src/**/*.py"], "focus": FOCUS, "order": "rank", "maxTotalFiles": 1}
        for _ in range(100):  # in process: each call adds to the index for at most 100 ms
            result = await read(session, **args)
            if _ranked_first(result["structuredContent"]):
                break
        structured = result["structuredContent"]
        _conforms(result, tool)  # rank, why and summary.ranking are in the outputSchema
        assert _ranked_first(structured) == "src/m/q.py"
        assert structured["files"][0]["why"]
        assert text(result).startswith("--- src/m/q.py ---")
        assert structured["packing"]["omittedPaths"] and structured["nextCursor"]
        alone = await call(session, "read_many_files", {"cursor": structured["nextCursor"]})
        assert alone["isError"] and "cursor" in text(alone)
        beside = await read(session, cursor=structured["nextCursor"], focus=FOCUS)
        assert beside["structuredContent"]["files"]
        too_long = await call(session, "read_many_files", {"paths": ["src"], "focus": "x" * 2001})
        assert too_long["isError"] and "focus" in text(too_long)
