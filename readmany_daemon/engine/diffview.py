"""A changed file as a ``changes`` read shows it (PROTOCOL §3 "What changed since a
commit"): its changed lines widened to their enclosing symbols, and the outline of the
rest.

:func:`change_spans` turns git's hunks (``index.gitdiff.FileChange``: the new side's
``(start, count)``) into the spans shown: with an outline, each hunk widened to the
innermost symbol (function, method, class, section; else the top-level statement) that
holds its first and its last line (``content.spans.enclosing``), unless that symbol is
over :data:`WIDEN_MAX_LINES` lines longer than the hunk (a change in a long class body):
then, as for a file without an outline, the hunk with :data:`CONTEXT_LINES` lines of
context either side (git's default). Spans that touch or are a few lines apart
(:data:`JOIN_GAP`) are joined.

:func:`changed_view` writes them: each span after a ``[Lines 10-25:]`` line, then the
notice ``[Changed since 1a2b3c4d5e6f: lines 10-25, 40-52 of 300 shown.]`` and the
outline of the symbols not shown whole, compact (``content.outline_fit``, in at most
1/:data:`OUTLINE_SHARE` of the file's characters, :data:`MIN_OUTLINE_CHARS` at least).
The per-file caps apply to the lines shown (``perFileMaxLines``, ``perFileMaxChars``,
``perFileMaxTokens``; none with ``preferFullRead``), as to a window; the budget's cut
shortens the spans too (``LoadedItem.recut``). The entry is ``partial`` unless its spans
hold every line, ``spans`` names what it shows; the span headers, the notice and the
outline are framing: not counted in ``chars``.

Units: lines 1-based and inclusive; characters are ``str`` code points.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Final

import msgspec

from readmany_daemon.content import tokens
from readmany_daemon.content.lines import split_lines
from readmany_daemon.content.outline import Outline, Symbol, render_outline
from readmany_daemon.content.outline_fit import fit_outline
from readmany_daemon.content.spans import enclosing
from readmany_daemon.engine.items import Item, LoadedItem
from readmany_daemon.engine.options import LoadOptions
from readmany_daemon.engine.outlines import MAX_OUTLINE_CHARS, wire_symbols
from readmany_daemon.engine.render import content_form
from readmany_daemon.errors import Code, Status
from readmany_daemon.index.gitdiff import FileChange
from readmany_daemon.wire.messages import FileResult

#: Lines of context either side of a hunk that is not widened (git's default, ``-U3``).
CONTEXT_LINES: Final = 3
#: A hunk is not widened to a symbol more than this many lines longer than itself.
WIDEN_MAX_LINES: Final = 80
#: Spans at most this many lines apart are shown as one (a header costs as much).
JOIN_GAP: Final = 2
#: The outline of the rest takes at most 1/OUTLINE_SHARE of the file's characters …
OUTLINE_SHARE: Final = 25
#: … and at least this many (and at most ``MAX_OUTLINE_CHARS``).
MIN_OUTLINE_CHARS: Final = 300

Span = tuple[int, int]


#: A hunk's line count that reaches any file's end: the whole file as changed.
WHOLE_FILE: Final = 2**31


def text_hunks(change: FileChange, encoding: str | None) -> Sequence[tuple[int, int]]:
    """``change``'s hunks in the lines of its text as read in ``encoding`` (None: an
    open buffer's): git's own, except for hunks ``git diff --text`` counted at each
    ``0x0A`` byte (``FileChange.bytewise``) in text where such a byte may be no newline
    (UTF-16, UTF-32) or that is not the file git compared (a buffer): then the whole
    file, as one change."""
    wide = encoding is None or encoding.startswith(("utf-16", "utf-32"))
    return ((1, WHOLE_FILE),) if change.bytewise and wide else change.hunks


def change_spans(
    hunks: Sequence[tuple[int, int]], outline: Outline | None, total: int
) -> list[Span]:
    """The spans (``(start, end)``, 1-based inclusive, sorted, joined) that show
    ``hunks`` (the new side's ``(start, count)``; ``count`` 0: lines deleted after line
    ``start``) of a file of ``total`` lines, widened by ``outline`` (None, or one with a
    ``reason``: hunks with context). Empty for a file of no lines."""
    if total <= 0:
        return []
    spans: list[Span] = []
    for start, count in hunks:
        first = min(max(start, 1), total)
        last = min(max(start + count - 1, first), total)
        spans.append(_widened(first, last, count, outline, total))
    spans.sort()
    joined: list[Span] = []
    for s, e in spans:
        if joined and s <= joined[-1][1] + JOIN_GAP + 1:
            joined[-1] = (joined[-1][0], max(joined[-1][1], e))
        else:
            joined.append((s, e))
    return joined


def _widened(first: int, last: int, count: int, outline: Outline | None, total: int) -> Span:
    """Lines ``first``..``last`` (a hunk; ``count`` 0: a deletion after ``first``) with
    their enclosing symbols, or with context (see the module)."""
    context = (max(1, first - CONTEXT_LINES + (count == 0)), min(total, last + CONTEXT_LINES))
    if outline is None or outline.reason is not None or not outline.lines:
        return context
    a = enclosing(outline, min(first, outline.lines))
    b = enclosing(outline, min(last, outline.lines))
    start, end = min(a.start, first), max(b.end, last)
    if end - start + 1 > (last - first + 1) + WIDEN_MAX_LINES:
        return context
    return start, min(end, total)


class _Shown(msgspec.Struct):
    """What one rendering shows: ``text`` (headers, lines, notice, outline), ``chars``
    (of the lines only), the ``spans`` shown, the ``outline`` lines given and whether
    a cap cut the spans (``cut``: the name of the cap, or ``"budget"``)."""

    text: str
    chars: int
    spans: list[Span]
    outline: tuple[Symbol, ...]
    cut: str | None


def _render(
    lines: list[str],
    spans: list[Span],
    numbered: bool,
    max_lines: int | None,
    max_chars: int | None,
    lines_cap: str = "perFileMaxLines",
    chars_cap: str = "perFileMaxChars",
) -> tuple[list[str], int, list[Span], str | None]:
    """The span headers and lines of ``spans`` (numbered when ``numbered``), cut at
    ``max_lines`` lines and ``max_chars`` characters of lines; the parts, the characters
    of lines, the spans shown and the cap that cut (None)."""
    parts: list[str] = []
    chars = used = 0
    shown: list[Span] = []
    width = max(6, len(str(len(lines))))
    for s, e in spans:
        header_at = len(parts)
        parts.append("")
        last = s - 1
        for n in range(s, e + 1):
            line = lines[n - 1]
            if numbered:
                line = f"{n:>{width}}\t{line}"
            if not line.endswith("\n"):
                line += "\n"
            if max_lines is not None and used >= max_lines:
                break
            if max_chars is not None and chars + len(line) > max_chars:
                if chars == 0:  # the first line alone is over the cap: its start
                    line = line[:max_chars] + "\n"
                    parts.append(line)
                    chars += len(line) - 1
                    last = n
                break
            parts.append(line)
            chars += len(line)
            used += 1
            last = n
        if last >= s:
            parts[header_at] = f"[Lines {s}-{last}:]\n"
            shown.append((s, last))
        else:
            parts.pop(header_at)
        if last < e:
            cut = lines_cap if max_lines is not None and used >= max_lines else chars_cap
            return parts, chars, shown, cut
    return parts, chars, shown, None


def _rest(outline: Outline | None, shown: list[Span]) -> tuple[Symbol, ...]:
    """The symbols of ``outline`` not shown whole by ``shown``, in document order."""
    if outline is None or outline.reason is not None:
        return ()
    return tuple(
        sym
        for sym in outline.symbols
        if not any(s <= sym.line_start and sym.line_end <= e for s, e in shown)
    )


def _ranges(spans: Sequence[Span]) -> str:
    """``lines 10-25, 40-52`` (``line 7`` for one line alone)."""
    if len(spans) == 1 and spans[0][0] == spans[0][1]:
        return f"line {spans[0][0]}"
    return "lines " + ", ".join(str(s) if s == e else f"{s}-{e}" for s, e in spans)


#: The spans a cut notice gives a request for (``_left_request``); the rest are counted.
MAX_LEFT_SPECS: Final = 2


def _left_request(label: str, left: Sequence[Span]) -> str:
    """The ``files`` request that reads the spans ``left`` of the file ``label`` (the
    first ``MAX_LEFT_SPECS``; the others counted), for a cut notice: a cursor goes on
    by files, not by the spans of one."""
    specs = [{"path": label, "offset": s, "limit": e - s + 1} for s, e in left[:MAX_LEFT_SPECS]]
    more = len(left) - len(specs)
    tail = f" (and {more} more span{'s' if more > 1 else ''} after them)" if more > 0 else ""
    return f"read them with files: {json.dumps(specs, ensure_ascii=False)}{tail}"


def _show(
    label: str,
    lines: list[str],
    spans: list[Span],
    outline: Outline | None,
    base_id: str,
    numbered: bool,
    caps: tuple[int | None, int | None],
    budget: bool,
    outline_cap: int,
) -> _Shown:
    """One rendering of the spans under ``caps`` (lines, characters; ``budget``: the
    characters are the totals' cut, not ``perFileMaxChars``)."""
    chars_cap = "the budget" if budget else "perFileMaxChars"
    parts, chars, shown, cut = _render(lines, spans, numbered, *caps, chars_cap=chars_cap)
    total = len(lines)
    head = f"[Changed since {base_id[:12]}: "
    if shown:
        head += f"{_ranges(shown)} of {total} shown."
    elif total == 0:
        head += "the file is empty now."
    else:
        head += f"no line changed (a rename, or its mode); {total} lines."
    notes = [head + "]\n"]
    if cut is not None:
        left = [(s, e) for s, e in spans if e > (shown[-1][1] if shown else 0)]
        if shown and left and left[0][0] <= shown[-1][1]:
            left[0] = (shown[-1][1] + 1, left[0][1])
        # the budget's cut: the cursor goes on by files, so the notice gives the request
        # (a cap the call set: it knows how; the notice stays short under a token cap)
        ask = _left_request(label, left) if budget else "read them by offset and limit"
        notes.append(f"[Cut by {cut}: {_ranges(left)} not shown; {ask}.]\n")
    rest = _rest(outline, shown)
    given: tuple[Symbol, ...] = ()
    if outline is not None and outline.reason is not None and shown:
        notes.append(f"[No outline ({outline.reason}): each change with 3 lines of context.]\n")
    elif rest:
        head_line = "[Outline of the rest (not shown):]\n"
        given = fit_outline(rest, max(0, outline_cap - len(head_line)))
        if given:
            notes.append(head_line + render_outline(given))
    return _Shown("".join(parts) + "".join(notes), chars, shown, given, cut)


def changed_view(
    item: Item,
    base: FileResult,
    text: str,
    read: str,
    outline: Outline | None,
    hunks: Sequence[tuple[int, int]],
    opts: LoadOptions,
    base_id: str,
) -> LoadedItem:
    """The loaded entry of changed file ``item`` (``text`` the whole file as shown,
    secrets already redacted; ``read`` as read; ``outline`` of ``read``)
    showing ``hunks`` widened (see the module), ``base`` filled in: ``status``
    (``partial`` unless every line is shown), ``chars``, ``lineStart``/``lineEnd``
    (the first and last line shown), ``totalLines``, ``spans``, ``outline`` (the
    symbols of the rest given), the redactions of the lines shown; a ``recut`` for the
    budget's cut."""
    lines = split_lines(text, keepends=True)
    spans = change_spans(hunks, outline, len(lines))
    full = opts.prefer_full_read
    caps = (None, None) if full else (opts.per_file_max_lines, opts.per_file_max_chars)
    outline_cap = min(MAX_OUTLINE_CHARS, max(MIN_OUTLINE_CHARS, len(text) // OUTLINE_SHARE))
    numbered = opts.line_numbers

    def made(caps: tuple[int | None, int | None], budget: bool) -> LoadedItem:
        shown = _show(
            item.label, lines, spans, outline, base_id, numbered, caps, budget, outline_cap
        )
        if opts.per_file_max_tokens is not None:
            shown = _token_cap(
                shown,
                opts,
                lambda c: _show(
                    item.label,
                    lines,
                    spans,
                    outline,
                    base_id,
                    numbered,
                    (caps[0], c),
                    budget,
                    outline_cap,
                ),
            )
        return _loaded(item, base, shown, len(lines), budget)

    def recut(allowed: int) -> LoadedItem:
        """This file cut again to ``allowed`` characters of lines (the totals' cut)."""
        chars = allowed if caps[1] is None else min(allowed, caps[1])
        return made((caps[0], max(chars, 1)), True)

    done = made(caps, False)
    done.recut = recut
    done.full = read
    return done


def _token_cap(shown: _Shown, opts: LoadOptions, again: Callable[[int], _Shown]) -> _Shown:
    """``shown`` cut until its text is at most ``perFileMaxTokens`` o200k tokens as the
    format writes it (the characters of lines shrink in proportion to the excess)."""
    assert opts.per_file_max_tokens is not None
    cap = opts.per_file_max_tokens
    chars = shown.chars
    for _ in range(24):
        counted = tokens.count(content_form(opts.format, shown.text))
        if counted <= cap or chars <= 1:
            return shown
        chars = max(1, min(chars - 1, chars * cap // counted))
        shown = again(chars)
        if shown.cut == "perFileMaxChars":
            shown.cut = "perFileMaxTokens"
    return shown


def _loaded(item: Item, base: FileResult, shown: _Shown, total: int, budget: bool) -> LoadedItem:
    """The entry of one rendering (see :func:`changed_view`)."""
    res = msgspec.structs.replace(base, status=Status.OK, code=None, chars=shown.chars)
    covered = sum(e - s + 1 for s, e in shown.spans)
    if covered < total or shown.cut is not None:
        res.status = Status.PARTIAL
        res.code = Code.BUDGET if budget and shown.cut is not None else None
    res.spans = [[s, e] for s, e in shown.spans]
    if shown.spans:
        res.line_start, res.line_end = shown.spans[0][0], shown.spans[-1][1]
    res.total_lines = total
    res.outline = wire_symbols(shown.outline) if shown.outline else None
    if res.redactions:
        kept = [r for r in res.redactions if any(s <= r.line <= e for s, e in shown.spans)]
        res.redactions = kept or None
    return LoadedItem(item, res, text=shown.text)
