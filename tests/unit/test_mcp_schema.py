"""The MCP tools as ``tools/list`` shows them, pinned.

``golden/mcp_tools_list.json`` was generated once from the hand-written schemas (before
the MCP adapter was split into ``readmany_daemon/mcp/``); it holds every tool's name,
title, description, input and output schema and annotations, plus the server's
instructions. Schemas generated from the wire Structs must reproduce it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from readmany_daemon.mcp.schema import INSTRUCTIONS, tool_definitions

GOLDEN = Path(__file__).parent / "golden" / "mcp_tools_list.json"


def _listed() -> dict[str, Any]:
    return {"instructions": INSTRUCTIONS, "tools": tool_definitions()}


def test_tools_list_matches_the_golden_file() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    listed = _listed()
    assert [t["name"] for t in listed["tools"]] == [t["name"] for t in golden["tools"]]
    for got, want in zip(listed["tools"], golden["tools"], strict=True):
        assert got == want, got["name"]
    assert listed == golden


def test_tools_list_keeps_the_golden_key_order() -> None:
    """Byte for byte, key order included (what a client shows the model)."""
    text = json.dumps(_listed(), indent=2, ensure_ascii=False) + "\n"
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_the_sdk_passes_the_tools_through_unchanged() -> None:
    """``mcp.types.Tool`` neither drops nor adds a field of the definitions."""
    import mcp.types as types

    for tool in tool_definitions():
        dumped = types.Tool.model_validate(tool).model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
        assert dumped == tool
