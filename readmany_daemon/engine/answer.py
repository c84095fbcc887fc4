"""``readMany/read`` as one short pipeline: resolve → load → budget → pack → render.

``answer(workspace, request)`` is the whole of ``readMany/read`` (PROTOCOL §3-§5); each
phase below is a named function over the stage modules. Per-file problems are
``FileResult`` statuses and codes, never exceptions; only ``InvalidParams`` escapes (a
bad exclude pattern), naming the field. A cursor is decoded at the edge
(``wire.cursor.decode_read_request``): the engine receives its ``Continuation``.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Iterable, Iterator, Sequence

import msgspec

from readmany_daemon.content import tokens
from readmany_daemon.engine.budget import budget_cut, token_cut
from readmany_daemon.engine.items import Expansion, Items, LoadedItem, Resolved
from readmany_daemon.engine.load import Loads, RequestPaths
from readmany_daemon.engine.outlines import Outliner
from readmany_daemon.engine.pack import (
    FRAME_TOKENS,
    MAX_LISTED,
    Account,
    Flat,
    PackPlan,
    TokenBudget,
    account_tail,
    choose_plan,
    omitted_piece,
    outlined_piece,
)
from readmany_daemon.engine.render import (
    Notices,
    Piece,
    continuation_request,
    render_counted,
    return_display,
)
from readmany_daemon.engine.resolve import resolve
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code, InvalidParams, Status
from readmany_daemon.wire.cursor import (
    MAX_CURSOR_CHARS,
    Continuation,
    Key,
    Position,
    ReadRequest,
    cursor_digest,
    encode_cursor,
    key_hash,
    key_order,
)
from readmany_daemon.wire.messages import (
    PackingInfo,
    ReadManyParams,
    ReadManyResult,
    Summary,
    wire_safe,
)


def answer(ws: Workspace, req: ReadRequest | ReadManyParams) -> ReadManyResult:
    """Answer ``readMany/read`` on ``ws`` (PROTOCOL §3-§5); see :func:`answer_parts`."""
    result, parts = answer_parts(ws, req)
    result.llm_content = "".join(parts)
    return result


def answer_parts(
    ws: Workspace, req: ReadRequest | ReadManyParams
) -> tuple[ReadManyResult, list[str]]:
    """Answer ``readMany/read`` on ``ws`` (PROTOCOL §3-§5) with ``llmContent`` left empty
    and returned beside the result as strings to concatenate (``render.render_parts``):
    the daemon encodes and sends a large answer part by part instead of building one
    string of it.

    ``req`` is a decoded request (``wire.cursor.decode_read_request``); bare
    ``ReadManyParams`` without a cursor are accepted too.

    Work grows with the files read, not with the size of an expansion: the matches of a
    glob stay a list of paths, and entries after the budget's stop are counted and
    listed (up to ``MAX_LISTED``) without being loaded.

    Raises ``InvalidParams`` for a bad exclude pattern; every per-file problem is a
    ``FileResult`` status instead.
    """
    request = _as_request(req)
    params = request.params
    cont = request.continuation
    if cont is not None and cont.digest != cursor_digest(ws.root, params):
        raise InvalidParams(
            "invalid params: $.cursor belongs to another root or another request; "
            "send it alone, in the root it came from",
            "$.cursor",
        )
    since = _now()
    resolved = resolve(ws, params)
    items = resolved.items
    positions = _positions(items, cont)
    created = _created(ws, items, cont) if cont is not None else []
    # Later pages go in request order, whatever the first one did (outlines go on).
    later = cont is not None and params.packing != "outlines"
    packing = msgspec.structs.replace(params, packing="request-order") if later else params
    with RequestPaths(ws) as paths:
        loads = Loads(ws, items, params, paths)
        active, stopped_at = _stop_on_error(positions, loads, params)
        budget = _token_budget(params, loads)
        outliner = Outliner(loads, loads.outline, params.format, FRAME_TOKENS)
        room: int | None = None
        char_steps = 0  # packings with fewer content characters, for maxAnswerChars
        for attempt in itertools.count():
            plan, switched = choose_plan(ws, items, active, loads, packing, budget, outliner)
            acc = _account(resolved, positions, len(active), stopped_at, plan, loads, params)
            cursor = _next_cursor(ws, params, items, positions, cont, since, acc, carry=True)
            if cursor is not None and len(cursor) > MAX_CURSOR_CHARS:
                # Too many keys delivered beyond the prefix (a smallest-first page of many
                # small files): leave the last of them for later pages instead. Only a
                # request too large to carry is then left out of the cursor.
                dropped = _overflow(ws, params, items, positions, cont, since, acc)
                if dropped:
                    plan.drop(dropped)
                    acc = _account(
                        resolved, positions, len(active), stopped_at, plan, loads, params
                    )
                cursor = _next_cursor(ws, params, items, positions, cont, since, acc)
            acc.created = [items.label(i) for i in created[:MAX_LISTED]]
            answered = _assemble(ws, params, resolved, plan, switched, acc, cursor, room)
            limit = params.max_total_tokens
            total = answered[0].summary.estimated_tokens
            tokens_over = budget is not None and limit is not None and total > limit
            text_chars = sum(map(len, answered[1]))
            chars_over = params.max_answer_chars is not None and (
                text_chars > params.max_answer_chars
            )
            if not tokens_over and not chars_over:
                return answered
            more = False
            if tokens_over:
                assert budget is not None and limit is not None
                more, room = _shrink(budget, room, acc, total, limit, attempt)
            if chars_over:
                assert params.max_answer_chars is not None
                fewer, packing, room, char_steps = _shrink_chars(
                    packing, room, acc, text_chars, params.max_answer_chars, char_steps
                )
                more = more or fewer
            if not more or attempt >= _MAX_ATTEMPTS:
                return answered  # nothing left to leave out (see MIN_TOTAL_TOKENS)
        raise AssertionError("unreachable")


#: Packings tried at most to fit ``maxTotalTokens`` (one is nearly always enough: the
#: next ones leave out what the notices of the first one took).
_MAX_ATTEMPTS = 24


def _token_budget(params: ReadManyParams, loads: Loads) -> TokenBudget | None:
    """The token budget of the files' contents and framing under ``maxTotalTokens``,
    at first all of it less the answer's end line; None without ``maxTotalTokens``."""
    if params.max_total_tokens is None:
        return None

    def cost(lo: LoadedItem) -> int:
        return loads.tokens(lo) + tokens.count(lo.result.path) + FRAME_TOKENS

    return TokenBudget(params.max_total_tokens - FRAME_TOKENS, cost)


def _shrink(
    budget: TokenBudget, room: int | None, acc: Account, total: int, limit: int, attempt: int
) -> tuple[bool, int | None]:
    """After an answer of ``total`` tokens, over ``limit`` (``maxTotalTokens``): when its
    framing and notices take over half of the limit (names of omitted files, framed
    errors) or no content is left, name fewer entries; else leave out as many more
    tokens of content as it was over (at least 16, doubled on each later ``attempt``:
    the packing changes only when a whole file no longer fits). Returns whether
    anything was left out, and the new ``room`` of :class:`Notices`."""
    other = total - sum(p.tokens or 0 for p in acc.pieces)
    if room != 0 and (budget.limit <= 0 or other > limit // 2):
        return True, 0 if room is not None and room <= _ROOM_STEP else _ROOM_STEP
    if budget.limit <= 0:
        return False, room
    budget.limit = max(0, budget.limit - max(total - limit, 16) * 2**attempt)
    return True, room


def _shrink_chars(
    packing: ReadManyParams,
    room: int | None,
    acc: Account,
    text_chars: int,
    limit: int,
    steps: int,
) -> tuple[bool, ReadManyParams, int | None, int]:
    """After an answer whose ``llmContent`` holds ``text_chars`` characters, over
    ``limit`` (``maxAnswerChars``): like :func:`_shrink`, name fewer entries when the
    framing and notices take over half of the limit, else pack again with as many
    fewer characters of content as it was over (the cut file is cut that much shorter;
    doubled after each of ``steps`` such packings, for framing that a file dropped
    along with its content changes). Returns whether anything was left out, the params
    to pack with (a smaller ``maxTotalChars``: the request's own, in its cursor, is
    untouched), the new ``room`` of :class:`Notices` and ``steps``."""
    content = acc.summary.total_chars
    other = text_chars - content
    if room != 0 and (content <= 1 or other > limit // 2):
        step = 0 if room is not None and room <= _ROOM_STEP else _ROOM_STEP
        return True, packing, step, steps
    if content <= 1:
        return False, packing, room, steps
    allowed = max(1, content - (text_chars - limit + 16) * 2**steps)
    return True, msgspec.structs.replace(packing, max_total_chars=allowed), room, steps + 1


#: The first ``room`` tried when the notices take too much of a token budget.
_ROOM_STEP = 10


def _as_request(req: ReadRequest | ReadManyParams) -> ReadRequest:
    """``req`` as a ``ReadRequest``. Bare params must not carry a cursor: the engine
    never opens one (the edge does, once)."""
    if isinstance(req, ReadRequest):
        return req
    if req.cursor:
        raise ValueError(
            "a request with a cursor must be decoded first (wire.cursor.decode_read_request)"
        )
    return ReadRequest(params=req)


def _positions(items: Items, continuation: Continuation | None) -> Flat:
    """The item positions to answer: all of them, or those after the cursor's key that
    it does not name as delivered already (a budget-cut file resuming at its next
    offset). Positions come from keys, so files created or deleted since the cursor was
    made move nothing."""
    if continuation is None:
        return Flat([(0, len(items))] if len(items) else [])
    at = continuation.position
    start = items.first_after(at.after)
    skip = sorted({i for i in _found(items, at.beyond) if i >= start})
    ranges: list[tuple[int, int]] = []
    a = start
    for i in skip:
        ranges.append((a, i))
        a = i + 1
    ranges.append((a, len(items)))
    if at.resume is not None:
        cut = items.find(at.resume[0])
        if cut is not None and cut >= start and cut not in skip:
            # Budget cuts resume at a line's start: a column asked for is behind.
            items.replace(cut, offset=at.resume[1], limit=at.resume[2], column=None)
    return Flat([r for r in ranges if r[0] < r[1]])


def _found(items: Items, keys: Iterable[Key]) -> Iterator[int]:
    """The positions of the ``keys`` that exist now."""
    for key in keys:
        i = items.find(key)
        if i is not None:
            yield i


def _now() -> int:
    """The time (ns) a file changed from now on will have at least as its ``st_ctime``:
    file times come from the kernel's coarse clock (Linux), which lags the fine one."""
    coarse = getattr(time, "CLOCK_REALTIME_COARSE", None)
    if coarse is not None:
        return time.clock_gettime_ns(coarse)
    return time.time_ns() - _CTIME_SLACK_NS


#: Where no coarse clock is known: how far file times may lag ``time.time_ns()``.
_CTIME_SLACK_NS = 20_000_000


#: At most this many subsets of the candidates are tried to tell created files from
#: changed ones; past it, every candidate is named (none is ever lost).
_SUBSETS_TRIED = 20_000


def _region(items: Items, upto: int, beyond: Iterable[int]) -> Iterator[int]:
    """The positions of the files of the delivered part: before ``upto`` and
    ``beyond`` (entries answered at resolve time, errors and the like, aside)."""
    for seg, segment in enumerate(items.segments):
        a = items.starts[seg]
        if a >= upto:
            break
        if isinstance(segment, Expansion):
            yield from range(a, min(upto, a + len(segment.matches)))
        elif segment.result is None:
            yield a
    for i in sorted(set(beyond)):
        if i >= upto and not items.is_preset(i):
            yield i


def _fingerprint(items: Items, region: Iterable[int]) -> tuple[int, int]:
    """How many files ``region`` holds and the sum of their key hashes (mod 2**64)."""
    count = total = 0
    for i in region:
        count += 1
        total += key_hash(items.key(i))
    return count, total % (1 << 64)


def _created(ws: Workspace, items: Items, cont: Continuation) -> list[int]:
    """Files created since the cursor's page in the part of the order it had delivered
    (a rename into it too), to be named in a notice: never delivered by the chain.

    The cursor holds how many files that part held and the sum of their key hashes.
    When they still match, nothing was created there. Otherwise the files whose inode
    changed since the page (``st_ctime``) are the candidates, and the subset of them
    that makes the counts match again is what was there before; when no subset does
    (files were deleted there too) every candidate is named."""
    at = cont.position
    region = list(_region(items, items.first_after(at.after), _found(items, at.beyond)))
    if _fingerprint(items, region) == (at.count, at.total):
        return []
    # A file created there since has changed since; the others changed may be edits.
    candidates: list[tuple[int, int]] = []
    kept = kept_total = 0
    for i in region:
        h = key_hash(items.key(i))
        try:
            ctime = os.lstat(ws.abspath(items[i].rel or "")).st_ctime_ns
        except OSError:
            ctime = 0
        if ctime >= at.since:
            candidates.append((i, h))
        else:
            kept, kept_total = kept + 1, kept_total + h
    new = len(candidates) - (at.count - kept)
    want = (sum(h for _, h in candidates) - (at.total - kept_total)) % (1 << 64)
    if new == 1:  # the common case, among any number of edited files
        one = [i for i, h in candidates if h == want]
        if len(one) == 1:
            return one
    if 0 <= new <= len(candidates) and math.comb(len(candidates), new) <= _SUBSETS_TRIED:
        for subset in itertools.combinations(candidates, new):
            if sum(h for _, h in subset) % (1 << 64) == want:
                return [i for i, _ in subset]
    return [i for i, _ in candidates]


def _merged(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(r for r in ranges if r[0] < r[1]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


def _done_beyond(positions: Flat, remaining: list[tuple[int, int]], start: int) -> list[int]:
    """The positions answered on this page from ``start`` on (not in ``remaining``)."""
    done: list[int] = []
    for a, b in positions.ranges:
        a = max(a, start)
        for ra, rb in remaining:
            if rb <= a or ra >= b:
                continue
            done.extend(range(a, ra))
            a = max(a, rb)
        if a < b:
            done.extend(range(a, b))
    return done


def _position(
    items: Items,
    positions: Flat,
    cont: Continuation | None,
    since: int,
    acc: Account,
) -> tuple[Position, list[int]] | None:
    """Where the chain stands after this page, and the positions this page delivered
    beyond its prefix; None when nothing is left."""
    if not acc.omitted_total:
        return None
    remaining = _merged(acc.remaining)
    first = remaining[0][0]
    before = cont.position if cont is not None else Position()
    start = items.first_after(before.after)
    after = items.key(first - 1) if first > start else before.after
    extra = _done_beyond(positions, remaining, first)
    beyond = {items.key(i) for i in extra}
    if after is not None:
        kept = [k for k in before.beyond if key_order(k) > key_order(after)]
    else:
        kept = list(before.beyond)
    beyond.update(kept)
    resume = None
    for i, (offset, limit) in acc.resume.items():
        resume = (items.key(i), offset, limit)
    region = _region(items, first, [*extra, *_found(items, kept)])
    count, total = _fingerprint(items, region)
    position = Position(
        after=after,
        beyond=sorted(beyond, key=key_order),
        resume=resume,
        count=count,
        total=total,
        since=since,
    )
    return position, extra


def _next_cursor(
    ws: Workspace,
    params: ReadManyParams,
    items: Items,
    positions: Flat,
    cont: Continuation | None,
    since: int,
    acc: Account,
    *,
    carry: bool = False,
) -> str | None:
    """The ``nextCursor`` after this page, or None when no file is left for one."""
    made = _position(items, positions, cont, since, acc)
    return None if made is None else encode_cursor(params, ws.root, made[0], carry=carry)


def _overflow(
    ws: Workspace,
    params: ReadManyParams,
    items: Items,
    positions: Flat,
    cont: Continuation | None,
    since: int,
    acc: Account,
) -> set[int]:
    """The files delivered beyond the prefix, last keys first, to leave for later pages
    so that the cursor fits in ``MAX_CURSOR_CHARS``."""
    made = _position(items, positions, cont, since, acc)
    if made is None:
        return set()
    position, extra = made
    droppable = sorted(
        (i for i in extra if not items.is_preset(i)), key=lambda i: key_order(items.key(i))
    )

    def fits(k: int) -> bool:
        """Whether the cursor fits once the last ``k`` droppable files are left out."""
        gone = {items.key(i) for i in droppable[len(droppable) - k :]} if k else set()
        trial = msgspec.structs.replace(
            position,
            beyond=[key for key in position.beyond if key not in gone],
            resume=None
            if position.resume is not None and position.resume[0] in gone
            else position.resume,
        )
        return len(encode_cursor(params, ws.root, trial, carry=True)) <= MAX_CURSOR_CHARS

    low, high = 0, len(droppable)  # the fewest to leave out is in (low, high]
    if not fits(high):
        return set(droppable)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    dropped = set(droppable[len(droppable) - high :])
    return dropped


def _stop_on_error(
    positions: Flat, loads: Loads, params: ReadManyParams
) -> tuple[Sequence[int], int]:
    """``stopOnError``: everything after the first error (in request order) is omitted.
    Returns the positions still to pack and how many of ``positions`` that is."""
    active: Sequence[int] = positions
    stopped_at = len(positions)
    if params.stop_on_error:
        for pos, i in enumerate(positions):
            if loads(i).result.status == Status.ERROR:
                stopped_at = pos + 1
                active = positions[:stopped_at]
                break
    return active, stopped_at


def _account(
    resolved: Resolved,
    positions: Flat,
    active: int,
    stopped_at: int,
    plan: PackPlan,
    loads: Loads,
    params: ReadManyParams,
) -> Account:
    """Account for every position in output order: the entries the plan includes (the
    partial one cut to what the budget leaves), then those it leaves unloaded."""
    items = resolved.items
    budget_from, omitted_set = plan.not_loaded(active)
    acc = Account(Summary(matched=len(positions), hidden=dict(resolved.hidden)))
    for pos, i in enumerate(positions):
        if pos >= budget_from:
            break
        if omitted_set is not None and i in omitted_set and not items.is_preset(i):
            acc.remaining.append((i, i + 1))
            acc.add(omitted_piece(items, i, Code.BUDGET))
            continue
        if i in plan.outlined:  # not delivered: the cursor still delivers its content
            acc.remaining.append((i, i + 1))
            acc.add_outlined(outlined_piece(items, i, plan.outlined[i]))
            continue
        lo = loads(i)
        if plan.partial is not None and plan.partial[0] == i and lo.window is not None:
            lo = _cut_partial(acc, i, lo, plan.partial[1], plan.partial_tokens, loads, params)
        elif plan.partial is not None and plan.partial[0] == i and lo.recut is not None:
            lo = _recut(lo, plan.partial[1], plan.partial_tokens, loads)  # a notebook
        _add_loaded(acc, lo, loads)
    account_tail(acc, items, positions, budget_from, stopped_at)
    return acc


def _cut_partial(
    acc: Account,
    i: int,
    lo: LoadedItem,
    allowed: int,
    allowed_tokens: int | None,
    loads: Loads,
    params: ReadManyParams,
) -> LoadedItem:
    """The plan's partial entry cut to ``allowed`` characters (and ``allowed_tokens``
    tokens when set); when it goes on, the cursor resumes it at its next offset (with
    what is left of its ``limit``)."""
    item = lo.item
    lo = budget_cut(lo, allowed, params)
    if allowed_tokens is not None:
        lo = token_cut(lo, allowed_tokens, params, loads.cache)
    if lo.result.next_offset is not None:
        acc.remaining.append((i, i + 1))
        left = (item.offset or 1) + item.limit - lo.result.next_offset if item.limit else None
        acc.resume[i] = (lo.result.next_offset, left)
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
    counted = loads.tokens(lo) if text is not None else None
    acc.add(Piece(res, item.key, text, item.explicit, tokens=counted))
    if lo.attachment is not None:
        acc.attachments.append(lo.attachment)
    acc.attachments.extend(lo.attachments)
    if res.status == Status.PARTIAL and res.next_column is not None and res.line_end is not None:
        # A line cut short goes on inside that line (nextOffset would skip its rest).
        request = continuation_request(res.path, res.line_end, res.next_column)
        acc.continuations.append(f"{res.path}: {request}")
    elif res.status == Status.PARTIAL and res.next_offset is not None:
        acc.continuations.append(f"{res.path}: " + continuation_request(res.path, res.next_offset))


def _assemble(
    ws: Workspace,
    params: ReadManyParams,
    resolved: Resolved,
    plan: PackPlan,
    switched: bool,
    acc: Account,
    next_cursor: str | None,
    room: int | None = None,
) -> tuple[ReadManyResult, list[str]]:
    """The result and the ``llmContent`` parts, every label made wire-safe. A cursor
    comes whenever files were omitted; a budget-cut file alone continues by offset.
    ``summary.estimatedTokens`` is the counter's upper bound of ``llmContent``'s o200k
    tokens (``render.render_counted``); ``room``: see ``Notices``."""
    items = resolved.items
    created = [wire_safe(label) for label in acc.created]
    packing = PackingInfo(
        strategy=plan.strategy,
        switched_for_coverage=switched,
        full_included_count=plan.full_count,
        full_included_success_count=plan.full_success,
        partial_included_path=items.label(plan.partial[0]) if plan.partial else None,
        omitted_paths=acc.omitted_labels[:MAX_LISTED],
        omitted_truncated=acc.omitted_total > MAX_LISTED,
    )
    notices = Notices(
        continuations=acc.continuations,
        cursor=next_cursor,
        hints=resolved.hints,
        unlisted_omitted=acc.unlisted_omitted,
        unlisted_skipped=acc.unlisted_skipped,
        unlisted_omitted_names=acc.unlisted_omitted_names,
        unlisted_skipped_names=acc.unlisted_skipped_names,
        created=created,
        room=room,
    )
    files = [p.result for p in acc.pieces]
    for result in files:
        result.path = wire_safe(result.path)
        if result.message is not None:
            result.message = wire_safe(result.message)
    for attachment in acc.attachments:
        attachment.path = wire_safe(attachment.path)
    if packing.partial_included_path is not None:
        packing.partial_included_path = wire_safe(packing.partial_included_path)
    packing.omitted_paths = [wire_safe(p) for p in packing.omitted_paths]
    parts, counted = render_counted(params.format, acc.pieces, notices, tokens.count)
    acc.summary.estimated_tokens = counted
    answered = ReadManyResult(
        llm_content="",
        return_display=wire_safe(return_display(acc.summary, acc.pieces)),
        summary=acc.summary,
        files=files,
        packing=packing,
        clock=ws.clock(),
        attachments=acc.attachments,
        next_cursor=next_cursor,
        created_paths=created,
    )
    return answered, [wire_safe(part) for part in parts]
