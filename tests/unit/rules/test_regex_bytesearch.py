"""rules/regex.py ``ByteSearch``: the leftmost-first match ``re`` finds, through RE2."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from readmany_daemon.rules.regex import ByteSearch

PATTERN = rb"[A-Za-z0-9]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z])[A-Za-z0-9_]*"


BYTES = st.lists(st.sampled_from([b"a", b"Z", b"9", b"_", b" ", b"\xc3\xa9", b"AB", b"\x00"]))


@given(BYTES.map(b"".join), st.integers(min_value=0, max_value=90))
@settings(max_examples=300, deadline=None)
def test_search_finds_what_re_finds(data: bytes, pos: int) -> None:
    m = re.compile(PATTERN).search(data, pos)
    assert ByteSearch(PATTERN).search(data, pos) == (None if m is None else m.span())


def test_search_walks_the_matches() -> None:
    data = "é getFixtureValue x HTTPServer_v2 ".encode()
    search = ByteSearch(PATTERN)
    spans = []
    at = 0
    while (span := search.search(data, at)) is not None:
        spans.append(data[span[0] : span[1]])
        at = span[1]
    assert spans == [b"getFixtureValue", b"HTTPServer_v2"]


class _OtherShape:
    """A low-level RE2 module whose ``Match`` answers in another shape (a later wrapper
    version): ``(start, end)`` pairs shifted by one."""

    class RE2:
        class Options:
            pass

        class Anchor:
            UNANCHORED = 0

        def __init__(self, pattern: bytes, options: object) -> None:
            self._rx = re.compile(pattern)

        def Match(self, anchor: int, data: bytes, pos: int, end: int) -> list[tuple[int, int]]:
            m = self._rx.search(data, pos, end)
            return [(-1, -1)] if m is None else [(m.start() + 1, m.end() + 1)]


class _Wrapper:
    _re2 = _OtherShape


def test_another_shape_of_the_low_level_wrapper_falls_back_to_re(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from readmany_daemon.rules import regex

    monkeypatch.setattr(regex, "re2_module", lambda: _Wrapper)
    search = ByteSearch(PATTERN)
    data = b"x getFixtureValue y"
    assert search.search(data, 0) == (2, 17)


def test_the_wrapper_missing_falls_back_to_re(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from readmany_daemon.rules import regex

    monkeypatch.setattr(regex, "re2_module", lambda: None)
    assert ByteSearch(PATTERN).search(b"a HTTPServer", 0) == (2, 12)


def test_the_installed_wrapper_passes_the_shape_check() -> None:
    from readmany_daemon.rules import regex

    if getattr(regex.re2_module(), "_re2", None) is None:
        return  # no RE2 wheel: re serves (the test above)
    assert ByteSearch(PATTERN)._match is not None
