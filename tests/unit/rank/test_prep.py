"""rank/prep.py: a file's text as the full-text index holds it. ``split_text`` (RE2 over
the UTF-8 bytes) gives exactly ``words.index_text``'s text, whatever the script."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from readmany_daemon.rank.prep import split_text
from readmany_daemon.rank.words import index_text

#: Identifier characters, separators, non-ASCII letters (some of which ``str.isalnum``
#: takes for letters, unlike the ASCII classes of the patterns), astral characters.
PIECES = st.sampled_from(
    [*"aZ9_ .(\n", "get", "Fixture", "HTTP", "Server", "x2", "2y", "_a", "é", "ß", "中", "😀"]
)


@given(st.lists(PIECES, max_size=40).map("".join))
@settings(max_examples=400, deadline=None)
def test_split_text_is_index_text(text: str) -> None:
    assert split_text(text) == index_text(text)


def test_split_text_examples() -> None:
    for text in (
        "",
        "plain words only",
        "getFixtureValue(parse_known_args) HTTPServer2 fooBar_bazQux _privateName",
        "éfooBar ßHTTPServer 中getX 😀aB\n\tx_yZ __init__ ABCd",
        "lone \ud800 surrogate nextOne",
    ):
        assert split_text(text) == index_text(text), text
