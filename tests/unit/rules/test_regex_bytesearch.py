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
