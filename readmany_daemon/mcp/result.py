"""The read tool's ``CallToolResult``, within what MCP clients keep.

Claude Code refuses a tool result over 25,000 tokens (its ``MAX_MCP_OUTPUT_TOKENS``
default) and moves one whose text is over 50,000 characters to a file. So:

- the text block is ``llmContent`` (the tool budgets keep it within 20,000 tokens and
  50,000 characters unless the call asks for more, ``schema.tool_budgets``);
- ``structuredContent`` carries per-file results and the summary, not the file text a
  second time: no ``llmContent``/``returnDisplay``, attachments without their data, and
  omitted files named once (``packing.omittedPaths``) instead of as ``files`` entries,
  outlines only in the text;
- images and PDFs named exactly follow as image / embedded resource blocks while the
  whole result, as JSON, stays within ``result_ceiling`` tokens (o200k); one that would
  push it over is left out, named in a notice at the end of the text with the call
  that gets it (for a notebook's image, ``nb.ipynb#cell=7/output=2``: that cell), and
  marked ``"omitted": true`` in ``structuredContent.attachments``;
- with ``mcpStructuredText`` (``readmany mcp --structured-text``) ``structuredContent``
  carries the text too, as ``llmContent`` (its first member), for clients that give the
  model the structured content in place of the text blocks (VS Code). The ceiling
  counts the text once: a client's model reads it from one place or the other.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
from collections.abc import Mapping
from typing import Any

from readmany_daemon.content import tokens
from readmany_daemon.paths import path_to_uri
from readmany_daemon.wire.messages import MIN_ANSWER_CHARS, MIN_TOTAL_TOKENS

#: The whole result's default ceiling in o200k tokens: Claude Code's
#: ``MAX_MCP_OUTPUT_TOKENS`` default.
RESULT_MAX_TOKENS = 25000
#: Room for everything but the text (structured content, framing, notices) when a call
#: raises ``maxTotalTokens`` past the default: the ceiling is then its value plus this.
STRUCTURE_ROOM = 5000


def count_tokens(text: str) -> int:
    """``text``'s length in o200k_base tokens (the count clients judge results by;
    ``content.tokens``)."""
    return tokens.count(text)


def result_ceiling(max_total_tokens: int | None) -> int:
    """The whole result's ceiling (o200k tokens) for a call whose ``maxTotalTokens`` is
    ``max_total_tokens``: ``RESULT_MAX_TOKENS``, or that value plus ``STRUCTURE_ROOM``
    when the call asked for more."""
    if max_total_tokens is None:
        return RESULT_MAX_TOKENS
    return max(RESULT_MAX_TOKENS, max_total_tokens + STRUCTURE_ROOM)


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def structured(answer: Mapping[str, Any]) -> dict[str, Any]:
    """``structuredContent`` of a ``ReadManyResult`` (builtins): its members but the text
    (``llmContent``, ``returnDisplay``), attachments as ``{path, mimeType}`` and
    ``files`` without ``omitted`` entries (``packing.omittedPaths`` names them; the
    ``summary`` counts them all) and without ``outline`` (the text gives each symbol in
    a line; as JSON a cut file's outline would cost as many tokens again)."""
    out = {
        k: v
        for k, v in answer.items()
        if k not in ("llmContent", "returnDisplay") and not (k == "nextCursor" and v is None)
    }
    out["files"] = [
        {k: v for k, v in f.items() if k != "outline"}  # the text holds it, one line a symbol
        for f in answer.get("files") or []
        if f.get("status") != "omitted"
    ]
    out["attachments"] = [
        {"path": a.get("path", ""), "mimeType": a.get("mimeType", "application/octet-stream")}
        for a in answer.get("attachments") or []
    ]
    return out


def _block(att: Mapping[str, Any], root: str) -> dict[str, Any]:
    """An attachment as a content block: images as image content, other types (PDFs)
    as embedded blob resources with a ``file:`` URI."""
    mime = att.get("mimeType", "application/octet-stream")
    if mime.startswith("image/"):
        return {"type": "image", "data": att["data"], "mimeType": mime}
    path = att.get("path", "")
    full = path if os.path.isabs(path) else posixpath.join(root, path)
    return {
        "type": "resource",
        "resource": {"uri": path_to_uri(full), "mimeType": mime, "blob": att["data"]},
    }


def notebook_output(path: str) -> tuple[str, int] | None:
    """``(notebook path, cell)`` of a notebook image attachment's path,
    ``nb.ipynb#cell=7/output=2`` (``engine.notebook.output_path``); None for a file's."""
    head, sep, tail = path.rpartition("#cell=")
    cell, slash, output = tail.partition("/output=")
    if not sep or not slash or not cell.isdigit() or not output.isdigit():
        return None
    return head, int(cell)


def _notice(left: list[tuple[str, str, int, int]], ceiling: int) -> str:
    """The notice naming the attachments ``left`` out (``(path, mimeType, bytes,
    tokens)``) and the call that gets the largest: the file alone, or for a notebook's
    image the one cell it came from (with room for all of that cell's left out)."""
    names = ", ".join(
        f"{path} ({mime}, {size} bytes, about {tokens} tokens)" for path, mime, size, tokens in left
    )
    path, _, _, tokens = max(left, key=lambda x: x[3])
    output = notebook_output(path)
    spec: dict[str, Any]
    if output is None:
        spec = {"paths": [path]}
    else:
        tokens = sum(t for p, _, _, t in left if notebook_output(p) == output)
        spec = {"files": [{"path": output[0], "cells": str(output[1])}]}
    ask = math.ceil((tokens + STRUCTURE_ROOM) / 1000) * 1000
    call = _compact({**spec, "maxTotalTokens": ask})
    return (
        f"\n[Attachments left out to keep this answer within {ceiling} tokens: {names}. "
        f"Ask for one alone with room for it, e.g. {call}.]"
    )


def _total(text: str, structure: Mapping[str, Any], blocks: list[dict[str, Any]]) -> int:
    return result_tokens([{"type": "text", "text": text}, *blocks], structure)


#: What ``_fit_files`` leaves the content blocks and the notices when it trims.
_FILES_ROOM = 1000


def _fit_files(text: str, structure: dict[str, Any], ceiling: int) -> None:
    """Keep ``structure`` within ``ceiling`` tokens with the text: when its ``files``
    would push the whole result over (thousands of missing paths, each with its
    message), the entries that carry no content (errors, skipped) are left out from the
    end, and ``filesLeftOut`` says how many. The text names them and the summary counts
    them; entries with content are all kept."""
    limit = ceiling - _FILES_ROOM
    if _total(text, structure, []) <= limit:
        return
    files: list[dict[str, Any]] = structure["files"]
    shown = {"ok", "partial", "unchanged"}
    droppable = [k for k, f in enumerate(files) if f.get("status") not in shown]

    def trimmed(n: int) -> list[dict[str, Any]]:
        gone = set(droppable[len(droppable) - n :]) if n else set()
        return [f for k, f in enumerate(files) if k not in gone]

    low, high = 0, len(droppable)  # the fewest to leave out is in (low, high]
    while high - low > 1:
        mid = (low + high) // 2
        if _total(text, {**structure, "files": trimmed(mid), "filesLeftOut": mid}, []) <= limit:
            high = mid
        else:
            low = mid
    structure["files"] = trimmed(high)
    structure["filesLeftOut"] = high


#: Room kept under the ceiling when a page is asked again smaller (``refit``).
REFIT_ROOM = 500


def result_tokens(content: list[dict[str, Any]], structure: Mapping[str, Any]) -> int:
    """The whole ``CallToolResult``'s o200k tokens, as JSON (what the ceiling bounds)."""
    whole = {"content": content, "structuredContent": structure, "isError": False}
    return count_tokens(_compact(whole))


def refit(
    max_total_tokens: int | None,
    max_answer_chars: int | None,
    answer: Mapping[str, Any],
    content: list[dict[str, Any]],
    structure: Mapping[str, Any],
    ceiling: int,
) -> tuple[int, int | None] | None:
    """Smaller ``(maxTotalTokens, maxAnswerChars)`` for a page whose whole result
    (``content`` and ``structure``, made of ``answer``, asked with those budgets) passes
    ``ceiling`` tokens as JSON; None when it fits, or cannot shrink. The budgets count
    the text's raw tokens, but JSON escapes (newlines, quotes, backslashes) make them
    more on the wire: the new ``maxTotalTokens`` is the text's ``estimatedTokens``
    scaled by what the escaped text and the structure leave of the ceiling, less
    ``REFIT_ROOM``, and ``maxAnswerChars`` (when set) shrinks in proportion, never
    below ``MIN_ANSWER_CHARS``."""
    whole = result_tokens(content, structure)
    if whole <= ceiling:
        return None
    text_tokens = int((answer.get("summary") or {}).get("estimatedTokens") or 0)
    rest = count_tokens(_compact(structure)) + count_tokens(_compact(content[1:]))
    on_wire = whole - rest  # the text block as JSON
    if text_tokens <= MIN_TOTAL_TOKENS or on_wire <= 0:
        return None
    room = ceiling - rest - REFIT_ROOM
    want = max(MIN_TOTAL_TOKENS, math.floor(text_tokens * room / on_wire))
    if max_total_tokens is not None:
        want = min(want, max_total_tokens - 1)
    if want < MIN_TOTAL_TOKENS:
        return None
    chars = max_answer_chars
    if chars is not None:
        chars = max(MIN_ANSWER_CHARS, min(chars, math.floor(chars * want / text_tokens)))
    return want, chars


def with_text(text: str, structure: Mapping[str, Any]) -> dict[str, Any]:
    """``structure`` with ``text`` as its first member, ``llmContent``
    (``mcpStructuredText``)."""
    return {"llmContent": text, **structure}


def read_result(
    answer: Mapping[str, Any],
    root: str,
    ceiling: int = RESULT_MAX_TOKENS,
    structured_text: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(content blocks, structuredContent)`` of a ``readMany/read`` answer (builtins),
    answered in ``root``: the text, then the attachments that fit within ``ceiling``
    o200k tokens for the whole result as JSON (the text counted once); the others are
    named in a notice at the end of the text, never dropped silently. Attachments are
    tried in answer order; room for the notice (naming them all, the longest it can be)
    is kept first. ``structured_text``: ``structuredContent`` holds the final text too,
    as ``llmContent``."""
    text = answer.get("llmContent", "")
    structure = structured(answer)
    _fit_files(text, structure, ceiling)
    attachments = list(answer.get("attachments") or [])
    if not attachments:
        if structured_text:
            structure = with_text(text, structure)
        return [{"type": "text", "text": text}], structure
    blocks = [_block(att, root) for att in attachments]
    costs = [count_tokens(_compact(b)) + 1 for b in blocks]  # +1: the separating comma
    sizes = [len(att.get("data", "")) * 3 // 4 for att in attachments]
    entries = structure["attachments"]
    every = [
        (e["path"], e["mimeType"], n, c) for e, n, c in zip(entries, sizes, costs, strict=True)
    ]
    # The notice naming them all, and an ``"omitted":true`` flag on each (<= 8 tokens).
    reserve = count_tokens(_notice(every, ceiling)) + 8 * len(every)
    used = _total(text, structure, []) + reserve
    kept: list[dict[str, Any]] = []
    left: list[tuple[str, str, int, int]] = []
    for block, entry, item, cost in zip(blocks, entries, every, costs, strict=True):
        if used + cost <= ceiling:
            kept.append(block)
            used += cost
        else:
            entry["omitted"] = True
            left.append(item)
    if left:
        text += _notice(left, ceiling)
    if structured_text:
        structure = with_text(text, structure)
    return [{"type": "text", "text": text}, *kept], structure
