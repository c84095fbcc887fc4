"""``readMany/read`` as one short pipeline: resolve → load → budget → pack → render.

``answer(workspace, request)`` is the whole of ``readMany/read`` (PROTOCOL §3-§5); each
phase below is a named function over the stage modules. Per-file problems are
``FileResult`` statuses and codes, never exceptions; only ``InvalidParams`` escapes (a
bad exclude pattern), naming the field. A cursor is decoded at the edge
(``wire.cursor.decode_read_request``): the engine receives its ``Continuation``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from readmany_daemon.engine.budget import budget_cut
from readmany_daemon.engine.items import Items, LoadedItem, Resolved
from readmany_daemon.engine.load import Loads, RequestPaths
from readmany_daemon.engine.pack import (
    MAX_LISTED,
    Account,
    Flat,
    PackPlan,
    account_tail,
    choose_plan,
    omitted_piece,
)
from readmany_daemon.engine.render import (
    Notices,
    Piece,
    continuation_request,
    render_parts,
    return_display,
)
from readmany_daemon.engine.resolve import resolve
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code, Status
from readmany_daemon.wire.cursor import Continuation, ReadRequest, encode_cursor
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
    resolved = resolve(ws, params)
    positions = _positions(resolved.items, request.continuation)
    with RequestPaths(ws) as paths:
        loads = Loads(ws, resolved.items, params, paths)
        active, stopped_at = _stop_on_error(positions, loads, params)
        plan, switched = choose_plan(ws, resolved.items, active, loads, params)
        acc = _account(resolved, positions, len(active), stopped_at, plan, loads, params)
        return _assemble(ws, params, resolved, plan, switched, acc)


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
    """The item positions to answer: all of them, or those a cursor left (its files
    cut by the budget resuming at their next offset)."""
    if continuation is None:
        ranges = [(0, len(items))]
    else:
        ranges = [(max(a, 0), min(b, len(items))) for a, b in continuation.remaining]
        for i, (offset, limit) in continuation.resume.items():
            if 0 <= i < len(items):
                # Budget cuts resume at a line's start: a column asked for is behind.
                items.replace(i, offset=offset, limit=limit, column=None)
    return Flat([r for r in ranges if r[0] < r[1]])


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
        lo = loads(i)
        if plan.partial is not None and plan.partial[0] == i and lo.window is not None:
            lo = _cut_partial(acc, i, lo, plan.partial[1], params)
        _add_loaded(acc, lo)
    account_tail(acc, items, positions, budget_from, stopped_at)
    acc.summary.estimated_tokens = math.ceil(acc.summary.total_chars / 4)
    return acc


def _cut_partial(
    acc: Account, i: int, lo: LoadedItem, allowed: int, params: ReadManyParams
) -> LoadedItem:
    """The plan's partial entry cut to ``allowed`` characters; when it goes on, the
    cursor resumes it at its next offset (with what is left of its ``limit``)."""
    item = lo.item
    lo = budget_cut(lo, allowed, params)
    if lo.result.next_offset is not None:
        acc.remaining.append((i, i + 1))
        left = (item.offset or 1) + item.limit - lo.result.next_offset if item.limit else None
        acc.resume[i] = (lo.result.next_offset, left)
    return lo


def _add_loaded(acc: Account, lo: LoadedItem) -> None:
    """Account for a loaded entry: its piece, its attachment, its continuation."""
    item, res = lo.item, lo.result
    text = lo.text if res.status in (Status.OK, Status.PARTIAL) else None
    acc.add(Piece(res, item.key, text, item.explicit))
    if lo.attachment is not None:
        acc.attachments.append(lo.attachment)
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
) -> tuple[ReadManyResult, list[str]]:
    """The result and the ``llmContent`` parts, every label made wire-safe."""
    items = resolved.items
    # A cursor whenever files were omitted; a budget-cut file alone continues by offset.
    next_cursor = encode_cursor(params, acc.remaining, acc.resume) if acc.omitted_total else None
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
    answered = ReadManyResult(
        llm_content="",
        return_display=wire_safe(return_display(acc.summary, acc.pieces)),
        summary=acc.summary,
        files=files,
        packing=packing,
        clock=ws.clock(),
        attachments=acc.attachments,
        next_cursor=next_cursor,
    )
    return answered, [wire_safe(part) for part in render_parts(params.format, acc.pieces, notices)]
