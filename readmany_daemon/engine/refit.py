"""Fitting an answer to its limits (PROTOCOL §3 ``maxTotalTokens``, ``maxAnswerChars``):
how the answer loop (``engine.answer``) plans again after a packing that passed a limit,
or that left room: content budgets shrunk by the overage, bisected between a packing
that fits and one that does not, fewer entries named when the notices take the room,
and one more packing with what the notices left of their reserve.
"""

from __future__ import annotations

from readmany_daemon.engine.account import Account
from readmany_daemon.engine.options import BudgetOptions
from readmany_daemon.engine.pack import AnswerBudget, TokenBudget

__all__ = ["FILL_MARGIN", "ROOM_STEP", "bisect_gap", "may_fill", "shrink", "shrink_answer"]


def bisect_gap(limit: int | None) -> int:
    """Tokens of content budget below which bisecting between a packing that fits
    ``limit`` (``maxTotalTokens``) and one over it stops: 1/32 of it, at least 16."""
    return max(16, (limit or 0) // 32)


def shrink(
    budget: TokenBudget, room: int | None, acc: Account, total: int, limit: int, steps: int
) -> tuple[bool, int | None, int]:
    """After an answer of ``total`` tokens, over ``limit`` (``maxTotalTokens``): when its
    framing and notices take over half of the limit (names of omitted files, framed
    errors) or no content is left, name fewer entries; else leave out as many more
    tokens of content as it was over and an eighth more (at least 16; the eighth at
    most half the bisecting gap, so that a packing that fits is not bisected for it),
    doubled after each of ``steps`` such packings (the packing changes only when a
    whole file no longer fits; the eighth, because the notices change with the
    packing: other omitted files named, another file cut). Returns whether anything
    was left out, the new ``room`` of :class:`Notices` and ``steps``."""
    other = total - sum(p.tokens or 0 for p in acc.pieces)
    if room != 0 and (budget.limit <= 0 or other > limit // 2):
        return True, 0 if room is not None and room <= ROOM_STEP else ROOM_STEP, steps
    if budget.limit <= 0:
        return False, room, steps
    over = max(total - limit, 16)
    margin = min(over // 8, bisect_gap(limit) // 2)
    budget.limit = max(0, budget.limit - (over + margin) * 2**steps)
    return True, room, steps + 1


def shrink_answer(
    budget: AnswerBudget,
    room: int | None,
    acc: Account,
    text_chars: int,
    limit: int,
    steps: int,
) -> tuple[bool, int | None, int]:
    """After an answer of ``text_chars`` characters, over ``limit``
    (``maxAnswerChars``): when the notices and framing take over half of it, or no
    answer characters are left to plan, name fewer entries (as :func:`shrink` does);
    else plan as many answer characters fewer as it was
    over (and 16), doubled after each of ``steps`` such packings. Returns whether
    anything was left out, the new ``room`` of :class:`Notices` and ``steps``."""
    shown = sum(len(p.content) for p in acc.pieces if p.content is not None)
    if room != 0 and (text_chars - shown > limit // 2 or budget.limit <= 0):
        return True, 0 if room is not None and room <= ROOM_STEP else ROOM_STEP, steps
    if budget.limit <= 0:
        return False, room, steps
    budget.limit = max(0, budget.limit - (text_chars - limit + 16) * 2**steps)
    return True, room, steps + 1


#: Characters an answer under ``maxAnswerChars`` leaves unplanned when it plans again
#: what its notices left (:func:`may_fill`): less is not worth another packing.
FILL_MARGIN = 64


def may_fill(
    budget: AnswerBudget | None, acc: Account, limits: BudgetOptions, text_chars: int
) -> bool:
    """Whether an answer of ``text_chars`` characters, within ``maxAnswerChars``, is
    planned once more with what its notices left of their reserve (:data:`_NOTICE_CHARS`
    and the names of omitted files are reserved at their longest): only when it left
    files out or cut one, and over :data:`FILL_MARGIN` characters are left."""
    if budget is None or limits.max_answer_chars is None:
        return False
    cut_or_left = acc.summary.omitted > 0 or acc.summary.truncated > 0
    return cut_or_left and limits.max_answer_chars - text_chars > 2 * FILL_MARGIN


#: The first ``room`` tried when the notices take too much of a token budget.
ROOM_STEP = 10
