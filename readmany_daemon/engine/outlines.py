"""Outlines in answers (PROTOCOL §4 "Outlines"): the outline block of a cut file, and
the files ``packing: "outlines"`` gives as outlines instead of omitting them.

* **The cut file.** A ``partial`` file's shown text ends with its cut notice and then
  :func:`cut_block`: the symbols of the lines after the part shown
  (``Outline.overlapping``), one a line, ``kind name Lstart-end`` indented by depth,
  under ``[Outline of lines 201-2500 (not shown):]``; or one phrase saying why there is
  none (``[No outline: no grammar for .txt.]``). Like the cut notice it is framing: it
  counts in tokens (``perFileMaxTokens``, ``maxTotalTokens``) but not in ``chars``.
* **The budget.** Every outline given, a cut file's or a file's given as its outline,
  takes at most :data:`MAX_OUTLINE_CHARS` characters, its head line included, however
  little of the file is shown, and covers the lines it outlines to their last symbol:
  deeper levels collapse and runs of siblings fold to fit
  (:func:`readmany_daemon.content.outline_fit.fit_outline`).
* **Packing.** ``engine.pack.plan_outlines`` plans content and the files given as
  outlines together (:class:`Outliner` makes each outline once per request).

Outlines are made by ``content.outline`` and kept by content hash: in the content
cache's ``derived`` slot when the text is a cache entry's, else in the workspace's
``OutlineCache``. Units: lines 1-based inclusive; sizes in characters; tokens o200k.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from readmany_daemon.content import tokens
from readmany_daemon.content.outline import Outline, Symbol, language_for, outline, render_outline
from readmany_daemon.content.outline_fit import fit_outline
from readmany_daemon.engine.items import LoadedItem
from readmany_daemon.engine.render import content_form
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Status
from readmany_daemon.wire.messages import FileResult, OutlineSymbol, wire_safe

#: Characters one outline block may take in ``llmContent``, its head line included (about
#: 1,000 tokens): its symbols collapse and fold to fit, none is left out (PROTOCOL §4).
MAX_OUTLINE_CHARS: Final = 4000
#: Files past a plan's stop examined at most for outlines (a glob of files without a
#: grammar loads no more than this many in vain).
MAX_EXAMINED: Final = 200


def outline_of(ws: Workspace, text: str, path: str) -> Outline:
    """The outline of ``text`` (the content of ``path``, whose name picks the language),
    made once per content: kept with the content cache entry whose text ``text`` is
    (``ContentCache.derived``), and in ``ws.outlines`` by a hash of the text; one
    neither holds is taken from the outlines made ahead (``ws.outlines.stored``, the
    daemon's ``rank.ahead.AheadStore``) when they hold it, else made. Files of the same
    text (copies) share one ``Outline`` while ``ws.outlines`` keeps it, so the blocks
    cut from it are made once (:func:`cut_block`, by the outline's identity)."""
    lang = language_for(path, text)
    if lang is not None and ws.cache is not None:
        got = ws.cache.derived(
            text,
            f"outline {lang}",
            lambda t: outline(t, path, cache=ws.outlines),
            size=Outline.nbytes,
        )
        if got is not None:
            return got
    return outline(text, path, cache=ws.outlines)


def wire_symbols(symbols: Sequence[Symbol]) -> list[OutlineSymbol]:
    """``symbols`` (or the lines of a bounded outline) as the FileResult's ``outline``
    entries, each line's ``count`` kept."""
    return [
        OutlineSymbol(s.name, s.kind, s.line_start, s.line_end, s.depth, s.count) for s in symbols
    ]


def _lines(head: str, symbols: Sequence[Symbol], cap: int) -> tuple[str, tuple[Symbol, ...]]:
    """``head`` then the lines of ``symbols`` fitted into what ``cap`` characters leave
    (:func:`fit_outline`: all covered, to the last), and those lines; ``("", ())`` when
    not even one line fits."""
    lines = fit_outline(symbols, cap - len(head))
    if not lines:
        return "", ()
    return head + render_outline(lines), lines


#: Cut blocks made lately, by (outline, first line, last line, cap): a warm answer cuts
#: the same files at the same lines again (the outline is kept with its cache entry, so
#: its identity holds; the entry keeps the outline alive against a reused ``id``).
_BLOCKS: OrderedDict[tuple[int, int, int, int], tuple[Outline, str, list[OutlineSymbol] | None]]
_BLOCKS = OrderedDict()
_BLOCKS_KEPT: Final = 512
_blocks_lock = threading.Lock()


def cut_block(o: Outline, r: FileResult, cap: int) -> tuple[str, list[OutlineSymbol] | None]:
    """The outline block of cut file ``r`` (its lines after ``r.line_end``; after
    ``r.line_end - 1`` when that line was cut short), in at most ``cap`` characters (and
    :data:`MAX_OUTLINE_CHARS`), head line included, and the lines it shows (None when it
    shows none). ``""`` when nothing fits or nothing is unseen. The same block of the
    same outline is made once (the last 512 kept)."""
    if r.line_end is None:
        return "", None
    first = r.line_end if r.next_column is not None else r.line_end + 1
    last = max(r.total_lines or 0, o.lines)
    if first > last:
        return "", None
    cap = min(cap, MAX_OUTLINE_CHARS)
    key = (id(o), first, last, cap)
    with _blocks_lock:
        hit = _BLOCKS.get(key)
        if hit is not None and hit[0] is o:
            _BLOCKS.move_to_end(key)
            return hit[1], hit[2]
    text, symbols = _cut_block(o, first, last, cap)
    with _blocks_lock:
        _BLOCKS[key] = (o, text, symbols)
        while len(_BLOCKS) > _BLOCKS_KEPT:
            _BLOCKS.popitem(last=False)
    return text, symbols


def _cut_block(
    o: Outline, first: int, last: int, cap: int
) -> tuple[str, list[OutlineSymbol] | None]:
    if o.reason is not None:
        # One line of valid Unicode, whatever the file's name holds.
        phrase = f"[No outline: {wire_safe(' '.join(o.reason.split()))}.]\n"
        return (phrase, None) if len(phrase) <= cap else ("", None)
    # A file over maxFileBytes: the outline is of the part read, its first o.lines lines.
    covered = min(last, o.lines)
    beyond = ""
    if covered < last:
        rest = f"lines {max(first, covered + 1)}-{last}" if covered + 1 < last else f"line {last}"
        beyond = f"[No outline of {rest}: past maxFileBytes.]\n"
        if first > covered:
            return (beyond, None) if len(beyond) <= cap else ("", None)
    symbols = o.overlapping(first, covered)
    span = f"lines {first}-{covered}" if first < covered else f"line {first}"
    if not symbols:
        phrase = f"[No symbols in {span} (not shown).]\n{beyond}"
        return (phrase, []) if len(phrase) <= cap else ("", None)
    text, lines = _lines(f"[Outline of {span} (not shown):]\n", symbols, cap - len(beyond))
    if not text:
        return "", None
    return text + beyond, wire_symbols(lines)


def with_cut_block(
    shown: str,
    base: FileResult,
    outline_for: Callable[[], Outline] | None,
    cap: int = MAX_OUTLINE_CHARS,
) -> str:
    """``shown`` (a cut file's text, its notice last) with its outline block after it
    (``cap`` characters at most, and :data:`MAX_OUTLINE_CHARS`, however little is
    shown), setting ``base.outline``; ``shown`` unchanged without ``outline_for``."""
    if outline_for is None or base.status != Status.PARTIAL:
        return shown
    block, symbols = cut_block(outline_for(), base, cap)
    base.outline = symbols
    if not block:
        return shown
    return shown + ("" if not shown or shown.endswith("\n") else "\n") + block


def outline_room(o: Outline, allowed_tokens: int, fmt: str) -> int:
    """The characters (at most :data:`MAX_OUTLINE_CHARS`) an outline block of ``o`` may
    take so that it costs at most ``allowed_tokens`` o200k tokens as format ``fmt``
    writes it: a cut file's block under ``perFileMaxTokens`` or ``maxTotalTokens`` gets
    coarser rather than crowd out the content. Judged on the whole file's outline (a
    block after a cut outlines no more); 0 when not even a coarse one fits."""
    cap = MAX_OUTLINE_CHARS
    if o.reason is not None or not o.symbols:
        return cap
    for _ in range(8):
        used = tokens.count_memo(content_form(fmt, render_outline(fit_outline(o.symbols, cap))))
        if used <= allowed_tokens:
            return cap
        cap = cap * allowed_tokens // used * 9 // 10
        if cap < 100:
            return 0
    return 0


@dataclass
class Outlined:
    """A file given as its outline (``packing: "outlines"``): the framed ``body``, the
    ``symbols`` it shows, and what it costs: ``chars`` (of ``body``) and ``tokens``
    (the body as the format writes it, its label and framing: ``cost_tokens``)."""

    body: str
    symbols: list[OutlineSymbol]
    chars: int
    body_tokens: int
    cost_tokens: int


@dataclass
class Outliner:
    """The outlined form of the items of one request, each made at most once.

    ``loaded_at(i)`` loads item ``i``; ``outline_for(lo)`` outlines a loaded file;
    ``fmt`` is the request's format; ``frame_tokens`` is counted per framed file beside
    its label."""

    loaded_at: Callable[[int], LoadedItem]
    outline_for: Callable[[LoadedItem], Outline]
    fmt: str
    frame_tokens: int
    _made: dict[int, Outlined | None] = field(default_factory=dict)

    def entry(self, i: int) -> Outlined | None:
        """Item ``i`` as an outline, or None when it has none (not text, no grammar). The
        outline covers the item's lines in :data:`MAX_OUTLINE_CHARS`, head included."""
        if i not in self._made:
            self._made[i] = self._make(i)
        return self._made[i]

    def _make(self, i: int) -> Outlined | None:
        lo = self.loaded_at(i)
        if (
            lo.text is None
            or lo.full is None
            or lo.result.status
            not in (
                Status.OK,
                Status.PARTIAL,
            )
        ):
            return None
        o = self.outline_for(lo)
        if o.reason is not None:
            return None
        item = lo.item
        first = item.offset or 1
        # Lines in the file: more than the outline's for a file over maxFileBytes, whose
        # outline is of the part read.
        total = max((lo.window.total_lines if lo.window is not None else None) or 0, o.lines)
        last = first + item.limit - 1 if item.limit is not None else max(total, first)
        symbols = o.overlapping(first, last)
        whole = item.limit is None and first == 1
        lines = f"{o.lines:,} lines" if whole else f"lines {first}-{last}"
        if total > o.lines and last > o.lines:  # over maxFileBytes: the part read only
            lines = (
                f"lines {first}-{o.lines} of {total:,}; the rest is past maxFileBytes"
                if first <= o.lines
                else f"lines {first}-{last}, past maxFileBytes: no outline"
            )
        head = f"[Outline only, not the content ({lines}; not read: budget):]\n"
        shown: tuple[Symbol, ...]
        if not symbols:
            body, shown = f"[Outline only ({lines}; not read: budget): no symbols.]\n", ()
        else:
            body, shown = _lines(head, symbols, MAX_OUTLINE_CHARS)
            if not shown:
                return None
        body_tokens = tokens.count(content_form(self.fmt, body))
        cost = body_tokens + tokens.count_memo(lo.result.path) + self.frame_tokens
        return Outlined(body, wire_symbols(shown), len(body), body_tokens, cost)
