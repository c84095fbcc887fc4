"""The ``changed_since`` tool (``mcp/tools.py``) decodes its arguments with the wire's
``readMany/changedSince`` decoder (``wire/decode.py``): a bad one is refused before any
backend is asked, with the engine's -32602 message naming the member (an ``isError``
result through ``call_tool``); the tool's own ``clock`` is optional (none: a baseline)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.errors import InvalidParams
from readmany_daemon.mcp.tools import ReadManyMcp


async def no_roots() -> Any:
    return None


@pytest.fixture()
def tools(tmp_path: Path) -> Iterator[ReadManyMcp]:
    (tmp_path / "a.py").write_text("a\n")
    app = ReadManyMcp(root=str(tmp_path), no_daemon=True)
    yield app
    app.local.clear()
    app.local.service.close()


BAD = [
    # (arguments, the field named, what the message says)
    ({"clock": 5}, "$.clock", "Expected `str`, got `int` - at `$.clock`"),
    ({"clock": False}, "$.clock", "Expected `str`, got `bool` - at `$.clock`"),
    ({"root": 1}, "$.root", "got `int` - at `$.root`"),
    ({"clock": "", "since": "x"}, "$.since", "unknown field `since`"),
    ({"limit": 0}, "$.limit", "Expected `int` >= 1, got `0` - at `$.limit`"),
]


@pytest.mark.parametrize(("arguments", "field", "says"), BAD)
async def test_bad_arguments_name_the_field(
    tools: ReadManyMcp, arguments: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(InvalidParams) as info:
        await tools.call("changed_since", arguments, no_roots)
    assert info.value.field == field
    assert str(info.value).startswith("invalid params: ") and says in str(info.value)
    result = await tools.call_tool("changed_since", arguments, no_roots)
    assert result["isError"] is True and says in result["content"][0]["text"]


async def test_arguments_that_are_not_an_object_are_refused(tools: ReadManyMcp) -> None:
    with pytest.raises(InvalidParams) as info:
        await tools.call("changed_since", ["x"], no_roots)
    assert (info.value.field, str(info.value)) == ("$", "invalid params: expected an object")


async def test_no_clock_or_a_null_one_is_a_baseline(tools: ReadManyMcp) -> None:
    for arguments in ({}, {"clock": None, "root": None}, None):
        _, got = await tools.call("changed_since", arguments, no_roots)
        assert got["isFreshInstance"] is True and got["changed"] == ["a.py"]
    _, again = await tools.call("changed_since", {"clock": got["clock"]}, no_roots)
    assert (again["isFreshInstance"], again["changed"], again["deleted"]) == (False, [], [])
