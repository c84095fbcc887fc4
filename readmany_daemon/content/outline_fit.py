"""A bounded outline: the symbols of a file (or of part of it) in at most a given number
of characters, covering all of them (PROTOCOL §4 "Outlines", the outline budget).

The one concept is :func:`fit_outline`: symbols + a cap in characters → the lines to
show, each a :class:`~readmany_daemon.content.outline.Symbol`. Filling in file order
until the cap binds would leave the end of a big file unnamed; instead the outline gives
up detail, never coverage, in this order (issue 23, item 3):

1. every symbol, as :func:`~readmany_daemon.content.outline.render_outline` writes it;
2. if that does not fit, deeper levels collapse into their parent's line, the deepest
   first: ``class Parser L300-1900 (41 methods)`` (the line stands for the class and its
   41 methods: ``count`` 42);
3. if even the top level does not fit, runs of similar siblings fold into one line,
   ``function filler_0033 … filler_0160 L202-983 (128 functions)``: first runs of one
   kind, each run cut into chunks of equal size, the smallest chunks that fit (so names
   stay spread over the whole file), a top-level class, interface, module or namespace
   keeping its own line; then, only when those alone pass the cap, runs of one kind
   whatever it is; then runs of any kinds (kind ``symbol``);
4. nothing is dropped: the last line reaches the last symbol.

Units: the cap and sizes are characters of the rendered text (``render_outline``, one
``"\\n"``-ended line a symbol); lines are 1-based and inclusive.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from readmany_daemon.content.outline import Symbol, render_outline

__all__ = ["fit_outline", "outline_size"]

#: Kinds that keep their own top-level line while runs of other kinds can fold.
_KEPT: Final = frozenset({"class", "interface", "module", "namespace"})
#: The kind of a folded line whose symbols are of several kinds.
MIXED_KIND: Final = "symbol"
#: What stands between the first and the last name of a folded run.
FOLD_MARK: Final = " … "


@dataclass
class _Node:
    symbol: Symbol
    children: list[_Node] = field(default_factory=list)

    def descendants(self) -> Iterable[Symbol]:
        for c in self.children:
            yield c.symbol
            yield from c.descendants()


def outline_size(lines: Sequence[Symbol]) -> int:
    """Characters of ``render_outline(lines)`` (each line with its ``"\\n"``)."""
    return len(render_outline(lines))


def fit_outline(symbols: Sequence[Symbol], cap: int) -> tuple[Symbol, ...]:
    """``symbols`` (document order, a parent before its children, ``depth`` as
    :class:`~readmany_daemon.content.outline.Symbol` gives it) as the lines of an outline
    of at most ``cap`` characters that still covers every one of them (see the module's
    rules): the symbols themselves when they fit, else collapsed and folded lines whose
    ``count`` says how many symbols each stands for and whose ``note`` names them by kind
    (``"41 methods"``). The counts of the lines add up to ``len(symbols)``; the last
    line's ``line_end`` is the largest of all. ``()`` for no symbols, or when even one
    line holding them all passes ``cap`` (a cap under a few hundred characters). Never
    raises."""
    if not symbols:
        return ()
    if outline_size(symbols) <= cap:
        return tuple(symbols)
    roots = _tree(symbols)
    height = _height(roots)
    for keep in range(height - 2, -1, -1):
        lines = [s for s, _ in _collapse(roots, keep)]
        if outline_size(lines) <= cap:
            return tuple(lines)
    top = _collapse(roots, 0)
    for phase in range(3):
        runs = _runs(top, phase)
        longest = max((len(r) for r in runs if len(r) > 2), default=0)
        for size in _chunk_sizes(longest):
            lines = _fold(top, runs, size)
            if outline_size(lines) <= cap:
                return tuple(lines)
    return ()


def _tree(symbols: Sequence[Symbol]) -> list[_Node]:
    """The symbols as a forest: a symbol's parent is the last symbol before it of a
    smaller ``depth`` (so a range that starts inside a class still nests right)."""
    roots: list[_Node] = []
    stack: list[_Node] = []
    for s in symbols:
        node = _Node(s)
        while stack and stack[-1].symbol.depth >= s.depth:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def _height(nodes: list[_Node]) -> int:
    """Levels of the forest (1 for symbols without children)."""
    best = 0
    stack = [(n, 1) for n in nodes]
    while stack:
        node, level = stack.pop()
        best = max(best, level)
        stack.extend((c, level + 1) for c in node.children)
    return best


def _plural(kind: str, n: int) -> str:
    if n == 1:
        return kind
    return kind + ("es" if kind.endswith(("s", "sh", "ch", "x")) else "s")


def _note(counts: Counter[str]) -> str:
    """``"41 methods"``, ``"12 classes, 3 functions"``: ``counts`` (kind → symbols),
    the most numerous first."""
    return ", ".join(f"{n} {_plural(k, n)}" for k, n in counts.most_common() if n)


#: A line and the symbols it stands for, counted by kind (itself included).
_Line = tuple[Symbol, Counter[str]]


def _collapse(roots: list[_Node], keep: int) -> list[_Line]:
    """The lines with the symbols of levels ``0..keep``, each symbol on level ``keep``
    standing for itself and everything under it."""
    out: list[_Line] = []

    def walk(node: _Node, level: int) -> None:
        s = node.symbol
        if level < keep or not node.children:
            out.append((s, Counter({s.kind: 1})))
            for c in node.children:
                walk(c, level + 1)
            return
        below = list(node.descendants())
        kinds = Counter(d.kind for d in below)
        line = Symbol(
            s.name,
            s.kind,
            s.line_start,
            max(s.line_end, *(d.line_end for d in below)),
            s.depth,
            count=1 + len(below),
            note=_note(kinds),
        )
        kinds[s.kind] += 1
        out.append((line, kinds))

    for r in roots:
        walk(r, 0)
    return out


def _runs(lines: Sequence[_Line], phase: int) -> list[list[int]]:
    """Maximal runs of consecutive lines (indices into ``lines``) that may fold together:
    of one kind, top-level classes and the like kept apart (phase 0); of one kind
    (phase 1); of any kinds (phase 2)."""
    runs: list[list[int]] = []
    key_before: str | None = None
    for i, (s, _) in enumerate(lines):
        key: str | None = "" if phase == 2 else s.kind
        if phase == 0 and s.kind in _KEPT:
            key = None
        if key is not None and key == key_before and runs:
            runs[-1].append(i)
        elif key is not None:
            runs.append([i])
        key_before = key
    return runs


def _chunk_sizes(longest: int) -> Iterable[int]:
    """3, 4, 5, 6, 7, 8, 10, … up to ``longest`` (the last one folds each run whole)."""
    size = 3
    while size < longest:
        yield size
        size = max(size + 1, size * 5 // 4)
    if longest >= 3:
        yield longest


def _fold(lines: Sequence[_Line], runs: list[list[int]], size: int) -> list[Symbol]:
    """``lines`` with each run cut into chunks of at most ``size`` lines (as even as can
    be), each chunk of three or more one folded line (two lines folded save nothing)."""
    folded: dict[int, Symbol | None] = {}  # index → its chunk's line (at its first) or None
    for run in runs:
        n = len(run)
        if n < 3:
            continue
        parts = -(-n // size)
        at = 0
        for p in range(parts):
            end = at + (n - at) // (parts - p)
            if end - at >= 3:
                folded[run[at]] = _fold_line([lines[i] for i in run[at:end]])
                folded.update(dict.fromkeys(run[at + 1 : end]))
            at = end
    out: list[Symbol] = []
    for i, (s, _) in enumerate(lines):
        if i not in folded:
            out.append(s)
        elif (line := folded[i]) is not None:
            out.append(line)
    return out


def _fold_line(chunk: list[_Line]) -> Symbol:
    """One line for ``chunk``: ``first … last``, its lines, and what it stands for."""
    kinds = {s.kind for s, _ in chunk}
    first, last = chunk[0][0], chunk[-1][0]
    total: Counter[str] = Counter()
    for _, c in chunk:
        total.update(c)
    return Symbol(
        f"{first.name}{FOLD_MARK}{last.name}",
        kinds.pop() if len(kinds) == 1 else MIXED_KIND,
        first.line_start,
        max(s.line_end for s, _ in chunk),
        first.depth,
        count=total.total(),
        note=_note(total),
    )
