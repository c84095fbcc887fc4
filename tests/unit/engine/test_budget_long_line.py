"""A long line can be read to its end (PROTOCOL §3 ``FileSpec.column``, §4 ``nextColumn``):
a line cut at ``perFileMaxChars`` (or by the budget) names the request for its rest, and
following those requests gives every character once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readmany_daemon.cli import EXIT_USAGE, main
from readmany_daemon.content.lines import window
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import JSONRPC_CODES, InvalidParams
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyResult, to_builtins
from tests.helpers import answer, write_tree

#: A line of 600,000 characters, of one to four UTF-8 bytes each: columns count
#: characters, never bytes.
UNIT = "abcdefghijklmnopqrstuvwxyz0123456789 é€𝄞,"
LONG = (UNIT * (600_000 // len(UNIT) + 1))[:600_000]
CONTINUE = re.compile(r"^\[To continue (.+?): files: (\[.*\])\]$", re.MULTILINE)


def _ask(ws: Workspace, params: dict[str, Any]) -> ReadManyResult:
    return answer(ws, decode_read_params(params))


def _shown(result: ReadManyResult, path: str) -> str:
    """The content of ``path`` as ``llmContent`` shows it, without its cut notice."""
    (entry,) = [f for f in result.files if f.path == path]
    head = f"--- {path} ---\n"
    at = result.llm_content.index(head) + len(head)
    return result.llm_content[at : at + entry.chars]


def _follow(ws: Workspace, path: str, extra: dict[str, Any]) -> tuple[str, list[Any]]:
    """Read ``path``, then each continuation request the answers name, until none does;
    the pieces joined, and the requests followed."""
    pieces: list[str] = []
    requests: list[Any] = []
    params: dict[str, Any] = {"paths": [path], **extra}
    for _ in range(200):
        result = _ask(ws, params)
        pieces.append(_shown(result, path))
        found = CONTINUE.findall(result.llm_content)
        if not found:
            (entry,) = result.files
            assert entry.status == "ok" and entry.next_column is None
            return "".join(pieces), requests
        ((named, files),) = found
        assert named == path
        requests.append(json.loads(files))
        params = {"files": requests[-1], **extra}
    raise AssertionError("the continuations never ended")


@pytest.mark.parametrize(
    "case",
    [
        {},  # whole-file reads
        {"settings": Settings(max_file_bytes=100_000)},  # prefix reads of a large file
        {"params": {"maxTotalChars": 7_000}},  # the budget cuts the line, not the cap
    ],
    ids=["whole", "prefix", "budget"],
)
def test_following_the_notices_reassembles_a_600000_character_line(
    tmp_path: Path, case: dict[str, Any]
) -> None:
    write_tree(tmp_path, {"m.txt": LONG + "\n"})
    ws = Workspace.open(str(tmp_path), case.get("settings", Settings()))
    text, requests = _follow(ws, "m.txt", case.get("params", {}))
    assert text == LONG + "\n"
    step = 7_000 if "params" in case else 20_000
    assert requests[0] == [{"path": "m.txt", "offset": 1, "column": step + 1}]
    assert all(r[0]["offset"] == 1 for r in requests)
    assert len(requests) == -(-(len(LONG) + 1) // step) - 1  # the newline is a character


def test_a_long_line_between_short_ones(tmp_path: Path) -> None:
    before = "".join(f"line {i}\n" for i in range(1, 6))
    after = "".join(f"after {i}\n" for i in range(1, 6))
    middle = LONG[:65_432]
    write_tree(tmp_path, {"m.txt": before + middle + "\n" + after})
    ws = Workspace.open(str(tmp_path), Settings())
    text, requests = _follow(ws, "m.txt", {})
    assert text == before + middle + "\n" + after
    # The whole lines, then as much of the long one as the cap leaves (it could not fit
    # whole in any window): no answer holds the short lines alone.
    step = 20_000 - len(before)
    assert requests[0] == [{"path": "m.txt", "offset": 6, "column": step + 1}]
    assert requests[1] == [{"path": "m.txt", "offset": 6, "column": step + 20_001}]
    assert requests[-1] == [{"path": "m.txt", "offset": 6, "column": step + 40_001}]
    assert len(requests) == 3


def test_the_cut_answer_names_the_column(tmp_path: Path) -> None:
    write_tree(tmp_path, {"m.txt": LONG + "\nshort\n"})
    ws = Workspace.open(str(tmp_path), Settings())
    r = _ask(ws, {"paths": ["m.txt"]})
    (f,) = r.files
    assert (f.status, f.line_start, f.line_end, f.total_lines) == ("partial", 1, 1, 2)
    assert (f.next_offset, f.next_column) == (2, 20_001)
    assert (
        "[Showing lines 1-1 of 2, line 1 cut short. Continue with offset=1, column=20001"
        " (offset=2 skips its rest).]" in r.llm_content
    )
    assert '[To continue m.txt: files: [{"path": "m.txt", "offset": 1, "column": 20001}]]' in (
        r.llm_content
    )
    wire = json.loads(json.dumps(to_builtins(r)))
    assert wire["files"][0]["nextColumn"] == 20_001
    # The next window starts there, says so, and is keyed by its column in json.
    spec = {"path": "m.txt", "offset": 1, "column": 580_001}
    nxt = _ask(ws, {"files": [spec], "format": "json", "perFileMaxChars": 30_000})
    content = json.loads(nxt.llm_content)["results"]["m.txt:1:580001-"]["content"]
    assert content.startswith(LONG[580_000:] + "\nshort\n")
    assert nxt.files[0].status == "ok" and nxt.files[0].next_column is None


def test_column_is_validated_naming_the_field() -> None:
    for params, field in [
        ({"files": [{"path": "m.txt", "offset": 1, "column": 0}]}, "$.files[0].column"),
        ({"paths": ["a", {"path": "m.txt", "column": -3}]}, "$.paths[1].column"),
        ({"files": [{"path": "m.txt", "column": "5"}]}, "$.files[0].column"),
    ]:
        with pytest.raises(InvalidParams) as info:
            decode_read_params(params)
        assert info.value.field == field
        assert field in str(info.value)
        assert JSONRPC_CODES[type(info.value)] == -32602


def test_cli_params_take_a_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tree(tmp_path, {"m.txt": LONG + "\n"})
    monkeypatch.chdir(tmp_path)
    spec = '{"files":[{"path":"m.txt","offset":1,"column":20001}]}'
    assert main(["read", "--no-daemon", "--json", "--params", spec]) == 0
    got = json.loads(capsys.readouterr().out)
    (f,) = got["files"]
    assert (f["status"], f["nextColumn"]) == ("partial", 40_001)
    assert got["llmContent"].startswith("--- m.txt ---\n" + LONG[20_000:40_000] + "\n")
    bad = '{"files":[{"path":"m.txt","offset":1,"column":0}]}'
    assert main(["read", "--no-daemon", "--params", bad]) == EXIT_USAGE
    assert "$.files[0].column" in capsys.readouterr().err


# ------------------------------------------------------------------------------ window


def test_window_column_starts_inside_the_line() -> None:
    text = "abcdef\nghij\n"
    w = window(text, 1, None, None, None, 3)
    assert (w.text, w.line_end, w.complete, w.column) == ("cdef\nghij\n", 2, True, 3)
    cut = window(text, 1, None, 2, None, 3)
    assert (cut.text, cut.cut_line, cut.next_column, cut.next_offset) == ("cd", 1, 5, 2)
    limited = window(text, 1, 1, None, None, 5)
    assert (limited.text, limited.line_end, limited.next_offset) == ("ef\n", 1, 2)


def test_window_column_past_the_end_of_its_line() -> None:
    # Past the end: the line's rest is empty; the window goes on with the next line.
    w = window("abc\nde\n", 1, None, None, None, 99)
    assert (w.text, w.column, w.line_end, w.complete) == ("\nde\n", 4, 2, True)
    # The last line, without a newline: that line is done, nothing is ahead.
    last = window("abc\nde", 2, None, None, None, 3)
    assert (last.text, last.line_end, last.next_offset, last.complete) == ("", 2, None, True)


def test_window_rejects_column_below_one() -> None:
    with pytest.raises(ValueError, match="column"):
        window("abc", 1, None, None, None, 0)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(st.sampled_from("ab\n\r é𝄞"), max_size=80),
    max_chars=st.integers(1, 12),
    limit=st.one_of(st.none(), st.integers(1, 4)),
)
def test_following_next_column_and_next_offset_gives_every_character_once(
    text: str, max_chars: int, limit: int | None
) -> None:
    pieces: list[str] = []
    offset, column = 1, 1
    for _ in range(len(text) + 2):
        w = window(text, offset, limit, max_chars, None, column)
        assert len(w.text) <= max_chars
        pieces.append(w.text)
        if w.next_column is not None:
            assert w.cut_line == w.line_end
            offset, column = w.line_end, w.next_column
        elif w.next_offset is not None:
            offset, column = w.next_offset, 1
        else:
            break
    assert "".join(pieces) == text


def test_a_cursor_resumes_a_budget_cut_column_window_at_a_whole_line(tmp_path: Path) -> None:
    write_tree(tmp_path, {"m.txt": "0123456789\n" * 1000, "other.txt": "other\n"})
    ws = Workspace.open(str(tmp_path), Settings())
    spec = {"path": "m.txt", "offset": 1, "column": 5}
    budget = {"maxTotalChars": 1_000, "packing": "request-order"}
    first = _ask(ws, {"files": [spec, {"path": "other.txt"}], **budget})
    m = first.files[0]
    assert (m.status, m.code, m.next_column) == ("partial", "budget", None)
    assert _shown(first, "m.txt").startswith("456789\n0123456789\n")
    assert first.next_cursor is not None
    second = _ask(ws, {"cursor": first.next_cursor})
    resumed = second.files[0]
    assert (resumed.path, resumed.line_start) == ("m.txt", m.next_offset)
    assert _shown(second, "m.txt").startswith("0123456789\n")  # the whole line, not column 5
