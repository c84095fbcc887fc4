"""Words of code and of a focus text: identifiers split into the words they join.

``parse_known_args`` is the words ``parse known args``; ``getFixtureValue`` is ``get
fixture value``; ``HTTPServer`` is ``http server``. The full-text index holds a text with
the split words added after each compound identifier (:func:`index_text`), and a focus is
searched by the same words (:func:`focus_words`), so either spelling finds the other.
Words are lower case; units are characters of ``str``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "STOPWORDS",
    "focus_identifiers",
    "focus_words",
    "index_text",
    "path_text",
    "split_identifier",
]

#: An identifier: a letter or underscore, then letters, digits and underscores.
_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A compound identifier worth splitting: holds ``_`` between word characters, or a
#: lower-to-upper case change (``getFixture``, ``HTTPServer``).
_COMPOUND: Final = re.compile(r"[A-Za-z0-9]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z])[A-Za-z0-9_]*")
#: The parts of one identifier: runs of capitals before a capitalised word, capitalised
#: or lower-case words, digit runs.
_PARTS: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: Words too common in prose and code to tell files apart (English function words and a
#: few universal code words).
STOPWORDS: Final = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "let",
        "may",
        "me",
        "might",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "out",
        "she",
        "should",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "self",
        "none",
        "true",
        "false",
        "return",
        "def",
        "import",
        "pass",
        "also",
        "now",
        "use",
        "used",
        "using",
        "make",
        "made",
        "new",
    )
)


#: Markup a focus may hold that names no code: a reStructuredText role before a
#: backquote (``:func:``, ``:py:meth:``) and a link (``https://…``); taken out of the
#: focus before its words are found.
#: Text in backquotes: Markdown's `code`, reStructuredText's ``literal`` and roles'
#: `target` (the same run of backquotes opens and closes it, so the prose between two
#: ``literals`` is not taken for one).
_QUOTED: Final = re.compile(r"(`+)([^`]{1,80}?)\1(?!`)")
_MARKUP: Final = re.compile(r"(?<![\w:])(?::[A-Za-z][\w-]*)+:(?=`)|\bhttps?://\S+")


def split_identifier(word: str) -> list[str]:
    """The lower-case words of identifier ``word`` in order: ``"parse_known_args"`` ->
    ``["parse", "known", "args"]``, ``"getFixtureValue"`` -> ``["get", "fixture",
    "value"]``, ``"HTTPServer2"`` -> ``["http", "server", "2"]``; ``[]`` for ``"_"``."""
    return [p.lower() for p in _PARTS.findall(word)]


def index_text(text: str) -> str:
    """``text`` as the full-text index takes it: each camel-case identifier followed by
    its words (``getFixtureValue`` -> ``getFixtureValue get Fixture Value``); snake case
    needs nothing added, the tokenizer splits at ``_``. Lines are kept."""
    return _COMPOUND.sub(lambda m: m.group(0) + " " + " ".join(_PARTS.findall(m.group(0))), text)


def path_text(path: str) -> str:
    """The words of ``path`` as the index's ``name`` column holds them: every part's
    identifiers and their split words, the file name's twice (a word of the file name
    weighs more than one of a folder): ``src/_pytest/fixtures.py`` -> ``src pytest
    fixtures py fixtures py``."""
    folder, _, name = path.rpartition("/")
    return " ".join(_path_words(folder) + 2 * _path_words(name))


def _path_words(text: str) -> list[str]:
    out: list[str] = []
    for m in _IDENT.finditer(text):
        token = m.group(0)
        parts = split_identifier(token)
        out.append(token.lower().strip("_"))
        if len(parts) > 1:
            out.extend(parts)
    return [w for w in out if w]


def focus_words(focus: str, limit: int = 128) -> list[str]:
    """The distinct lower-case search words of ``focus`` in first-seen order: every
    identifier and its split words, minus :data:`STOPWORDS`, one-letter words and the
    words of markup (reStructuredText roles, links), at most ``limit`` of them (a
    2,000-character focus holds ~300 words; the first carry the task)."""
    out: dict[str, None] = {}
    for m in _IDENT.finditer(_MARKUP.sub(" ", focus)):
        token = m.group(0)
        for word in (token.lower(), *split_identifier(token)):
            word = word.strip("_")
            if len(word) > 1 and word not in STOPWORDS and not word.isdigit():
                out.setdefault(word, None)
        if len(out) >= limit:
            break
    return list(out)[:limit]


def focus_identifiers(focus: str) -> set[str]:
    """The identifiers of ``focus`` that look like code (compound, e.g.
    ``getfixturevalue``, or written in backquotes), lower case: the seeds of the
    references signal."""
    text = _MARKUP.sub(" ", focus)
    out = {m.group(0).lower() for m in _COMPOUND.finditer(text)}
    out.update(m.group(0).lower() for m in _IDENT.finditer(text) if "_" in m.group(0).strip("_"))
    for m in _QUOTED.finditer(text):
        out.update(w.group(0).lower() for w in _IDENT.finditer(m.group(2)))
    return {w for w in out if len(w) > 2 and w not in STOPWORDS}
