"""Framing of ``llmContent`` (PROTOCOL §5), notices, and the short ``returnDisplay``.

Pure functions over ``Piece`` lists: no I/O. Each format is byte-exact as PROTOCOL §5
gives it; the shapes come from the reference tools (seed 002/003 ``separator``, seed 001
``heredoc``, seed 000 ``json``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from readmany_daemon.content.tokens import BOUNDARY_MARGIN
from readmany_daemon.errors import Code, Status
from readmany_daemon.wire.messages import FileResult, Summary, wire_safe

#: Heredoc delimiter words, one per 1-based index, cycling past 26 (PROTOCOL §5, seed 001).
HEREDOC_WORDS: tuple[str, ...] = (
    "PINE", "MANGO", "ORBIT", "RAVEN", "CEDAR", "LOTUS", "EMBER", "NOVA", "DUNE", "KITE",
    "TIDAL", "QUARTZ", "ACORN", "BLAZE", "FJORD", "GLYPH", "HARBOR", "IVORY", "JUNIPER",
    "SIERRA", "UMBRA", "VIOLET", "WILLOW", "XENON", "YARROW", "ZEPHYR",
)  # fmt: skip

#: At most this many omitted or skipped files are named in ``llmContent`` (PROTOCOL §4).
MAX_NAMED_IN_CONTENT = 50


@dataclass
class Piece:
    """One entry of the answer in output (request) order.

    ``content`` is the text shown for an ``ok`` or ``partial`` entry (already windowed,
    line-numbered, with a cut file's notice as its last line) and ``None`` otherwise.
    ``key`` is the ``json`` format's key (PROTOCOL §5). ``listed`` is False for expansion
    matches that are counted but not named (past the 200 cap).
    """

    result: FileResult
    key: str
    content: str | None = None
    explicit: bool = True
    #: o200k tokens of ``content`` as the format writes it (:func:`content_form`), when
    #: known (the answer counts each file once, through the content cache).
    tokens: int | None = None


@dataclass
class Notices:
    """What the model must be told beyond the framed files (PROTOCOL §4).

    ``continuations`` are ready-made request fragments for cut files; ``cursor`` the
    ``nextCursor`` when files were omitted; ``hints`` one-line advice (e.g. which flag shows
    hidden files when an expansion came back empty); ``unlisted_omitted`` and
    ``unlisted_skipped`` count omitted/skipped expansion matches not present in
    ``pieces``, and ``unlisted_omitted_names`` / ``unlisted_skipped_names`` hold the
    first of them (label, code), up to ``MAX_NAMED_IN_CONTENT``, in output order.
    """

    continuations: list[str] = field(default_factory=list)
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


def djb2_hex6(label: str) -> str:
    """The heredoc HASH of a label: djb2 (h = 5381; h = h*33 + c mod 2**32) over its UTF-16
    code units, uppercase hex without leading zeros, left-padded with ``0`` to at least 6
    characters, then its first 6 (PROTOCOL §5): ``src/a.ts`` → ``CF2C32``."""
    h = 5381
    data = label.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (h * 33 + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return f"{h:X}".rjust(6, "0")[:6]


def cut_notice(r: FileResult, cut_line: int | None = None, column: int = 1) -> str | None:
    """The last content line of a cut file, e.g.
    ``[Showing lines 1-200 of 2500. Continue with offset=201.]``; ``cut_line`` names a
    line shown only in part (longer than the character cap), continued at
    ``r.next_column``: ``[Showing lines 1-1 of 3, line 1 cut short. Continue with
    offset=1, column=20001 (offset=2 skips its rest).]``; ``column`` is where the first
    line shown starts. None when nothing was cut."""
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
        if r.next_offset is not None:
            text += f" (offset={r.next_offset} skips its rest)"
    elif r.next_offset is not None:
        text += f". Continue with offset={r.next_offset}"
    return text + ".]"


def continuation_request(path: str, offset: int, column: int | None = None) -> str:
    """A request fragment the four reference shapes can all make for the rest of a file
    (with ``column``, for the rest of a line cut short)."""
    spec: dict[str, str | int] = {"path": path, "offset": offset}
    if column is not None:
        spec["column"] = column
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


def redaction_lines(pieces: Sequence[Piece]) -> list[str]:
    """The notice naming the lines shown with secrets replaced (PROTOCOL §4 "Secrets"),
    at most ``MAX_NAMED_IN_CONTENT`` files, and what the model must never do with the
    placeholders; ``[]`` when nothing was redacted."""
    named: list[str] = []
    files = 0
    for p in pieces:
        r = p.result
        if not r.redactions or p.content is None or r.status not in (Status.OK, Status.PARTIAL):
            continue
        files += 1
        if len(named) < MAX_NAMED_IN_CONTENT:
            kinds = ", ".join(dict.fromkeys(x.kind for x in r.redactions))
            named.append(f"{r.path} {_line_ranges([x.line for x in r.redactions])} ({kinds})")
    if not files:
        return []
    more = f"; and {files - len(named)} more file(s)" if files > len(named) else ""
    return [
        f"[Secrets redacted: {'; '.join(named)}{more}. Those lines show «redacted:<kind>:<hash>» "
        "placeholders, not the file's text: never write a placeholder back into a file; "
        "edit around it, and ask the user for the real value if you need it.]"
    ]


def _notice_lines(pieces: Sequence[Piece], notices: Notices, framed_errors: bool) -> list[str]:
    """Lines after the framed files: omitted, skipped and (when not framed) failed entries,
    at most ``MAX_NAMED_IN_CONTENT`` named in all, each kind's count stated once (names
    shown + "and N more" = the count), then continuation requests and hints."""
    omitted = [p.result for p in pieces if p.result.status == Status.OMITTED]
    skipped = [p.result for p in pieces if p.result.status == Status.SKIPPED]
    errors = [p.result for p in pieces if p.result.status == Status.ERROR]
    lines: list[str] = redaction_lines(pieces)
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
        names = [(r.path, r.code) for r in named] + notices.unlisted_omitted_names
        head = f"Omitted {n_omitted} file(s) {why}"
        outlined = len(omitted) - len(named)
        if outlined:
            head += f", {outlined} of them given as outlines above (structure only, not read)"
        line, used = _named_line(head, names, n_omitted, room, False)
        lines.append(line)
        room -= used
    if notices.cursor:
        lines.append(
            f'[To read the omitted files, repeat the request with cursor="{notices.cursor}".]'
        )
    n_skipped = len(skipped) + notices.unlisted_skipped
    if n_skipped:
        names = [(r.path, r.code) for r in skipped] + notices.unlisted_skipped_names
        line, used = _named_line(f"Skipped {n_skipped} file(s)", names, n_skipped, room, True)
        lines.append(line)
        room -= used
    if errors and framed_errors and notices.room is not None and len(errors) > notices.room:
        lines.append(f"[{len(errors) - notices.room} more error(s) not named.]")
    if errors and not framed_errors:
        for r in errors[: max(room, 0)]:
            lines.append(f"[Error: {r.path}: {r.message or r.code}]")
        if len(errors) > max(room, 0):
            lines.append(f"[{len(errors) - max(room, 0)} more error(s) not named.]")
    if notices.created:
        shown = notices.created[:MAX_NAMED_IN_CONTENT]
        rest = len(notices.created) - len(shown)
        more = f", and {rest} more (see createdPaths)" if rest else ""
        ask = json.dumps(shown, ensure_ascii=False)
        lines.append(
            f"[Created after an earlier page, in the part it had already delivered: "
            f"{', '.join(shown)}{more}. Read them with paths: {ask}.]"
        )
    for c in notices.continuations:
        lines.append(f"[To continue {c}]")
    lines.extend(notices.hints)
    return lines


def _framed(pieces: Sequence[Piece], with_errors: bool, room: int | None = None) -> list[Piece]:
    """The pieces a format frames: files shown, and errors when ``with_errors`` (at most
    ``room`` of them when it is set)."""
    keep = {Status.OK, Status.PARTIAL} | ({Status.ERROR} if with_errors else set())
    out: list[Piece] = []
    errors = 0
    for p in pieces:
        if p.result.status == Status.UNCHANGED or is_outlined(p):
            out.append(p)
            continue
        if p.result.status not in keep or (p.content is None and not with_errors):
            continue
        if p.result.status == Status.ERROR or p.content is None:
            errors += 1
            if room is not None and errors > room:
                continue
        out.append(p)
    return out


def unchanged_text(r: FileResult) -> str:
    """The framed body of an ``unchanged`` entry (``engine.receipts``), e.g.
    ``[Unchanged: the same bytes as the copy you hold (sha256 1a2b3c4d…); not sent
    again.]``."""
    short = (r.sha256 or "")[:8]
    return f"[Unchanged: the same bytes as the copy you hold (sha256 {short}…); not sent again.]"


def is_outlined(p: Piece) -> bool:
    """Whether ``p`` is a file given as its outline (``omitted`` with its outline framed,
    ``packing: "outlines"``)."""
    return p.result.status == Status.OMITTED and p.content is not None


def _shown(p: Piece) -> bool:
    """Whether ``p``'s content (or outline) is what its frame holds (not an error or
    unchanged line)."""
    return p.content is not None and (
        p.result.status in (Status.OK, Status.PARTIAL) or is_outlined(p)
    )


def _body(p: Piece) -> str:
    """What a framed entry holds: its content, or the line of an unchanged or failed one."""
    r = p.result
    if r.status == Status.UNCHANGED:
        return unchanged_text(r) + "\n"
    if not _shown(p) or p.content is None:
        return _error_text(r)
    return p.content


class _Parts:
    """Strings whose concatenation is an answer, each file's content one of them,
    with the piece it belongs to (None for framing and notices)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.owners: list[Piece | None] = []

    def add(self, text: str, owner: Piece | None = None) -> None:
        self.parts.append(text)
        self.owners.append(owner)


def content_form(fmt: str, content: str) -> str:
    """A file's shown ``content`` as format ``fmt`` writes it in ``llmContent``: as it is
    (``separator``), without its final newline (``heredoc``), as the text of
    ``<document_content>`` (``xml``, :func:`xml_content`) or as a JSON string
    (``json``)."""
    if fmt == "heredoc":
        return content[:-1] if content.endswith("\n") else content
    if fmt == "xml":
        return xml_content(content)
    if fmt == "json":
        return json.dumps(content, ensure_ascii=False)
    return content


def _separator(pieces: Sequence[Piece], notices: Notices) -> _Parts:
    out = _Parts()
    for p in _framed(pieces, with_errors=False):
        content = _body(p)
        out.add(f"--- {p.result.path} ---\n")
        out.add(content, p if _shown(p) else None)
        out.add("\n" if content.endswith("\n") else "\n\n")
    for line in _notice_lines(pieces, notices, framed_errors=False):
        out.add(line + "\n")
    out.add("--- End of content ---")
    return out


def separator_parts(pieces: Sequence[Piece], notices: Notices) -> list[str]:
    """:func:`render_separator` as a list of strings whose concatenation is the answer;
    each file's content is one element, never copied (a full read of a large tree is
    encoded and sent part by part)."""
    return _separator(pieces, notices).parts


def render_separator(pieces: Sequence[Piece], notices: Notices) -> str:
    """``--- {label} ---\\n{content}`` (+ ``\\n`` if missing) + ``\\n`` per file, then the
    notice lines, then ``--- End of content ---`` (PROTOCOL §5, seeds 002/003)."""
    return "".join(separator_parts(pieces, notices))


def _error_text(r: FileResult) -> str:
    return f"[Error: {r.message or r.code}]"


def _heredoc(pieces: Sequence[Piece], notices: Notices) -> _Parts:
    out = _Parts()
    for index, p in enumerate(_framed(pieces, True, notices.room), start=1):
        r = p.result
        shown = _shown(p)
        body = content_form("heredoc", _body(p))
        base = f"{HEREDOC_WORDS[(index - 1) % len(HEREDOC_WORDS)]}_{index}_{djb2_hex6(r.path)}"
        delimiter = base
        lines = set(body.split("\n"))
        suffix = 0
        while delimiter in lines:
            suffix += 1
            delimiter = f"{base}_{suffix}"
        out.add(("\n\n" if index > 1 else "") + f"@{r.path}\n<<'{delimiter}'\n")
        out.add(body, p if shown else None)
        out.add(f"\n{delimiter}")
    tail = _notice_lines(pieces, notices, framed_errors=True)
    if tail:
        out.add(("\n\n" if out.parts else "") + "\n".join(tail))
    return out


def render_heredoc(pieces: Sequence[Piece], notices: Notices) -> str:
    """``@{label}\\n<<'{WORD}_{INDEX}_{HASH}'\\n{content}\\n{WORD}_{INDEX}_{HASH}`` blocks
    joined by a blank line (PROTOCOL §5, seed 001). Errors are framed like files."""
    return "".join(_heredoc(pieces, notices).parts)


#: Characters XML 1.0 cannot carry at all (``Char``, XML 1.0 §2.2), C0 controls aside.
_XML_NON_CHARS = re.compile("[\ufffe\uffff\ud800-\udfff]")
#: The C0 controls XML 1.0 cannot carry, even as a character reference: all but tab,
#: LF and CR. Each is written as its Control Pictures sign, U+2400 + its code.
_XML_C0 = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_CONTROL_PICTURES = {c: 0x2400 + c for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20))}


def xml_chars(text: str) -> str:
    """``text`` with only characters XML 1.0 allows (PROTOCOL §5): a C0 control other
    than tab, LF and CR becomes its Control Pictures sign (U+0001 → U+2401 ``␁``),
    U+FFFE, U+FFFF and lone surrogates become U+FFFD. Lengths are kept."""
    if _XML_C0.search(text):
        text = text.translate(_CONTROL_PICTURES)
    return _XML_NON_CHARS.sub("\ufffd", text)


def xml_escape(text: str, quote: bool = False) -> str:
    """``text`` as XML 1.0 character data (``&``, ``<``, ``>`` and CR escaped, the last as
    ``&#13;`` so that a parser keeps it), after :func:`xml_chars`."""
    text = xml_chars(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if quote:
        text = text.replace('"', "&quot;")
    return text.replace("\r", "&#13;")


def xml_content(text: str) -> str:
    """A file's content as the text of ``<document_content>`` (PROTOCOL §5): after
    :func:`xml_chars`, one CDATA section, so that code keeps its ``<`` and ``&``; a
    ``]]>`` in it ends the section after ``]]`` and opens another before ``>``. Content
    holding a carriage return is escaped character data instead (:func:`xml_escape`):
    a parser turns a CR inside CDATA into LF, but keeps ``&#13;``. Empty content is
    empty."""
    if not text:
        return ""
    if "\r" in text:
        return xml_escape(text)
    return "<![CDATA[" + xml_chars(text).replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _xml(pieces: Sequence[Piece], notices: Notices) -> _Parts:
    out = _Parts()
    out.add("<documents>")
    for index, p in enumerate(_framed(pieces, True, notices.room), start=1):
        r = p.result
        shown = _shown(p)
        body = _body(p)
        tag = "document_outline" if is_outlined(p) else "document_content"
        out.add(f'<document index="{index}"><source>{xml_escape(r.path)}</source><{tag}>')
        out.add(xml_content(body), p if shown else None)
        out.add(f"</{tag}></document>")
    tail = _notice_lines(pieces, notices, framed_errors=True)
    out.add("".join(f"\n<notice>{xml_escape(line)}</notice>" for line in tail))
    out.add("\n</documents>" if tail else "</documents>")
    return out


def render_xml(pieces: Sequence[Piece], notices: Notices) -> str:
    """``<documents><document index="N"><source>…</source><document_content>…
    </document_content></document>…</documents>``, well-formed XML 1.0 whatever the
    names and contents hold; each notice line is a ``<notice>`` on its own line before
    ``</documents>`` (PROTOCOL §5)."""
    return "".join(_xml(pieces, notices).parts)


def _json_key(key: str, taken: dict[str, dict[str, str]]) -> str:
    """``key`` as valid Unicode (``wire_safe``), made unique among ``taken``: two names
    that differ only in bytes that are not UTF-8 both show U+FFFD there, and a JSON
    object with a repeated key keeps only one of them; the later one gets `` (2)``,
    `` (3)``, …"""
    key = wire_safe(key)
    unique, n = key, 1
    while unique in taken:
        n += 1
        unique = f"{key} ({n})"
    return unique


def _json(pieces: Sequence[Piece], notices: Notices) -> _Parts:
    """The parts of ``json.dumps(doc, ensure_ascii=False, indent=2)`` of the document
    :func:`render_json` describes, written out so that each content is a part."""
    out = _Parts()
    taken: dict[str, dict[str, str]] = {}
    dump = functools.partial(json.dumps, ensure_ascii=False)
    entries = 0
    not_shown: dict[str, int] = {}
    head = '{\n  "results": {'
    for p in pieces:
        r = p.result
        shown = r.status in (Status.OK, Status.PARTIAL) and p.content is not None
        outline = is_outlined(p)
        if not shown and not outline and r.status != Status.UNCHANGED and notices.room is not None:
            not_shown[r.status] = not_shown.get(r.status, 0) + 1
            if not_shown[r.status] > notices.room:
                continue
        key = _json_key(p.key, taken)
        taken[key] = {}
        lead = head + ("\n" if not entries else ",\n") + f"    {dump(key)}: {{\n"
        head = ""
        entries += 1
        if shown and p.content is not None:
            out.add(lead + '      "status": "ok",\n      "content": ')
            out.add(dump(p.content), p)
            out.add("\n    }")
        elif outline and p.content is not None:
            out.add(lead + '      "status": "outline",\n      "outline": ')
            out.add(dump(p.content), p)
            out.add("\n    }")
        elif r.status == Status.UNCHANGED:
            out.add(
                lead + '      "status": "unchanged",\n'
                f'      "sha256": {dump(r.sha256 or "")},\n'
                f'      "message": {dump(unchanged_text(r))}\n    }}'
            )
        else:
            out.add(
                lead + '      "status": "error",\n      "code": '
                f"{dump(r.code or r.status)},\n"
                f'      "message": {dump(r.message or r.status)}\n    }}'
            )
    close = (head + "}") if not entries else "\n  }"
    extra = _notice_lines(pieces, notices, framed_errors=True)
    if extra:
        close += ',\n  "notices": [\n' + ",\n".join(f"    {dump(x)}" for x in extra) + "\n  ]"
    out.add(close + "\n}")
    return out


def render_json(pieces: Sequence[Piece], notices: Notices) -> str:
    """``{"results": {key: {"status": "ok", "content": …} | {"status": "error", "code": …,
    "message": …}}}`` (PROTOCOL §5, seed 000); ``ok`` for ok and partial,
    ``{"status": "unchanged", "sha256", "message"}`` for unchanged, ``error`` for every
    other status. A ``notices`` list is added only when there is something to say.
    Valid JSON always: every key is unique (:func:`_json_key`). Written as
    ``json.dumps(…, ensure_ascii=False, indent=2)`` writes it."""
    return "".join(_json(pieces, notices).parts)


_PARTS = {"separator": _separator, "heredoc": _heredoc, "xml": _xml, "json": _json}

RENDERERS = {
    "separator": render_separator,
    "heredoc": render_heredoc,
    "xml": render_xml,
    "json": render_json,
}


def render(fmt: str, pieces: Sequence[Piece], notices: Notices) -> str:
    """``llmContent`` in format ``fmt`` (``separator``, ``heredoc``, ``xml`` or ``json``)."""
    return RENDERERS[fmt](pieces, notices)


def render_parts(fmt: str, pieces: Sequence[Piece], notices: Notices) -> list[str]:
    """``llmContent`` as strings whose concatenation equals :func:`render`'s answer: one
    element per file content and per stretch of framing between them."""
    return _PARTS[fmt](pieces, notices).parts


def render_counted(
    fmt: str, pieces: Sequence[Piece], notices: Notices, count: Callable[[str], int]
) -> tuple[list[str], int]:
    """:func:`render_parts` and an upper bound of the o200k tokens of their concatenation:
    each file's content counts ``Piece.tokens`` (its cached count, when known), each
    stretch of framing between two contents counts ``count`` of it, and each boundary
    between two of those adds ``tokens.BOUNDARY_MARGIN`` (what joining two texts can add
    to the sum of their counts)."""
    made = _PARTS[fmt](pieces, notices)
    total = stretches = 0
    framing: list[str] = []
    for text, owner in zip(made.parts, made.owners, strict=True):
        if owner is None:
            framing.append(text)
            continue
        if framing:
            total += count("".join(framing))
            stretches += 1
            framing = []
        total += owner.tokens if owner.tokens is not None else count(text)
        stretches += 1
    if framing:
        total += count("".join(framing))
        stretches += 1
    return made.parts, total + BOUNDARY_MARGIN * max(stretches - 1, 0)


def return_display(summary: Summary, pieces: Sequence[Piece]) -> str:
    """A short Markdown summary for a person: counts, then up to 10 file names."""
    parts = [f"Read **{summary.read}** file(s)"]
    parts.append(f"{summary.total_chars:,} chars, ~{summary.estimated_tokens:,} tokens")
    for n, word in (
        (summary.truncated, "truncated"),
        (summary.omitted, "omitted"),
        (summary.skipped, "skipped"),
        (summary.errors, "error(s)"),
        (summary.unchanged, "unchanged"),
    ):
        if n:
            parts.append(f"{n} {word}")
    lines = [" · ".join(parts)]
    included = [p.result.path for p in pieces if p.result.status in (Status.OK, Status.PARTIAL)]
    if included:
        lines.append("")
        lines.extend(f"- `{path}`" for path in included[:10])
        if len(included) > 10:
            lines.append(f"- … and {len(included) - 10} more")
    return "\n".join(lines)
