"""``FileSpec.symbol`` and ``FileSpec.enclosing`` at the edge (issue 26): the four ways
of picking a file's lines exclude each other, -32602 naming the second one; ``enclosing``
below 1 names ``$.files[i].enclosing``; ``null`` is "not given"."""

from __future__ import annotations

import pytest

from readmany_daemon.errors import InvalidParams, jsonrpc_code
from readmany_daemon.wire.decode import decode_read_params


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"symbol": "A.b", "enclosing": 3}, "$.files[0].enclosing"),
        ({"symbol": "A.b", "offset": 3}, "$.files[0].offset"),
        ({"symbol": "A.b", "limit": 3}, "$.files[0].limit"),
        ({"symbol": "A.b", "column": 3}, "$.files[0].column"),
        ({"enclosing": 3, "limit": 3}, "$.files[0].limit"),
        ({"enclosing": 3, "cells": "2"}, "$.files[0].cells"),
        ({"offset": 3, "cells": "2"}, "$.files[0].cells"),
        ({"symbol": "A", "cells": 2}, "$.files[0].cells"),
        ({"enclosing": 0}, "$.files[0].enclosing"),
        ({"enclosing": -4}, "$.files[0].enclosing"),
        ({"symbol": ""}, "$.files[0].symbol"),
    ],
)
def test_picks_exclude_each_other_naming_the_second(spec: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidParams) as info:
        decode_read_params({"files": [{"path": "a.py", **spec}]})
    assert info.value.field == field
    assert jsonrpc_code(info.value) == -32602


def test_paths_entries_are_checked_too() -> None:
    with pytest.raises(InvalidParams) as info:
        decode_read_params({"paths": ["b", {"path": "a.py", "symbol": "x", "offset": 2}]})
    assert info.value.field == "$.paths[1].offset"


def test_null_is_not_given() -> None:
    spec = {"path": "a.py", "symbol": None, "enclosing": None, "offset": 4}
    params = decode_read_params({"files": [spec]})
    got = params.files[0]
    assert (got.symbol, got.enclosing, got.offset) == (None, None, 4)
    one = decode_read_params({"files": [{"path": "a.py", "symbol": "A.b", "enclosing": None}]})
    assert one.files[0].symbol == "A.b"
