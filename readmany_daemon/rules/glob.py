"""PROTOCOL §3 globs (the wcmatch seam) and the tests of whether a string is a glob.

A glob: ``*`` and ``?`` never cross ``/``, ``**`` does, ``[...]`` classes, ``{a,b}``
braces, dotfiles match, case-sensitive. ``compile_glob`` turns one into a regex over
root-relative paths, the literal folder to start from, and a could-contain test for
folders (``Index.glob``).

Two tests, on purpose, because their callers ask different questions:

* ``has_magic(s)``: is a requested path a glob at all (it holds ``*``, ``?``, ``[`` or
  ``{``)? A path such as ``a]b.txt`` or ``x!.md`` is then read as a literal path (the
  engine's question, ``engine/resolve.py``).
* ``is_literal_segment(seg)``: may a folder name of a glob be taken literally as the
  folder to start the walk from? Stricter: also ``]``, ``}``, ``!`` and ``\\``
  (an escape: ``a\\b`` matches the folder ``ab``, not ``a\\b``) stop the literal prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

__all__ = ["compile_glob", "has_magic", "is_literal_segment"]

#: what makes a requested path a glob
_MAGIC: Final = frozenset("*?[{")
#: what keeps a glob segment from being read as a literal folder name
_SPECIAL: Final = frozenset("*?[]{}\\!")


def has_magic(s: str) -> bool:
    """Whether ``s`` holds a glob wildcard or opener (``*``, ``?``, ``[``, ``{``): a
    requested path without one is a literal path."""
    return any(c in _MAGIC for c in s)


def is_literal_segment(seg: str) -> bool:
    """Whether glob segment ``seg`` names exactly the folder of that name (no wildcard,
    class, brace, negation or escape in it)."""
    return _SPECIAL.isdisjoint(seg)


def compile_glob(
    pattern: str, recursive: bool
) -> tuple[re.Pattern[str], str, Callable[[str], bool]]:
    """``(regex over root-relative paths, literal start folder, could-contain test for a
    folder path)`` for a PROTOCOL §3 glob, via wcmatch."""
    from wcmatch import fnmatch as wfn
    from wcmatch import glob as wglob

    if not pattern or "\0" in pattern:
        raise ValueError("invalid glob pattern: empty")
    if pattern.startswith("/"):
        raise ValueError(f"invalid glob pattern {pattern!r}: absolute paths are not patterns")
    segs = pattern.split("/")
    if ".." in segs:
        raise ValueError(f"invalid glob pattern {pattern!r}: '..' is not allowed")
    flags = wglob.BRACE | wglob.DOTGLOB | wglob.CASE | wglob.FORCEUNIX
    if recursive:
        flags |= wglob.GLOBSTAR
    # wcmatch (10 to 12) has no public name for the error raised when a pattern expands
    # past its limit (braces): only ``wcmatch._wcparse.PatternLimitException``. It is caught
    # to answer such a pattern with a readable ``ValueError``, like any invalid glob.
    from wcmatch._wcparse import PatternLimitException

    try:
        inc, exc = wglob.translate(pattern, flags=flags)
    except (PatternLimitException, ValueError) as err:
        raise ValueError(f"invalid glob pattern {pattern!r}: {err}") from err
    if exc or not inc:
        raise ValueError(f"invalid glob pattern {pattern!r}")
    rx = re.compile("|".join(f"(?:{r})" for r in inc))
    start_parts: list[str] = []
    for seg in segs[:-1]:
        if not seg or not is_literal_segment(seg):
            break
        start_parts.append(seg)
    start = "/".join(start_parts)
    fflags = wfn.BRACE | wfn.DOTMATCH | wfn.CASE | wfn.FORCEUNIX
    braced = "{" in pattern

    def could_contain(folder: str) -> bool:
        """Whether a path below ``folder`` could match (segment-wise; braces: yes)."""
        if braced:
            return True
        parts = folder.split("/")
        for i, part in enumerate(parts):
            if recursive and i < len(segs) and "**" in segs[i]:
                return True
            if i >= len(segs) - 1:
                return False
            seg = segs[i]
            if not wfn.fnmatch(part, seg, flags=fflags):
                return False
        return True

    return rx, start, could_contain
