"""Spans: the lines of a symbol named by its outline path, or of the block around a line.

Reads by structure (PROTOCOL §3 "Symbols and enclosing blocks") are answered from the
parse an outline is made of (:class:`readmany_daemon.content.outline.Outline`, kept by
content hash with the outline, so a warm read does not parse again):

* :func:`find_symbol`: ``"Config.load"`` → the first definition's lines, from its first
  decorator, annotation or attribute line to its last line; the other definitions of the
  same name; or the outline's paths, to find close names in (did you mean).
* :func:`enclosing` : a 1-based line → the innermost function, method or class that
  holds it (nested functions included), the Markdown section, else the top-level syntax
  node; on a line no node holds, the next statement, or that line alone at the end.

A symbol's path is the outline's names joined by ``.``, outermost first (a Markdown
heading's path is its text alone). ``::`` and ``#`` are accepted in place of ``.``; Go
and Rust methods answer to ``Type.method`` as well as to the outline's own spelling
(``(*Server).Handle``, ``impl Parser.peek``, ``impl Display for Parser.fmt``).
Units: lines 1-based and inclusive.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterator
from typing import Final

import msgspec

from readmany_daemon.content.outline import Outline, Symbol

#: The lines either side of line N a file without a grammar answers ``enclosing`` with.
FALLBACK_LINES: Final = 20

_SEPARATORS: Final = re.compile(r"::|#")
#: ``(*Server)``/``(Server[T])`` (Go receivers) and ``impl X`` / ``impl T for X`` (Rust).
_GO_RECEIVER: Final = re.compile(r"^\(\*?([^()\[\]]+?)(?:\[.*\])?\)$")
_RUST_IMPL: Final = re.compile(r"^impl(?:<.*?>)? (?:.+ for )?([^<>]+?)(?:<.*>)?$")


class Span(msgspec.Struct, frozen=True):
    """Lines ``start``..``end`` (1-based, inclusive) of a symbol or block; ``name`` its
    path (``"Config.load"``; None for a block that is no symbol); ``others`` the lines of
    the same name's other definitions (``(start, end)``, in order)."""

    start: int
    end: int
    name: str | None = None
    others: tuple[tuple[int, int], ...] = ()


def paths(symbols: tuple[Symbol, ...]) -> Iterator[tuple[str, Symbol]]:
    """Each symbol of ``symbols`` (document order, a parent before its children, with
    depths) with its path: the names of its parents and its own, joined by ``.``; a
    Markdown heading's path is its own text."""
    stack: list[str] = []
    for s in symbols:
        del stack[s.depth :]
        if s.kind == "heading":
            yield s.name, s
        else:
            yield ".".join([*stack, s.name]), s
        stack.append(s.name)


def _alias(name: str) -> str:
    """``name``'s ``Type`` spelling for a Go receiver or a Rust impl, else ``name``."""
    m = _GO_RECEIVER.match(name) or _RUST_IMPL.match(name)
    return m.group(1).strip() if m else name


def _aliases(path: str, s: Symbol) -> set[str]:
    """The spellings ``path`` answers to (see the module), in Unicode NFC; a name
    holding ``::`` or ``#`` itself (C++'s out-of-line ``A::m``) answers with them as
    ``.`` too, as the asked name does."""
    path = unicodedata.normalize("NFC", path)
    parts = path.split(".") if s.kind != "heading" else [path]
    if s.kind != "heading" and s.name.startswith("("):  # Go: "(*T).M" is one name
        head, _, meth = s.name.rpartition(").")
        return {path, f"{_alias(head + ')')}.{meth}"}
    dotted = ".".join(_alias(p) for p in parts)
    return {path, dotted, _SEPARATORS.sub(".", dotted)} if s.kind != "heading" else {path, dotted}


def find_symbol(outline: Outline, name: str) -> Span | list[str]:
    """The :class:`Span` of the first definition of ``name`` in ``outline``, nested
    functions included (``Outer.inner``, as :func:`enclosing` names them; the others
    in ``Span.others``), or, when there is none, every path of the outline (a list, for
    the caller's did-you-mean: ``engine.suggest.closest_symbols``)."""
    asked = unicodedata.normalize("NFC", name.strip())  # as typed: NFC or NFD alike
    wanted = _SEPARATORS.sub(".", asked) if not _is_heading(outline) else asked
    hits: list[tuple[str, Symbol]] = []
    every: list[str] = []
    for path, s in paths(_all_symbols(outline)):
        every.append(path)
        if wanted == path or wanted in _aliases(path, s):
            hits.append((path, s))
    if not hits:
        return every
    path, first = hits[0]
    others = tuple((s.line_start, s.line_end) for _, s in hits[1:])
    return Span(first.line_start, first.line_end, name if _is_heading(outline) else path, others)


def _all_symbols(outline: Outline) -> tuple[Symbol, ...]:
    """The outline's symbols and its nested functions (``outline.inner``) in file order,
    an enclosing one before what it holds: every name a span can be asked by."""
    return tuple(
        sorted(
            (*outline.symbols, *outline.inner), key=lambda s: (s.line_start, -s.line_end, s.depth)
        )
    )


def _is_heading(outline: Outline) -> bool:
    return outline.language == "markdown"


def enclosing(outline: Outline, line: int) -> Span:
    """The block around 1-based ``line`` (at most ``outline.lines``): the innermost
    symbol of ``outline.symbols`` and ``outline.inner`` whose lines hold it (its path as
    the name), else the top-level node that holds it, else the next top-level node after
    it, else the line alone."""
    best: tuple[str, Symbol] | None = None
    for path, s in paths(_all_symbols(outline)):
        if s.line_start <= line <= s.line_end and (best is None or s.depth >= best[1].depth):
            best = path, s
    if best is not None:
        return Span(best[1].line_start, best[1].line_end, best[0])
    tops = outline.tops
    i = bisect.bisect_left(tops, (line + 1,)) - 1
    if i >= 0 and tops[i][0] <= line <= tops[i][1]:
        return Span(*tops[i])
    for start, end in tops[i + 1 :]:
        if start > line:
            return Span(start, end)
    return Span(line, line)


def fallback(line: int, total: int) -> Span:
    """Lines ``line - 20`` to ``line + 20`` clamped to ``1..total`` (a file without an
    outline asked for ``enclosing``)."""
    return Span(max(1, line - FALLBACK_LINES), max(1, min(total, line + FALLBACK_LINES)))
