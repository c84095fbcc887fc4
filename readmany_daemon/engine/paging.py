"""Paging: where a page of ``readMany/read`` starts, what its ``nextCursor`` holds, and
which files were created in the part of the order a cursor chain already delivered
(PROTOCOL §3 "Cursors").

Positions come from keys (``wire.cursor``), so files created or deleted between pages
move nothing: each file matched at the first page and still there when its page is
built is delivered exactly once. The cursor carries a fingerprint of the delivered part
(how many files, the sum of their key hashes) and a time; a created file found there is
named in a notice instead (``created_files``). An answer is packed against a stand-in
cursor made at a fixed time (``STAND_IN_SINCE``), then given the real one
(``Judged.final``).
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import msgspec

from readmany_daemon.engine.account import Account
from readmany_daemon.engine.items import Expansion, Items, key_order
from readmany_daemon.engine.options import PageOptions
from readmany_daemon.engine.pack import Flat, Ordered
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Status
from readmany_daemon.wire.cursor import (
    MAX_CURSOR_CHARS,
    Continuation,
    Key,
    Position,
    encode_position,
    key_hash,
)
from readmany_daemon.wire.messages import ReadManyResult


def positions(items: Items, continuation: Continuation | None) -> Flat:
    """The item positions to answer: all of them, or those after the cursor's key that
    it does not name as delivered already (a budget-cut file resuming at its next
    offset). Positions come from keys, so files created or deleted since the cursor was
    made move nothing."""
    if continuation is None:
        return Flat([(0, len(items))] if len(items) else [])
    at = continuation.position
    start = items.first_after(at.after)
    skip = sorted({i for i in found(items, at.beyond) if i >= start})
    ranges: list[tuple[int, int]] = []
    a = start
    for i in skip:
        ranges.append((a, i))
        a = i + 1
    ranges.append((a, len(items)))
    if at.resume is not None:
        cut = items.find(at.resume[0])
        if cut is not None and cut >= start and cut not in skip:
            # A budget cut resumes at a line's start (a column asked for is behind), or
            # inside the line it cut when that line alone was longer than the page.
            items.replace(cut, offset=at.resume[1], limit=at.resume[2], column=at.resume_column)
    return Flat([r for r in ranges if r[0] < r[1]])


def restarted(
    items: Items, continuation: Continuation | None, current: Callable[[str], str | None]
) -> tuple[Continuation | None, str | None]:
    """``continuation`` without its ``resume`` when the file it resumes changed since
    the page that cut it (``current(rel)``, the ``sha256`` of that file now, differs from
    the one the cursor holds), and the notice that says so; else ``(continuation,
    None)``. Going on by line number in a changed file would repeat or skip lines: it
    is read again from the start of what was asked (PROTOCOL §4 "Cursors"). A file with
    no ``sha256`` then (over ``maxFileBytes``) or now (deleted, unreadable: its own
    entry says why) goes on as the cursor says."""
    at = continuation.position if continuation is not None else None
    if at is None or at.resume is None or at.resume_sha256 is None:
        return continuation, None
    cut = items.find(at.resume[0])
    rel = items.rel(cut) if cut is not None else None
    now = current(rel) if rel is not None else None
    if cut is None or now is None or now[:16] == at.resume_sha256:
        return continuation, None
    assert continuation is not None
    position = msgspec.structs.replace(at, resume=None, resume_column=None, resume_sha256=None)
    note = (
        f"[{items.label(cut)} changed after the page before cut it: read again from its"
        f" start, not from line {at.resume[1]}.]"
    )
    return msgspec.structs.replace(continuation, position=position), note


def crowded_prefix(
    page: PageOptions, items: Items, positions: Flat, continuation: Continuation | None
) -> int | None:
    """The first position left in request order (``positions.ranges``' first) when the
    keys ``continuation`` holds beyond its prefix take over half of
    ``MAX_CURSOR_CHARS``; else None. A page in stable or rank order delivers files
    beyond the prefix, and their keys grow the cursor: past the limit, a page left
    them out again and the chain made no progress, or the cursor left its request out.
    Such a page fills in request order from this file (``focus.in_request_order``;
    without focus, the stable order is not applied), so the prefix moves on by a page,
    the keys it passes go, and the page adds none."""
    if continuation is None or not continuation.position.beyond or not positions.ranges:
        return None
    if len(_token(page, continuation.position, True)) <= MAX_CURSOR_CHARS // 2:
        return None
    return positions.ranges[0][0]


def resumed_first(
    items: Items, positions: Flat, continuation: Continuation | None, prefix: int | None = None
) -> tuple[Flat, int | None]:
    """``positions`` with the file ``continuation`` resumes (the budget cut it at the end
    of the page before) first, then ``prefix`` (:func:`crowded_prefix`), and the first
    of them; ``(positions, None)`` when neither is among them. The resumed file's rest
    then gets the budget before any other file, so no other file is cut while it
    waits: a cursor resumes one file, and one delivered beyond the prefix (a
    smallest-first page) came again whole when the next page, in request order, cut
    another (PROTOCOL §4 "Cursors")."""
    front: list[int] = []
    if continuation is not None and continuation.position.resume is not None:
        at = items.find(continuation.position.resume[0])
        if at is not None and any(a <= at < b for a, b in positions.ranges):
            front.append(at)
    if prefix is not None and prefix not in front:
        front.append(prefix)
    if not front:
        return positions, None
    if list(positions[: len(front)]) == front:
        return positions, front[0]
    chosen = set(front)
    return Ordered(positions, [*front, *(i for i in positions if i not in chosen)]), front[0]


def outlined_upto(items: Items, continuation: Continuation | None) -> int:
    """The last item position a cursor walk has outlined (``packing: "outlines"``
    outlines a file at most once in a walk); -1 when none."""
    if continuation is None or continuation.position.outlined is None:
        return -1
    return items.first_after(continuation.position.outlined) - 1


def found(items: Items, keys: Iterable[Key]) -> Iterator[int]:
    """The positions of the ``keys`` that exist now."""
    for key in keys:
        i = items.find(key)
        if i is not None:
            yield i


def now() -> int:
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


def _changed_since(
    ws: Workspace, items: Items, region: list[int], since: int, folders: dict[str, int] | None
) -> tuple[list[tuple[int, int]], int, int]:
    """The files of ``region`` changed since ``since`` (ns), with their key hashes (also
    when one of their folders changed, when ``folders`` is given: its cache), and how
    many others there are and the sum of their key hashes."""
    candidates: list[tuple[int, int]] = []
    kept = kept_total = 0
    for i in region:
        h = key_hash(items.key(i))
        rel = items[i].rel or ""
        try:
            ctime = os.lstat(ws.abspath(rel)).st_ctime_ns
        except OSError:
            ctime = 0
        if ctime < since and folders is not None:
            ctime = _folders_ctime(ws, rel, folders)
        if ctime >= since:
            candidates.append((i, h))
        else:
            kept, kept_total = kept + 1, kept_total + h
    return candidates, kept, kept_total


def _folders_ctime(ws: Workspace, rel: str, seen: dict[str, int]) -> int:
    """The latest ``st_ctime`` (ns) of the folders holding ``rel`` below the root, each
    folder's read once per call (``seen``); 0 when none can be read."""
    latest = 0
    folder = rel.rpartition("/")[0]
    while folder:
        ctime = seen.get(folder)
        if ctime is None:
            try:
                ctime = os.lstat(ws.abspath(folder)).st_ctime_ns
            except OSError:
                ctime = 0
            seen[folder] = ctime
        latest = max(latest, ctime)
        folder = folder.rpartition("/")[0]
    return latest


def created_files(ws: Workspace, items: Items, cont: Continuation) -> list[int]:
    """Files created since the cursor's page in the part of the order it had delivered
    (a rename into it too), to be named in a notice: never delivered by the chain.

    The cursor holds how many files that part held and the sum of their key hashes.
    When they still match, nothing was created there. Otherwise the files whose inode
    changed since the page (``st_ctime``) are the candidates (also those whose folder
    did, when there are more files than those explain: a folder moved in), and the
    subset of them that makes the counts match again is what was there before; when
    no subset does (files were deleted there too) every candidate is named."""
    at = cont.position
    region = list(_region(items, items.first_after(at.after), found(items, at.beyond)))
    if _fingerprint(items, region) == (at.count, at.total):
        return []
    # A file created there since has changed since; the others changed may be edits.
    # A folder moved or renamed into the part keeps its files' times, not its own: when
    # more files are there than changed ones explain, the folders' times count too.
    candidates, kept, kept_total = _changed_since(ws, items, region, at.since, None)
    if len(candidates) < len(region) - at.count:
        candidates, kept, kept_total = _changed_since(ws, items, region, at.since, {})
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
    if not acc.omitted_total and not acc.resume:
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
    resume_column = resume_sha256 = None
    for i, (offset, limit, column, sha256) in acc.resume.items():
        resume, resume_column = (items.key(i), offset, limit), column
        resume_sha256 = sha256[:16] if sha256 else None
    if resume is None and before.resume is not None:
        # Nothing of the file this page was to resume was delivered: the next page
        # resumes it where this one was to, not from its first line.
        at = items.find(before.resume[0])
        if at is not None and any(a <= at < b for a, b in remaining):
            resume, resume_column = before.resume, before.resume_column
            resume_sha256 = before.resume_sha256
    region = _region(items, first, [*extra, *found(items, kept)])
    count, total = _fingerprint(items, region)
    outlined = before.outlined
    if acc.outlined_upto is not None:
        outlined = items.key(acc.outlined_upto)
    if outlined is not None and key_order(outlined) < key_order(items.key(first)):
        outlined = None  # delivered past it: nothing ahead was outlined
    position = Position(
        after=after,
        beyond=sorted(beyond, key=key_order),
        resume=resume,
        resume_column=resume_column if resume is not None else None,
        resume_sha256=resume_sha256 if resume is not None else None,
        count=count,
        total=total,
        since=since,
        outlined=outlined,
    )
    return position, extra


def next_cursor(
    page: PageOptions,
    items: Items,
    positions: Flat,
    since: int,
    acc: Account,
    *,
    carry: bool = False,
) -> str | None:
    """The ``nextCursor`` after this page of ``page``'s request, or None when no file is
    left for one; ``carry``: see ``wire.cursor.encode_position``."""
    made = _position(items, positions, page.continuation, since, acc)
    return None if made is None else _token(page, made[0], carry)


def _token(page: PageOptions, position: Position, carry: bool) -> str:
    """The token of ``position`` for ``page``'s request (``wire.cursor.encode_position``
    with the request's stamp): the one place a page's cursor is encoded."""
    return encode_position(page.stamp, position, carry=carry)


def overflow(
    page: PageOptions,
    items: Items,
    positions: Flat,
    since: int,
    acc: Account,
) -> set[int]:
    """The files delivered beyond the prefix, last keys first, to leave for later pages
    so that the cursor fits in ``MAX_CURSOR_CHARS``. When the page moved neither the
    prefix nor the resumed file on, the first of them in the page's order stays: a
    page that left out every file it delivered would make the same cursor again, and
    the chain would never end (:func:`crowded_prefix` keeps that rare). With nothing
    beyond the prefix, the file the page cut, when another file moved the prefix on."""
    made = _position(items, positions, page.continuation, since, acc)
    if made is None:
        return set()
    position, extra = made
    before = page.continuation.position if page.continuation is not None else Position()
    if not extra:
        # Nothing beyond the prefix to leave out: the file this page cut, when it is not
        # the one the cursor resumed and the prefix moved on without it, waits for the
        # next page instead (its key in the cursor is what passes the limit).
        cut = items.find(position.resume[0]) if position.resume is not None else None
        if cut is not None and position.resume != before.resume and position.after != before.after:
            return {cut}
        return set()
    first = None
    if (position.after, position.resume, position.resume_column) == (
        before.after,
        before.resume,
        before.resume_column,
    ):  # no progress
        delivered = set(extra)
        first = next((i for i in positions if i in delivered), None)
    droppable = sorted(
        (i for i in extra if i != first and not items.is_preset(i)),
        key=lambda i: key_order(items.key(i)),
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
            resume_column=None
            if position.resume is not None and position.resume[0] in gone
            else position.resume_column,
            resume_sha256=None
            if position.resume is not None and position.resume[0] in gone
            else position.resume_sha256,
        )
        return len(_token(page, trial, True)) <= MAX_CURSOR_CHARS

    low, high = 0, len(droppable)  # the fewest to leave out is in (low, high]
    if not fits(high):
        return set(droppable)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    dropped = set(droppable[len(droppable) - high :])
    return dropped


#: The page time (``Position.since``) of the stand-in cursor an answer is judged with
#: (``engine.answer.answer_parts``): a fixed time, so that the same page judges the same.
STAND_IN_SINCE = 1 << 60


class Judged(NamedTuple):
    """An answer as it was judged against the limits (``result`` and its ``llmContent``
    ``parts``), with the cursor's ``stand_in`` in place of the real ``cursor``."""

    result: ReadManyResult
    parts: list[str]
    stand_in: str | None
    cursor: str | None

    def final(self) -> tuple[ReadManyResult, list[str]]:
        """The answer with the real cursor in place of its stand-in (in the text and
        ``nextCursor``). ``summary.estimatedTokens`` stands: the two differ only in the
        page time's 20 digits, so they have the same o200k count
        (``wire.cursor.SINCE_DIGITS``; a unit test holds it)."""
        if self.stand_in is None or self.cursor is None or self.stand_in == self.cursor:
            return self.result, self.parts
        self.result.next_cursor = self.cursor
        return self.result, [p.replace(self.stand_in, self.cursor) for p in self.parts]


def gave_nothing(acc: Account) -> bool:
    """Whether a page gave no file at all: none read, cut, skipped, unchanged, in error
    or outlined (every one it reached was omitted)."""
    return acc.outlined == 0 and all(p.result.status == Status.OMITTED for p in acc.pieces)


#: Characters of the next file's name a stuck page's note shows (its name may be what
#: does not fit).
STUCK_NAME_CHARS = 80


def stuck_note(items: Items, acc: Account) -> str:
    """The note of a page after a cursor that gave nothing (PROTOCOL §4 "Cursors"): the
    same page again would give nothing again, so it ends the chain instead and says
    why, naming the next file (at most :data:`STUCK_NAME_CHARS` characters of it)."""
    name = items.label(acc.remaining[0][0]) if acc.remaining else "the next file"
    if len(name) > STUCK_NAME_CHARS:
        name = name[: STUCK_NAME_CHARS - 1] + "…"
    left = acc.omitted_total
    return (
        f"[Nothing more fits the budget: {name} does not fit even alone (its content or "
        f"its name). The {left} file(s) left need a larger budget; no cursor follows.]"
    )
