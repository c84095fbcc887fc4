"""Decoding at the edge: the raw params of every method become the Structs of
``wire.messages`` (PROTOCOL §2, §3).

``decode_read_params`` folds the reference tools' aliases and snake_case spellings into
canonical camelCase names (once, with ``wire.fold``), validates types and ranges, and
raises ``InvalidParams`` naming the field (``$.files[0].offset``). ``readMany/files``,
``changedSince``, ``rescan``, ``status`` and ``stopDaemon`` are decoded the same way,
by the LSP handlers and the MCP tools alike.
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
from readmany_daemon.wire.fold import (
    FILTER_ALIASES,
    TOP_ALIASES,
    drop_nulls,
    fold,
    fold_read_params,
    member,
    one_line,
)
from readmany_daemon.wire.messages import (
    ChangedSinceParams,
    FilesParams,
    FileSpec,
    ReadManyParams,
    RescanParams,
    StatusParams,
    StopDaemonParams,
)

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNKNOWN = re.compile(r"unknown field `(.*?)`(?: - at `(\$[^`]*)`)?$", re.DOTALL)
#: A required member missing (or ``null``: ``wire.fold.drop_nulls``), at the top or
#: deeper (`` - at `$.files[0]```).
_MISSING = re.compile(r"^Object missing required field `(.*?)`(?: - at `(\$[^`]*)`)?$", re.DOTALL)


def _convert(obj: Any, cls: type[msgspec.Struct], spelled: Mapping[str, str] | None = None) -> Any:
    """``msgspec.convert`` raising ``InvalidParams`` whose ``field`` is the JSON path of
    the offending member (for an unknown member, the member itself, under the name the
    client sent: ``spelled`` maps the canonical members' paths back to it, ``fold``)."""
    try:
        return msgspec.convert(obj, cls)
    except msgspec.ValidationError as exc:
        raise _refusal(str(exc), spelled, {}) from None
    except UnicodeEncodeError:
        # msgspec matches member names and the values of enumerated fields as UTF-8,
        # which a lone surrogate (JSON's "\ud800" escape) has none of. Converted again
        # with each one replaced (U+FFFD), the same member is refused by its path.
        keys: dict[str, str] = {}
        try:
            msgspec.convert(_replaced(obj, keys), cls)
        except msgspec.ValidationError as exc:
            raise _refusal(str(exc), spelled, keys) from None
        except UnicodeEncodeError:
            pass
        raise InvalidParams("invalid params: a lone surrogate where none is allowed", "$") from None


def _replaced(obj: Any, keys: dict[str, str]) -> Any:
    """``obj`` with every lone surrogate in its strings (member names and values)
    replaced by U+FFFD; ``keys`` gets each replaced string, mapped back to the one sent."""
    if isinstance(obj, str):
        shown = _SURROGATE.sub("\ufffd", obj)
        if shown != obj:
            keys[shown] = obj
        return shown
    if isinstance(obj, list):
        return [_replaced(v, keys) for v in obj]
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for k, v in obj.items():
            out[_replaced(k, keys)] = _replaced(v, keys)
        return out
    return obj


def _refusal(
    text: str, spelled: Mapping[str, str] | None, keys: Mapping[str, str]
) -> InvalidParams:
    """The ``InvalidParams`` of msgspec's validation message ``text``, naming the path of
    the member it refuses; ``keys`` maps names with replaced surrogates (``_replaced``)
    back to the names sent."""
    unknown = _UNKNOWN.search(text)
    if unknown:
        where = unknown.group(2) or "$"
        name = keys.get(unknown.group(1), unknown.group(1))
        if spelled:
            name = spelled.get(member(where, name), name)
        if name != unknown.group(1):
            shown = ascii(name)[1:-1] if unknown.group(1) in keys else name
            text = text.replace(f"`{unknown.group(1)}`", f"`{shown}`", 1)
        sent_where = _as_sent(where, spelled)
        if sent_where != where:
            text = text.replace(f"at `{where}`", f"at `{sent_where}`", 1)
        return InvalidParams(one_line(f"invalid params: {text}"), member(sent_where, name))
    missing = _MISSING.search(text)
    if missing:
        where = missing.group(2) or "$"
        field = member(where, missing.group(1))
        if missing.group(2) is None:
            text += " - at `$`"
        return InvalidParams(one_line(f"invalid params: {text}"), field)
    match = re.search(r"at `(\$[^`]*)`", text)
    field = match.group(1) if match else "$"
    for shown, value in keys.items():  # an enumerated value (msgspec shows its repr)
        text = text.replace(repr(shown), f"'{_json_escaped(value)}'", 1)
    sent = _as_sent(field, spelled)
    if sent != field:
        text = text.replace(f"at `{field}`", f"at `{sent}`", 1)
    return InvalidParams(one_line(f"invalid params: {text}"), sent)


def _json_escaped(value: str) -> str:
    """``value`` as a JSON string writes it, without the quotes: control characters,
    ``"`` and ``\\`` escaped, a lone surrogate as ``\\uXXXX``, other text as it is."""
    quoted = json.dumps(value, ensure_ascii=False)[1:-1]
    return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", quoted)


_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[[^\]]*\]")


def _as_sent(path: str, spelled: Mapping[str, str] | None) -> str:
    """JSON path ``path`` of canonical members (msgspec's) with each member the client
    sent under another spelling (``spelled``: ``fold``) named as sent:
    ``$.fileFilteringOptions.respectGit`` → ``$.file_filtering_options.respect_git``."""
    if not spelled or not path.startswith("$"):
        return path
    canonical, sent, at = "$", "$", 1
    while at < len(path):
        step = _STEP.match(path, at)
        if step is None:
            return path  # not a path of plain names and indexes: as msgspec wrote it
        if step.group(1) is not None:
            canonical = f"{canonical}.{step.group(1)}"
            sent = member(sent, spelled.get(canonical, step.group(1)))
        else:
            canonical += step.group(0)
            sent += step.group(0)
        at = step.end()
    return sent


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


#: The ways of picking a file's lines, in the order ``_check_alone`` names them.
_PICKS = (("symbol",), ("enclosing",), ("offset", "limit", "column"), ("cells",))


def _check_alone(spec: FileSpec, at: str) -> None:
    """``symbol``, ``enclosing``, a line window (``offset``/``limit``/``column``) and
    ``cells`` exclude each other in one FileSpec (issue 26): -32602 naming the second
    one given (in that order), ``$.files[i].enclosing``."""
    given = [
        next(n for n in names if getattr(spec, n) is not None)
        for names in _PICKS
        if any(getattr(spec, n) is not None for n in names)
    ]
    if len(given) > 1:
        field = f"{at}.{given[1]}"
        raise InvalidParams(
            f"invalid params: {field}: {given[0]} and {given[1]} exclude each other", field
        )


def _check_read_names(params: ReadManyParams) -> None:
    for i, entry in enumerate(params.paths):
        if isinstance(entry, str):
            _check_name(entry, f"$.paths[{i}]")
        else:
            _check_name(entry.path, f"$.paths[{i}].path")
            _check_cells(entry, f"$.paths[{i}].cells")
            _check_alone(entry, f"$.paths[{i}]")
    for i, spec in enumerate(params.files):
        _check_name(spec.path, f"$.files[{i}].path")
        _check_cells(spec, f"$.files[{i}].cells")
        _check_alone(spec, f"$.files[{i}]")
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

    Accepts camelCase, snake_case and the aliases of PROTOCOL §3, folded once;
    ``order: "request-order"`` is read as ``order`` absent (its default).
    ``defaults`` (canonical names, as ``fold_read_params`` gives them: a connection's
    settings) fill what the request leaves out. Raises ``InvalidParams`` (JSON-RPC
    -32602) whose message names the field, e.g.
    ``invalid params: Expected `int` >= 1, got `0` - at `$.files[0].offset```.
    """
    spelled: dict[str, str] = {}
    folded = fold_read_params(raw, spelled)
    if defaults:
        folded = _over_defaults(defaults, folded)
    params: ReadManyParams = _convert(folded, ReadManyParams, spelled)
    if params.order == "request-order":  # the default said aloud is the default: the
        # same answer and cursor as without it (issue 25 item 1)
        params = msgspec.structs.replace(params, order=None)
    _check_read_names(params)
    base = params.changes.base if params.changes is not None else None
    if base is not None and _SURROGATE.search(base):  # no git revision holds one
        field = _as_sent("$.changes.base", spelled)
        raise InvalidParams(f"invalid params: a lone surrogate in a revision - at `{field}`", field)
    if not (params.paths or params.files or params.include or params.cursor or params.changes):
        raise InvalidParams(
            "invalid params: at least one of paths, files, include, cursor, changes must "
            "hold an entry",
            "$.paths",
        )
    return params


def as_object(raw: Any) -> dict[str, Any]:
    """Params that must be a JSON object, as a new dict: ``None`` (a request without
    params) is ``{}``; anything else but an object raises ``InvalidParams`` naming ``$``
    (JSON-RPC -32602, ``invalid params: expected an object``)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidParams("invalid params: expected an object", "$")
    return dict(raw)


def decode_files_params(raw: Any) -> FilesParams:
    """Validate ``readMany/files`` params (``null`` members absent, at any depth:
    ``wire.fold.drop_nulls``); raises ``InvalidParams`` naming the field."""
    spelled: dict[str, str] = {}
    params = fold(drop_nulls(as_object(raw)), TOP_ALIASES, "$", spelled)
    ffo = params.get("fileFilteringOptions")
    if isinstance(ffo, Mapping):
        params["fileFilteringOptions"] = fold(
            ffo, FILTER_ALIASES, "$.fileFilteringOptions", spelled
        )
    result: FilesParams = _convert(params, FilesParams, spelled)
    for name in ("patterns", "exclude"):
        for i, pattern in enumerate(getattr(result, name)):
            _check_name(pattern, f"$.{name}[{i}]")
    if result.root is not None:
        _check_root(result.root)
    return result


def _given(raw: Any) -> dict[str, Any]:
    """The members of object ``raw`` that are not ``null`` (at any depth:
    ``wire.fold.drop_nulls``): a ``null`` member is an absent one (``{"clock": null}``
    is missing its clock)."""
    given: dict[str, Any] = drop_nulls(as_object(raw))
    return given


def decode_changed_since_params(raw: Any) -> ChangedSinceParams:
    """Validate ``readMany/changedSince`` params (``{clock, root?}``) into
    ``ChangedSinceParams``. Raises ``InvalidParams`` (JSON-RPC -32602) naming the field:
    ``$.clock`` when it is missing (``Object missing required field `clock` - at `$```)
    or not a string, ``$.root`` for a root that is not a string or names no file, the
    member itself for one the method does not take."""
    params: ChangedSinceParams = _convert(_given(raw), ChangedSinceParams)
    if params.root is not None:
        _check_root(params.root)
    return params


def decode_rescan_params(raw: Any) -> RescanParams:
    """Validate ``readMany/rescan`` params (``{root?}``) into ``RescanParams``; raises
    ``InvalidParams`` naming the field (``$.root``, or an unknown member)."""
    params: RescanParams = _convert(_given(raw), RescanParams)
    if params.root is not None:
        _check_root(params.root)
    return params


def decode_status_params(raw: Any) -> StatusParams:
    """Validate ``readMany/status`` params (none: ``{}`` or no params; a ``null`` member
    is an absent one, as for the other methods); raises ``InvalidParams`` naming ``$``
    (not an object) or the member it does not take."""
    params: StatusParams = _convert(_given(raw), StatusParams)
    return params


def decode_stop_daemon_params(raw: Any) -> StopDaemonParams:
    """Validate ``readMany/stopDaemon`` params (``{reason?}``) into ``StopDaemonParams``;
    raises ``InvalidParams`` naming the field (``$.reason``, or an unknown member)."""
    params: StopDaemonParams = _convert(_given(raw), StopDaemonParams)
    return params
