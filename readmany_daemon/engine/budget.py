"""The budget stage: per-file windows and caps, line numbers, and the one budget cut.

``finish`` fills the line fields and the shown text of a window (``load`` calls it for
each file); ``budget_cut`` re-cuts the one file an answer includes partially to the
characters the totals leave (``maxTotalChars``), with code ``budget``.
"""

from __future__ import annotations

import msgspec

from readmany_daemon.content import lines as content_lines
from readmany_daemon.engine.items import Item, LoadedItem
from readmany_daemon.engine.render import cut_notice
from readmany_daemon.errors import Code, Status
from readmany_daemon.wire.messages import FileResult, ReadManyParams


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
    params: ReadManyParams,
    budget_cut: bool = False,
) -> LoadedItem:
    """Fill the line fields and the shown text (line numbers, cut notice) of a window.

    A window that covers all the lines asked for (``limit``) is ``ok`` even when the file
    goes on; anything else that stops before the end is ``partial`` with ``nextOffset``.
    """
    offset = item.offset or 1
    windowed = item.offset is not None or item.limit is not None or item.column is not None
    shown = window.text
    if params.line_numbers and shown:
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
        notice = cut_notice(base, window.cut_line, window.column)
        if notice:
            shown = shown + ("" if not shown or shown.endswith("\n") else "\n") + notice
    return LoadedItem(item, base, text=shown, window=window, full=source_text)


def budget_cut(lo: LoadedItem, allowed: int, params: ReadManyParams) -> LoadedItem:
    """Re-cut the one partial file of an answer to at most ``allowed`` shown characters
    (line numbers included), status ``partial`` with code ``budget``."""
    assert lo.window is not None and lo.full is not None
    item = lo.item
    offset = item.offset or 1
    lines = lo.window.line_end - offset + 1
    raw_allowed = allowed
    while True:
        window = content_lines.window(
            lo.full, offset, lines, max(raw_allowed, 1), None, item.column or 1
        )
        window.total_lines = lo.window.total_lines
        total = lo.window.total_lines
        if window.next_offset is None and (total is None or window.line_end < total):
            window.next_offset = window.line_end + 1
        base = msgspec.structs.replace(
            lo.result, status=Status.OK, code=None, next_offset=None, next_column=None
        )
        cut = finish(item, base, window, lo.full, params, budget_cut=True)
        excess = cut.result.chars - allowed
        if excess <= 0 or raw_allowed <= 1:
            return cut
        raw_allowed -= excess  # line numbers took room: cut more raw text
