"""Notebooks as cells: a ``.ipynb`` file reads as its cells, not as its JSON.

:func:`view` turns a notebook's text (nbformat 4 JSON, parsed with msgspec) into what a
model reads (PROTOCOL §4, "Notebooks"): a header line, then per cell a line
``### cell {index} · {type} · id={id}`` (1-based index; ``execution_count`` too for a
code cell that ran) and its source, then its outputs:

- ``stream`` and ``text/plain`` outputs, each trimmed to :data:`OUTPUT_MAX_CHARS`
  characters with a note of how many were cut;
- ``error`` outputs with their whole traceback, ANSI escapes stripped;
- images (``image/*``): an attachment (base64, as image files are) when the notebook
  was named explicitly, else a one-line placeholder with the mimeType and size; base64
  never goes into the text;
- other rich outputs (``text/html``, ``application/json``, …): one line naming the
  mimeType and its size, unless ``text/plain`` stands for them.

``cells`` (``"3-7"``, ``"4"``; 1-based inclusive) picks the cells shown. A view longer
than the characters it may take (``perFileMaxChars`` or what the totals leave) keeps
whole cells while they fit, cutting inside a cell only when the first does not, and
ends with a notice naming the ``cells`` request that continues it.

A notebook read as raw JSON lines (``offset``/``limit``) keeps its lines and their count,
but :func:`mask_base64` replaces each base64 payload (the value of a binary mimeType
such as ``image/png`` or ``application/pdf`` in an output's ``data`` or a cell's
``attachments``, one string or a list of line strings) by a placeholder inside the JSON
string: ``«base64 image/png, 5,784 chars: not shown»`` (a list's lines after the first
hold ``«base64…»``, a few tokens each).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import msgspec

from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine.items import Item, LoadedItem
from readmany_daemon.engine.options import LoadOptions
from readmany_daemon.engine.redact import sentinels_by_line
from readmany_daemon.errors import Code, Status
from readmany_daemon.wire.messages import Attachment, FileResult

__all__ = [
    "OUTPUT_MAX_CHARS",
    "PLACEHOLDER",
    "Masked",
    "NotebookView",
    "finish",
    "is_notebook",
    "mask_base64",
    "mask_cached",
    "output_path",
    "parse_cells",
    "view",
]

#: A ``stream`` or ``text/plain`` output keeps at most this many characters.
OUTPUT_MAX_CHARS: Final = 2000

#: ANSI escape sequences (CSI and OSC) as IPython colours tracebacks with them.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


#: A base64 payload's placeholder in raw JSON lines (what :func:`mask_base64` writes).
PLACEHOLDER: Final = re.compile(r"«base64(?: [^,»]+, [\d,]+ chars: not shown|…)»")

#: The tokens of JSON text: a string (possibly cut off by the end of a prefix read), a
#: punctuation mark, or a run of anything else (numbers, literals).
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[{}\[\]:,]|[^\s{}\[\]:,"]+')


class Masked(NamedTuple):
    """A notebook's raw JSON with its base64 payloads replaced: ``text`` (the very input
    object when there was none) and ``lines``, the 1-based lines holding a placeholder."""

    text: str
    lines: tuple[int, ...]


def is_binary_mime(mime: str) -> bool:
    """Whether nbformat stores ``mime`` as base64: every type but text, JSON, SVG and
    JavaScript (nbformat 4 schema, "mimebundle")."""
    mime = mime.lower()
    return not (
        mime.startswith("text/")
        or mime.endswith("json")
        or mime.endswith("+xml")
        or mime.endswith("javascript")
    )


def _payload_mime(stack: list[list[Any]]) -> str | None:
    """The binary mimeType whose value a string at ``stack``'s top is part of (the value
    itself, or a line of its list), under ``"data"`` (an output) or ``"attachments"``
    (a cell's attachment); else None. Frames are ``[kind, key]``, kind ``{`` or ``[``."""
    frames = stack[:-1] if stack and stack[-1][0] == "[" else stack
    if len(frames) < 2 or frames[-1][0] != "{":
        return None
    mime = frames[-1][1]
    if not isinstance(mime, str) or "/" not in mime or not is_binary_mime(mime):
        return None
    parent = frames[-2]
    if parent[0] == "{" and parent[1] == "data":
        return mime
    if len(frames) >= 3 and frames[-3][0] == "{" and frames[-3][1] == "attachments":
        return mime
    return None


def mask_base64(text: str) -> Masked:
    """``text`` (a notebook's JSON, whole or a prefix) with each base64 payload replaced
    by a placeholder inside its JSON string (see the module); line count and everything
    else stay as they were. Units: ``lines`` are 1-based; the size in a placeholder is
    the payload's characters in the JSON text (a list's lines summed)."""
    spans: list[tuple[int, int, int]] = []  # inside the quotes, and the payload's number
    payloads: list[list[Any]] = []  # [mime, characters, lines seen]
    stack: list[list[Any]] = []  # [kind, key]: an object's current key, a list's payload
    want_key = False
    for m in _TOKEN.finditer(text):
        tok = m.group()
        c = tok[0]
        if c in "{[":
            stack.append([c, None])
            want_key = c == "{"
        elif c in "}]":
            if stack:
                stack.pop()
            want_key = False
        elif c == ",":
            want_key = bool(stack) and stack[-1][0] == "{"
        elif c != '"':
            want_key = False
        elif want_key and stack:
            try:
                stack[-1][1] = msgspec.json.decode(tok)
            except msgspec.DecodeError:
                stack[-1][1] = None
            want_key = False
        else:
            mime = _payload_mime(stack)
            if mime is None:
                continue
            if stack[-1][0] == "[" and stack[-1][1] is not None:
                number = stack[-1][1]  # a later line of a list payload
            else:
                payloads.append([mime, 0, 0])
                number = len(payloads) - 1
                if stack[-1][0] == "[":
                    stack[-1][1] = number
            end = m.end() - 1 if len(tok) > 1 and tok.endswith('"') else m.end()
            payloads[number][1] += end - m.start() - 1
            spans.append((m.start() + 1, end, number))
    if not spans:
        return Masked(text, ())
    parts: list[str] = []
    lines: list[int] = []
    at, line = 0, 1
    for start, end, number in spans:
        line += text.count("\n", at, start)
        parts.append(text[at:start])
        mime, size, seen = payloads[number]
        if seen:
            parts.append("«base64…»")
        else:
            parts.append(f"«base64 {mime}, {size:,} chars: not shown»")
        payloads[number][2] = seen + 1
        if not lines or lines[-1] != line:
            lines.append(line)
        at = end
    parts.append(text[at:])
    return Masked("".join(parts), tuple(lines))


def mask_cached(text: str, cache: ContentCache | None) -> Masked:
    """:func:`mask_base64` of ``text``, kept with its ``cache`` entry when ``text`` is a
    cached whole text (``ContentCache.derived``), else made again."""
    if cache is not None:
        kept = cache.derived(text, "nb-masked", mask_base64, size=_masked_size)
        if kept is not None:
            return kept
    return mask_base64(text)


def _masked_size(masked: Masked) -> int:
    """Bytes a kept mask costs: the new text (none when it is the input), its lines."""
    return (sys.getsizeof(masked.text) if masked.lines else 0) + 64 + 8 * len(masked.lines)


def output_path(label: str, cell: int, output: int) -> str:
    """The ``path`` of an image attachment from notebook ``label``'s cell ``cell``, output
    ``output`` (both 1-based, as the text's headers number them):
    ``nb.ipynb#cell=7/output=2`` (PROTOCOL §4 "Notebooks")."""
    return f"{label}#cell={cell}/output={output}"


def is_notebook(rel: str) -> bool:
    """Whether ``rel`` names a Jupyter notebook (``.ipynb``, any case)."""
    return rel.lower().endswith(".ipynb")


def parse_cells(spec: str) -> tuple[int, int]:
    """``"3-7"`` → ``(3, 7)``, ``"4"`` → ``(4, 4)`` (1-based, inclusive). Raises
    ``ValueError`` for anything else, or a start after the end."""
    first, sep, last = spec.partition("-")
    a = int(first)
    b = int(last) if sep else a
    if a < 1 or b < a:
        raise ValueError(f"{spec!r} is not a 1-based range start-end with start <= end")
    return a, b


def _text(value: Any) -> str:
    """nbformat's multiline string: a str, or a list of str joined."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _trimmed(text: str) -> str:
    """``text`` cut to :data:`OUTPUT_MAX_CHARS` with a note of what was cut."""
    if len(text) <= OUTPUT_MAX_CHARS:
        return text
    cut = len(text) - OUTPUT_MAX_CHARS
    head = text[:OUTPUT_MAX_CHARS]
    sep = "" if head.endswith("\n") else "\n"
    return f"{head}{sep}[output trimmed: {cut:,} of {len(text):,} characters cut]\n"


def _b64_size(data: str) -> int:
    """Bytes that base64 ``data`` stands for."""
    clean = "".join(data.split())
    return len(clean) * 3 // 4 - clean[-2:].count("=")


@dataclass
class _Block:
    """One cell as text, and the attachments its outputs gave (in order)."""

    index: int
    text: str
    attachments: list[Attachment] = field(default_factory=list)


@dataclass
class NotebookView:
    """A notebook as cells: ``text`` (header, the cells shown, and a closing notice when
    cut), its ``attachments`` (in the order the text names them), the cells shown
    (1-based, inclusive; ``(0, 0)`` for none), ``total`` cells, and ``next_cell``, the
    first cell not shown when the view was cut (else None)."""

    text: str
    attachments: list[Attachment]
    first: int
    last: int
    total: int
    next_cell: int | None = None
    blocks: list[_Block] = field(default_factory=list, repr=False)
    head: str = ""
    end: int = 0


def _outputs(cell: dict[str, Any], label: str, attach: bool, out: _Block) -> list[str]:
    parts: list[str] = []
    for k, o in enumerate(cell.get("outputs") or [], start=1):
        if not isinstance(o, dict):
            continue
        kind = o.get("output_type")
        if kind == "stream":
            parts.append(f"#### output {k} · stream {o.get('name', '')}\n")
            parts.append(_trimmed(_text(o.get("text"))))
        elif kind == "error":
            tb = "\n".join(t for t in o.get("traceback") or [] if isinstance(t, str))
            text = _ANSI.sub("", tb) or f"{o.get('ename', '')}: {o.get('evalue', '')}"
            parts.append(f"#### output {k} · error {o.get('ename', '')}\n{text}\n")
        elif kind in ("execute_result", "display_data"):
            data = o.get("data") or {}
            if not isinstance(data, dict):
                continue
            parts.append(f"#### output {k} · {kind}\n")
            for mime, value in data.items():
                if mime == "text/plain":
                    parts.append(_trimmed(_text(value)))
                elif mime.startswith("image/") and mime != "image/svg+xml":
                    b64 = "".join(_text(value).split())
                    size = _b64_size(b64)
                    if attach:
                        where = output_path(label, out.index, k)
                        out.attachments.append(Attachment(path=where, mime_type=mime, data=b64))
                        parts.append(f"[{mime} attached: {size:,} bytes]\n")
                    else:
                        parts.append(
                            f"[{mime}: {size:,} bytes, not attached; "
                            "name the notebook explicitly to attach its images]\n"
                        )
                elif "text/plain" not in data:
                    parts.append(f"[{mime}: {len(_text(value)):,} characters, not shown]\n")
    for p in range(len(parts)):
        if parts[p] and not parts[p].endswith("\n"):
            parts[p] += "\n"
    return parts


def _block(index: int, cell: dict[str, Any], label: str, attach: bool) -> _Block:
    kind = cell.get("cell_type", "?")
    head = f"### cell {index} · {kind}"
    if cell.get("id"):
        head += f" · id={cell['id']}"
    if kind == "code" and cell.get("execution_count") is not None:
        head += f" · execution_count={cell['execution_count']}"
    block = _Block(index, "")
    source = _text(cell.get("source"))
    parts = [head + "\n", source + ("" if not source or source.endswith("\n") else "\n")]
    parts.extend(_outputs(cell, label, attach, block))
    block.text = "".join(parts)
    return block


def view(text: str, label: str, attach: bool, cells: str | None) -> NotebookView | None:
    """The notebook ``text`` as cells (module docs); None when it is not a notebook's
    JSON (then it is read as text). ``label`` names the attachments; ``attach``: images
    become attachments (the notebook was named explicitly). ``cells`` picks a range;
    one past the end gives a view with no cell (``first == 0``).
    """
    try:
        doc = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        return None
    all_cells = [c for c in doc["cells"] if isinstance(c, dict)]
    total = len(all_cells)
    a, b = parse_cells(cells) if cells is not None else (1, total)
    b = min(b, total)
    if a > total:
        return NotebookView("", [], 0, 0, total)
    blocks = [_block(i, all_cells[i - 1], label, attach) for i in range(a, b + 1)]
    kernel = (doc.get("metadata") or {}).get("kernelspec") or {}
    lang = kernel.get("language") or kernel.get("name") or "unknown language"
    head = (
        f"[Notebook: {total} cell(s), {lang}, read as cells; "
        "offset/limit read its raw JSON lines instead.]\n"
    )
    result = NotebookView("", [], a, b, total, blocks=blocks, head=head, end=b)
    return cut(result, None)


def cut(nb: NotebookView, max_chars: int | None) -> NotebookView:
    """``nb`` kept to at most ``max_chars`` characters (None: all of it): whole cells
    while they fit, the first one cut when even it does not; a notice names the
    ``cells`` request for the rest. Attachments go with the cells kept."""
    if nb.first == 0:
        return nb
    parts = [nb.head]
    used = len(nb.head)
    attachments: list[Attachment] = []
    last = nb.first - 1
    for block in nb.blocks:
        notice_room = 120
        if max_chars is not None and used + len(block.text) + notice_room > max_chars:
            if last < nb.first:  # not even the first cell fits whole: cut inside it
                room = max(0, max_chars - used - notice_room)
                parts.append(block.text[:room] + ("\n" if room else ""))
                parts.append(f"[cell {block.index} cut after {room:,} characters]\n")
                last = block.index
                attachments.extend(block.attachments)
            break
        parts.append(block.text)
        used += len(block.text)
        attachments.extend(block.attachments)
        last = block.index
    next_cell = last + 1 if last < nb.end else None
    if next_cell is not None:
        parts.append(
            f"[Showing cells {nb.first}-{last} of {nb.total}. "
            f'Continue with cells="{next_cell}-{nb.end}".]\n'
        )
    return NotebookView(
        "".join(parts),
        attachments,
        nb.first,
        last,
        nb.total,
        next_cell,
        nb.blocks,
        nb.head,
        nb.end,
    )


def finish(
    item: Item, base: FileResult, nb: NotebookView, opts: LoadOptions, raw: str = ""
) -> LoadedItem:
    """The loaded entry of notebook ``item`` shown as ``nb``: cut to ``perFileMaxChars``
    (not with ``preferFullRead``; ``perFileMaxLines`` does not apply to cells),
    ``partial`` when cells were left out, with a ``recut`` for the budget's cut. A
    ``cells`` range past the last cell is ``out-of-range``. ``raw``: the notebook's JSON
    as redacted, whose lines ``base.redactions`` name: only the redactions whose
    sentinels the cells shown hold are kept (PROTOCOL §4: those of what is shown)."""
    if nb.first == 0:
        base.status, base.code = Status.ERROR, Code.OUT_OF_RANGE
        base.message = f"cells {item.cells} is past the end of {item.label} ({nb.total} cells)"
        base.sha256 = None
        return LoadedItem(item, base)
    marks = sentinels_by_line(raw, (r.line for r in base.redactions or ()))
    limit = None if opts.prefer_full_read else opts.per_file_max_chars
    return _loaded(item, base, cut(nb, limit), marks, budget=False)


def _loaded(
    item: Item,
    base: FileResult,
    shown: NotebookView,
    marks: dict[int, tuple[str, ...]],
    *,
    budget: bool,
) -> LoadedItem:
    result = msgspec.structs.replace(base, chars=len(shown.text), status=Status.OK, code=None)
    if shown.next_cell is not None:
        result.status = Status.PARTIAL
        result.code = Code.BUDGET if budget else None
    if result.redactions:
        text = shown.text
        result.redactions = [
            r for r in result.redactions if any(m in text for m in marks.get(r.line, ()))
        ] or None

    def recut(allowed: int) -> LoadedItem:
        """This notebook cut again to ``allowed`` characters (the totals' cut)."""
        return _loaded(item, base, cut(shown, min(allowed, len(shown.text))), marks, budget=True)

    return LoadedItem(
        item,
        result,
        text=shown.text,
        attachments=list(shown.attachments),
        recut=recut,
    )
