"""What an answer tells the model beyond the framed files (PROTOCOL §4): the notice of
a cut file and the request that continues it, the position of a window given whole, the
lines naming omitted, skipped and failed entries (each count stated once), created
files, continuations, the cursor and hints, and the lines that hold redacted secrets or
a notebook's base64 placeholders; how ``separator`` and ``heredoc`` write a file's name
(``framed_name``).

Pure functions over ``Piece`` lists; ``engine.render`` places their lines in each
format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from readmany_daemon.engine import notebook
from readmany_daemon.engine.items import Piece
from readmany_daemon.errors import Code, Status
from readmany_daemon.wire.messages import FileResult

#: At most this many omitted or skipped files are named in ``llmContent`` (PROTOCOL §4).
MAX_NAMED_IN_CONTENT = 50

#: Characters that could end a line of ``separator`` or ``heredoc`` framing, or hide
#: one: the C0 controls, DEL, NEL (U+0085) and the Unicode line and paragraph
#: separators (PROTOCOL §5). A name holding one is written as a JSON string literal.
_UNSAFE_IN_NAME = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")
#: What ``json.dumps(…, ensure_ascii=False)`` leaves as it is among those.
_UNESCAPED_BY_JSON = re.compile("[\x7f\x85\u2028\u2029]")


def framed_name(label: str) -> str:
    """``label`` as ``separator`` and ``heredoc`` write a file's name, in its header and
    in every notice naming it (PROTOCOL §5): as it is, unless it holds a character of
    ``_UNSAFE_IN_NAME`` (a newline could forge a header); then as a JSON string literal,
    quotes included, with every such character escaped (``"x.txt ---\\n--- fake.txt"``;
    DEL, U+0085, U+2028 and U+2029 as ``\\u007f``, …); other characters stay as they
    are (``ü`` is not escaped)."""
    # str.isprintable is false for every character of _UNSAFE_IN_NAME (and a few
    # more, such as U+00A0): a C-speed test that passes nearly every name at once.
    if label.isprintable() or not _UNSAFE_IN_NAME.search(label):
        return label
    quoted = json.dumps(label, ensure_ascii=False)
    return _UNESCAPED_BY_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def one_line(text: str) -> str:
    """``text`` (a notice line) with each character of ``_UNSAFE_IN_NAME`` escaped as
    JSON escapes it (``\\n``, ``\\u001b``, ``\\u2028``): what ``separator`` and
    ``heredoc`` do to a notice that quotes a pattern or a folder name (a hint), so that
    a notice stays one line whatever a name holds."""
    if text.isprintable() or not _UNSAFE_IN_NAME.search(text):
        return text
    return _UNSAFE_IN_NAME.sub(lambda m: framed_name(m.group())[1:-1], text)


def as_is(label: str) -> str:
    """``label`` unchanged: how ``xml`` and ``json`` name files in their notices (their
    own escaping keeps the framing)."""
    return label


def named_in(text: str, label: str, name: Callable[[str], str]) -> str:
    """``text`` (a message about the file ``label``) with ``label`` written as ``name``
    writes it."""
    written = name(label)
    return text if written == label or not label else text.replace(label, written)


@dataclass
class Notices:
    """What the model must be told beyond the framed files (PROTOCOL §4).

    ``continuations`` are ``(label, request)``: a cut file and the ready-made request
    fragment that continues it (``continuation_request``); ``cursor`` the
    ``nextCursor`` when files were omitted; ``hints`` one-line advice (e.g. which flag shows
    hidden files when an expansion came back empty); ``unlisted_omitted`` and
    ``unlisted_skipped`` count omitted/skipped expansion matches not present in
    ``pieces``, and ``unlisted_omitted_names`` / ``unlisted_skipped_names`` hold the
    first of them (label, code), up to ``MAX_NAMED_IN_CONTENT``, in output order.
    """

    continuations: list[tuple[str, str]] = field(default_factory=list)
    cursor: str | None = None
    hints: list[str] = field(default_factory=list)
    unlisted_omitted: int = 0
    unlisted_skipped: int = 0
    unlisted_omitted_names: list[tuple[str, str | None]] = field(default_factory=list)
    unlisted_skipped_names: list[tuple[str, str | None]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    #: When set (a token budget that binds), at most this many omitted, skipped or
    #: failed entries are named or framed; the others are counted in a notice.
    room: int | None = None
    #: ``packing: "outlines"``: omitted files given no outline within the budget (and
    #: not outlined on an earlier page of the walk).
    not_outlined: int = 0
    #: A ranked answer (``focus``): the omitted line names at most
    #: :data:`MAX_NAMED_RANKED` omitted files, in rank order, each with its ``why``.
    ranked: bool = False


#: Omitted files a ranked answer names in its omitted line (PROTOCOL §4 "Focus").
MAX_NAMED_RANKED = 10


def cut_notice(
    r: FileResult, cut_line: int | None = None, column: int = 1, last: int | None = None
) -> str | None:
    """The last content line of a cut file, e.g.
    ``[Showing lines 1-200 of 2500. Continue with offset=201.]``; ``cut_line`` names a
    line shown only in part (longer than the character cap), continued at
    ``r.next_column``: ``[Showing lines 1-1 of 3, line 1 cut short. Continue with
    offset=1, column=20001 (offset=2 skips its rest).]``; ``column`` is where the first
    line shown starts; ``last``, a span's last line (``engine.symbols``), adds the
    ``limit`` that ends there: ``Continue with offset=201, limit=40``. None when nothing
    was cut."""
    if r.line_start is None or r.line_end is None or (r.next_offset is None and cut_line is None):
        return None
    total = f" of {r.total_lines}" if r.total_lines is not None else ""
    why = " (budget)" if r.code == Code.BUDGET else ""
    text = f"[Showing lines {r.line_start}-{r.line_end}{total}{why}"
    if column > 1:
        text += f", line {r.line_start} from column {column}"
    if cut_line is not None:
        text += f", line {cut_line} cut short"
    if cut_line is not None and r.next_column is not None:
        text += f". Continue with offset={cut_line}, column={r.next_column}"
        if last is not None and last >= cut_line:
            text += f", limit={last - cut_line + 1}"
        if r.next_offset is not None:
            text += f" (offset={r.next_offset} skips its rest)"
    elif r.next_offset is not None:
        text += f". Continue with offset={r.next_offset}"
        if last is not None and last >= r.next_offset:
            text += f", limit={last - r.next_offset + 1}"
    return text + ".]"


def position_notice(r: FileResult, next_offset: int | None, column: int = 1) -> str | None:
    """The last line of a window that is given whole (``ok``) but is not the whole file
    (PROTOCOL §4): where it is, and the line to ask for next when more follows, e.g.
    ``[Showing lines 2600-2604 of 2735. Continue with offset=2605.]``, or
    ``[Showing lines 2690-2735 of 2735.]`` when it reaches the end; ``column`` is where
    its first line starts (``, line 2600 from column 9``). Lines are 1-based and
    inclusive; ``next_offset`` is the window's (None when nothing follows). None for a
    window that is the whole file (from line 1, column 1, to its last line)."""
    if r.line_start is None or r.line_end is None:
        return None
    total = r.total_lines
    if r.line_start == 1 and column == 1 and total is not None and r.line_end >= total:
        return None
    text = f"[Showing lines {r.line_start}-{r.line_end}"
    if total is not None:
        text += f" of {total}"
    if column > 1:
        text += f", line {r.line_start} from column {column}"
    if next_offset is not None:
        text += f". Continue with offset={next_offset}"
    return text + ".]"


def continuation_request(
    path: str, offset: int, column: int | None = None, limit: int | None = None
) -> str:
    """A request fragment the four reference shapes can all make for the rest of a file
    (with ``column``, for the rest of a line cut short; with ``limit``, for the rest of
    a span: ``engine.symbols``)."""
    spec: dict[str, str | int] = {"path": path, "offset": offset}
    if column is not None:
        spec["column"] = column
    if limit is not None:
        spec["limit"] = limit
    return "files: " + json.dumps([spec], ensure_ascii=False)


def _named_line(
    head: str, names: Sequence[tuple[str, str | None]], total: int, room: int, with_code: bool
) -> tuple[str, int]:
    """``[{head}: a, b, and N more.]``: the first ``room`` of ``names``, then one count of
    all the others, so that the names shown plus N are ``total``; ``[{head}.]`` when no
    name is shown. Returns the line and how many names it shows."""
    shown = names[: max(room, 0)]
    if not shown:
        return f"[{head}.]", 0
    parts = [f"{label} ({code})" if with_code and code else label for label, code in shown]
    rest = total - len(shown)
    if rest:
        parts.append(f"and {rest} more")
    return f"[{head}: {', '.join(parts)}.]", len(shown)


def _line_ranges(numbers: Sequence[int]) -> str:
    """``line 3``, ``lines 3, 7``, ``lines 10-35, 40``: sorted 1-based line numbers."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
    return ("line " if len(runs) == 1 and runs[0][0] == runs[0][1] else "lines ") + text


def redaction_lines(pieces: Sequence[Piece], name: Callable[[str], str] = as_is) -> list[str]:
    """The notice naming the lines shown with secrets replaced (PROTOCOL §4 "Secrets"),
    at most ``MAX_NAMED_IN_CONTENT`` files (each written by ``name``), and what the model
    must never do with the placeholders; ``[]`` when nothing was redacted."""
    named: list[str] = []
    files = 0
    for p in pieces:
        r = p.result
        if not r.redactions or p.content is None or r.status not in (Status.OK, Status.PARTIAL):
            continue
        files += 1
        if len(named) < MAX_NAMED_IN_CONTENT:
            kinds = ", ".join(dict.fromkeys(x.kind for x in r.redactions))
            lines = _line_ranges([x.line for x in r.redactions])
            named.append(f"{name(r.path)} {lines} ({kinds})")
    if not files:
        return []
    more = f"; and {files - len(named)} more file(s)" if files > len(named) else ""
    return [
        f"[Secrets redacted: {'; '.join(named)}{more}. Those lines show «redacted:<kind>:<hash>» "
        "placeholders, not the file's text: never write a placeholder back into a file; "
        "edit around it, and ask the user for the real value if you need it.]"
    ]


def placeholder_lines(pieces: Sequence[Piece], name: Callable[[str], str] = as_is) -> list[str]:
    """The notice naming the raw notebook lines shown with base64 payloads replaced by
    ``«base64 …: not shown»`` placeholders (PROTOCOL §4 "Notebooks"), at most
    ``MAX_NAMED_IN_CONTENT`` files (each written by ``name``), and that they must never
    be written back; ``[]`` when none is shown."""
    named: list[str] = []
    files = 0
    for p in pieces:
        r = p.result
        if p.content is None or r.line_start is None or not notebook.is_notebook(r.path):
            continue
        if "«base64" not in p.content:
            continue
        lines = [
            r.line_start + n
            for n, line in enumerate(p.content.split("\n"))
            if notebook.PLACEHOLDER.search(line)
        ]
        if not lines:
            continue
        files += 1
        if len(named) < MAX_NAMED_IN_CONTENT:
            named.append(f"{name(r.path)} {_line_ranges(lines)}")
    if not files:
        return []
    more = f"; and {files - len(named)} more file(s)" if files > len(named) else ""
    return [
        f"[Notebook images not shown: {'; '.join(named)}{more}. Those lines show "
        "«base64 …» placeholders, not the file's text: never write "
        "a placeholder back into the file; edit around it, or read the notebook by cells "
        "to see its images.]"
    ]


def notice_lines(
    pieces: Sequence[Piece],
    notices: Notices,
    framed_errors: bool,
    name: Callable[[str], str] = as_is,
) -> list[str]:
    """Lines after the framed files: omitted, skipped and (when not framed) failed entries,
    at most ``MAX_NAMED_IN_CONTENT`` named in all, each kind's count stated once (names
    shown + "and N more" = the count), then continuation requests and hints. Each file
    is named as ``name`` writes it (:func:`framed_name` in ``separator`` and
    ``heredoc``, :func:`as_is` in ``xml`` and ``json``)."""
    omitted = [p.result for p in pieces if p.result.status == Status.OMITTED]
    # A pattern that matched nothing is said by its hint, not counted as a file.
    skipped = [
        p.result
        for p in pieces
        if p.result.status == Status.SKIPPED and p.result.code != Code.NO_MATCH
    ]
    errors = [p.result for p in pieces if p.result.status == Status.ERROR]
    lines: list[str] = redaction_lines(pieces, name) + placeholder_lines(pieces, name)
    room = MAX_NAMED_IN_CONTENT if notices.room is None else notices.room

    n_omitted = len(omitted) + notices.unlisted_omitted
    if n_omitted:
        codes = [r.code for r in omitted] + [code for _, code in notices.unlisted_omitted_names]
        stopped = all(code == Code.STOPPED for code in codes) and codes
        why = "after an error (stopOnError)" if stopped else "to stay within the budget"
        # Files given as outlines are named by their frames above, not again here.
        named = [
            p.result for p in pieces if p.result.status == Status.OMITTED and p.content is None
        ]
        names = [(name(r.path), r.code) for r in named] + [
            (name(label), code) for label, code in notices.unlisted_omitted_names
        ]
        if notices.ranked:  # best-ranked first (``files`` lists them so), with their why
            names = [(name(r.path), r.why) for r in named]
        head = f"Omitted {n_omitted} file(s) {why}"
        outlined = len(omitted) - len(named)
        if outlined:
            head += f", {outlined} of them given as outlines above (structure only, not read)"
        if notices.not_outlined:
            head += f", {notices.not_outlined} of them could not be outlined within the budget"
        # The outlined are counted in the head; the names and "N more" are the others.
        if notices.ranked:
            head += ", best-ranked first"
            top = min(room, MAX_NAMED_RANKED)
            line, used = _named_line(head, names, n_omitted - outlined, top, True)
        else:
            line, used = _named_line(head, names, n_omitted - outlined, room, False)
        lines.append(line)
        room -= used
    if notices.cursor:
        # A focused cursor holds a digest of the focus, not its text: it goes beside it.
        same = " and the same focus" if notices.ranked else ""
        lines.append(
            f'[To read the omitted files, repeat the request with cursor="{notices.cursor}"{same}.]'
        )
    n_skipped = len(skipped) + notices.unlisted_skipped
    if n_skipped:
        names = [(name(r.path), r.code) for r in skipped] + [
            (name(label), code) for label, code in notices.unlisted_skipped_names
        ]
        line, used = _named_line(f"Skipped {n_skipped} file(s)", names, n_skipped, room, True)
        lines.append(line)
        room -= used
    if errors and framed_errors and notices.room is not None and len(errors) > notices.room:
        lines.append(f"[{len(errors) - notices.room} more error(s) not named.]")
    if errors and not framed_errors:
        for r in errors[: max(room, 0)]:
            message = named_in(r.message or r.code or "", r.path, name)
            lines.append(f"[Error: {name(r.path)}: {message}]")
        if len(errors) > max(room, 0):
            lines.append(f"[{len(errors) - max(room, 0)} more error(s) not named.]")
    if notices.created:
        shown = notices.created[:MAX_NAMED_IN_CONTENT]
        rest = len(notices.created) - len(shown)
        more = f", and {rest} more (see createdPaths)" if rest else ""
        ask = json.dumps(shown, ensure_ascii=False)
        lines.append(
            f"[Created after an earlier page, in the part it had already delivered: "
            f"{', '.join(map(name, shown))}{more}. Read them with paths: {ask}.]"
        )
    for label, request in notices.continuations:
        lines.append(f"[To continue {name(label)}: {request}]")
    lines.extend(notices.hints)
    return lines
