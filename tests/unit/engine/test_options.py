"""engine.options: the request's params become each stage's options once, at the edge."""

from __future__ import annotations

from pathlib import Path

import pytest

from readmany_daemon.content.reader import ReadOptions
from readmany_daemon.engine.items import Item
from readmany_daemon.engine.options import Entry, options_for
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import (
    Continuation,
    Position,
    ReadRequest,
    cursor_stamp,
    decode_read_request,
    encode_position,
)
from tests.helpers import write_tree


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    write_tree(tmp_path, {"a.txt": "a\n", "src/b.py": "b\n"})
    return Workspace.open(str(tmp_path), Settings())


def test_entries_come_in_request_order_classified(ws: Workspace) -> None:
    req = decode_read_request(
        {
            "paths": ["a.txt", {"path": f"{ws.root}/src/b.py", "cells": 4}],
            "files": [{"path": "./src/../a.txt", "limit": 3, "column": 2}],
            "include": ["src/*.py", "../out"],
        }
    )
    got = options_for(ws, req).resolve.entries
    assert got == (
        Entry(raw="a.txt", rel="a.txt", magic=False),
        Entry(raw=f"{ws.root}/src/b.py", rel="src/b.py", magic=False, cells="4"),
        Entry(raw="./src/../a.txt", rel="a.txt", magic=False, limit=3, column=2),
        Entry(raw="src/*.py", rel="src/*.py", magic=True),
        Entry(raw="../out", rel=None, magic=False),
    )


def test_filters_exclude_and_labels(ws: Workspace) -> None:
    req = decode_read_request(
        {
            "paths": ["."],
            "exclude": ["*.py"],
            "recursive": False,
            "useDefaultExcludes": False,
            "fileFilteringOptions": {"respectGitIgnore": False},
            "absolutePaths": True,
        }
    )
    resolve = options_for(ws, req).resolve
    assert resolve.filters == (False, True, False)
    assert not resolve.recursive and resolve.absolute_paths
    assert resolve.exclude is not None and resolve.exclude.keep(["a.txt", "b.py"]) == ["a.txt"]
    assert options_for(ws, decode_read_request({"paths": ["."]})).resolve.exclude is None


def test_receipts_are_keyed_by_root_relative_path(ws: Workspace) -> None:
    req = decode_read_request(
        {
            "paths": ["a.txt"],
            "known": [
                {"path": "a.txt", "sha256": "AA" * 32},
                {"path": f"file://{ws.root}/a.txt", "sha256": "BB" * 32},  # the last counts
                {"path": "/elsewhere/c.txt", "sha256": "CC" * 32},  # outside: left out
                {"path": ".", "sha256": "DD" * 32},  # the root itself: no file
            ],
        }
    )
    assert options_for(ws, req).load.known == {"a.txt": "bb" * 32}


def test_redact_is_the_request_s_else_the_setting(tmp_path: Path) -> None:
    on = Workspace.open(str(tmp_path), Settings(redact_secrets=True))
    off = Workspace.open(str(tmp_path), Settings(redact_secrets=False))
    plain = decode_read_request({"paths": ["a"]})
    asked = decode_read_request({"paths": ["a"], "redactSecrets": False})
    assert options_for(on, plain).load.redact and not options_for(off, plain).load.redact
    assert not options_for(on, asked).load.redact


def test_read_options_of_an_item(ws: Workspace) -> None:
    load = options_for(ws, decode_read_request({"paths": ["a.txt"]})).load
    mib = ws.settings.max_file_bytes
    plain = Item(label="a.txt", key="a.txt", rel="a.txt")
    assert load.read_options(plain, False) == ReadOptions(
        max_file_bytes=mib, limit=200, max_chars=20000
    )
    window = Item(label="a.txt", key="k", rel="a.txt", offset=3, limit=7, column=2)
    assert load.read_options(window, True) == ReadOptions(
        max_file_bytes=mib,
        offset=3,
        limit=7,
        max_chars=20000,
        want_full=True,
        want_bytes=True,
        column=2,
    )
    full = options_for(ws, decode_read_request({"paths": ["a"], "preferFullRead": True})).load
    assert full.read_options(plain, False) == ReadOptions(max_file_bytes=mib, want_full=True)
    assert full.read_options(window, False).want_full is False  # a window is not the file


def test_later_pages_go_in_request_order_unless_outlined(ws: Workspace) -> None:
    for packing, later in [("auto", "request-order"), ("outlines", "outlines")]:
        req = decode_read_request({"paths": ["a"], "packing": packing})
        assert options_for(ws, req).budget.packing == packing
        stamp = cursor_stamp(ws.root, req.params)
        cont = Continuation(params=stamp.asked, digest=stamp.digest, position=Position())
        again = ReadRequest(params=req.params, continuation=cont)
        assert options_for(ws, again).budget.packing == later


def test_a_cursor_of_another_request_names_the_cursor(ws: Workspace) -> None:
    first = decode_read_request({"paths": ["*.txt"], "maxTotalFiles": 1})
    token = encode_position(cursor_stamp("/another/root", first.params), Position())
    with pytest.raises(InvalidParams) as info:
        options_for(ws, decode_read_request({"cursor": token}))
    assert info.value.field == "$.cursor"
    mine = encode_position(cursor_stamp(ws.root, first.params), Position())
    assert options_for(ws, decode_read_request({"cursor": mine})).page.continuation is not None
