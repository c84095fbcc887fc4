"""Reads by structure (PROTOCOL §3 "Symbols and enclosing blocks"): a ``FileSpec``'s
``symbol`` or ``enclosing`` made a line window when its file is loaded.

:func:`span_item` finds the span in the file's outline (``content.spans``; the outline
and its spans are kept by content hash, so a warm read does not parse again) and gives
the item again as a line window over it (the span replaces ``perFileMaxLines``, as a
line window does), or the entry's error: ``symbol-not-found`` (with up to three close
names), ``no-outline`` (no grammar, or a file too large to outline), ``out-of-range``
(``enclosing`` past the end). :func:`span_notice` is the position notice of a span
given whole (``[Config.load: lines 9-11 of 22.]``).

Units: lines 1-based and inclusive.
"""

from __future__ import annotations

import dataclasses

from readmany_daemon.content.lines import count_lines
from readmany_daemon.content.outline import Outline
from readmany_daemon.content.spans import Span, enclosing, fallback, find_symbol
from readmany_daemon.engine.items import Item, LoadedItem
from readmany_daemon.engine.suggest import closest_symbols, did_you_mean
from readmany_daemon.errors import Code, Status
from readmany_daemon.wire.messages import FileResult


@dataclasses.dataclass(frozen=True)
class Spanned:
    """An item made a line window over its span: ``item`` (``offset``/``limit`` the
    span, ``symbol`` the symbol's path or None, ``key`` ``{key}:{start}-{end}`` for an
    ``enclosing`` read) and the notice lines that go after the span (a name defined
    more than once, a file without an outline read around a line), each ``[…]``."""

    item: Item
    notes: tuple[str, ...] = ()


def span_item(
    item: Item,
    base: FileResult,
    text: str,
    complete: bool,
    outline: Outline,
    total_lines: int | None = None,
) -> Spanned | LoadedItem:
    """``item`` (its ``symbol`` or ``enclosing`` set) as a line window over the span
    ``outline`` (of ``text``, all of the file when ``complete``) gives, or its finished
    error entry (``base`` filled in). ``base.symbol`` is set to the symbol's path.
    ``total_lines``: the whole file's lines when ``text`` is a prefix and the reader
    counted them (None: unknown)."""
    if item.enclosing is not None:
        return _enclosing(item, base, text, complete, outline, item.enclosing, total_lines)
    assert item.symbol is not None
    if not complete or outline.reason is not None:
        return _error(item, base, Code.NO_OUTLINE, _no_outline(item, complete, outline))
    found = find_symbol(outline, item.symbol)
    if isinstance(found, list):
        close = closest_symbols(item.symbol, found)
        message = f"{item.symbol} is not in the outline" + did_you_mean(close)
        return _error(item, base, Code.SYMBOL_NOT_FOUND, message)
    notes: tuple[str, ...] = ()
    if found.others:
        lines = ", ".join(_lines(a, b) for a, b in found.others)
        notes = (f"[{found.name} is defined {len(found.others) + 1} times; not shown: {lines}.]",)
    return Spanned(_windowed(item, base, found, item.key), notes)


def _enclosing(
    item: Item,
    base: FileResult,
    text: str,
    complete: bool,
    outline: Outline,
    line: int,
    total_lines: int | None = None,
) -> Spanned | LoadedItem:
    total = outline.lines or count_lines(text)
    if not complete and total_lines is not None:
        total, complete_count = total_lines, True
    else:
        complete_count = complete
    if complete_count and line > total:
        message = f"enclosing {line} is past the end of {item.label} ({total} lines)"
        return _error(item, base, Code.OUT_OF_RANGE, message)
    head = item.key.rpartition("#enclosing=")[0]
    if complete and outline.reason is None:
        span = enclosing(outline, line)
        return Spanned(_windowed(item, base, span, f"{head}:{span.start}-{span.end}"))
    span = fallback(line, total if complete_count else line + 20)
    why = _no_outline(item, complete, outline)
    note = f"[No outline ({why}): lines {span.start}-{span.end}, around line {line}.]"
    return Spanned(_windowed(item, base, span, f"{head}:{span.start}-{span.end}"), (note,))


def _windowed(item: Item, base: FileResult, span: Span, key: str) -> Item:
    base.symbol = span.name
    return dataclasses.replace(
        item, offset=span.start, limit=span.end - span.start + 1, symbol=span.name, key=key
    )


def _no_outline(item: Item, complete: bool, outline: Outline) -> str:
    if not complete:
        return f"{item.label} is over maxFileBytes and was read only in part"
    return outline.reason or "no outline"


def _lines(a: int, b: int) -> str:
    return f"line {a}" if a == b else f"lines {a}-{b}"


def _error(item: Item, base: FileResult, code: str, message: str) -> LoadedItem:
    base.status, base.code, base.message, base.sha256 = Status.ERROR, code, message, None
    return LoadedItem(item, base)


def span_notice(name: str, start: int, end: int, total: int | None) -> str:
    """The position notice of symbol ``name`` given whole, lines ``start``..``end`` of
    ``total``: ``[Config.load: lines 9-11 of 22.]`` (issue 26)."""
    of = f" of {total}" if total is not None else ""
    return f"[{name}: {_lines(start, end)}{of}.]"
