"""``symbol`` and ``enclosing`` through the MCP read tool, a real client and a real
server process (issue 26, item 4): the fields are advertised, work, and ``null`` is
"not given"."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e.test_mcp import _dump, call, mcp_session, read, text
from tests.helpers import write_tree

APP = "import os\n\n\nclass Config:\n    def load(self):\n        return 1\n"


async def test_symbol_and_enclosing_through_the_read_tool(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"src/app.py": APP})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    async with mcp_session(env, "--root", str(root)) as session:
        listed = await session.list_tools()
        spec = _dump(listed.tools[0])["inputSchema"]["properties"]["files"]["items"]["properties"]
        assert spec["symbol"]["type"] == "string" and spec["enclosing"]["type"] == "integer"
        got = await read(
            session,
            files=[
                {"path": "src/app.py", "symbol": "Config.load", "enclosing": None},
                {"path": "src/app.py", "enclosing": 1, "symbol": None},
            ],
        )
        files = got["structuredContent"]["files"]
        assert [(f["lineStart"], f["lineEnd"], f.get("symbol")) for f in files] == [
            (5, 6, "Config.load"),
            (1, 1, None),
        ]
        assert "[Config.load: lines 5-6 of 6.]" in text(got)
        bad = await call(
            session,
            "read_many_files",
            {"files": [{"path": "src/app.py", "symbol": "x", "offset": 2}]},
        )
        assert bad["isError"] is True and "$.files[0].offset" in text(bad)
