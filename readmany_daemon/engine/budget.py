"""The budget stage: per-file windows and caps, line numbers, and the one budget cut.

``finish`` fills the line fields and the shown text of a window (``load`` calls it for
each file); ``budget_cut`` re-cuts the one file an answer includes partially to the
characters the totals leave (``maxTotalChars``), with code ``budget``; ``tokens_of``
counts a file's shown text as the format writes it (o200k, kept with the cache entry)
and ``token_cut`` cuts a file to a number of those tokens (``perFileMaxTokens``, or
what ``maxTotalTokens`` leaves).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from readmany_daemon.content import lines as content_lines
from readmany_daemon.content import tokens
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.content.outline import Outline
from readmany_daemon.engine.items import Item, LoadedItem
from readmany_daemon.engine.notices import cut_notice, position_notice
from readmany_daemon.engine.options import LoadOptions
from readmany_daemon.engine.outlines import MAX_OUTLINE_CHARS, outline_room, with_cut_block
from readmany_daemon.engine.render import content_form
from readmany_daemon.engine.symbols import span_notice
from readmany_daemon.errors import Code, Status
from readmany_daemon.wire.messages import FileResult


def _number_lines(text: str, first: int) -> str:
    """``text`` with each line prefixed by its number (``first`` for the first line),
    right-aligned in at least six columns and a tab (``lineNumbers``)."""
    lines = text.split("\n")
    trailing = lines[-1] == ""
    if trailing:
        lines.pop()
    width = max(6, len(str(first + len(lines))))
    out = "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(lines, start=first))
    return out + ("\n" if trailing else "")


def finish(
    item: Item,
    base: FileResult,
    window: content_lines.Window,
    source_text: str,
    opts: LoadOptions,
    budget_cut: bool = False,
    outline_for: Callable[[], Outline] | None = None,
    outline_chars: int = MAX_OUTLINE_CHARS,
    notes: tuple[str, ...] = (),
) -> LoadedItem:
    """Fill the line fields and the shown text (line numbers when ``opts.line_numbers``,
    cut notice) of a window.

    A span (``item.symbol`` or ``item.enclosing``: ``engine.symbols``) given whole ends
    with a notice naming its symbol (``[Config.load: lines 9-11 of 22.]``); one cut
    continues with ``offset`` and a ``limit`` that ends at its last line; ``notes`` (its
    own notice lines) follow its position notice.

    A window that covers all the lines asked for (``limit``) is ``ok`` even when the file
    goes on, and ends with its position notice unless it is the whole file
    (``notices.position_notice``); anything else that stops before the end is
    ``partial`` with ``nextOffset``, its cut notice and, with ``outline_for``, the
    outline of what it does not show after the notice (``outlines.with_cut_block``), in
    at most ``outline_chars`` characters. Neither notice counts in ``chars``.
    """
    offset = item.offset or 1
    windowed = item.offset is not None or item.limit is not None or item.column is not None
    shown = window.text
    if opts.line_numbers and shown:
        shown = _number_lines(shown, window.line_start)
    base.chars = len(shown)
    whole_window = (
        item.limit is not None
        and window.line_end >= offset + item.limit - 1
        and window.cut_line is None
        and not budget_cut
    )
    cut = (window.next_offset is not None and not whole_window) or window.cut_line is not None
    total = window.total_lines
    if offset > 1 and total is not None and total < offset and not window.text:
        # The file is there; the window asked for is not (PROTOCOL §4).
        base.status, base.code = Status.ERROR, Code.OUT_OF_RANGE
        base.message = (
            f"offset {offset} is past the end of {item.label} ({window.total_lines} lines)"
        )
        return LoadedItem(item, base)
    if windowed or cut:
        base.line_start, base.line_end, base.total_lines = (
            window.line_start,
            window.line_end,
            window.total_lines,
        )
    if cut:
        base.status = Status.PARTIAL
        base.next_offset = window.next_offset
        base.next_column = window.next_column
        if budget_cut:
            base.code = Code.BUDGET
        notice = cut_notice(base, window.cut_line, window.column, span_end(item))
        if notice:
            shown = shown + ("" if not shown or shown.endswith("\n") else "\n") + notice
        shown = with_cut_block(shown, base, outline_for, outline_chars)
    elif windowed:
        # A window given whole that is not the whole file says where it is, as a cut
        # notice would (PROTOCOL §4); like one, it is not counted in chars.
        notice = position_notice(base, window.next_offset, window.column)
        if item.symbol is not None and span_end(item) is not None:
            notice = span_notice(item.symbol, window.line_start, window.line_end, total)
        if notice:
            shown = shown + ("" if not shown or shown.endswith("\n") else "\n") + notice
    for note in notes:
        shown = shown + ("" if not shown or shown.endswith("\n") else "\n") + note
    return LoadedItem(
        item, base, text=shown, window=window, full=source_text, outline_for=outline_for
    )


def span_end(item: Item) -> int | None:
    """The last line of ``item``'s span (a ``symbol`` or ``enclosing`` read made a line
    window, ``engine.symbols``), or None for any other entry."""
    if (item.symbol is None and item.enclosing is None) or item.limit is None:
        return None
    return (item.offset or 1) + item.limit - 1


def span_rest(item: Item, line: int) -> int | None:
    """The ``limit`` that reads ``item``'s span from 1-based ``line`` to its last line
    (a continuation's), or None for an entry that is no span (or a line past it)."""
    last = span_end(item)
    return last - line + 1 if last is not None and last >= line else None


def budget_cut(
    lo: LoadedItem,
    allowed: int,
    opts: LoadOptions,
    budget: bool = True,
    outline_chars: int = MAX_OUTLINE_CHARS,
) -> LoadedItem:
    """Re-cut the one partial file of an answer to at most ``allowed`` shown characters
    (line numbers included, ``opts.line_numbers``), status ``partial`` with code
    ``budget`` (no code when ``budget`` is False: a per-file cap); its outline block
    takes at most ``outline_chars`` characters."""
    assert lo.window is not None and lo.full is not None
    item = lo.item
    offset = item.offset or 1
    lines = lo.window.line_end - offset + 1
    raw_allowed = allowed
    while True:
        # A per-file cap goes on into a line no window could hold (a minified file's
        # line 2); the totals' cut ends at a line boundary, where a cursor resumes.
        window = content_lines.window(
            lo.full, offset, lines, max(raw_allowed, 1), None, item.column or 1, not budget
        )
        window.total_lines = lo.window.total_lines
        total = lo.window.total_lines
        if window.next_offset is None and (total is None or window.line_end < total):
            window.next_offset = window.line_end + 1
        base = msgspec.structs.replace(
            lo.result, status=Status.OK, code=None, next_offset=None, next_column=None
        )
        cut = finish(item, base, window, lo.full, opts, budget, lo.outline_for, outline_chars)
        excess = cut.result.chars - allowed
        if excess <= 0 or raw_allowed <= 1:
            return cut
        raw_allowed -= excess  # line numbers took room: cut more raw text


#: Bytes charged to the cache entry for one kept count (the dict slot and the int).
_COUNT_BYTES = 128


def kept_tokens(lo: LoadedItem, opts: LoadOptions, cache: ContentCache | None) -> int | None:
    """:func:`tokens_of` when it is known without counting (on ``lo``, or kept with the
    cache entry), else None."""
    if lo.tokens is not None:
        return lo.tokens
    if not lo.text:
        return tokens_of(lo, opts, cache)
    counted = _kept_count(lo, opts, cache, lambda: None)
    if counted is not None:
        lo.tokens = counted
    return counted


def _kept_count(
    lo: LoadedItem, opts: LoadOptions, cache: ContentCache | None, count: Callable[[], int | None]
) -> int | None:
    """``lo``'s token count kept with its content-cache entry (``ContentCache.derived``
    under :func:`_count_key`, :data:`_COUNT_BYTES` charged), made by ``count()`` on the
    first call; None when ``lo`` is no window of a cached text (or ``count`` gives
    None): the one place counts are kept."""
    if cache is None or lo.window is None or lo.full is None:
        return None
    key = _count_key(lo, opts)
    return cache.derived(lo.full, key, lambda _full: count(), size=lambda _n: _COUNT_BYTES)


def _count_key(lo: LoadedItem, opts: LoadOptions) -> str:
    """The ``ContentCache.derived`` key of ``lo``'s count: what decides its shown text
    (its length too: the same window with a smaller outline block is another text)."""
    w, r = lo.window, lo.result
    assert w is not None
    return (
        f"tokens {opts.format} {w.line_start}:{w.column}+{len(w.text)} "
        f"{int(opts.line_numbers)} {r.status} {r.code} {len(lo.text or '')}"
    )


def tokens_of(lo: LoadedItem, opts: LoadOptions, cache: ContentCache | None) -> int:
    """The o200k tokens of ``lo``'s shown text (line numbers and cut notice included) as
    ``opts.format`` writes it (``render.content_form``); 0 without text. Kept on ``lo``
    and, when its text came from the content cache, with the cache entry, keyed by
    what decides the shown text (format, first line and column, length of the window,
    line numbers, status and code): a whole file, or the same window of it, is counted
    once while the entry holds; a text whose count the daemon made ahead
    (``cache.stored_count``), or that was counted for another file lately
    (``tokens.count_keyed``: the same text shown for a copy), is not counted again."""
    if lo.tokens is not None:
        return lo.tokens
    text = lo.text
    if not text:
        lo.tokens = 0
        return 0
    fmt = opts.format

    def count() -> int:
        form = content_form(fmt, text)
        key = tokens.count_key(form)
        stored = cache.stored_count if cache is not None else None
        got = stored(key) if stored is not None else None
        return got if got is not None else tokens.count_keyed(form, key)

    counted = _kept_count(lo, opts, cache, count)
    if counted is None:
        counted = tokens.count_memo(content_form(fmt, text))
    lo.tokens = counted
    return counted


def token_cut(
    lo: LoadedItem,
    allowed: int,
    opts: LoadOptions,
    cache: ContentCache | None,
    budget: bool = True,
    outline_chars: int = MAX_OUTLINE_CHARS,
) -> LoadedItem:
    """``lo`` cut (as :func:`budget_cut` cuts, at a line end or inside a first line
    longer than what fits) so that :func:`tokens_of` is at most ``allowed`` tokens when
    anything can fit (the cut notice alone may be more; then the shortest cut is
    returned and the caller decides). Returns ``lo`` itself when it fits already. The
    outline block of the cut takes at most half of ``allowed``
    (:func:`outlines.outline_room`), and at most ``outline_chars`` characters, so that
    the content keeps the rest."""
    have = tokens_of(lo, opts, cache)
    if have <= allowed or lo.window is None or lo.full is None:
        return lo
    room = outline_chars
    if lo.outline_for is not None:
        room = min(room, outline_room(lo.outline_for(), allowed // 2, opts.format))
    chars = lo.result.chars
    guess = max(chars * allowed // max(have, 1), 1)
    best: LoadedItem | None = None
    for _ in range(40):
        cut = budget_cut(lo, guess, opts, budget, room)
        got = tokens_of(cut, opts, cache)
        if got <= allowed:
            best = cut
            break
        if guess <= 1:
            return cut
        # Shrink in proportion to the excess, and by at least one character.
        guess = min(guess - 1, max(guess * allowed // got - 1, 1))
    if best is None:
        return budget_cut(lo, 1, opts, budget, room)
    # Grow back towards the most that fits (the first guess may leave room unused):
    # all of the content first, with the smaller outline block (a window of a few lines
    # whose outline of the rest was the excess), then by halves.
    whole = budget_cut(lo, chars, opts, budget, room)
    if whole.result.chars > best.result.chars and tokens_of(whole, opts, cache) <= allowed:
        return whole
    low = best.result.chars
    high = chars
    for _ in range(12):
        if high - low <= max(chars // 64, 32):
            break
        mid = (low + high) // 2
        trial = budget_cut(lo, mid, opts, budget, room)
        if tokens_of(trial, opts, cache) <= allowed:
            best, low = trial, max(mid, trial.result.chars)
        else:
            high = mid
    return best
