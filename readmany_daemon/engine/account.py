"""Accounting: what the answer says about each entry, filled in output order.

``Account`` counts and lists the entries (omitted ones included, keeping large
expansions small: ``MAX_LISTED``); :func:`account` fills it for one packing of a page:
the entries the plan gives (the partial one cut to what the budget leaves), then those
it leaves unloaded. A ranked page (``engine.focus``) lists its delivered entries, then
its omitted ones best-ranked first, and counts the omitted matches past every list's
room in bulk, once, without a ``FileResult`` each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from readmany_daemon.content import tokens
from readmany_daemon.engine.budget import budget_cut, span_rest, token_cut
from readmany_daemon.engine.focus import FocusOrder, Laid
from readmany_daemon.engine.items import Item, Items, LoadedItem, Piece, Resolved
from readmany_daemon.engine.load import Loads
from readmany_daemon.engine.notices import MAX_NAMED_IN_CONTENT, continuation_request
from readmany_daemon.engine.options import LoadOptions, Options
from readmany_daemon.engine.outlines import MAX_OUTLINE_CHARS, Outlined
from readmany_daemon.engine.pack import MAX_LISTED, Flat, Ordered, PackPlan
from readmany_daemon.errors import Code, Status
from readmany_daemon.wire.messages import Attachment, FileResult, Summary


@dataclass
class Account:
    """What the answer says about its entries, filled in output order."""

    summary: Summary
    pieces: list[Piece] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    continuations: list[tuple[str, str]] = field(default_factory=list)
    remaining: list[tuple[int, int]] = field(default_factory=list)
    resume: dict[int, tuple[int, int | None, int | None, str | None]] = field(default_factory=dict)
    omitted_labels: list[str] = field(default_factory=list)
    omitted_total: int = 0
    listed_expansion: int = 0
    unlisted_omitted: int = 0
    unlisted_skipped: int = 0
    unlisted_omitted_names: list[tuple[str, str | None]] = field(default_factory=list)
    unlisted_skipped_names: list[tuple[str, str | None]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    outlined: int = 0
    #: ``packing: "outlines"``: omitted files of this page that got no outline and were
    #: not outlined on an earlier page; the last item index outlined on this page.
    not_outlined: int = 0
    outlined_upto: int | None = None
    #: How this answer's texts are counted (exactly unless the answer is huge and has no
    #: token budget: ``tokens.Tally``).
    tally: tokens.Tally = field(default_factory=lambda: tokens.Tally(None))

    def count(self, result: FileResult) -> None:
        """Count ``result`` into the summary: files read, cut and omitted, characters of
        content."""
        st = result.status
        if st in (Status.OK, Status.PARTIAL):
            self.summary.read += 1
            self.summary.total_chars += result.chars
            self.summary.truncated += st == Status.PARTIAL
        elif st == Status.OMITTED:
            self.summary.omitted += 1
            self.omitted_total += 1
            if len(self.omitted_labels) <= MAX_LISTED:
                self.omitted_labels.append(result.path)
        elif st == Status.SKIPPED and result.code == Code.NO_MATCH:
            self.summary.no_match += 1  # a pattern, not a file (PROTOCOL §4)
        elif st == Status.SKIPPED:
            self.summary.skipped += 1
        elif st == Status.UNCHANGED:
            self.summary.unchanged += 1  # no content: no characters (engine.receipts)
        else:
            self.summary.errors += 1

    def add(self, piece: Piece) -> None:
        """Count ``piece`` and list it, unless it is an omitted or skipped expansion match
        past the first ``MAX_LISTED`` (PROTOCOL §4: large expansions stay small)."""
        self.count(piece.result)
        if not piece.explicit and piece.result.status in (Status.OMITTED, Status.SKIPPED):
            self.listed_expansion += 1
            if self.listed_expansion > MAX_LISTED:
                r = piece.result
                if r.status == Status.OMITTED:
                    self.unlisted_omitted += 1
                    names = self.unlisted_omitted_names
                else:
                    self.unlisted_skipped += 1
                    names = self.unlisted_skipped_names
                if len(names) < MAX_NAMED_IN_CONTENT:  # the first few, for llmContent
                    names.append((r.path, r.code))
                return
        self.pieces.append(piece)

    def add_outlined(self, piece: Piece) -> None:
        """Count and list ``piece``, a file given as its outline (always listed: the
        budget bounds how many there are)."""
        self.count(piece.result)
        self.outlined += 1
        self.pieces.append(piece)

    def full(self) -> bool:
        """Whether every list an omitted expansion match could go to is full: one more
        is only counted (:meth:`count_omitted`)."""
        return (
            self.listed_expansion >= MAX_LISTED
            and len(self.omitted_labels) > MAX_LISTED
            and len(self.unlisted_omitted_names) >= MAX_NAMED_IN_CONTENT
        )

    def count_omitted(self, n: int) -> None:
        """Count ``n`` omitted expansion matches once :meth:`full`: in the summary and
        the unlisted count, nothing listed."""
        self.listed_expansion += n
        self.unlisted_omitted += n
        self.summary.omitted += n
        self.omitted_total += n

    def omit_one(self, items: Items, i: int, code: str) -> None:
        """Account for item ``i``, omitted with ``code``: as ``add(omitted_piece(...))``,
        but an expansion match past every list's room is only counted (no
        ``FileResult`` made: a focused read omits tens of thousands one by one)."""
        self.remaining.append((i, i + 1))
        if self.full() and (items.match_label(i) is not None or not items[i].explicit):
            self.count_omitted(1)
            return
        self.add(omitted_piece(items, i, code))

    def omit_many(self, items: Items, start: int, end: int, code: str) -> None:
        """Account for expansion matches ``[start, end)``, all omitted with ``code``,
        making ``FileResult``s only for the few that are listed."""
        n = end - start
        if n <= 0:
            return
        self.remaining.append((start, end))
        listable = max(0, MAX_LISTED - self.listed_expansion)
        for i in range(start, min(end, start + listable)):
            self.add(omitted_piece(items, i, code))
        rest = n - min(n, listable)
        if rest:
            self.listed_expansion += rest
            self.unlisted_omitted += rest
            self.summary.omitted += rest
            self.omitted_total += rest
            room = max(0, MAX_LISTED + 1 - len(self.omitted_labels))
            self.omitted_labels.extend(items.label(i) for i in range(end - rest, end)[:room])
            named = max(0, MAX_NAMED_IN_CONTENT - len(self.unlisted_omitted_names))
            self.unlisted_omitted_names.extend(
                (items.label(i), code) for i in range(end - rest, end)[:named]
            )


_OMITTED_MESSAGES = {
    Code.BUDGET: "not read: the answer's budget (maxTotalFiles / maxTotalChars) was used up",
    Code.STOPPED: "not read: an earlier file failed and stopOnError is set",
}


def omitted_piece(items: Items, i: int, code: str) -> Piece:
    """The piece of item ``i`` of ``items`` omitted with ``code`` (``budget``, or
    ``stopped`` after a failure under ``stopOnError``): its entry in ``files``, no
    content."""
    label = items.match_label(i)  # an expansion match: no Item made for it
    if label is not None:
        key, explicit = label, False
    else:
        item = items[i]
        label, key, explicit = item.label, item.key, item.explicit
    result = FileResult(
        path=label,
        status=Status.OMITTED,
        source="disk",
        chars=0,
        code=code,
        message=_OMITTED_MESSAGES[code],
    )
    return Piece(result, key, None, explicit)


def outlined_piece(items: Items, i: int, outlined: Outlined) -> Piece:
    """The piece of item ``i`` given as its outline (``packing: "outlines"``): status
    ``omitted``, code ``budget``, ``outline`` set, the outline framed as its content."""
    piece = omitted_piece(items, i, Code.BUDGET)
    piece.result.message = "not read: the answer's budget was used up; its outline is given instead"
    piece.result.outline = outlined.symbols
    piece.content = outlined.body
    piece.tokens = outlined.body_tokens
    return piece


def account_tail(
    acc: Account, items: Items, indexes: Flat, budget_from: int, stopped_at: int
) -> None:
    """Account for the entries from position ``budget_from`` on, none of them loaded:
    omitted (``budget`` before ``stopped_at``, ``stopped`` after), except the ones
    answered at resolve time, which are reported as they are. Expansion runs are handled
    a whole run at a time."""
    if budget_from >= len(indexes):
        return
    if isinstance(indexes, Ordered):  # one at a time, in that order
        for pos in range(budget_from, len(indexes)):
            i = indexes[pos]
            preset = items.is_preset(i)
            if preset and pos < stopped_at:
                item = items[i]
                assert item.result is not None
                acc.add(Piece(item.result, item.key, None, item.explicit))
            else:
                acc.remaining.append((i, i + 1))
                acc.add(omitted_piece(items, i, Code.BUDGET if pos < stopped_at else Code.STOPPED))
        return
    tail_start = indexes[budget_from]
    stop_index = indexes[stopped_at] if stopped_at < len(indexes) else len(items)
    for a, b in indexes.ranges:
        a = max(a, tail_start)
        while a < b:
            seg, _ = items.locate(a)
            seg_end = items.starts[seg + 1] if seg + 1 < len(items.starts) else len(items)
            end = min(b, seg_end)
            segment = items.segments[seg]
            if isinstance(segment, Item):
                if segment.result is not None and a < stop_index:
                    acc.add(Piece(segment.result, segment.key, None, segment.explicit))
                else:
                    code = Code.BUDGET if a < stop_index else Code.STOPPED
                    acc.remaining.append((a, a + 1))
                    acc.add(omitted_piece(items, a, code))
                a += 1
                continue
            if a < stop_index:
                acc.omit_many(items, a, min(end, stop_index), Code.BUDGET)
            if end > stop_index:
                acc.omit_many(items, max(a, stop_index), end, Code.STOPPED)
            a = end


def account(
    resolved: Resolved,
    positions: Flat,
    active: int,
    stopped_at: int,
    plan: PackPlan,
    loads: Loads,
    opts: Options,
    exact_chars: int | None,
    focused: FocusOrder | None = None,
) -> Account:
    """Account for every position in output order: the entries the plan includes (the
    partial one cut to what the budget leaves), then those it leaves unloaded. With
    ``focused`` (a ranked answer) every entry listed gets its ``rank`` and ``why``.
    ``exact_chars``: characters of text counted exactly (``tokens.Tally``; None: all).
    """
    items = resolved.items
    summary = Summary(
        matched=len(positions) - _not_files(items, positions),
        hidden=dict(resolved.hidden),
        hidden_folders=dict(resolved.hidden_folders),
    )
    acc = Account(summary)
    acc.tally = tokens.Tally(exact_chars)
    if focused is not None and isinstance(positions, Laid) and active >= len(positions):
        _account_ranked(acc, items, positions, plan, loads, opts, focused)
        return acc
    budget_from, omitted_set = plan.not_loaded(active)
    for pos, i in enumerate(positions):
        if pos >= budget_from:
            break
        if focused is not None:
            listed = len(acc.pieces)
            _account_one(acc, items, i, plan, omitted_set, loads, opts)
            if len(acc.pieces) > listed:
                acc.pieces[-1].result.rank, acc.pieces[-1].result.why = focused.rank[i]
            continue
        _account_one(acc, items, i, plan, omitted_set, loads, opts)
    account_tail(acc, items, positions, budget_from, stopped_at)
    if focused is not None and budget_from < len(positions):
        # The entries after an error (stopOnError), one piece each while listed.
        tail = {items.label(i): focused.rank[i] for i in positions[budget_from:]}
        for piece in acc.pieces:
            if piece.result.rank is None and piece.result.path in tail:
                piece.result.rank, piece.result.why = tail[piece.result.path]
    return acc


def _account_ranked(
    acc: Account,
    items: Items,
    laid: Laid,
    plan: PackPlan,
    loads: Loads,
    opts: Options,
    focused: FocusOrder,
) -> None:
    """A ranked page (``focus.layout``): its delivered entries one by one, then its
    omitted ones best-ranked first, one piece each while some list has room
    (``Account.full``), the rest counted in bulk, except the entries that are not plain
    expansion matches (``FocusOrder.special``), which are accounted one by one. What
    the cursor still delivers (``Account.remaining``) is every position but the ones
    this page delivered, as ranges."""
    done: list[int] = []
    for i in laid.delivered:
        listed, left = len(acc.pieces), len(acc.remaining)
        _account_one(acc, items, i, plan, None, loads, opts)
        if len(acc.pieces) > listed:
            rank = focused.rank.at(i, laid.places[i])
            acc.pieces[-1].result.rank, acc.pieces[-1].result.why = rank
        if len(acc.remaining) == left:
            done.append(i)
    delivered = laid.given
    seen: set[int] = set()
    special = focused.special
    for place, i in enumerate(focused.positions.order):
        if acc.full():
            break
        if i in delivered:
            continue
        seen.add(i)
        if i in special:
            _omit_ranked(acc, items, i, place, plan, loads, opts, focused, done)
            continue
        piece = omitted_piece(items, i, Code.BUDGET)  # a plain match: as omit_one does
        listed = len(acc.pieces)
        acc.add(piece)
        if len(acc.pieces) > listed:
            piece.result.rank, piece.result.why = focused.rank.at(i, place)
    # the rest, past every list's room: counted, except the entries that are not plain
    # expansion matches (an explicit one is always listed), in rank order
    rest = [i for i in special if i not in seen and i not in delivered]
    for i in sorted(rest, key=focused.rank.__getitem__):
        _omit_ranked(acc, items, i, focused.rank[i][0] - 1, plan, loads, opts, focused, done)
    acc.count_omitted(len(laid) - len(laid.delivered) - len(seen) - len(rest))
    acc.remaining = _without(laid.ranges, done)


def _omit_ranked(
    acc: Account,
    items: Items,
    i: int,
    place: int,
    plan: PackPlan,
    loads: Loads,
    opts: Options,
    focused: FocusOrder,
    done: list[int],
) -> None:
    """Account for entry ``i`` that a ranked page omits (0-based ``place`` in the fill
    order): omitted, or answered as it is when resolve answered it (``done``)."""
    listed = len(acc.pieces)
    if items.is_preset(i):
        _account_one(acc, items, i, plan, None, loads, opts)
        done.append(i)
    else:
        acc.omit_one(items, i, Code.BUDGET)
    if len(acc.pieces) > listed:
        acc.pieces[-1].result.rank, acc.pieces[-1].result.why = focused.rank.at(i, place)


def _without(ranges: list[tuple[int, int]], done: list[int]) -> list[tuple[int, int]]:
    """The sorted ``[start, end)`` ``ranges`` less the positions ``done``."""
    out: list[tuple[int, int]] = []
    gone = sorted(done)
    k = 0
    for a, b in ranges:
        while k < len(gone) and gone[k] < a:
            k += 1
        while k < len(gone) and gone[k] < b:
            if a < gone[k]:
                out.append((a, gone[k]))
            a = gone[k] + 1
            k += 1
        if a < b:
            out.append((a, b))
    return out


def _account_one(
    acc: Account,
    items: Items,
    i: int,
    plan: PackPlan,
    omitted_set: set[int] | None,
    loads: Loads,
    opts: Options,
) -> None:
    """Account for position ``i``, which the plan reaches: omitted, outlined, or loaded
    (the partial one cut to what the budget leaves)."""
    if omitted_set is not None and i in omitted_set and not items.is_preset(i):
        acc.omit_one(items, i, Code.BUDGET)
        return
    if i in plan.outlined:  # not delivered: the cursor still delivers its content
        acc.remaining.append((i, i + 1))
        acc.add_outlined(outlined_piece(items, i, plan.outlined[i]))
        return
    lo = loads(i)
    if plan.partial is not None and plan.partial[0] == i and lo.window is not None:
        lo = _cut_partial(
            acc, i, lo, plan.partial[1], plan.partial_tokens, loads, opts.load, plan.partial_outline
        )
    elif plan.partial is not None and plan.partial[0] == i and lo.recut is not None:
        lo = _recut(lo, plan.partial[1], plan.partial_tokens, loads)  # a notebook
    _add_loaded(acc, lo, loads)


def _not_files(items: Items, positions: Flat) -> int:
    """How many of ``positions`` are entries answered at resolve time that name no file
    (``Item.names_file``): not counted in ``summary.matched``."""
    n = 0
    for seg, segment in enumerate(items.segments):
        if isinstance(segment, Item) and not segment.names_file:
            i = items.starts[seg]
            n += any(a <= i < b for a, b in positions.ranges)
    return n


def _cut_partial(
    acc: Account,
    i: int,
    lo: LoadedItem,
    allowed: int,
    allowed_tokens: int | None,
    loads: Loads,
    shown: LoadOptions,
    outline_chars: int = MAX_OUTLINE_CHARS,
) -> LoadedItem:
    """The plan's partial entry cut to ``allowed`` characters (and ``allowed_tokens``
    tokens when set), its outline block to ``outline_chars`` characters; when it goes
    on, the cursor resumes it at its next offset (with what is left of its
    ``limit``)."""
    item = lo.item
    lo = budget_cut(lo, allowed, shown, outline_chars=outline_chars)
    if allowed_tokens is not None:
        lo = token_cut(lo, allowed_tokens, shown, loads.cache, outline_chars=outline_chars)
    r = lo.result
    if r.next_column is not None and r.line_end is not None:
        # Cut inside its last line (a first line longer than the page held): the next
        # page goes on in that line, at the column where this one stopped.
        acc.remaining.append((i, i + 1))
        left = (item.offset or 1) + item.limit - r.line_end if item.limit else None
        acc.resume[i] = (r.line_end, left, r.next_column, r.sha256)
    elif r.next_offset is not None:
        acc.remaining.append((i, i + 1))
        left = (item.offset or 1) + item.limit - r.next_offset if item.limit else None
        acc.resume[i] = (r.next_offset, left, None, r.sha256)
    return lo


def _recut(lo: LoadedItem, allowed: int, allowed_tokens: int | None, loads: Loads) -> LoadedItem:
    """An entry that is not a line window (a notebook, cut at cells by ``lo.recut``) cut
    to ``allowed`` characters and, when set, ``allowed_tokens`` tokens: the character
    cut shrinks in proportion to the tokens' excess until it fits."""
    assert lo.recut is not None
    cut = lo.recut(allowed)
    while allowed_tokens is not None and allowed > 1:
        counted = loads.tokens(cut)
        if counted <= allowed_tokens:
            break
        allowed = max(1, min(allowed - 1, allowed * allowed_tokens // counted))
        cut = lo.recut(allowed)
    return cut


def _add_loaded(acc: Account, lo: LoadedItem, loads: Loads) -> None:
    """Account for a loaded entry: its piece (with its content's tokens), its
    attachment, its continuation."""
    item, res = lo.item, lo.result
    text = lo.text if res.status in (Status.OK, Status.PARTIAL) else None
    if res.redactions is not None:
        # Only the redacted lines this answer shows (a line window, a cut); an entry
        # shown without a line window (a notebook's cells) keeps them all.
        window = lo.window if text is not None else None
        if window is not None:
            first, last = window.line_start, window.line_end
            res.redactions = [r for r in res.redactions if first <= r.line <= last] or None
        elif text is None:
            res.redactions = None
    counted: int | None = None
    if text is not None:
        # A count kept with the cache entry costs nothing; another is counted while the
        # answer's tally lasts, else left to render_counted's estimate.
        counted = loads.kept_tokens(lo)
        if counted is None and acc.tally.exact(text):
            counted = loads.tokens(lo)
    acc.add(Piece(res, item.key, text, item.explicit, tokens=counted))
    if lo.attachment is not None:
        acc.attachments.append(lo.attachment)
    acc.attachments.extend(lo.attachments)
    if res.status == Status.PARTIAL and res.next_column is not None and res.line_end is not None:
        # A line cut short goes on inside that line (nextOffset would skip its rest),
        # to the span's last line.
        rest = span_rest(item, res.line_end)
        request = continuation_request(res.path, res.line_end, res.next_column, rest)
        acc.continuations.append((res.path, request))
    elif res.status == Status.PARTIAL and res.next_offset is not None:
        rest = span_rest(item, res.next_offset)  # the rest of a span, to its last line
        request = continuation_request(res.path, res.next_offset, limit=rest)
        acc.continuations.append((res.path, request))
