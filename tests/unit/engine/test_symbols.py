"""Reads by structure through the engine (issue 26 items 1-2): ``symbol`` and
``enclosing`` answered as line windows over real files, with their notices, keys,
errors, caps and receipts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.content import outline as outline_module
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer, write_tree

APP = """import os


class Config:
    \"\"\"Settings.\"\"\"

    x = 1

    @classmethod
    def load(cls):
        return cls()

    def save(self):
        pass


def load():
    pass


def load():
    return 2
"""


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    lines = "".join(f"line {i}\n" for i in range(1, 61))
    write_tree(
        tmp_path,
        {"src/app.py": APP, "notes.txt": lines, "blob.py": b"\x00\x01\x02" * 50},
    )
    return Workspace.open(str(tmp_path), Settings())


def ask(ws: Workspace, *files: dict[str, Any], **params: Any) -> Any:
    return answer(ws, decode_read_params({"files": list(files), **params}))


def test_a_symbol_reads_its_lines_with_a_notice_naming_it(ws: Workspace) -> None:
    r = ask(ws, {"path": "src/app.py", "symbol": "Config.load"})
    f = r.files[0]
    assert (f.status, f.line_start, f.line_end, f.symbol) == ("ok", 9, 11, "Config.load")
    assert "    @classmethod\n    def load(cls):\n        return cls()\n" in r.llm_content
    assert "[Config.load: lines 9-11 of 22.]" in r.llm_content
    assert "def save" not in r.llm_content


def test_a_name_defined_twice_gives_the_first_and_names_the_others(ws: Workspace) -> None:
    r = ask(ws, {"path": "src/app.py", "symbol": "load"})
    assert (r.files[0].line_start, r.files[0].line_end) == (17, 18)
    assert "[load is defined 2 times; not shown: lines 21-22.]" in r.llm_content


def test_an_unknown_symbol_suggests_close_names(ws: Workspace) -> None:
    r = ask(ws, {"path": "src/app.py", "symbol": "Config.lod"})
    f = r.files[0]
    assert (f.status, f.code) == ("error", "symbol-not-found")
    assert f.message.endswith("did you mean: Config.load, load?")


def test_no_grammar_is_no_outline_and_binary_is_skipped(ws: Workspace) -> None:
    r = ask(ws, {"path": "notes.txt", "symbol": "x"}, {"path": "blob.py", "symbol": "x"})
    assert [(f.status, f.code) for f in r.files] == [
        ("error", "no-outline"),
        ("skipped", "binary"),
    ]
    assert r.files[0].message == "no grammar for .txt"


def test_a_file_too_large_to_outline_is_no_outline_with_the_reason(tmp_path: Path) -> None:
    big = "x = 1\n" * (outline_module.MAX_OUTLINE_BYTES // 6 + 10)
    write_tree(tmp_path, {"big.py": big})
    ws = Workspace.open(str(tmp_path), Settings(max_file_bytes=8 * 1024 * 1024))
    f = ask(ws, {"path": "big.py", "symbol": "x"}).files[0]
    assert (f.status, f.code) == ("error", "no-outline")
    assert f.message.startswith("too large to outline")


def test_enclosing_reads_the_innermost_block(ws: Workspace) -> None:
    r = ask(ws, {"path": "src/app.py", "enclosing": 11}, {"path": "src/app.py", "enclosing": 6})
    assert [(f.line_start, f.line_end, f.symbol) for f in r.files] == [
        (9, 11, "Config.load"),
        (4, 14, "Config"),
    ]


def test_enclosing_without_a_grammar_reads_twenty_lines_either_side(ws: Workspace) -> None:
    r = ask(ws, {"path": "notes.txt", "enclosing": 30}, {"path": "notes.txt", "enclosing": 5})
    assert [(f.line_start, f.line_end) for f in r.files] == [(10, 50), (1, 25)]
    assert "[No outline (no grammar for .txt): lines 10-50, around line 30.]" in r.llm_content


def test_enclosing_past_the_end_is_out_of_range(ws: Workspace) -> None:
    f = ask(ws, {"path": "src/app.py", "enclosing": 23}).files[0]
    assert (f.status, f.code) == ("error", "out-of-range")


def test_json_keys_name_the_symbol_or_the_lines(ws: Workspace) -> None:
    r = ask(
        ws,
        {"path": "src/app.py", "symbol": "Config.save"},
        {"path": "src/app.py", "enclosing": 10},
        format="json",
    )
    keys = list(json.loads(r.llm_content)["results"])
    assert keys == ["src/app.py#Config.save", "src/app.py:9-11"]


def test_the_span_replaces_the_line_cap(ws: Workspace) -> None:
    f = ask(ws, {"path": "src/app.py", "symbol": "Config"}, perFileMaxLines=2).files[0]
    assert (f.status, f.line_start, f.line_end) == ("ok", 4, 14)


def test_a_span_cut_by_the_char_cap_continues_to_its_last_line(ws: Workspace) -> None:
    r = ask(ws, {"path": "src/app.py", "symbol": "Config"}, perFileMaxChars=60)
    f = r.files[0]
    assert (f.status, f.line_start, f.line_end, f.next_offset) == ("partial", 4, 8, 9)
    assert "Continue with offset=9, limit=6.]" in r.llm_content
    assert '"offset": 9, "limit": 6' in r.llm_content
    rest = ask(ws, {"path": "src/app.py", "offset": 9, "limit": 6}).files[0]
    assert (rest.status, rest.line_end) == ("ok", 14)


def test_a_span_cut_inside_its_first_line_continues_to_its_last_line(ws: Workspace) -> None:
    """Cut inside a line, the span went on with offset and column only: the
    continuation read up to 200 lines past the symbol."""
    r = ask(ws, {"path": "src/app.py", "symbol": "Config"}, perFileMaxChars=5)
    f = r.files[0]
    assert (f.status, f.line_start, f.line_end) == ("partial", 4, 4) and f.next_column
    assert f"Continue with offset=4, column={f.next_column}, limit=11" in r.llm_content
    assert f'"offset": 4, "column": {f.next_column}, "limit": 11' in r.llm_content
    rest = ask(ws, {"path": "src/app.py", "offset": 4, "column": f.next_column, "limit": 11})
    assert (rest.files[0].status, rest.files[0].line_end) == ("ok", 14)


def test_a_warm_symbol_read_does_not_parse_again(ws: Workspace) -> None:
    """The spans come with the outline, kept by a hash of the text (no content cache
    here: the workspace's ``OutlineCache``)."""
    assert ws.cache is None
    ask(ws, {"path": "src/app.py", "symbol": "Config.load"})
    assert (ws.outlines.misses, ws.outlines.hits) == (1, 0)
    ask(ws, {"path": "src/app.py", "symbol": "Config.save"}, {"path": "src/app.py", "enclosing": 3})
    assert (ws.outlines.misses, ws.outlines.hits) == (1, 2)


def test_secrets_are_redacted_in_a_symbol_read(tmp_path: Path) -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    write_tree(tmp_path, {"s.py": f'def creds():\n    return "{key}"\n'})
    ws = Workspace.open(str(tmp_path), Settings())
    r = ask(ws, {"path": "s.py", "symbol": "creds"}, redactSecrets=True)
    assert key not in r.llm_content
    assert r.files[0].redactions


def test_a_receipt_does_not_hold_for_a_symbol_read(ws: Workspace) -> None:
    whole = ask(ws, {"path": "src/app.py"}).files[0]
    known = [{"path": "src/app.py", "sha256": whole.sha256}]
    f = ask(ws, {"path": "src/app.py", "symbol": "Config.load"}, known=known).files[0]
    assert (f.status, f.line_start) == ("ok", 9)
