"""A port of git's ``wildmatch.c`` (with ``WM_PATHNAME``) to regular expressions, over
the "byte view" of paths and patterns.

Matching runs on bytes (git is byte-based): names and patterns are mapped to a "byte view"
string (each byte one character, latin-1) so ``?``, ``[...]`` and ranges behave as in git
for non-ASCII and undecodable names. The regexes produced are valid in Python's ``re``
and in RE2 alike. Pure: no I/O, no state.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from typing import Final

__all__ = ["GLOB_SPECIAL", "NEVER", "byte_view", "from_byte_view", "literal", "translate"]


def byte_view(s: str) -> str:
    """The byte view of a path or pattern: each byte of its file-system encoding as one
    character (latin-1). ASCII strings are returned unchanged."""
    if s.isascii():
        return s
    return os.fsencode(s).decode("latin-1")


def from_byte_view(s: str) -> str:
    """Inverse of ``byte_view`` for display: bytes decoded as UTF-8 with surrogateescape."""
    if s.isascii():
        return s
    return s.encode("latin-1").decode("utf-8", "surrogateescape")


# --------------------------------------------------------------------------------------
# pattern translation (port of git's wildmatch.c with WM_PATHNAME, and dir.c matching)

NEVER = r"\b\B"  # matches nothing, in Python re and in RE2 alike


def _ascii_set(chars: Iterable[int]) -> frozenset[int]:
    return frozenset(chars)


_R = range
#: ``[:name:]`` classes as git's ``sane_ctype`` (git-compat-util.h, ctype.c) defines them:
#: ASCII only; ``space`` is TAB LF CR SP (no VT/FF); ``graph``/``blank`` from glibc's C rules.
_CLASSES: Final[dict[str, frozenset[int]]] = {
    "alnum": _ascii_set([*_R(48, 58), *_R(65, 91), *_R(97, 123)]),
    "alpha": _ascii_set([*_R(65, 91), *_R(97, 123)]),
    "blank": _ascii_set([9, 32]),
    "cntrl": _ascii_set([*_R(0, 32), 127]),
    "digit": _ascii_set(_R(48, 58)),
    "graph": _ascii_set(_R(33, 127)),
    "lower": _ascii_set(_R(97, 123)),
    "print": _ascii_set(_R(32, 127)),
    "punct": _ascii_set([*_R(33, 48), *_R(58, 65), *_R(91, 97), *_R(123, 127)]),
    "space": _ascii_set([9, 10, 13, 32]),
    "upper": _ascii_set(_R(65, 91)),
    "xdigit": _ascii_set([*_R(48, 58), *_R(65, 71), *_R(97, 103)]),
}
_ALL_BYTES: Final = frozenset(range(256))
GLOB_SPECIAL: Final = frozenset("*?[\\")  # git's is_glob_special()


def literal(ch: str, fold: bool = False) -> str:
    """One literal byte-view character as a regex atom valid in Python re and RE2.

    ``fold``: git's ``core.ignorecase`` (wildmatch's ``WM_CASEFOLD``, dir.c's
    ``fspathncmp``): an ASCII letter matches either case; other bytes only themselves (git
    folds with its own ASCII-only ``tolower``, never Latin-1 or Unicode)."""
    if fold and ch.isascii() and ch.isalpha():
        return f"[{ch.lower()}{ch.upper()}]"
    if ch.isascii() and ch.isalnum():
        return ch
    return f"\\x{ord(ch):02x}"


def _lower(b: int) -> int:
    """git's ``tolower`` on a byte: ASCII only."""
    return b + 32 if 65 <= b <= 90 else b


def _class_regex(members: Collection[int], blob: bool) -> str:
    """A regex character class matching exactly the byte values in ``members``."""
    allowed = sorted(set(members) - ({10} if blob else set()))
    if not allowed:
        return NEVER
    parts: list[str] = []
    start = prev = allowed[0]
    for b in [*allowed[1:], -2]:
        if b == prev + 1:
            prev = b
            continue
        parts.append(f"\\x{start:02x}" if start == prev else f"\\x{start:02x}-\\x{prev:02x}")
        start = prev = b
    return "[" + "".join(parts) + "]"


def _parse_bracket(pat: str, i: int, fold: bool = False) -> tuple[frozenset[int] | None, int]:
    """Parse the bracket expression starting at ``pat[i] == '['`` as wildmatch.c does.

    Returns ``(bytes matched, index after the closing ']')``; ``None`` when wildmatch would
    return ``WM_ABORT_ALL`` (no closing ``]``, a trailing ``\\``, an unknown ``[:class:]``),
    which makes the whole pattern match nothing.

    ``fold`` (``WM_CASEFOLD``): wildmatch lowers the text byte, not the bracket's members,
    so a byte matches when its lower case is a member; a range also matches a lower-case
    byte whose upper case lies in it, and ``[:upper:]`` every letter. Hence git's quirk:
    an upper-case single member (``[A]``, ``[\\A]``) matches no letter at all.
    """
    n = len(pat)
    p = i + 1
    negated = p < n and pat[p] in "!^"
    if negated:
        p += 1
    members: set[int] = set()
    extra: set[int] = set()  # with fold: lower-case bytes a range or [:upper:] adds
    prev: str | None = None  # wildmatch's prev_ch (None for 0)
    while True:
        if p >= n:
            return None, n
        ch: str | None = pat[p]
        if ch == "\\":
            p += 1
            if p >= n:
                return None, n
            ch = pat[p]
            members.add(ord(ch))
        elif ch == "-" and prev is not None and p + 1 < n and pat[p + 1] != "]":
            p += 1
            hi = pat[p]
            if hi == "\\":
                p += 1
                if p >= n:
                    return None, n
                hi = pat[p]
            span = range(ord(prev), ord(hi) + 1)  # empty when reversed, as in git
            members.update(span)
            extra.update(b + 32 for b in span if 65 <= b <= 90)
            ch = None
        elif ch == "[" and p + 1 < n and pat[p + 1] == ":":
            s = p + 2
            q = s
            while q < n and pat[q] != "]":
                q += 1
            if q >= n:
                return None, n
            if q - s - 1 < 0 or pat[q - 1] != ":":
                members.add(ord("["))  # no ":]": a plain '[' member, go on after it
                ch = "["
                p = s - 2
            else:
                cls = _CLASSES.get(pat[s : q - 1])
                if cls is None:
                    return None, n
                members.update(cls)
                if pat[s : q - 1] == "upper":
                    extra.update(_CLASSES["lower"])
                ch = None
                p = q
        else:
            assert ch is not None
            members.add(ord(ch))
        prev = ch
        p += 1
        if p < n and pat[p] == "]":
            break
    if fold:
        members.update(extra)
        members = {b for b in range(256) if _lower(b) in members}
    result = (_ALL_BYTES - members) if negated else frozenset(members)
    return result, p + 1


def translate(pat: str, pathname: bool, blob: bool, fold: bool = False) -> str | None:
    """Translate a wildmatch pattern (byte view) to a regex body, or ``None`` if it can
    never match.

    ``pathname``: git's ``WM_PATHNAME`` (``*``, ``?`` and classes never match ``/``, ``**``
    between slashes crosses them); off for basename patterns. ``blob``: the variant used on
    newline-joined paths (``\\n`` never matched). ``fold``: ``WM_CASEFOLD`` (git's
    ``core.ignorecase``), compiled into the regex: ASCII letters match either case (see
    ``literal``, ``_parse_bracket``); an escaped upper-case letter (``\\A``) matches nothing,
    as wildmatch compares it with the lowered text byte. Not a regex engine's
    case-insensitive flag: that folds Latin-1 letters of the byte view too, and misses
    git's bracket rules. Where git differs from pathspec 1.1.1's
    ``GitIgnoreSpecPattern`` (found by tests/unit/rules/test_ignore_differential.py):

    * ``[...]`` follows wildmatch: ``[!x]`` and ``[^x]``, ``]`` first is a member,
      ``[:alpha:]``-style classes, ``\\`` escapes, reversed ranges keep their first
      character, a class never matches ``/`` (pathspec passes the class to ``re``: POSIX
      classes break, ``/`` can match, ``[a/b]`` is split at the ``/``).
    * An unterminated ``[`` or unknown class makes the pattern match nothing (git's
      ``WM_ABORT_ALL``); a trailing lone ``\\`` also matches nothing.
    * ``**`` is special only between slashes (or at the start/end); ``**\\/`` counts as
      ``**/`` without the zero-folder shortcut; other runs of ``*`` are one ``*``.
    """
    any_ns = "[^/\\n]" if blob else "[^/]"
    any_ch = "[^\\n]" if blob else "."
    out: list[str] = []
    i = 0
    n = len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            j = i
            while j < n and pat[j] == "*":
                j += 1
            double = (
                pathname
                and j - i >= 2
                and (i == 0 or pat[i - 1] == "/")
                and (
                    j == n or pat[j] == "/" or (pat[j] == "\\" and j + 1 < n and pat[j + 1] == "/")
                )
            )
            if double and j < n and pat[j] == "/":
                out.append(f"(?:{any_ch}*/)?")  # "**/": zero or more folders
                i = j + 1
            elif double:
                out.append(f"{any_ch}*")
                i = j
            else:
                out.append(f"{any_ns}*")
                i = j
        elif c == "?":
            out.append(any_ns)
            i += 1
        elif c == "\\":
            if i + 1 >= n:
                return None
            esc = pat[i + 1]
            if fold and esc.isascii() and esc.isupper():
                out.append(NEVER)  # wildmatch: lowered text byte != raw 'A'
            else:
                out.append(literal(esc, fold))
            i += 2
        elif c == "[":
            members, i = _parse_bracket(pat, i, fold)
            if members is None:
                return None
            if pathname:
                members = members - {47}
            out.append(_class_regex(members, blob))
        else:
            out.append(literal(c, fold))
            i += 1
    return "".join(out)
