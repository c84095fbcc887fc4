"""Unit tests of ``readmany_daemon.content.lines``: splitting on newlines only, and line
windows (ranges, character caps, the next offset).
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readmany_daemon.content.decode import decode
from readmany_daemon.content.lines import count_lines, split_lines, window

MiB = 1024 * 1024


# --------------------------------------------------------------------------- lines


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("a\nb", ["a", "b"]),
        ("a\n\n", ["a", ""]),
        ("\n", [""]),
        ("a\r\nb\r", ["a\r", "b\r"]),
        ("v\x0bf\x0cs\x1cn\x85l\u2028p\u2029e", ["v\x0bf\x0cs\x1cn\x85l\u2028p\u2029e"]),
    ],
)
def test_split_lines_only_on_newline(text: str, lines: list[str]) -> None:
    assert split_lines(text) == lines
    assert count_lines(text) == len(lines)
    assert "".join(split_lines(text, keepends=True)) == text


TEN = "".join(f"line {i}\n" for i in range(1, 11))


def test_window_basic_range() -> None:
    w = window(TEN, offset=3, limit=2)
    assert w.text == "line 3\nline 4\n"
    assert (w.line_start, w.line_end, w.total_lines) == (3, 4, 10)
    assert (w.complete, w.next_offset, w.cut_line) == (False, 5, None)


def test_window_to_end_is_complete() -> None:
    w = window(TEN, offset=9)
    assert w.text == "line 9\nline 10\n"
    assert (w.line_end, w.complete, w.next_offset) == (10, True, None)
    whole = window(TEN)
    assert whole.text == TEN and whole.complete


def test_window_max_chars_cuts_at_line_boundary() -> None:
    w = window(TEN, offset=1, limit=5, max_chars=20)  # "line 1\n" is 7 characters
    assert w.text == "line 1\nline 2\n"
    assert (w.line_end, w.next_offset, w.cut_line, w.complete) == (2, 3, None, False)
    exact = window(TEN, max_chars=21)
    assert exact.text == "line 1\nline 2\nline 3\n"


def test_window_first_line_longer_than_max_chars_is_cut() -> None:
    text = "x" * 50 + "\nshort\n"
    w = window(text, max_chars=10)
    assert w.text == "x" * 10
    assert (w.line_end, w.cut_line, w.next_offset, w.complete) == (1, 1, 2, False)
    last = window("y" * 30, max_chars=10)
    assert (last.text, last.cut_line, last.next_offset, last.complete) == ("y" * 10, 1, None, False)


def test_window_keeps_crlf_and_last_line_without_newline() -> None:
    text = "a\r\nb\r\nc"
    assert window(text, offset=2).text == "b\r\nc"
    assert window(text, offset=1, limit=1).text == "a\r\n"
    assert window(text, offset=3).line_end == 3


def test_window_past_end_and_empty() -> None:
    past = window(TEN, offset=12)
    assert (past.text, past.line_end, past.complete, past.next_offset) == ("", 11, False, None)
    assert window("a\n", offset=2).complete is False
    empty = window("")
    assert (empty.text, empty.line_end, empty.total_lines, empty.complete) == ("", 0, 0, True)
    assert empty.next_offset is None
    assert window("", offset=2).complete is False


def test_window_zero_limit_or_chars_is_empty() -> None:
    for w in (window(TEN, offset=4, limit=0), window(TEN, offset=4, max_chars=0)):
        assert (w.text, w.line_end, w.next_offset, w.cut_line) == ("", 3, 4, None)


@pytest.mark.parametrize(
    "kwargs", [{"offset": 0}, {"offset": -1}, {"limit": -1}, {"max_chars": -5}]
)
def test_window_rejects_bad_arguments(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        window(TEN, **kwargs)


def test_window_is_fast_on_20_mb() -> None:
    line = "x" * 79 + "\n"
    text = line * (20 * MiB // len(line))
    started = time.perf_counter()
    head = window(text, offset=1, limit=200, max_chars=20000)
    far = window(text, offset=200_000, limit=200)
    elapsed = time.perf_counter() - started
    assert head.text == line * 200 and head.next_offset == 201
    assert far.text == line * 200 and far.line_end == 200_199
    assert head.total_lines == far.total_lines == len(text) // len(line)
    assert elapsed < 0.5


_LINES_TEXT = st.text(st.sampled_from("ab\r\n\n\né✓"), max_size=60)


@settings(max_examples=300, deadline=None)
@given(
    text=_LINES_TEXT,
    offset=st.integers(1, 20),
    limit=st.none() | st.integers(0, 8),
    max_chars=st.none() | st.integers(0, 25),
)
def test_window_properties(
    text: str, offset: int, limit: int | None, max_chars: int | None
) -> None:
    lines = split_lines(text, keepends=True)
    w = window(text, offset, limit, max_chars)
    assert w.total_lines == len(lines) == count_lines(text)
    assert w.line_start == offset
    past_end = offset > max(len(lines), 1)
    if max_chars is not None:
        assert len(w.text) <= max_chars
    if limit is not None:
        assert w.line_end - offset + 1 <= limit
    if w.cut_line is None:
        assert w.text == "".join(lines[offset - 1 : w.line_end])
    else:
        # The last line shown is cut: the first line alone, or a line after whole
        # lines that no window of max_chars could hold whole.
        assert w.cut_line == w.line_end
        assert max_chars is not None and len(w.text) == max_chars
        whole = "".join(lines[offset - 1 : w.cut_line - 1])
        cut = lines[w.cut_line - 1]
        assert w.text.startswith(whole) and cut.startswith(w.text[len(whole) :])
        assert len(cut) > max_chars and len(w.text) > len(whole)
    if past_end:
        assert (w.text, w.next_offset, w.complete) == ("", None, False)
    else:
        assert w.complete == (w.line_end == len(lines) and w.cut_line is None)
        expected_next = w.line_end + 1 if w.line_end < len(lines) else None
        assert w.next_offset == expected_next


@settings(max_examples=200, deadline=None)
@given(text=_LINES_TEXT, limit=st.integers(1, 5), max_chars=st.none() | st.integers(1, 25))
def test_following_next_offset_reads_everything_once(
    text: str, limit: int, max_chars: int | None
) -> None:
    lines = split_lines(text, keepends=True)
    pieces: list[str] = []
    offset: int | None = 1
    steps = 0
    while offset is not None:
        w = window(text, offset, limit, max_chars)
        # a cut line (the window's last) stands for the whole line here
        pieces.append(w.text if w.cut_line is None else "".join(lines[offset - 1 : w.cut_line]))
        assert w.next_offset is None or w.next_offset > offset
        offset = w.next_offset
        steps += 1
        assert steps <= len(lines) + 1
    assert "".join(pieces) == text


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(st.sampled_from("ab\n\r\u00e9"), max_size=200))
def test_decode_then_window_never_loses_characters(text: str) -> None:
    data = text.encode("utf-8")
    got = decode(data)
    assert got.text == text
    assert window(got.text).text == text
