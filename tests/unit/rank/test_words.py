"""Identifiers split into words for the index and the focus (``rank/words.py``)."""

from __future__ import annotations

from readmany_daemon.rank.words import (
    focus_identifiers,
    focus_words,
    index_text,
    split_identifier,
)


def test_snake_and_camel_case_identifiers_split_into_their_words() -> None:
    assert split_identifier("parse_known_args") == ["parse", "known", "args"]
    assert split_identifier("getFixtureValue") == ["get", "fixture", "value"]
    assert split_identifier("HTTPServer2") == ["http", "server", "2"]
    assert split_identifier("_") == []


def test_the_index_text_adds_the_words_of_camel_case_identifiers() -> None:
    text = "x = getFixtureValue(parse_known_args)\nplain words\n"
    assert index_text(text) == (
        "x = getFixtureValue get Fixture Value(parse_known_args)\nplain words\n"
    )


def test_focus_words_hold_identifiers_and_their_words_without_stopwords() -> None:
    words = focus_words("Make `getFixtureValue` respect the parse_known_args scope")
    assert words == [
        "getfixturevalue",
        "get",
        "fixture",
        "value",
        "respect",
        "parse_known_args",
        "parse",
        "known",
        "args",
        "scope",
    ]
    assert focus_identifiers("call getFixtureValue and parse_known_args, `scope`") == {
        "getfixturevalue",
        "parse_known_args",
        "scope",
    }


def test_the_prose_between_two_literals_is_not_an_identifier() -> None:
    """reStructuredText's ``literal`` opens and closes with two backquotes: the text
    between the closing pair of one and the opening pair of the next is prose, and a
    role's name (``:mod:``) is markup."""
    focus = "Fixed ``foo`` with the prose words ``bar`` and :mod:`pathlib` in `baz`."
    assert focus_identifiers(focus) == {"foo", "bar", "pathlib", "baz"}


def test_focus_words_leave_out_markup_roles_and_links() -> None:
    words = focus_words(
        ":func:`pytest.warns` and :py:meth:`Scope.close` (see https://example.com/fixture_docs)"
    )
    assert words == ["pytest", "warns", "scope", "close", "see"]
    # a colon in prose is no role
    assert focus_words("scope: fixture") == ["scope", "fixture"]
