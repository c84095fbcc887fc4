"""Wire types: the method names, and the params and results of every method as msgspec
Structs (PROTOCOL §2-§4).

Decoding happens here, at the edge: ``decode_read_params`` folds the reference tools'
aliases into canonical camelCase names, validates types and ranges, and raises
``InvalidParams`` naming the field (``$.files[0].offset``). Everything past this module
works on these Structs; ``to_builtins`` turns results back into JSON-ready builtins, and
``wire_safe`` makes a label valid UTF-8 for them (a file name with bytes that are not
UTF-8). The ``nextCursor`` codec is ``wire.cursor``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import unquote

import msgspec

from readmany_daemon.errors import InvalidParams

# ------------------------------------------------------------------------- method names

#: The server's name: the ``serverInfo`` name (LSP and MCP) and the
#: ``workspace/configuration`` section.
SERVER_NAME = "readmany"

#: The JSON-RPC methods of the readmany protocol (PROTOCOL §2), the same strings for
#: every adapter.
READ = "readMany/read"
FILES = "readMany/files"
STATUS = "readMany/status"
CHANGED_SINCE = "readMany/changedSince"
RESCAN = "readMany/rescan"
#: Ends the shared daemon (``readmany stop``, replacing a daemon of another version).
STOP_DAEMON = "readMany/stopDaemon"

# ------------------------------------------------------------------------------- params

Positive = Annotated[int, msgspec.Meta(ge=1)]
NonNegative = Annotated[int, msgspec.Meta(ge=0)]
Pattern = Annotated[str, msgspec.Meta(min_length=1)]
#: A SHA-256 digest as 64 hex digits (either case).
Sha256 = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{64}$")]
#: A 1-based inclusive cell range of a notebook: ``"4"`` or ``"3-7"``.
CellRange = Annotated[str, msgspec.Meta(pattern="^[1-9][0-9]{0,8}(-[1-9][0-9]{0,8})?$")]
#: The smallest accepted ``maxTotalTokens``: below it no answer could carry its own
#: framing and notices (PROTOCOL §3).
MIN_TOTAL_TOKENS = 1000
TotalTokens = Annotated[int, msgspec.Meta(ge=MIN_TOTAL_TOKENS)]

Packing = Literal["auto", "request-order", "smallest-first", "outlines"]
Format = Literal["separator", "heredoc", "xml", "json"]
Sync = Literal["auto", "stat", "none"]


class FileSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One file with an optional line window (the pi ``read_many`` shape, seed 001).

    ``offset`` is the 1-based first line; ``limit`` a count of lines. A window with
    ``limit`` replaces ``perFileMaxLines`` for this file. ``column`` is the 1-based
    character of line ``offset`` where the window starts (a cut long line's
    ``nextColumn``). ``cells`` (a ``.ipynb`` only) is a 1-based inclusive range of its
    cells, ``"3-7"`` or ``"4"`` (``engine.notebook``).
    """

    path: Pattern
    offset: Positive | None = None
    limit: Positive | None = None
    column: Positive | None = None
    cells: CellRange | None = None


class Known(msgspec.Struct, forbid_unknown_fields=True):
    """A receipt the caller holds (``engine.receipts``): a path as an answer labelled it
    (or any spelling of it a request accepts) and the ``sha256`` that answer gave."""

    path: Pattern
    sha256: Sha256


class FileFilteringOptions(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """Which ignore rules apply to expansions (seed 003 ``file_filtering_options``)."""

    respect_git_ignore: bool = True
    respect_ignore_files: bool = True


class ReadManyParams(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    """``readMany/read`` params (PROTOCOL §3). Defaults are the protocol's."""

    paths: list[Pattern | FileSpec] = msgspec.field(default_factory=list)
    files: list[FileSpec] = msgspec.field(default_factory=list)
    include: list[Pattern] = msgspec.field(default_factory=list)
    exclude: list[Pattern] = msgspec.field(default_factory=list)
    recursive: bool = True
    use_default_excludes: bool = True
    file_filtering_options: FileFilteringOptions = msgspec.field(
        default_factory=FileFilteringOptions
    )
    per_file_max_lines: Positive = 200
    per_file_max_chars: Positive = 20000
    max_total_files: Positive = 20
    max_total_chars: Positive = 200000
    max_total_tokens: TotalTokens | None = None
    per_file_max_tokens: Positive | None = None
    prefer_full_read: bool = False
    packing: Packing = "auto"
    stop_on_error: bool = False
    format: Format = "separator"
    line_numbers: bool = False
    absolute_paths: bool = False
    root: str | None = None
    sync: Sync = "auto"
    cursor: str | None = None
    known: list[Known] = msgspec.field(default_factory=list)
    #: Replace credential values (keys, tokens, passwords) in the answer by
    #: ``«redacted:<kind>:<hash>»`` sentinels; ``None``: the ``redactSecrets`` setting.
    redact_secrets: bool | None = None


class FilesParams(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    """``readMany/files`` params: patterns (globs, folders or paths; none = everything)."""

    patterns: list[Pattern] = msgspec.field(default_factory=list)
    root: str | None = None
    exclude: list[Pattern] = msgspec.field(default_factory=list)
    recursive: bool = True
    use_default_excludes: bool = True
    file_filtering_options: FileFilteringOptions = msgspec.field(
        default_factory=FileFilteringOptions
    )


#: One short description per request field (canonical camelCase names, every field of
#: ``FileSpec``, ``FileFilteringOptions``, ``ReadManyParams`` and ``FilesParams``): the
#: tool schemas (``mcp/schema.py``: MCP ``tools/list`` and the VS Code tool) are generated
#: from these Structs and take their descriptions from here. ``None``: the name says it
#: all (every client re-sends the schemas to the model on every turn).
FIELD_DOCS: dict[str, str | None] = {
    "path": None,
    "offset": "1-based first line.",
    "limit": "Line count.",
    "column": "1-based start character (a cut line's nextColumn).",
    "cells": 'Notebook cells, 1-based: "3-7".',
    "sha256": None,
    "respectGitIgnore": "Apply .gitignore.",
    "respectIgnoreFiles": "Apply .readmanyignore.",
    "paths": "Files, folders or globs.",
    "files": "Files with line windows.",
    "include": "More globs.",
    "exclude": "Gitignore-style patterns to leave out.",
    "recursive": "false: folders give only their own files.",
    "useDefaultExcludes": "Skip node_modules, .venv, caches.",
    "fileFilteringOptions": "Ignore rules to apply.",
    "perFileMaxLines": None,
    "perFileMaxChars": None,
    "maxTotalFiles": "Files with content; the rest get a cursor.",
    "maxTotalChars": "Characters of content in all.",
    "maxTotalTokens": "o200k tokens of the whole text.",
    "perFileMaxTokens": "o200k tokens per file.",
    "preferFullRead": "Lift the per-file limits.",
    "packing": "auto: smallest-first if that fits more files; outlines: outline what is left.",
    "stopOnError": None,
    "format": "How files are framed.",
    "lineNumbers": None,
    "absolutePaths": None,
    "root": "A root (name, path, URI) or folder in one.",
    "sync": "auto: see writes made before the call.",
    "cursor": "An answer's nextCursor; send it alone.",
    "known": "Hashes you hold: unchanged files are not resent.",
    "redactSecrets": "false: show secrets as they are.",
    "patterns": "Globs, folders or paths; none: every file.",
}


# ---------------------------------------------------------------------------- results


class Redaction(msgspec.Struct, rename="camel"):
    """A line of the shown text that holds a ``«redacted:<kind>:<hash>»`` sentinel in
    place of a secret (PROTOCOL §4 "Secrets"): ``line`` is 1-based in the file."""

    line: int
    kind: str


class OutlineSymbol(msgspec.Struct, rename="camel"):
    """One symbol of a file's outline (PROTOCOL §4 "Outlines"): ``kind`` a lower-case LSP
    SymbolKind name (``class``, ``function``, ``method``, …) or ``heading``; ``line_start``
    and ``line_end`` 1-based and inclusive; ``depth`` 0 at the top level, +1 per
    enclosing symbol."""

    name: str
    kind: str
    line_start: int
    line_end: int
    depth: int


class FileResult(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """One answered entry (PROTOCOL §4). Line numbers are 1-based and inclusive.

    ``source`` and ``chars`` have no default so that they are always on the wire (the
    protocol has them in every entry; ``omit_defaults`` drops a field equal to its
    default): ``"disk"`` and ``0`` for an entry that was not read. ``replaced_bytes`` is
    set only when some bytes of UTF-8 text were invalid (each shown as U+FFFD).
    ``next_column`` is set when line ``line_end`` was cut short: its rest starts at that
    1-based character (ask ``offset=line_end, column=next_column``)."""

    path: str
    status: str
    source: str
    chars: int
    code: str | None = None
    message: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    total_lines: int | None = None
    next_offset: int | None = None
    next_column: int | None = None
    encoding: str | None = None
    replaced_bytes: int | None = None
    mime_type: str | None = None
    ignored_by: str | None = None
    sha256: str | None = None
    #: Lines shown with a secret replaced, in line order (absent when none).
    redactions: list[Redaction] | None = None
    #: The symbols of the lines not shown: of a cut file, its unseen lines; of a file
    #: ``omitted`` under ``packing: "outlines"``, the file (absent otherwise).
    outline: list[OutlineSymbol] | None = None


class Attachment(msgspec.Struct, rename="camel"):
    """An image or PDF named explicitly: ``data`` is base64 of the file's bytes."""

    path: str
    mime_type: str
    data: str


class Summary(msgspec.Struct, rename="camel", kw_only=True):
    """Counts over the whole answer. ``hidden`` maps an ignore-rule kind to the number of
    expansion matches it hid; ``estimatedTokens`` is ``ceil(totalChars / 4)``."""

    matched: int = 0
    read: int = 0
    truncated: int = 0
    omitted: int = 0
    skipped: int = 0
    errors: int = 0
    unchanged: int = 0
    total_chars: int = 0
    estimated_tokens: int = 0
    hidden: dict[str, int] = msgspec.field(default_factory=dict)


class PackingInfo(msgspec.Struct, rename="camel", kw_only=True):
    """How the totals were applied (seed 001 ``details.packing``)."""

    strategy: str = "request-order"
    switched_for_coverage: bool = False
    full_included_count: int = 0
    full_included_success_count: int = 0
    partial_included_path: str | None = None
    omitted_paths: list[str] = msgspec.field(default_factory=list)
    omitted_truncated: bool = False


class ReadManyResult(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """``readMany/read`` result (PROTOCOL §4).

    ``attachments`` has no default so that it is always on the wire, ``[]`` when empty
    (``omit_defaults`` drops a field equal to its default); ``nextCursor`` is there only
    when files were omitted."""

    llm_content: str
    return_display: str
    summary: Summary
    files: list[FileResult]
    packing: PackingInfo
    clock: str
    attachments: list[Attachment]
    next_cursor: str | None = None
    #: Files created, since the page before, in the part of the request order a cursor
    #: had already delivered: the chain will not deliver them; ask for them by path.
    created_paths: list[str] = msgspec.field(default_factory=list)


class FileInfo(msgspec.Struct, rename="camel"):
    """One ``readMany/files`` entry: size in bytes, mtime in milliseconds since the epoch."""

    path: str
    size: int
    mtime_ms: float


class FilesResult(msgspec.Struct, rename="camel"):
    """``readMany/files``' answer (PROTOCOL §2): the visible files with size and mtime, and the
    warnings."""

    files: list[FileInfo]
    clock: str


# ---------------------------------------------------------------------------- decoding

#: Reference spellings accepted for canonical names (PROTOCOL §3, seeds 000-003).
_TOP_ALIASES: dict[str, str] = {
    "file_filtering_options": "fileFilteringOptions",
}
_FILTER_ALIASES: dict[str, str] = {
    "respect_git_ignore": "respectGitIgnore",
    "respect_sii_ignore": "respectIgnoreFiles",
    "respect_gemini_ignore": "respectIgnoreFiles",
    "respect_qwen_ignore": "respectIgnoreFiles",
    "respect_ignore_files": "respectIgnoreFiles",
}
_SNAKE = re.compile(r"_([a-z])")


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
_UNKNOWN = re.compile(r"unknown field `(.*?)`(?: - at `(\$[^`]*)`)?$", re.DOTALL)
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]+")


def _one_line(text: str) -> str:
    """``text`` with control characters (a newline in a client's key or value) written
    as escapes, so that an error is one line on the CLI's stderr (PROTOCOL §1)."""
    return _CONTROL.sub(lambda m: json.dumps(m.group())[1:-1], text)


def _member(where: str, key: str) -> str:
    """JSON path of member ``key`` of the object at ``where``: ``$.paths``, or
    ``$["a b"]`` for a key that is not a plain name."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{where}.{key}"
    return f"{where}[{json.dumps(key, ensure_ascii=False)}]"


def _fold(
    obj: Mapping[str, Any],
    aliases: Mapping[str, str],
    where: str,
    spelled: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Rename alias and snake_case keys to canonical camelCase; a name given twice with
    different values is an error naming both spellings. ``spelled`` (when given) maps
    each canonical name to the key the client sent."""
    out: dict[str, Any] = {}
    spelled = {} if spelled is None else spelled
    for key, value in obj.items():
        if not isinstance(key, str):
            raise InvalidParams(f"invalid params: non-string key at {where}", where)
        canonical = aliases.get(key) or _SNAKE.sub(lambda m: m.group(1).upper(), key)
        if canonical in out and out[canonical] != value:
            first, second = _member(where, spelled[canonical]), _member(where, key)
            raise InvalidParams(_one_line(f"invalid params: {first} and {second} disagree"), second)
        out[canonical] = value
        spelled[canonical] = key
    return out


def _convert(obj: Any, cls: type[msgspec.Struct], spelled: Mapping[str, str] | None = None) -> Any:
    """``msgspec.convert`` raising ``InvalidParams`` whose ``field`` is the JSON path of
    the offending member (for an unknown member, the member itself, under the name the
    client sent: ``spelled`` maps canonical top-level names back to it)."""
    try:
        return msgspec.convert(obj, cls)
    except msgspec.ValidationError as exc:
        text = str(exc)
        unknown = _UNKNOWN.search(text)
        if unknown:
            where = unknown.group(2) or "$"
            name = unknown.group(1)
            if where == "$" and spelled:
                name = spelled.get(name, name)
                text = text.replace(f"`{unknown.group(1)}`", f"`{name}`", 1)
            field = _member(where, name)
            raise InvalidParams(_one_line(f"invalid params: {text}"), field) from None
        match = re.search(r"at `(\$[^`]*)`", text)
        field = match.group(1) if match else "$"
        raise InvalidParams(_one_line(f"invalid params: {text}"), field) from None


def _fold_read(raw: Any, spelled: dict[str, str] | None = None) -> dict[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise InvalidParams("invalid params: expected an object", "$")
    params = _fold(raw, _TOP_ALIASES, "$", spelled)
    ffo = params.get("fileFilteringOptions")
    if isinstance(ffo, Mapping):
        params["fileFilteringOptions"] = _fold(ffo, _FILTER_ALIASES, "$.fileFilteringOptions")
    # The CLI merges flags into these before validation: their container type first.
    for name, kind, label in _CONTAINERS:
        value = params.get(name)
        if value is not None and not isinstance(value, kind):
            raise InvalidParams(
                f"invalid params: Expected `{label}`, got `{_json_type(value)}` - at `$.{name}`",
                f"$.{name}",
            )
    return params


_CONTAINERS: tuple[tuple[str, type, str], ...] = (
    ("paths", list, "array"),
    ("files", list, "array"),
    ("include", list, "array"),
    ("exclude", list, "array"),
    ("fileFilteringOptions", dict, "object"),
    ("known", list, "array"),
)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    for kind, label in ((str, "str"), (int, "int"), (float, "float"), (list, "array")):
        if isinstance(value, kind):
            return label
    return "object" if isinstance(value, Mapping) else type(value).__name__


def fold_read_params(raw: Any) -> dict[str, Any]:
    """Canonical-name dict from a raw params object (aliases folded), not yet validated
    beyond the container types of ``paths``, ``files``, ``include``, ``exclude`` (arrays)
    and ``fileFilteringOptions`` (an object).

    Raises ``InvalidParams`` when ``raw`` is not an object, an alias conflicts or one of
    those members has the wrong type.
    """
    return _fold_read(raw)


def _check_name(value: str, field: str) -> None:
    """Refuse a path or pattern the file system cannot be asked about: a NUL character
    (POSIX file names cannot hold one; ``os.lstat`` raises ``ValueError``) or a lone
    surrogate outside U+DC80-U+DCFF (only those stand for non-UTF-8 bytes, PEP 383, as
    the daemon writes them back in labels). Raises ``InvalidParams`` naming ``field``."""
    if "\0" in value:
        raise InvalidParams(
            f"invalid params: {field}: a path or pattern cannot contain a NUL character", field
        )
    try:
        os.fsencode(value)
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        raise InvalidParams(
            f"invalid params: {field}: U+{ord(bad):04X} (a lone surrogate) names no file",
            field,
        ) from None


def _check_cells(spec: FileSpec, field: str) -> None:
    """A ``cells`` range whose start comes after its end (``"7-3"``) is -32602."""
    if spec.cells is not None and "-" in spec.cells:
        a, b = spec.cells.split("-")
        if int(a) > int(b):
            raise InvalidParams(
                f"invalid params: {field}: {spec.cells!r} starts after it ends", field
            )


def _check_read_names(params: ReadManyParams) -> None:
    for i, entry in enumerate(params.paths):
        if isinstance(entry, str):
            _check_name(entry, f"$.paths[{i}]")
        else:
            _check_name(entry.path, f"$.paths[{i}].path")
            _check_cells(entry, f"$.paths[{i}].cells")
    for i, spec in enumerate(params.files):
        _check_name(spec.path, f"$.files[{i}].path")
        _check_cells(spec, f"$.files[{i}].cells")
    for name in ("include", "exclude"):
        for i, pattern in enumerate(getattr(params, name)):
            _check_name(pattern, f"$.{name}[{i}]")
    if params.root is not None:
        _check_root(params.root)


def _check_root(root: str) -> None:
    _check_name(root, "$.root")
    if root.startswith("file:"):
        _check_name(unquote(root), "$.root")


def _over_defaults(defaults: Mapping[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """Folded request params over a connection's folded ``defaults``, with
    ``fileFilteringOptions`` merged key by key."""
    merged = {**defaults, **params}
    if isinstance(defaults.get("fileFilteringOptions"), Mapping) and isinstance(
        params.get("fileFilteringOptions"), Mapping
    ):
        merged["fileFilteringOptions"] = {
            **defaults["fileFilteringOptions"],
            **params["fileFilteringOptions"],
        }
    return merged


def decode_read_params(raw: Any, defaults: Mapping[str, Any] | None = None) -> ReadManyParams:
    """Validate ``readMany/read`` params (a JSON object as builtins) into ``ReadManyParams``.

    Accepts camelCase, snake_case and the aliases of PROTOCOL §3, folded once.
    ``defaults`` (canonical names, as ``fold_read_params`` gives them: a connection's
    settings) fill what the request leaves out. Raises ``InvalidParams`` (JSON-RPC
    -32602) whose message names the field, e.g.
    ``invalid params: Expected `int` >= 1, got `0` - at `$.files[0].offset```.
    """
    spelled: dict[str, str] = {}
    folded = _fold_read(raw, spelled)
    if defaults:
        folded = _over_defaults(defaults, folded)
    params: ReadManyParams = _convert(folded, ReadManyParams, spelled)
    _check_read_names(params)
    if not (params.paths or params.files or params.include or params.cursor):
        raise InvalidParams(
            "invalid params: at least one of paths, files, include, cursor must hold an entry",
            "$.paths",
        )
    return params


def decode_files_params(raw: Any) -> FilesParams:
    """Validate ``readMany/files`` params; raises ``InvalidParams`` naming the field."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise InvalidParams("invalid params: expected an object", "$")
    params = _fold(raw, _TOP_ALIASES, "$")
    ffo = params.get("fileFilteringOptions")
    if isinstance(ffo, Mapping):
        params["fileFilteringOptions"] = _fold(ffo, _FILTER_ALIASES, "$.fileFilteringOptions")
    result: FilesParams = _convert(params, FilesParams)
    for name in ("patterns", "exclude"):
        for i, pattern in enumerate(getattr(result, name)):
            _check_name(pattern, f"$.{name}[{i}]")
    if result.root is not None:
        _check_root(result.root)
    return result


def to_builtins(obj: Any) -> Any:
    """JSON-ready builtins for a result Struct (omitting absent optional fields)."""
    return msgspec.to_builtins(obj)


def wire_safe(text: str) -> str:
    """``text`` as valid Unicode for JSON/UTF-8 output: file names with bytes that are not
    UTF-8 reach the engine as surrogate escapes (``os.fsdecode``), which no encoder
    accepts; each such byte is shown as U+FFFD (as ripgrep and editors show it). Text
    that is valid already (nearly always) is returned as is, after one encode check
    (none for ASCII text)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "replace")
    return text
