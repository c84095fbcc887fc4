"""A focused request's order and packing (PROTOCOL §3 ``focus``, §4 "Focus").

With ``focus`` the matched files fill the budget in rank order: the anchors first
(files the request names itself, in request order), then the others as the root's
ranking orders them (``rank.api.Ranking``); ``focus`` never adds or drops a file.

- :func:`ranked_positions` asks the ranking once per page and gives the fill order, and
  each position's ``rank`` (1-based) and ``why``.
- :func:`plan_ranked` is ranked packing: a file that does not fit whole is passed over
  and smaller ranked files after it still get in; at most one file is cut, the
  best-ranked one passed over, with what is left at the end (its cut block outlines
  the rest). A pure function of the fill order and the files' costs.
- :func:`layout` lays the delivered files out as ``order`` says (request order, rank,
  or the stable order) and puts the omitted ones after them, best-ranked first, so that
  ``files`` lists them in that order.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from readmany_daemon.engine import order as stable_order
from readmany_daemon.engine.items import Expansion, Items, LoadedItem
from readmany_daemon.engine.options import BudgetOptions
from readmany_daemon.engine.outlines import MAX_OUTLINE_CHARS
from readmany_daemon.engine.pack import (
    MIN_PARTIAL_NUMBERED,
    MIN_PARTIAL_TOKENS,
    AnswerBudget,
    Flat,
    Ordered,
    PackPlan,
    Room,
    TokenBudget,
)
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Status
from readmany_daemon.rank.api import WHY_MAX_CHARS, Ranked, Ranking
from readmany_daemon.wire.messages import RankingInfo

#: ``why`` of an anchor, a file the request names itself (it ranks before the others).
ANCHOR_WHY = "named in the request"

#: Files passed over (not fitting whole) after which ranked packing stops looking for
#: smaller ones: each look loads a file.
MAX_PASSED = 32


@dataclass(frozen=True)
class FocusOrder:
    """One page's ranking: ``positions`` the item positions in fill order (anchors in
    request order, then the ranked files best first, then the entries that name no
    file, in request order); ``rank`` item index -> (1-based rank, why of at most
    ``WHY_MAX_CHARS`` characters) of every position; ``info`` what
    ``summary.ranking`` says; ``special`` the positions that are not plain expansion
    matches (explicit entries, entries answered at resolve time): the accounting of
    the omitted ones counts every other one in bulk; ``anchors`` the positions of the
    anchors (the files the request names itself)."""

    positions: Ordered
    rank: _Ranks
    info: RankingInfo
    special: frozenset[int] = frozenset()
    anchors: frozenset[int] = frozenset()


class _Ranks(Mapping[int, tuple[int, str]]):
    """Item index -> (1-based rank, why), made when asked: an answer lists a few dozen
    of the tens of thousands of files a broad glob matches. :meth:`at` gives it for an
    entry whose place in the fill order is known, without the index of every place."""

    def __init__(
        self,
        fill: Sequence[int],
        rel: Callable[[int], str | None],
        held: set[int],
        why: Mapping[str, str],
    ) -> None:
        self._fill = fill
        self._place: dict[int, int] | None = None
        self._rel, self._held, self._why = rel, held, why
        self._made: dict[int, tuple[int, str]] = {}  # the same few on every packing

    def _places(self) -> dict[int, int]:
        if self._place is None:
            self._place = dict(zip(self._fill, range(len(self._fill)), strict=True))
        return self._place

    def at(self, i: int, place: int) -> tuple[int, str]:
        """Entry ``i``'s rank and why, ``place`` being its 0-based place in the fill
        order."""
        made = self._made.get(i)
        if made is None:
            why = ANCHOR_WHY if i in self._held else self._why.get(self._rel(i) or "", "")
            made = self._made[i] = (place + 1, why[:WHY_MAX_CHARS])
        return made

    def __getitem__(self, i: int) -> tuple[int, str]:
        return self.at(i, self._places()[i])

    def reordered(self, fill: Sequence[int]) -> _Ranks:
        """The same ranks' entries over ``fill`` (a permutation of this fill order)."""
        return _Ranks(fill, self._rel, self._held, self._why)

    def kept(self) -> _Ranks:
        """These ranks, each entry's its place in this fill order wherever a page
        places it (:class:`_KeptRanks`)."""
        return _KeptRanks(self._fill, self._rel, self._held, self._why)

    def __iter__(self) -> Iterator[int]:
        return iter(self._fill)

    def __len__(self) -> int:
        return len(self._fill)


class _KeptRanks(_Ranks):
    """Ranks of another fill order (:func:`in_request_order`): each entry's rank is its
    place in the fill order it was ranked in, wherever a page places it."""

    def at(self, i: int, place: int) -> tuple[int, str]:
        return super().at(i, self._places()[i])

    def reordered(self, fill: Sequence[int]) -> _Ranks:
        return self


class _Front(Sequence[int]):
    """``rest`` with ``first`` (one of its values) moved to the front, made as it is read:
    ``first`` is looked for from the start (a resumed file is among the best-ranked)."""

    def __init__(self, first: int, rest: Sequence[int], at: int) -> None:
        self._first, self._rest, self._at = first, rest, at

    def __len__(self) -> int:
        return len(self._rest)

    @overload
    def __getitem__(self, k: int) -> int: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[int]: ...
    def __getitem__(self, k: int | slice) -> int | Sequence[int]:
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        if k == 0:
            return self._first
        return self._rest[k - 1 if k <= self._at else k]

    def __iter__(self) -> Iterator[int]:
        yield self._first
        for k, i in enumerate(self._rest):
            if k != self._at:
                yield i


def in_request_order(order: FocusOrder, positions: Flat) -> FocusOrder:
    """``order`` filling ``positions`` (what is left, in request order) in request
    order, each entry keeping its rank and ``why``: a page whose cursor's keys crowd it
    (``paging.crowded_prefix``) moves the request-order prefix on by a page instead of
    adding keys of files beyond it."""
    fill = list(positions)
    return dataclasses.replace(order, positions=Ordered(positions, fill), rank=order.rank.kept())


def resuming(order: FocusOrder, resumed: int | None) -> FocusOrder:
    """``order`` with ``resumed`` (the position of the file a cursor resumes: cut at the
    end of the page before, it is the best-ranked file left) first in the fill order and
    given the budget before the ranked files, as an anchor is: its rest comes in as
    large a piece as the page holds, not in what the files after it leave (a big file
    cut page after page came in slivers). Its rank and ``why`` stay its own. ``order``
    as it is when ``resumed`` is None or not among its positions."""
    fill = order.positions.order
    if resumed is None or not any(a <= resumed < b for a, b in order.positions.ranges):
        return order
    at = next(k for k, i in enumerate(fill) if i == resumed)
    front = _Front(resumed, fill, at)
    return dataclasses.replace(
        order,
        positions=Ordered(order.positions, front),
        rank=order.rank.reordered(front),
        anchors=order.anchors | {resumed},
    )


def _one_expansion(items: Items, positions: Flat) -> list[str] | None:
    """The root-relative paths of ``positions`` when they are all matches of one
    expansion (a glob or a folder, on any page), in order; else None."""
    if not positions.ranges:
        return None
    seg, _ = items.locate(positions.ranges[0][0])
    segment = items.segments[seg]
    if not isinstance(segment, Expansion):
        return None
    start = items.starts[seg]
    end = start + len(segment.matches)
    if any(not (start <= a and b <= end) for a, b in positions.ranges):
        return None
    if len(positions.ranges) == 1:
        a, b = positions.ranges[0]
        return segment.matches[a - start : b - start]
    return [p for a, b in positions.ranges for p in segment.matches[a - start : b - start]]


def ranked_positions(
    ranking: Ranking,
    items: Items,
    positions: Flat,
    focus: str,
    named: frozenset[str] = frozenset(),
) -> FocusOrder:
    """The :class:`FocusOrder` of ``positions`` for ``focus``: the files (entries with a
    root-relative path) are the candidates, the explicit ones among them the anchors
    (``Item.explicit``: paths and ``files`` entries that are not patterns; also a file
    of ``named``, the root-relative paths the request names without a pattern, which an
    earlier glob of the same request already matched); ``ranking.rank`` is asked once.
    The matches of one expansion (a broad glob) are ranked as they are, no entry made
    for each."""
    rels = None if named else _one_expansion(items, positions)
    if rels is not None:
        ranked: Ranked = ranking.rank(rels, focus, [])
        if ranked.places is not None and len(positions.ranges) == 1:
            start = positions.ranges[0][0]
            # the places as they are (read only as far as the page fills) when they are
            # the positions already
            fill: Sequence[int] = (
                list(map(start.__add__, ranked.places)) if start else ranked.places
            )
        else:
            flat = list(itertools.chain.from_iterable(itertools.starmap(range, positions.ranges)))
            if ranked.places is not None:
                fill = list(map(flat.__getitem__, ranked.places))
            else:
                at = dict(zip(rels, flat, strict=True))
                fill = [at[rel] for rel in ranked.order]
        rank = _Ranks(fill, items.rel, set(), ranked.why)
        return FocusOrder(Ordered(positions, fill), rank, _info(ranked))
    return _ranked_entries(ranking, items, positions, focus, named)


def _info(ranked: Ranked) -> RankingInfo:
    return RankingInfo(
        signals=list(ranked.signals),
        indexed_files=ranked.indexed_files,
        pending_files=ranked.pending_files,
    )


def _ranked_entries(
    ranking: Ranking, items: Items, positions: Flat, focus: str, named: frozenset[str]
) -> FocusOrder:
    """:func:`ranked_positions` entry by entry: anchors, files matched twice, entries
    that name no file."""
    anchors: list[int] = []  # every explicit entry, a file named twice (two windows) too
    matched: dict[str, int] = {}  # the other files, by root-relative path
    candidates: dict[str, None] = {}  # each file once, anchors too, in request order
    others: list[int] = []
    special: set[int] = set()
    # a path named after a glob that matched it has no explicit item of its own (resolve
    # keeps the first): the glob's item stands for it
    for i in positions if named else ():
        if not items.is_preset(i) and items[i].explicit:
            named = named - {items[i].rel}
    for i in positions:
        item = None if items.is_preset(i) else items[i]
        if item is None or item.explicit:
            special.add(i)
        if item is None or not item.rel:
            others.append(i)
            continue
        if item.explicit or item.rel in named:
            anchors.append(i)
            candidates[item.rel] = None
        elif item.rel not in matched and item.rel not in candidates:
            matched[item.rel] = i
            candidates[item.rel] = None
        else:
            others.append(i)
    anchor_rels = list(dict.fromkeys(items[i].rel or "" for i in anchors))
    ranked = ranking.rank(list(candidates), focus, anchor_rels)
    fill = [*anchors, *(matched[rel] for rel in ranked.order if rel in matched), *others]
    rank = _Ranks(fill, items.rel, set(anchors), ranked.why)
    return FocusOrder(
        Ordered(positions, fill), rank, _info(ranked), frozenset(special), frozenset(anchors)
    )


def plan_ranked(
    fill: Sequence[int],
    loaded_at: Callable[[int], LoadedItem],
    opts: BudgetOptions,
    tokens: TokenBudget | None = None,
    answer: AnswerBudget | None = None,
    anchors: Collection[int] = frozenset(),
) -> PackPlan:
    """Ranked packing of the positions ``fill`` (best first) under ``maxTotalFiles``,
    ``maxTotalChars`` (characters of content), ``tokens`` (each file its content's and
    framing's tokens) and ``answer`` (answer characters, framing included).

    A file that does not fit whole is passed over; the files after it still get in
    when they fit. Once the files run out, or :data:`MAX_PASSED` were passed over, the
    rest is omitted, unloaded. The ``anchors`` (the files the request names itself,
    first in ``fill``) get the budget before any ranked file (issue 25): when one of
    them does not fit whole, the ranked files get nothing and it is the file cut. Then
    the best-ranked file passed over is cut to what is
    left (at least one character, :data:`pack.MIN_PARTIAL_NUMBERED` with line numbers,
    and :data:`pack.MIN_PARTIAL_TOKENS` tokens under a token budget), else it stays
    omitted. Errors and skipped entries cost nothing and are answered as they are.
    The plan's strategy is ``"rank"``: every file of ``fill`` it neither includes nor
    cuts nor answers otherwise is omitted (``PackPlan.not_loaded``)."""
    least = MIN_PARTIAL_NUMBERED if opts.line_numbers else 1
    room = Room(
        opts.max_total_chars,
        None if tokens is None else tokens.limit,
        None if answer is None else answer.limit,
        opts.max_total_files,
    )

    def cost(lo: LoadedItem) -> tuple[int, int, int, int]:
        """Content characters, tokens with framing, answer characters, one file."""
        t = tokens.cost(lo) if tokens is not None else 0
        return lo.result.chars, t, answer.file(lo) if answer is not None else 0, 1

    included: list[int] = []
    answered: set[int] = set()  # loaded, no text: errors and skipped entries
    passed: list[int] = []
    places: dict[int, int] = {}
    full_count = 0
    for place, i in enumerate(fill):
        if room.files <= 0 or len(passed) >= MAX_PASSED:
            break
        if passed and passed[0] in anchors and i not in anchors:
            break  # an anchor did not fit whole: the rest of the budget is its own
        places[i] = place
        lo = loaded_at(i)
        if lo.text is None:
            answered.add(i)
            full_count += lo.result.status == Status.ERROR
        elif room.fits(cost(lo)):
            room.take(cost(lo))
            included.append(i)
            full_count += 1
        else:
            passed.append(i)
    partial: tuple[int, int] | None = None
    partial_tokens: int | None = None
    if passed and room.files > 0:
        lo = loaded_at(passed[0])
        allowed = room.chars
        if room.tokens is not None:
            partial_tokens = room.tokens - (cost(lo)[1] - (lo.tokens or 0))  # less framing
        block = MAX_OUTLINE_CHARS
        if answer is not None and room.answer is not None:
            content, block = answer.cut_split(lo, room.answer)
            allowed = min(allowed, content)
        enough = partial_tokens is None or partial_tokens >= MIN_PARTIAL_TOKENS
        if lo.result.chars > 0 and allowed >= least and enough:
            partial = (passed[0], allowed)
        else:
            partial_tokens = None
    plan = PackPlan("rank", fill, 0, included, partial, len(included), full_count)
    plan.partial_tokens = partial_tokens
    if partial is not None:
        plan.partial_outline = block
    plan.answered, plan.places = answered, places
    return plan


class Laid(Flat):
    """A ranked page's positions in answer order: first ``delivered``, the files it
    delivers (whole, cut or answered without text) as ``order`` lays them out, then
    the ones it omits (the other positions of ``fill``), best-ranked first. ``given``
    is the set of ``delivered``, ``places`` each one's 0-based place in the fill order.
    The omitted part is made only when iterated or indexed: the accounting walks the
    fill order itself (``account``)."""

    def __init__(
        self, fill: Ordered, delivered: list[int], given: set[int], places: Mapping[int, int]
    ) -> None:
        super().__init__(fill.ranges)
        self.fill, self.delivered, self.given, self.places = fill, delivered, given, places
        self._order: list[int] | None = None

    def _laid(self) -> list[int]:
        if self._order is None:
            omitted = itertools.filterfalse(self.given.__contains__, self.fill.order)
            self._order = [*self.delivered, *omitted]
        return self._order

    @overload
    def __getitem__(self, k: int) -> int: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[int]: ...
    def __getitem__(self, k: int | slice) -> int | Sequence[int]:
        return self._laid()[k]

    def __iter__(self) -> Iterator[int]:
        return iter(self._laid())


def layout(
    ws: Workspace, items: Items, fill: Ordered, plan: PackPlan, order: str
) -> Laid | Ordered:
    """The positions of ``fill`` in answer order: first what the page delivers (whole,
    cut, outlined or answered otherwise) laid out as ``order`` says (``"rank"``: the
    fill order; ``"stable"``: the root's stable order, ``engine.order.stable``;
    otherwise request order), then the files it omits, best-ranked first."""
    given = plan.given()
    stopped = len(plan.order) < len(fill)
    if stopped:
        # stopOnError: the entries after the error are laid with the delivered ones
        # (accounted as stopped, ``account.account_tail``), in the fill order
        left = {i for i in plan.order if i not in given}
        given = {i for i in fill if i not in left}
        delivered = [i for i in fill if i not in left]
    else:
        delivered = sorted(given, key=plan.places.__getitem__)
    if order == "stable":
        flat = Flat([(i, i + 1) for i in sorted(delivered)])
        delivered = list(stable_order.stable(ws, items, flat))
    elif order != "rank":
        delivered.sort()
    laid = Laid(fill, delivered, given, plan.places)
    return Ordered(fill, list(laid)) if stopped else laid
