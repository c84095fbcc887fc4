"""Decoding at the edge: raw ``readMany/read`` and ``readMany/files`` params become the
Structs of ``wire.messages`` (PROTOCOL §3).

``decode_read_params`` folds the reference tools' aliases and snake_case spellings into
canonical camelCase names (once), validates types and ranges, and raises
``InvalidParams`` naming the field (``$.files[0].offset``); ``fold_read_params`` is the
folding alone (the agent tools put their budgets under a call's own values with it).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

import msgspec

from readmany_daemon.errors import InvalidParams
from readmany_daemon.wire.messages import (
    FilesParams,
    FileSpec,
    ReadManyParams,
)

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
    """A ``cells`` range whose start comes after its end (``"7-3"``) is -32602; one cell
    given as a JSON integer (``4``, at least 1 by the Struct) becomes ``"4"``."""
    if isinstance(spec.cells, int):
        spec.cells = str(spec.cells)
    elif spec.cells is not None and "-" in spec.cells:
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
