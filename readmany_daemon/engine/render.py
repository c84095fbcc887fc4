"""Framing of ``llmContent`` (PROTOCOL §5), notices, and the short ``returnDisplay``.

Pure functions over ``Piece`` lists: no I/O. Each format is byte-exact as PROTOCOL §5
gives it; the shapes come from the reference tools (seed 002/003 ``separator``, seed 001
``heredoc``, seed 000 ``json``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

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
    room = MAX_NAMED_IN_CONTENT

    n_omitted = len(omitted) + notices.unlisted_omitted
    if n_omitted:
        codes = [r.code for r in omitted] + [code for _, code in notices.unlisted_omitted_names]
        stopped = all(code == Code.STOPPED for code in codes) and codes
        why = "after an error (stopOnError)" if stopped else "to stay within the budget"
        names = [(r.path, r.code) for r in omitted] + notices.unlisted_omitted_names
        head = f"Omitted {n_omitted} file(s) {why}"
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


def _framed(pieces: Sequence[Piece], with_errors: bool) -> list[Piece]:
    keep = {Status.OK, Status.PARTIAL} | ({Status.ERROR} if with_errors else set())
    return [p for p in pieces if p.result.status in keep and (p.content is not None or with_errors)]


def separator_parts(pieces: Sequence[Piece], notices: Notices) -> list[str]:
    """:func:`render_separator` as a list of strings whose concatenation is the answer;
    each file's content is one element, never copied (a full read of a large tree is
    encoded and sent part by part)."""
    out: list[str] = []
    for p in _framed(pieces, with_errors=False):
        content = p.content or ""
        out.append(f"--- {p.result.path} ---\n")
        out.append(content)
        out.append("\n" if content.endswith("\n") else "\n\n")
    for line in _notice_lines(pieces, notices, framed_errors=False):
        out.append(line + "\n")
    out.append("--- End of content ---")
    return out


def render_separator(pieces: Sequence[Piece], notices: Notices) -> str:
    """``--- {label} ---\\n{content}`` (+ ``\\n`` if missing) + ``\\n`` per file, then the
    notice lines, then ``--- End of content ---`` (PROTOCOL §5, seeds 002/003)."""
    return "".join(separator_parts(pieces, notices))


def _error_text(r: FileResult) -> str:
    return f"[Error: {r.message or r.code}]"


def render_heredoc(pieces: Sequence[Piece], notices: Notices) -> str:
    """``@{label}\\n<<'{WORD}_{INDEX}_{HASH}'\\n{content}\\n{WORD}_{INDEX}_{HASH}`` blocks
    joined by a blank line (PROTOCOL §5, seed 001). Errors are framed like files."""
    blocks: list[str] = []
    for index, p in enumerate(_framed(pieces, with_errors=True), start=1):
        r = p.result
        body = p.content if r.status != Status.ERROR and p.content is not None else _error_text(r)
        if body.endswith("\n"):
            body = body[:-1]
        base = f"{HEREDOC_WORDS[(index - 1) % len(HEREDOC_WORDS)]}_{index}_{djb2_hex6(r.path)}"
        delimiter = base
        lines = set(body.split("\n"))
        suffix = 0
        while delimiter in lines:
            suffix += 1
            delimiter = f"{base}_{suffix}"
        blocks.append(f"@{r.path}\n<<'{delimiter}'\n{body}\n{delimiter}")
    tail = _notice_lines(pieces, notices, framed_errors=True)
    if tail:
        blocks.append("\n".join(tail))
    return "\n\n".join(blocks)


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


def render_xml(pieces: Sequence[Piece], notices: Notices) -> str:
    """``<documents><document index="N"><source>…</source><document_content>…
    </document_content></document>…</documents>``, well-formed XML 1.0 whatever the
    names and contents hold; each notice line is a ``<notice>`` on its own line before
    ``</documents>`` (PROTOCOL §5)."""
    out = ["<documents>"]
    for index, p in enumerate(_framed(pieces, with_errors=True), start=1):
        r = p.result
        body = p.content if r.status != Status.ERROR and p.content is not None else _error_text(r)
        out.append(
            f'<document index="{index}"><source>{xml_escape(r.path)}</source>'
            f"<document_content>{xml_content(body)}</document_content></document>"
        )
    tail = _notice_lines(pieces, notices, framed_errors=True)
    out.extend(f"\n<notice>{xml_escape(line)}</notice>" for line in tail)
    out.append("\n</documents>" if tail else "</documents>")
    return "".join(out)


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


def render_json(pieces: Sequence[Piece], notices: Notices) -> str:
    """``{"results": {key: {"status": "ok", "content": …} | {"status": "error", "code": …,
    "message": …}}}`` (PROTOCOL §5, seed 000); ``ok`` for ok and partial, ``error`` for
    every other status. A ``notices`` list is added only when there is something to say.
    Valid JSON always: every key is unique (:func:`_json_key`)."""
    results: dict[str, dict[str, str]] = {}
    for p in pieces:
        r = p.result
        key = _json_key(p.key, results)
        if r.status in (Status.OK, Status.PARTIAL) and p.content is not None:
            results[key] = {"status": "ok", "content": p.content}
        else:
            results[key] = {
                "status": "error",
                "code": r.code or r.status,
                "message": r.message or r.status,
            }
    doc: dict[str, object] = {"results": results}
    extra = _notice_lines(pieces, notices, framed_errors=True)
    if extra:
        doc["notices"] = extra
    return json.dumps(doc, ensure_ascii=False, indent=2)


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
    element per header, content and separator in the ``separator`` format, the whole
    text as one element in the others."""
    if fmt == "separator":
        return separator_parts(pieces, notices)
    return [render(fmt, pieces, notices)]


def return_display(summary: Summary, pieces: Sequence[Piece]) -> str:
    """A short Markdown summary for a person: counts, then up to 10 file names."""
    parts = [f"Read **{summary.read}** file(s)"]
    parts.append(f"{summary.total_chars:,} chars, ~{summary.estimated_tokens:,} tokens")
    for n, word in (
        (summary.truncated, "truncated"),
        (summary.omitted, "omitted"),
        (summary.skipped, "skipped"),
        (summary.errors, "error(s)"),
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
