"""``readMany/read`` as one short pipeline: resolve → load → budget → pack → render.

``answer(workspace, request)`` is the whole of ``readMany/read`` (PROTOCOL §3-§5); each
phase below is a named function over the stage modules. Per-file problems are
``FileResult`` statuses and codes, never exceptions; only ``InvalidParams`` escapes (a
bad exclude pattern, a cursor of another request), naming the field. A cursor is
decoded at the edge (``wire.cursor.decode_read_request``): the engine receives its
``Continuation``. The params become each stage's options once (``engine.options``);
no stage reads them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import msgspec

from readmany_daemon.content import tokens
from readmany_daemon.engine import focus, order, paging, refit
from readmany_daemon.engine.account import Account, account
from readmany_daemon.engine.changed import change_set, changes_result, resolve_changes
from readmany_daemon.engine.items import Items, LoadedItem, Resolved
from readmany_daemon.engine.load import Loads, RequestPaths
from readmany_daemon.engine.notices import MAX_NAMED_IN_CONTENT, Notices
from readmany_daemon.engine.options import BudgetOptions, options_for
from readmany_daemon.engine.outlines import Outliner
from readmany_daemon.engine.pack import (
    FRAME_TOKENS,
    MAX_LISTED,
    AnswerBudget,
    Flat,
    Ordered,
    PackPlan,
    TokenBudget,
    choose_plan,
)
from readmany_daemon.engine.receipts import disk_sha256
from readmany_daemon.engine.render import frame_chars, render_counted, return_display
from readmany_daemon.engine.resolve import resolve
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Status
from readmany_daemon.wire.cursor import MAX_CURSOR_CHARS, ReadRequest
from readmany_daemon.wire.messages import (
    PackingInfo,
    ReadManyParams,
    ReadManyResult,
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

    The request's params become each stage's options first, once
    (``options.options_for``). Raises ``InvalidParams`` for a cursor of another root or
    request and for a bad exclude pattern; every per-file problem is a ``FileResult``
    status instead.
    """
    since = paging.now()  # before anything looks at the tree (options_for may: realpath)
    opts = options_for(ws, _as_request(req))
    page, limits = opts.page, opts.budget
    cont = page.continuation
    changes = change_set(ws, opts.changes) if opts.changes is not None else None
    if changes is None:
        resolved = resolve(ws, opts.resolve)
    else:
        resolved = resolve_changes(ws, opts.resolve, changes)
    changed = changes_result(ws, opts.resolve, changes) if changes is not None else None
    items = resolved.items
    cont, restart = paging.restarted(items, cont, lambda rel: disk_sha256(ws, rel, overlay=True))
    if restart is not None:  # every later step goes on from the file's start
        page = msgspec.structs.replace(page, continuation=cont)
    positions = paging.positions(items, cont)
    prefix = paging.crowded_prefix(page, items, positions, cont)
    focused: focus.FocusOrder | None = None
    if limits.focus is not None:
        named = frozenset(e.rel for e in opts.resolve.entries if e.rel and not e.magic)
        focused = focus.ranked_positions(ws.ranking, items, positions, limits.focus, named)
        if prefix is not None:  # the cursor's keys crowd it: a page in request order
            focused = focus.in_request_order(focused, positions)
        if cont is not None and cont.position.resume is not None:
            focused = focus.resuming(focused, items.find(cont.position.resume[0]))
        positions = focused.positions
    elif limits.order == "stable" and prefix is None:
        positions = order.stable(ws, items, positions)
    resumed: int | None = None
    if focused is None:  # (a focused page puts them first itself: ``focus.resuming``)
        positions, resumed = paging.resumed_first(items, positions, cont, prefix)
    created = paging.created_files(ws, items, cont) if cont is not None else []
    exact = None if limits.budgeted else EXACT_COUNT_CHARS
    with RequestPaths(ws) as paths:
        loads = Loads(ws, items, opts.load, paths, changes)
        active, stopped_at = _stop_on_error(positions, loads, limits)
        budget = _token_budget(limits, loads)
        outliner = Outliner(loads, loads.outline, limits.format, FRAME_TOKENS)
        answer_budget = _answer_budget(limits, items, active)
        done_upto = paging.outlined_upto(items, cont)
        room: int | None = None
        char_steps = 0  # packings with fewer answer characters, for maxAnswerChars
        token_steps = 0  # packings with less content, for maxTotalTokens
        fitting: paging.Judged | None = None  # before a fuller try
        over_at: int | None = None  # the content budget of the last packing over the limit
        fit_at: int | None = None  # and of the fullest one within it, while bisecting
        filled_from: int | None = None  # the answer budget of ``fitting`` (maxAnswerChars)
        for attempt in itertools.count():
            if focused is not None and limits.packing != "outlines":
                plan, switched = (
                    focus.plan_ranked(
                        active, loads, limits, budget, answer_budget, focused.anchors
                    ),
                    False,
                )
            else:
                plan, switched = choose_plan(
                    ws,
                    items,
                    active,
                    loads,
                    limits,
                    budget,
                    outliner,
                    answer_budget,
                    done_upto,
                    resumed,
                )
            laid = _laid(ws, items, positions, plan, limits)
            acc = account(
                resolved, laid, len(active), stopped_at, plan, loads, opts, exact, focused
            )
            if plan.strategy == "outlines":
                acc.not_outlined = max(0, acc.omitted_total - acc.outlined - plan.earlier)
                acc.outlined_upto = max(plan.outlined, default=None)
            carry = True
            cursor = paging.next_cursor(page, items, laid, since, acc, carry=True)
            if cursor is not None and len(cursor) > MAX_CURSOR_CHARS:
                # Too many keys delivered beyond the prefix (a smallest-first page of many
                # small files): leave the last of them for later pages instead. Only a
                # request too large to carry is then left out of the cursor.
                # The position after the drop is not the trial's (its fingerprint and
                # region move with the files left), so the drop is tried again until
                # the cursor fits with the request, a few times at most.
                for _ in range(_OVERFLOW_TRIES):
                    dropped = paging.overflow(page, items, laid, since, acc)
                    if not dropped:
                        break
                    plan.drop(dropped)
                    laid = _laid(ws, items, positions, plan, limits)
                    acc = account(
                        resolved, laid, len(active), stopped_at, plan, loads, opts, exact, focused
                    )
                    cursor = paging.next_cursor(page, items, laid, since, acc, carry=True)
                    if cursor is None or len(cursor) <= MAX_CURSOR_CHARS:
                        break
                carry = False
                cursor = paging.next_cursor(page, items, laid, since, acc)
            # The packing is judged with a stand-in for the cursor: the same cursor made
            # at a fixed page time. The real one holds the time the page looked at the
            # tree, so its tokens and characters change from call to call; judged by
            # them, the cut file's extent (which fills the budget to its end) would
            # change too, and two answers for an unchanged tree would differ in content
            # (PROTOCOL §4 "Stable order"). The real cursor replaces the stand-in once
            # the answer is chosen (``paging.Judged.final``): the time is the token's last
            # digits, so the real cursor has the stand-in's length and o200k count
            # (``wire.cursor.SINCE_DIGITS``).
            stuck = cont is not None and cursor is not None and paging.gave_nothing(acc)
            if stuck:
                cursor = None  # the same page again would give nothing again: the end
            stand_in = (
                None
                if cursor is None
                else paging.next_cursor(page, items, laid, paging.STAND_IN_SINCE, acc, carry=carry)
            )
            acc.created = [items.label(i) for i in created[:MAX_LISTED]]
            answered = paging.Judged(
                *_assemble(
                    ws,
                    limits,
                    resolved,
                    plan,
                    switched,
                    acc,
                    stand_in,
                    room,
                    focused is not None,
                    [
                        *([restart] if restart else ()),
                        *([paging.stuck_note(items, acc)] if stuck else ()),
                    ],
                ),
                stand_in,
                cursor,
            )
            answered[0].changes = changed
            if focused is not None:
                answered[0].summary.ranking = focused.info
            limit = limits.max_total_tokens
            total = answered[0].summary.estimated_tokens
            tokens_over = budget is not None and limit is not None and total > limit
            text_chars = sum(map(len, answered[1]))
            chars_over = limits.max_answer_chars is not None and (
                text_chars > limits.max_answer_chars
            )
            if not tokens_over and not chars_over:
                if (
                    budget is not None
                    and over_at is not None
                    and over_at - budget.limit > refit.bisect_gap(limits.max_total_tokens)
                    and limit is not None
                    and limit - total > refit.bisect_gap(limits.max_total_tokens)
                    and attempt < _MAX_ATTEMPTS
                ):
                    # The shrink (doubled each time) went past what fits: a content
                    # budget between this one and the last one over the limit may hold
                    # more. Bisect, keeping this answer in case none does.
                    fit_at, fitting = budget.limit, answered
                    budget.limit = (fit_at + over_at) // 2
                    continue
                if fitting is None and refit.may_fill(answer_budget, acc, limits, text_chars):
                    # The notices were reserved at their longest: plan the characters
                    # they left once more (packed fewer again if that passes the
                    # limit, this answer kept in case that cannot fit).
                    assert answer_budget is not None and limits.max_answer_chars is not None
                    slack = limits.max_answer_chars - text_chars - refit.FILL_MARGIN
                    filled_from = answer_budget.limit
                    answer_budget.limit = max(answer_budget.limit, 0) + slack
                    fitting = answered
                    continue
                return answered.final()
            more = False
            if tokens_over and fit_at is not None:
                assert budget is not None and fitting is not None
                over_at = budget.limit
                if (
                    over_at - fit_at <= refit.bisect_gap(limits.max_total_tokens)
                    or attempt >= _MAX_ATTEMPTS
                ):
                    return fitting.final()
                budget.limit = (fit_at + over_at) // 2
                continue
            if tokens_over:
                assert budget is not None and limit is not None
                over_at = budget.limit
                more, room, token_steps = refit.shrink(budget, room, acc, total, limit, token_steps)
            if chars_over and answer_budget is not None:
                assert limits.max_answer_chars is not None
                fewer, room, char_steps = refit.shrink_answer(
                    answer_budget, room, acc, text_chars, limits.max_answer_chars, char_steps
                )
                if (
                    fitting is not None
                    and filled_from is not None
                    and answer_budget.limit <= filled_from
                ):
                    return fitting.final()  # the fuller try, shrunk, plans no more
                more = more or fewer
            if not more or attempt >= _MAX_ATTEMPTS:
                # Nothing left to leave out (see MIN_TOTAL_TOKENS), or the fuller try
                # could not fit where the answer before it did.
                return (answered if fitting is None else fitting).final()
        raise AssertionError("unreachable")


#: Characters of text an answer without a token budget counts exactly (besides the
#: counts kept with cache entries, which cost nothing); the rest is estimated
#: (``tokens.Tally``: ~0.15 s of counting at most, where a full read of a 1 GB tree
#: would spend a minute).
EXACT_COUNT_CHARS = 2_000_000

#: Packings tried at most to fit ``maxTotalTokens`` (one is nearly always enough: the
#: next ones leave out what the notices of the first one took).
_MAX_ATTEMPTS = 24
#: Drops of files beyond the prefix tried before a cursor leaves its request out.
_OVERFLOW_TRIES = 4


def _token_budget(limits: BudgetOptions, loads: Loads) -> TokenBudget | None:
    """The token budget of the files' contents and framing under ``maxTotalTokens``,
    at first all of it less the answer's end line; None without ``maxTotalTokens``."""
    if limits.max_total_tokens is None:
        return None

    def cost(lo: LoadedItem) -> int:
        return loads.tokens(lo) + tokens.count_memo(lo.result.path) + FRAME_TOKENS

    return TokenBudget(limits.max_total_tokens - FRAME_TOKENS, cost)


#: Characters an answer's notices are expected to take beside the framed files, before
#: the names of omitted files: the cursor line (a cursor is at most 1,000 characters),
#: the omitted line's words, a continuation and the end line.
_NOTICE_CHARS = 1400


def _answer_budget(
    limits: BudgetOptions, items: Items, active: Sequence[int]
) -> AnswerBudget | None:
    """The answer characters every packing plans its files (and outlines) into
    (``maxAnswerChars`` less the notices expected: :data:`_NOTICE_CHARS` and the names
    of up to 50 omitted files, as long as the first labels, to half of the answer in
    all); None without
    ``maxAnswerChars``."""
    if limits.max_answer_chars is None:
        return None
    sample = [len(items.label(i)) + 2 for i in active[:MAX_NAMED_IN_CONTENT]]
    names = sum(sample) if len(sample) < len(active) else 0
    # Long names are named fewer when the notices take over half of the answer
    # (``Notices.room``): at most that half is reserved for them.
    names = min(names, max(0, limits.max_answer_chars // 2 - _NOTICE_CHARS))
    reserve = _NOTICE_CHARS + names
    fmt = limits.format
    return AnswerBudget(
        limits.max_answer_chars - reserve, lambda label, empty: frame_chars(fmt, label, empty)
    )


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


def _stop_on_error(
    positions: Flat, loads: Loads, limits: BudgetOptions
) -> tuple[Sequence[int], int]:
    """``stopOnError``: everything after the first error (in request order) is omitted.
    Returns the positions still to pack and how many of ``positions`` that is."""
    active: Sequence[int] = positions
    stopped_at = len(positions)
    if limits.stop_on_error:
        for pos, i in enumerate(positions):
            if loads(i).result.status == Status.ERROR:
                stopped_at = pos + 1
                active = positions[:stopped_at]
                break
    return active, stopped_at


def _laid(
    ws: Workspace, items: Items, positions: Flat, plan: PackPlan, limits: BudgetOptions
) -> Flat:
    """``positions`` in answer order: a ranked plan's as ``focus.layout`` lays them out
    (``order``), any other plan's as they are."""
    if plan.strategy != "rank" or not isinstance(positions, Ordered):
        return positions
    return focus.layout(ws, items, positions, plan, limits.order)


def _assemble(
    ws: Workspace,
    limits: BudgetOptions,
    resolved: Resolved,
    plan: PackPlan,
    switched: bool,
    acc: Account,
    next_cursor: str | None,
    room: int | None = None,
    ranked: bool = False,
    notes: Sequence[str] = (),
) -> tuple[ReadManyResult, list[str]]:
    """The result and the ``llmContent`` parts, every label made wire-safe. A cursor
    comes whenever files were omitted; a budget-cut file alone continues by offset.
    ``summary.estimatedTokens`` is the counter's upper bound of ``llmContent``'s o200k
    tokens (``render.render_counted``; past ``EXACT_COUNT_CHARS`` of an answer without
    a token budget, partly estimated); ``room``, ``ranked``: see ``Notices``."""
    items = resolved.items
    created = [wire_safe(label) for label in acc.created]
    packing = PackingInfo(
        strategy=plan.strategy,
        switched_for_coverage=switched,
        full_included_count=sum(p.result.status == Status.OK for p in acc.pieces),
        full_included_success_count=plan.full_success,
        partial_included_path=items.label(plan.partial[0]) if plan.partial else None,
        omitted_paths=acc.omitted_labels[:MAX_LISTED],
        omitted_truncated=acc.omitted_total > MAX_LISTED,
    )
    notices = Notices(
        continuations=acc.continuations,
        cursor=next_cursor,
        hints=[*resolved.hints, *notes],
        unlisted_omitted=acc.unlisted_omitted,
        unlisted_skipped=acc.unlisted_skipped,
        unlisted_omitted_names=acc.unlisted_omitted_names,
        unlisted_skipped_names=acc.unlisted_skipped_names,
        created=created,
        room=room,
        not_outlined=acc.not_outlined,
        ranked=ranked,
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
    parts, counted = render_counted(limits.format, acc.pieces, notices, acc.tally)
    acc.summary.estimated_tokens = counted
    answered = ReadManyResult(
        llm_content="",
        return_display=wire_safe(return_display(acc.summary, acc.pieces)),
        summary=acc.summary,
        files=files,
        packing=packing,
        clock=ws.clock(),
        attachments=acc.attachments,
        stale=[],
        next_cursor=next_cursor,
        created_paths=created,
    )
    return answered, [wire_safe(part) for part in parts]
