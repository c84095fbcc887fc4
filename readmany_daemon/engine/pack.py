"""The pack stage: the answer's totals, request order or smallest first, and accounting.

``choose_plan`` includes whole files while ``maxTotalFiles``/``maxTotalChars`` hold (at
most one partially), in request order or smallest first (``packing``); ``Account`` counts
and lists what the answer says about each entry, omitted ones included, keeping large
expansions small (``MAX_LISTED``).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

from readmany_daemon.engine.items import Item, Items, LoadedItem
from readmany_daemon.engine.load import Loads
from readmany_daemon.engine.options import BudgetOptions
from readmany_daemon.engine.outlines import MAX_EXAMINED, MAX_OUTLINE_CHARS, Outlined, Outliner
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Status

#: Expansion matches that were omitted or skipped are listed in ``files`` up to this many
#: (PROTOCOL §4); ``summary`` always has the full counts.
MAX_LISTED = 200


@dataclass
class PackPlan:
    """A packing decision. ``stop`` is the position in the packing order of the first
    entry that did not fit whole (``len(order)`` when all did); every entry from there on
    is omitted except the ``partial`` one and those answered at resolve time."""

    strategy: str
    order: Sequence[int]
    stop: int
    included: list[int]
    partial: tuple[int, int] | None  # (item index, chars allowed)
    full_success: int
    full_count: int

    dropped: set[int] = field(default_factory=set)
    #: The tokens the partial entry's content may have (``maxTotalTokens``), or None.
    partial_tokens: int | None = None
    #: The characters the partial entry's outline block may take (``maxAnswerChars``
    #: plans it: :meth:`AnswerBudget.cut_split`).
    partial_outline: int = MAX_OUTLINE_CHARS
    #: ``packing: "outlines"``: the entries given as outlines (item index → outline),
    #: all at positions in ``[stop, outline_end)`` of ``order``.
    outlined: dict[int, Outlined] = field(default_factory=dict)
    outline_end: int = 0
    #: ``packing: "outlines"``: omitted entries of this page outlined on an earlier one.
    earlier: int = 0
    #: Ranked packing (``"rank"``): the entries loaded and answered without text
    #: (errors, skipped), and each loaded entry's place in ``order`` (0-based).
    answered: set[int] = field(default_factory=set)
    places: dict[int, int] = field(default_factory=dict)

    def given(self) -> set[int]:
        """Ranked packing: the entries of ``order`` this plan delivers (whole, cut, or
        answered without text); every other one is omitted."""
        given = set(self.included) | self.answered
        if self.partial is not None:
            given.add(self.partial[0])
        return given - self.dropped

    def not_loaded(self, active: int) -> tuple[int, set[int] | None]:
        """The entries this plan leaves unloaded, of the ``active`` positions: in request
        order, every position from the first returned on (after the stop, or after the
        error of ``stopOnError``); smallest first and stable, the item indexes of the set
        returned (after the stop in packing order, the partial one aside, and those
        dropped), or None for none."""
        if self.strategy == "request-order":
            return self.stop + (1 if self.partial is not None else 0), None
        if self.strategy == "outlines":
            end = max(self.outline_end, self.stop + (1 if self.partial is not None else 0))
            given = set(self.included) | set(self.outlined)
            if self.partial is not None:
                given.add(self.partial[0])
            return end, {i for i in self.order[self.stop : end] if i not in given}
        if self.strategy == "rank":
            given = self.given()
            return active, {i for i in self.order if i not in given}
        omitted = {
            i for i in self.order[self.stop :] if self.partial is None or i != self.partial[0]
        }
        return active, omitted | self.dropped

    def drop(self, indexes: set[int]) -> None:
        """Leave the entries ``indexes`` out after all (smallest first and stable): the
        keys a cursor must name to skip them later would make it too long."""
        kept = [i for i in self.included if i not in indexes]
        gone = len(self.included) - len(kept)
        self.included = kept
        self.full_success -= gone
        self.full_count -= gone
        if self.partial is not None and self.partial[0] in indexes:
            self.partial = None
        self.dropped |= indexes


#: A file is included partially under ``maxTotalTokens`` only when at least this many
#: tokens are left for its content: fewer would show little beyond its cut notice.
MIN_PARTIAL_TOKENS = 48
#: The fewest characters a cut file with ``lineNumbers`` can show: one character after
#: its number, right-aligned in six columns, and a tab.
MIN_PARTIAL_NUMBERED = 8
#: Tokens counted for one file's framing while packing (beside the o200k count of its
#: label); the answer's exact sum is checked after rendering (``answer``).
FRAME_TOKENS = 12


@dataclass
class TokenBudget:
    """The tokens the contents and framing of the files may take (``maxTotalTokens``
    less what the answer found its notices take), and how a file is counted."""

    limit: int
    cost: Callable[[LoadedItem], int]
    #: The smallest-first order, made once per request: the next packings (after an
    #: answer over the limit) reuse it instead of sorting every match again.
    by_size: list[int] | None = None


#: ``packing: "auto"`` tries smallest-first only over at most this many files (PROTOCOL
#: §3): ordering more costs a stat of each (about a second over 60,000 matches), and the
#: smallest of a broad glob are mostly empty ``__init__.py`` files, which tell a model
#: little. A broad glob is answered in request order, with the cursor.
AUTO_SMALLEST_FIRST_MAX = 1000


def choose_plan(
    ws: Workspace,
    items: Items,
    active: Sequence[int],
    loads: Loads,
    opts: BudgetOptions,
    tokens: TokenBudget | None = None,
    outliner: Outliner | None = None,
    answer: AnswerBudget | None = None,
    done_upto: int = -1,
    first: int | None = None,
) -> tuple[PackPlan, bool]:
    """The packing of the ``active`` item positions under the request's totals (and
    ``tokens``, when a token budget applies), and whether ``packing: "auto"`` switched
    to smallest first (it does when that includes more whole files; never with
    ``stopOnError`` nor over more than ``AUTO_SMALLEST_FIRST_MAX`` files).
    Under ``maxAnswerChars`` (``answer``) each file also costs its answer characters,
    framing included (an empty file its framing alone: PROTOCOL §3 ``maxAnswerChars``).
    ``packing: "outlines"`` is :func:`plan_outlines` (with ``outliner``, ``answer``
    and ``done_upto``). ``first``: the position of a file a cursor resumes, first in
    ``active`` and kept first by smallest first too (``paging.resumed_first``)."""
    if opts.order == "stable" and opts.focus is None:  # stable fills, whatever packing says
        least = MIN_PARTIAL_NUMBERED if opts.line_numbers else 1
        totals = (opts.max_total_files, opts.max_total_chars)
        return _pack(active, loads, *totals, "stable", tokens, least, answer), False
    if opts.packing == "outlines" and outliner is not None:
        # A file a cursor resumes gets the content budget first, as a wide request's
        # first file does: reserving the next files' outlines first left its rest as an
        # outline of its own, page after page.
        resumes = first is not None and bool(active) and active[0] == first
        wide = len(items) > OUTLINES_FIRST_MAX or resumes
        plan = plan_outlines(
            active, loads, opts, tokens, answer, outliner, wide, done_upto, resumes
        )
        return plan, False
    totals = (opts.max_total_files, opts.max_total_chars)
    least = MIN_PARTIAL_NUMBERED if opts.line_numbers else 1
    plan = _pack(active, loads, *totals, "request-order", tokens, least, answer)
    switched = False
    could_gain = plan.full_success < opts.max_total_files and plan.stop < len(active)
    if opts.packing == "smallest-first" or (
        opts.packing == "auto"
        and could_gain
        and not opts.stop_on_error
        and len(active) <= AUTO_SMALLEST_FIRST_MAX
    ):
        by_size = tokens.by_size if tokens is not None else None
        if by_size is None:
            by_size = sorted(active, key=lambda i: (_size_hint(ws, items[i], loads.peek(i)), i))
            if first is not None and active and active[0] == first:
                by_size.remove(first)
                by_size.insert(0, first)
            if tokens is not None:
                tokens.by_size = by_size
        alt = _pack(by_size, loads, *totals, "smallest-first", tokens, least, answer)
        if opts.packing == "smallest-first" or alt.full_success > plan.full_success:
            switched = opts.packing == "auto"
            plan = alt
    return plan, switched


#: ``packing: "outlines"``: a request of at most this many entries reserves the outlines of
#: the files a page cannot give whole before its content (PROTOCOL §4 "Outlines").
OUTLINES_FIRST_MAX = 200
#: ``packing: "outlines"`` cuts a file to what the budget leaves only when at least this
#: many characters and :data:`MIN_CUT_TOKENS` tokens are left for its content; less
#: outlines the next files instead of cutting one to a sliver.
MIN_CUT_CHARS = 4000
MIN_CUT_TOKENS = 1000
#: Characters kept for a cut file's notice beside its content and outline block.
CUT_NOTICE_CHARS = 160


@dataclass
class AnswerBudget:
    """The characters of ``llmContent`` (``maxAnswerChars``) that every packing plans
    its framed files (and outlines) into: ``limit`` is the limit less what the notices
    are expected to take (lowered when an answer still passes it), and ``frame(label,
    empty)`` the framing characters of one file (``render.frame_chars``): with
    ``empty`` True, of an empty file, whose framing says so (``[Empty file.]`` in
    ``separator``) and is all it costs."""

    limit: int
    frame: Callable[[str, bool], int]
    frames: dict[tuple[str, bool], int] = field(default_factory=dict)

    def framing(self, label: str, empty: bool = False) -> int:
        """The framing characters of the file labelled ``label`` (remembered)."""
        got = self.frames.get((label, empty))
        if got is None:
            got = self.frames[(label, empty)] = self.frame(label, empty)
        return got

    def file(self, lo: LoadedItem) -> int:
        """Answer characters of file ``lo`` given whole: its text as shown (a cut
        notice and outline block included) and its framing. An empty file costs its
        framing alone, never nothing."""
        shown = len(lo.text) if lo.text is not None else lo.result.chars
        return shown + self.framing(lo.result.path, shown == 0)

    def cut_room(self, lo: LoadedItem, left: int) -> int:
        """Characters of content file ``lo`` may show when cut, of ``left`` answer
        characters: less its framing and a cut notice (:data:`CUT_NOTICE_CHARS`)."""
        return left - self.framing(lo.result.path) - CUT_NOTICE_CHARS

    def cut_split(self, lo: LoadedItem, left: int) -> tuple[int, int]:
        """``(content, outline)``: the characters file ``lo``, cut with ``left`` answer
        characters left, may show of its content, and those its outline block may
        take (half of :meth:`cut_room`, at most :data:`MAX_OUTLINE_CHARS`), so that
        the cut file with its block stays within ``left``."""
        room = self.cut_room(lo, left)
        block = min(MAX_OUTLINE_CHARS, max(room, 0) // 2)
        return room - block, block


@dataclass
class _Room:
    """What is left of a page: content characters (``maxTotalChars``), tokens, answer
    characters (None: no such limit) and files whose content may come."""

    chars: int
    tokens: int | None
    answer: int | None
    files: int

    def fits(self, cost: tuple[int, int, int, int]) -> bool:
        c, t, a, f = cost
        return (
            c <= self.chars
            and (self.tokens is None or t <= self.tokens)
            and (self.answer is None or a <= self.answer)
            and f <= self.files
        )

    def take(self, cost: tuple[int, int, int, int], sign: int = 1) -> None:
        c, t, a, f = cost
        self.chars -= sign * c
        self.files -= sign * f
        if self.tokens is not None:
            self.tokens -= sign * t
        if self.answer is not None:
            self.answer -= sign * a

    def half(self) -> _Room:
        return _Room(
            self.chars // 2,
            None if self.tokens is None else self.tokens // 2,
            None if self.answer is None else self.answer // 2,
            self.files,
        )


#: What is left of a page, as ranked packing (``engine.focus.plan_ranked``) counts it too.
Room = _Room


@dataclass
class _OutlinesPacker:
    """One ``packing: "outlines"`` plan (:func:`plan_outlines`): the costs of content
    and outlines against a :class:`_Room`, in characters, tokens, answer characters and
    files."""

    order: Sequence[int]
    loaded_at: Callable[[int], LoadedItem]
    tokens: TokenBudget | None
    answer: AnswerBudget | None
    outliner: Outliner
    done_upto: int
    least: int

    def content(self, lo: LoadedItem) -> tuple[int, int, int, int]:
        """A file's content cost: characters of content, tokens with its framing,
        answer characters (its text as shown, a cut notice and outline block
        included, with its framing) and one file."""
        t = self.tokens.cost(lo) if self.tokens is not None else 0
        a = self.answer.file(lo) if self.answer is not None else 0
        return lo.result.chars, t, a, 1

    def outline(self, lo: LoadedItem, got: Outlined) -> tuple[int, int, int, int]:
        a = got.chars + self.answer.framing(lo.result.path) if self.answer is not None else 0
        return got.chars, got.cost_tokens, a, 0

    def whole(self, room: _Room, plan: PackPlan, end: int) -> int:
        """Include whole files in request order from the start while ``room`` holds (at
        most up to position ``end``); returns the position of the first that does not
        fit (errors and skipped entries cost nothing)."""
        for pos in range(end):
            lo = self.loaded_at(self.order[pos])
            if lo.text is None:
                plan.full_count += lo.result.status == Status.ERROR
                continue
            cost = self.content(lo)
            if not room.fits(cost):
                return pos
            room.take(cost)
            plan.included.append(self.order[pos])
            plan.full_success += 1
            plan.full_count += 1
        return end

    def cover(self, room: _Room, plan: PackPlan, start: int, end: int) -> int:
        """Give the files at positions ``[start, end)`` their outlines in order while
        ``room`` holds; a file no larger than its outline (or with none, such as an
        empty one) comes as its content instead, when it fits, else stays omitted (never
        an outline longer than the file). The first outline that
        does not fit ends this pass (an earlier pass may have outlined files after it:
        PROTOCOL §4 "Outlines"); files outlined on an earlier page of the walk
        (``done_upto``) are not outlined again. Returns the position after the last
        file given something."""
        last = start
        for pos in range(start, min(end, start + MAX_EXAMINED)):
            i = self.order[pos]
            if i <= self.done_upto or i in plan.outlined or i in plan.included:
                continue
            lo = self.loaded_at(i)
            if lo.text is None:
                continue
            got = self.outliner.entry(i)
            if got is None or lo.result.chars <= got.chars:
                cost = self.content(lo)
                if lo.result.status == Status.OK and room.fits(cost):
                    room.take(cost)
                    plan.included.append(i)
                    plan.full_success += 1
                    plan.full_count += 1
                    last = pos + 1
                    continue
                # No larger than its outline, and no room for its content on this page
                # (maxTotalFiles, or the budget): an outline would tell less than the
                # file; it stays omitted, for a later page to give as content.
                continue
            cost = self.outline(lo, got)
            if not room.fits(cost):
                break
            room.take(cost)
            plan.outlined[i] = got
            last = pos + 1
        return last

    def cut(self, room: _Room, i: int, force: bool) -> tuple[int, int | None] | None:
        """The characters and tokens item ``i`` may show when the budget cuts it, from
        ``room``; None when it may not (too little left, unless ``force``: then only
        fewer content characters than one, or than :data:`MIN_PARTIAL_NUMBERED` with
        line numbers, or fewer tokens than :data:`MIN_PARTIAL_TOKENS`)."""
        lo = self.loaded_at(i)
        if lo.text is None or room.files < 1:
            return None
        chars = room.chars
        if room.answer is not None and self.answer is not None:
            chars = min(chars, self.answer.cut_split(lo, room.answer)[0])
        tokens_left: int | None = None
        if room.tokens is not None and self.tokens is not None:
            tokens_left = room.tokens - (self.tokens.cost(lo) - (lo.tokens or 0))
        least_chars = self.least if force else max(self.least, MIN_CUT_CHARS)
        least_tokens = MIN_PARTIAL_TOKENS if force else MIN_CUT_TOKENS
        if force and room.chars >= self.least:
            chars = max(chars, self.least)  # a page must give something: the answer's
            # retries name fewer entries when the notices are what takes the room
        if chars < least_chars or (tokens_left is not None and tokens_left < least_tokens):
            return None
        return chars, tokens_left


def plan_outlines(
    order: Sequence[int],
    loaded_at: Callable[[int], LoadedItem],
    opts: BudgetOptions,
    tokens: TokenBudget | None,
    answer: AnswerBudget | None,
    outliner: Outliner,
    wide: bool,
    done_upto: int = -1,
    resumes: bool = False,
) -> PackPlan:
    """The ``packing: "outlines"`` plan of the positions ``order`` (PROTOCOL §4
    "Outlines"), against content characters (``maxTotalChars``), ``tokens``, answer
    characters (``answer``) and ``maxTotalFiles`` together.

    - A request of at most :data:`OUTLINES_FIRST_MAX` entries (``wide`` False): the
      outlines of the files this page cannot give whole are reserved first, in order,
      as far as they fit in half of the page; then content fills the rest in request
      order; files that content then leaves out get their outlines in what is left.
    - A wider request: content is packed as ``auto`` packs it in request order; what
      it leaves outlines the next files.
    - Either way a file is cut by the budget only with at least :data:`MIN_CUT_CHARS`
      characters and :data:`MIN_CUT_TOKENS` tokens left for it (unless the page would
      give nothing else): less outlines the next files instead of a sliver.
    - A file no larger than its outline comes as content; a file is outlined at most
      once in a cursor walk (item indexes up to ``done_upto`` were outlined before).
      The file the budget cuts (``partial``) keeps the outline of its rest in its cut
      block, not as an entry of its own.
    - ``resumes``: ``order``'s first file is one a cursor resumes (cut on the page
      before): it gets the content first, cut with as much as the page holds, never an
      outline in its place (PROTOCOL §4 "Cursors")."""
    packer = _OutlinesPacker(
        order,
        loaded_at,
        tokens,
        answer,
        outliner,
        done_upto,
        MIN_PARTIAL_NUMBERED if opts.line_numbers else 1,
    )

    def room() -> _Room:
        return _Room(
            opts.max_total_chars,
            None if tokens is None else tokens.limit,
            None if answer is None else answer.limit,
            opts.max_total_files,
        )

    plan = PackPlan("outlines", order, 0, [], None, 0, 0)
    first = room()
    stop = packer.whole(first, plan, len(order))
    plan.stop = stop
    if stop == len(order):
        return plan
    if not wide:
        # Reserve the outlines of the files from the stop on, then pack content again in
        # what they leave; the files it then leaves out get outlines in what is left.
        reserve = room().half()
        reserve.files = first.files  # files whole content would leave, not more
        plan = PackPlan("outlines", order, 0, [], None, 0, 0)
        end = packer.cover(reserve, plan, stop, len(order))
        first = room()
        for i in plan.outlined:
            first.take(packer.outline(loaded_at(i), plan.outlined[i]))
        for i in plan.included:
            first.take(packer.content(loaded_at(i)))
        plan.stop = packer.whole(first, plan, stop)
        plan.outline_end = end
        if plan.stop + 1 < stop:
            packer.cover(first, plan, plan.stop + 1, stop)
    left = first
    part = order[plan.stop]
    own = plan.outlined.pop(part, None)
    if own is not None:
        left.take(packer.outline(loaded_at(part), own), -1)
    # no content yet: a page of outlines alone would deliver no file, so the file at the
    # stop is cut with what is left however little (every page delivers one: §4 "Cursors")
    cut = packer.cut(left, part, force=(resumes and plan.stop == 0) or not plan.included)
    if cut is None and own is not None:
        plan.outlined[part] = own  # keeps its outline: too little is left to cut it
        left.take(packer.outline(loaded_at(part), own))
    if cut is None:
        end = packer.cover(left, plan, plan.stop, len(order))
        plan.outline_end = max(plan.outline_end, end)
    if cut is not None:
        plan.partial = (part, cut[0])
        plan.partial_tokens = cut[1]
        if answer is not None and left.answer is not None:
            plan.partial_outline = answer.cut_split(loaded_at(part), left.answer)[1]
    given = set(plan.included) | set(plan.outlined) | {part if cut is not None else -1}
    for pos in range(plan.stop, len(order)):
        if order[pos] > done_upto:
            break
        plan.earlier += order[pos] not in given
    return plan


def _pack(
    order: Sequence[int],
    loaded_at: Callable[[int], LoadedItem],
    max_files: int,
    max_chars: int,
    strategy: str,
    tokens: TokenBudget | None = None,
    least: int = 1,
    answer: AnswerBudget | None = None,
) -> PackPlan:
    """Include whole blocks in ``order`` while the totals hold (``tokens`` too, when
    given: each file costs its content's and its framing's tokens; ``answer`` too, when
    given: each file costs its answer characters, framing included, so that files of
    no content still count); the first block that does not fit may be included
    partially (at most one, when at least ``least`` characters are left for it, of
    content and of the answer less its framing and cut notice); every file after it is
    omitted
    (block-safe packing, seed 001). Errors and skipped entries cost nothing. Entries
    after the stop are never loaded."""
    included: list[int] = []
    partial: tuple[int, int] | None = None
    files = chars = used = shown = 0
    full_success = full_count = 0
    for pos, i in enumerate(order):
        lo = loaded_at(i)
        if lo.text is None:
            full_count += lo.result.status == Status.ERROR
            continue
        cost = lo.result.chars
        token_cost = tokens.cost(lo) if tokens is not None else 0
        answer_cost = answer.file(lo) if answer is not None else 0
        if (
            files < max_files
            and chars + cost <= max_chars
            and (tokens is None or used + token_cost <= tokens.limit)
            and (answer is None or shown + answer_cost <= answer.limit)
        ):
            included.append(i)
            files += 1
            chars += cost
            used += token_cost
            shown += answer_cost
            full_success += 1
            full_count += 1
            continue
        left: int | None = None
        if tokens is not None:
            left = tokens.limit - used - (token_cost - (lo.tokens or 0))  # less its framing
        allowed = max_chars - chars
        block = MAX_OUTLINE_CHARS
        if answer is not None:
            content, block = answer.cut_split(lo, answer.limit - shown)
            allowed = min(allowed, content)
        if (
            files < max_files
            and cost > 0  # an empty file is never cut: it is framing alone
            and allowed >= least
            and (left is None or left >= MIN_PARTIAL_TOKENS)
        ):
            partial = (i, allowed)
        plan = PackPlan(strategy, order, pos, included, partial, full_success, full_count)
        plan.partial_tokens = left if partial is not None else None
        plan.partial_outline = block
        return plan
    return PackPlan(strategy, order, len(order), included, partial, full_success, full_count)


class Flat(Sequence[int]):
    """The item indexes of sorted ``[start, end)`` ranges as one sequence."""

    def __init__(self, ranges: Sequence[tuple[int, int]]) -> None:
        self.ranges = list(ranges)
        self._starts: list[int] = []
        total = 0
        for a, b in self.ranges:
            self._starts.append(total)
            total += b - a
        self._len = total

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, k: int) -> int: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[int]: ...
    def __getitem__(self, k: int | slice) -> int | Sequence[int]:
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(self._len))]
        if not 0 <= k < self._len:
            raise IndexError(k)
        r = bisect.bisect_right(self._starts, k) - 1
        return self.ranges[r][0] + k - self._starts[r]

    def __iter__(self) -> Iterator[int]:
        for a, b in self.ranges:
            yield from range(a, b)


class Ordered(Flat):
    """The item indexes of a :class:`Flat` laid out in another ``order`` (a permutation
    of them: ``order: "stable"``): iterated and indexed in that order, while ``ranges``
    still say which indexes are there (what paging reads). ``order`` is kept as given
    (not copied: a ranked page's order is read only as far as the page fills), and
    never changed."""

    def __init__(self, flat: Flat, order: Sequence[int]) -> None:
        super().__init__(flat.ranges)
        self.order = order

    @overload
    def __getitem__(self, k: int) -> int: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[int]: ...
    def __getitem__(self, k: int | slice) -> int | Sequence[int]:
        return self.order[k]

    def __iter__(self) -> Iterator[int]:
        return iter(self.order)


def _size_hint(ws: Workspace, item: Item, lo: LoadedItem | None) -> int:
    """Chars of a loaded item, else its size in bytes (a stat), for smallest-first order."""
    if lo is not None:
        return lo.result.chars
    if item.rel is None:
        return 0
    try:
        return os.stat(ws.abspath(item.rel)).st_size
    except OSError:
        return 0
