"""Framing of ``llmContent`` (PROTOCOL §5) and the short ``returnDisplay``; the notice
lines come from ``engine.notices``.

Pure functions over ``Piece`` lists: no I/O. Each format is byte-exact as PROTOCOL §5
gives it; the shapes come from the reference tools (seed 002/003 ``separator``, seed 001
``heredoc``, seed 000 ``json``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence

from readmany_daemon.content.tokens import BOUNDARY_MARGIN
from readmany_daemon.engine.items import Piece
from readmany_daemon.engine.notices import (
    Notices,
    framed_name,
    named_in,
    notice_lines,
    one_line,
)
from readmany_daemon.errors import Status
from readmany_daemon.wire.messages import FileResult, Summary, wire_safe

#: Heredoc delimiter words, one per 1-based index, cycling past 26 (PROTOCOL §5, seed 001).
HEREDOC_WORDS: tuple[str, ...] = (
    "PINE", "MANGO", "ORBIT", "RAVEN", "CEDAR", "LOTUS", "EMBER", "NOVA", "DUNE", "KITE",
    "TIDAL", "QUARTZ", "ACORN", "BLAZE", "FJORD", "GLYPH", "HARBOR", "IVORY", "JUNIPER",
    "SIERRA", "UMBRA", "VIOLET", "WILLOW", "XENON", "YARROW", "ZEPHYR",
)  # fmt: skip


def djb2_hex6(label: str) -> str:
    """The heredoc HASH of a label: djb2 (h = 5381; h = h*33 + c mod 2**32) over its UTF-16
    code units, uppercase hex without leading zeros, left-padded with ``0`` to at least 6
    characters, then its first 6 (PROTOCOL §5): ``src/a.ts`` → ``CF2C32``."""
    h = 5381
    data = label.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (h * 33 + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return f"{h:X}".rjust(6, "0")[:6]


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


#: The body of an empty file in ``separator`` (PROTOCOL §5): framing, not content, so
#: that an empty file and a file of one blank line read differently.
EMPTY_FILE = "[Empty file.]"


def _empty(p: Piece) -> bool:
    """Whether ``p`` is a file shown whole with no content at all (an empty file: a
    window that is not the whole file says so in its position notice)."""
    return p.content == "" and p.result.status == Status.OK


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
        out.add(f"--- {framed_name(p.result.path)} ---\n")
        out.add(content, p if _shown(p) else None)
        if _empty(p):
            out.add(EMPTY_FILE + "\n\n")
        else:
            out.add("\n" if content.endswith("\n") else "\n\n")
    for line in notice_lines(pieces, notices, framed_errors=False, name=framed_name):
        out.add(one_line(line) + "\n")
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
        if not shown and r.status == Status.ERROR:
            body = named_in(body, r.path, framed_name)
        base = f"{HEREDOC_WORDS[(index - 1) % len(HEREDOC_WORDS)]}_{index}_{djb2_hex6(r.path)}"
        delimiter = base
        lines = set(body.split("\n"))
        suffix = 0
        while delimiter in lines:
            suffix += 1
            delimiter = f"{base}_{suffix}"
        # An empty file has no body line, as a shell heredoc of nothing.
        opening = f"<<'{delimiter}'" + ("" if _empty(p) else "\n")
        out.add(("\n\n" if index > 1 else "") + f"@{framed_name(r.path)}\n{opening}")
        out.add(body, p if shown else None)
        out.add(f"\n{delimiter}")
    tail = [one_line(x) for x in notice_lines(pieces, notices, True, name=framed_name)]
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
    tail = notice_lines(pieces, notices, framed_errors=True)
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
    extra = notice_lines(pieces, notices, framed_errors=True)
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


def frame_chars(fmt: str, label: str, empty: bool = False) -> int:
    """Characters the framing of one file labelled ``label`` adds to ``llmContent`` in
    format ``fmt`` (its label line or tags, its separators), its content aside: the
    length of the answer with that file and one character of content, less the answer
    without it and that character (the pack stage plans answer characters with it,
    ``maxAnswerChars``). With ``empty``, of an empty file: all it adds, such as the
    ``[Empty file.]`` line of ``separator`` or the ``""`` of ``json``."""
    body = "" if empty else "x\n"
    one = Piece(
        FileResult(path=label, status=Status.OK, source="disk", chars=len(body)), label, body
    )
    bare = _PARTS[fmt]([], Notices()).parts
    framed = _PARTS[fmt]([one], Notices()).parts
    shown = len(content_form(fmt, body)) if body else 0
    return max(0, sum(map(len, framed)) - sum(map(len, bare)) - shown)


def render(fmt: str, pieces: Sequence[Piece], notices: Notices) -> str:
    """``llmContent`` in format ``fmt`` (``separator``, ``heredoc``, ``xml`` or ``json``)."""
    return RENDERERS[fmt](pieces, notices)


def render_parts(fmt: str, pieces: Sequence[Piece], notices: Notices) -> list[str]:
    """``llmContent`` as strings whose concatenation equals :func:`render`'s answer: one
    element per file content and per stretch of framing between them."""
    return _PARTS[fmt](pieces, notices).parts


#: A stretch of framing of several parts and at least this many characters (the
#: notices at the end) is counted part by part (:func:`render_counted`).
SPLIT_COUNT_CHARS = 512


def render_counted(
    fmt: str, pieces: Sequence[Piece], notices: Notices, count: Callable[[str], int]
) -> tuple[list[str], int]:
    """:func:`render_parts` and an upper bound of the o200k tokens of their concatenation:
    each file's content counts ``Piece.tokens`` (its cached count, when known), each
    stretch of framing between two contents counts ``count`` of it (a long one of several
    parts: of each part), and each boundary between two of those adds
    ``tokens.BOUNDARY_MARGIN`` (what joining two texts can add to the sum of their
    counts). The engine's ``count`` is the answer's ``tokens.Tally``."""
    made = _PARTS[fmt](pieces, notices)
    total = stretches = 0
    framing: list[str] = []

    def count_framing() -> None:
        nonlocal total, stretches
        if len(framing) > 1 and sum(map(len, framing)) >= SPLIT_COUNT_CHARS:
            # The notices: counted part by part, so that the parts that recur (the
            # names left out, the continuations) are remembered by ``count`` and only
            # the one that changes (the cursor) is counted again.
            total += sum(map(count, framing))
            stretches += len(framing)
        else:
            total += count("".join(framing))
            stretches += 1
        framing.clear()

    for text, owner in zip(made.parts, made.owners, strict=True):
        if owner is None:
            framing.append(text)
            continue
        if framing:
            count_framing()
        total += owner.tokens if owner.tokens is not None else count(text)
        stretches += 1
    if framing:
        count_framing()
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
