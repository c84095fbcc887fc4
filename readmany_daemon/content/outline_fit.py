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

When collapsing (2) leaves three quarters of the cap unused (a file that is one class,
a cut inside one), the level below is shown instead, its runs folded at that depth
(``class Big`` then ``method check_0000 … check_0011 (12 methods)``, …), if that fits.

Units: the cap and sizes are characters of the rendered text (``render_outline``, one
``"\\n"``-ended line a symbol); lines are 1-based and inclusive.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Final, NamedTuple

from readmany_daemon.content.outline import Symbol

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
    """Characters of ``render_outline(lines)`` (each line with its ``"\\n"``), counted
    without rendering."""
    return sum(map(_line_size, lines))


def _fits(lines: Iterable[Symbol], cap: int) -> bool:
    """Whether ``lines`` render to at most ``cap`` characters (stops once they pass it)."""
    used = 0
    for s in lines:
        used += _line_size(s)
        if used > cap:
            return False
    return True


def _line_size(s: Symbol) -> int:
    """Characters of ``s``'s line: ``"  " * depth + "kind name Lstart-end (note)\\n"``."""
    end = 1 + len(str(s.line_end)) if s.line_end != s.line_start else 0
    note = len(s.note) + 3 if s.note else 0
    return 2 * s.depth + len(s.kind) + len(s.name) + len(str(s.line_start)) + end + note + 4


def fit_outline(symbols: Sequence[Symbol], cap: int) -> tuple[Symbol, ...]:
    """``symbols`` (document order, a parent before its children, ``depth`` as
    :class:`~readmany_daemon.content.outline.Symbol` gives it) as the lines of an outline
    of at most ``cap`` characters that still covers every one of them (see the module's
    rules): the symbols themselves when they fit, else collapsed and folded lines whose
    ``count`` says how many symbols each stands for and whose ``note`` names them by kind
    (``"41 methods"``). The counts of the lines add up to ``len(symbols)``; the last
    line's ``line_end`` is the largest of all. ``()`` for no symbols, or when even one
    line holding them all passes ``cap`` (a cap under a few hundred characters). Never
    raises. Cost: a few passes over the symbols per level, and a binary search over
    chunk sizes when runs must fold (about 0.4 s of CPU for 100,000 symbols)."""
    if not symbols:
        return ()
    if _fits(symbols, cap):
        return tuple(symbols)
    roots = _tree(symbols)
    height = _height(roots)
    for keep in range(height - 2, -1, -1):
        lines = [line.symbol for line in _collapse(roots, keep)]
        if not _fits(lines, cap):
            continue
        if outline_size(lines) * 4 < cap:
            # Collapsing left most of the budget unused (one class holding the file, a
            # cut inside one): the level below, its runs folded, says more.
            below = _collapse(roots, keep + 1)
            got = _fold_to_fit(below, 0, cap, _kind_sums(below), keep + 1)
            if got is not None:
                return tuple(got)
        return tuple(lines)
    top = _collapse(roots, 0)
    sums = _kind_sums(top)
    for phase in range(3):
        got = _fold_to_fit(top, phase, cap, sums, 0)
        if got is not None:
            return tuple(got)
    return ()


def _fold_to_fit(
    top: list[_Line], phase: int, cap: int, sums: dict[str, array[int]], level: int
) -> list[Symbol] | None:
    """``top`` with its runs of ``phase`` on ``level`` (:func:`_runs`) folded in the
    smallest chunks that fit ``cap`` (a binary search: fewer, longer chunks fold to fewer
    characters), or None when even whole runs do not fit."""
    runs = _runs(top, phase, level)
    mixed = phase == 2
    longest = max((end - start for start, end in runs), default=0)
    if longest < 3:
        return None
    best = _fold(top, runs, longest, sums, mixed)
    if not _fits(best, cap):
        return None
    low, high = 3, longest  # high fits
    while low < high:
        mid = (low + high) // 2
        trial = _fold(top, runs, mid, sums, mixed)
        if _fits(trial, cap):
            best, high = trial, mid
        else:
            low = mid + 1
    return best


def _kind_sums(lines: Sequence[_Line]) -> dict[str, array[int]]:
    """Per kind, how many symbols ``lines[:i]`` stand for, at each ``i`` (so a chunk's
    counts cost one subtraction a kind, not a pass over it)."""
    kinds: set[str] = set()
    for s, c, _ in lines:
        kinds.update(c or (s.kind,))
    return {
        k: array(
            "q",
            accumulate(
                ((c.get(k, 0) if c is not None else s.kind == k) for s, c, _ in lines),
                initial=0,
            ),
        )
        for k in sorted(kinds)  # (a set's order follows the process's hash seed)
    }


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
    the most numerous first, kinds of equal counts in name order (whatever order
    ``counts`` was filled in: the same outline gives the same bytes in every process)."""
    ranked = sorted(counts.items(), key=lambda kn: (-kn[1], kn[0]))
    return ", ".join(f"{n} {_plural(k, n)}" for k, n in ranked if n)


class _Line(NamedTuple):
    """A line, the symbols it stands for counted by kind (itself included; None for a
    line that is one symbol: a Counter each would cost more than the folding), and its
    level in the forest (0 at the top)."""

    symbol: Symbol
    kinds: Counter[str] | None
    level: int


def _collapse(roots: list[_Node], keep: int) -> list[_Line]:
    """The lines with the symbols of levels ``0..keep``, each symbol on level ``keep``
    standing for itself and everything under it."""
    out: list[_Line] = []

    def walk(node: _Node, level: int) -> None:
        s = node.symbol
        if level < keep or not node.children:
            out.append(_Line(s, None, level))
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
        out.append(_Line(line, kinds, level))

    for r in roots:
        walk(r, 0)
    return out


def _runs(lines: Sequence[_Line], phase: int, level: int) -> list[tuple[int, int]]:
    """Maximal runs of consecutive lines on ``level`` (``lines[start:end]``, as
    ``(start, end)``: siblings, as a parent's line parts its children from the next's)
    that may fold together: of one kind, classes and the like kept apart (phase 0); of
    one kind (phase 1); of any kinds (phase 2)."""
    runs: list[tuple[int, int]] = []
    key_before: str | None = None
    for i, (s, _, at) in enumerate(lines):
        key: str | None = "" if phase == 2 else s.kind
        if at != level or (phase == 0 and s.kind in _KEPT):
            key = None
        if key is not None and key == key_before:
            runs[-1] = (runs[-1][0], i + 1)
        elif key is not None:
            runs.append((i, i + 1))
        key_before = key
    return runs


def _fold(
    lines: Sequence[_Line],
    runs: list[tuple[int, int]],
    size: int,
    sums: dict[str, array[int]],
    mixed: bool,
) -> list[Symbol]:
    """``lines`` with each run cut into chunks of at most ``size`` lines (as even as can
    be), each chunk of three or more one folded line (two lines folded save nothing);
    ``mixed``: runs may hold several kinds."""
    out: list[Symbol] = []
    done = 0
    for start, stop in runs:
        n = stop - start
        if n < 3:
            continue
        out.extend(line.symbol for line in lines[done:start])
        parts = -(-n // size)
        at = start
        for p in range(parts):
            end = at + (stop - at) // (parts - p)
            if end - at >= 3:
                out.append(_fold_line(lines, at, end, sums, mixed))
            else:
                out.extend(line.symbol for line in lines[at:end])
            at = end
        done = stop
    out.extend(line.symbol for line in lines[done:])
    return out


def _fold_line(
    lines: Sequence[_Line], start: int, end: int, sums: dict[str, array[int]], mixed: bool
) -> Symbol:
    """One line for ``lines[start:end]``: ``first … last``, its lines (siblings: the last
    ends last), and what it stands for; its kind is theirs, or :data:`MIXED_KIND` when
    ``mixed`` runs hold several."""
    first, last = lines[start][0], lines[end - 1][0]
    total = Counter({k: col[end] - col[start] for k, col in sums.items()})
    kind = first.kind
    if mixed and any(line.symbol.kind != kind for line in lines[start:end]):
        kind = MIXED_KIND
    return Symbol(
        f"{first.name}{FOLD_MARK}{last.name}",
        kind,
        first.line_start,
        max(first.line_end, last.line_end),
        first.depth,
        count=total.total(),
        note=_note(total),
    )
