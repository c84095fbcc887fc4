"""The ``nextCursor`` codec: a read request's continuation, decoded at the edge, once.

A cursor (PROTOCOL §4) is an opaque token carrying what the request it continues said
(its non-default params), the item positions not yet answered and, for a file the
budget cut, where to resume it. ``decode_read_request`` turns raw ``readMany/read``
params into a ``ReadRequest``: for a cursor request, the params stored in the cursor
(validated once, here) and the ``Continuation``; the engine answers a ``ReadRequest``
and never opens a cursor itself. ``encode_cursor`` makes the token of an answer.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from readmany_daemon.errors import InvalidParams
from readmany_daemon.wire.messages import ReadManyParams, decode_read_params

#: Item positions as sorted, merged ``[start, end)`` ranges of item indexes.
Ranges = list[tuple[int, int]]

#: Item index → ``(offset, limit)`` to resume a file the budget cut.
Resume = dict[int, tuple[int, int | None]]


class _Cursor(msgspec.Struct, array_like=True):
    """The token's payload (base64url of its JSON array form)."""

    version: int
    params: dict[str, Any]
    remaining: Ranges  # [start, end) ranges of item indexes
    resume: Resume  # item index → (offset, limit) of a cut file


class Continuation(msgspec.Struct, frozen=True, kw_only=True):
    """What a cursor continues: ``params`` are the non-default params of the request
    it came from, as sent (``root`` among them when it named one); ``remaining`` the
    positions of the items not yet answered (sorted, merged ``[start, end)`` ranges);
    ``resume`` the ``(offset, limit)`` to read a budget-cut item from."""

    params: dict[str, Any]
    remaining: Ranges
    resume: Resume


class ReadRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded ``readMany/read`` request: the params to answer (for a cursor request,
    those the cursor stores) and the ``continuation`` when a cursor was sent.
    ``params.root`` is the root the request is answered in, a cursor's included: the
    adapters resolve it from here and never open a cursor themselves."""

    params: ReadManyParams
    continuation: Continuation | None = None


def _merge_ranges(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sorted, merged ``[start, end)`` ranges."""
    out: Ranges = []
    for start, end in sorted(r for r in ranges if r[0] < r[1]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


_DEFAULT_PARAMS: dict[str, Any] = msgspec.to_builtins(ReadManyParams())


def _non_default(params: ReadManyParams) -> dict[str, Any]:
    """The fields of ``params`` that differ from the defaults (``cursor`` aside), so a
    cursor carries only what the request said."""
    return {
        k: v
        for k, v in msgspec.to_builtins(params).items()
        if k != "cursor" and v != _DEFAULT_PARAMS.get(k)
    }


def encode_cursor(
    params: ReadManyParams, remaining: Sequence[tuple[int, int]], resume: Resume
) -> str:
    """The ``nextCursor`` that continues ``params`` at the item positions ``remaining``
    (``[start, end)`` ranges, in any order), resuming the items of ``resume`` at their
    ``(offset, limit)``."""
    cursor = _Cursor(1, _non_default(params), _merge_ranges(remaining), resume)
    try:
        raw = msgspec.json.encode(cursor)
    except UnicodeEncodeError:
        # A file name that is not UTF-8 (surrogate escapes, PEP 383): msgspec refuses
        # lone surrogates, the stdlib writes them as ``\udcXX`` escapes (ASCII JSON).
        raw = json.dumps(msgspec.to_builtins(cursor), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(token: str) -> Continuation:
    """The ``Continuation`` of a cursor this daemon issued; raises ``InvalidParams``
    naming ``$.cursor`` for anything else."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        try:
            cursor = msgspec.json.decode(raw, type=_Cursor)
        except msgspec.DecodeError:
            # Perhaps ``\udcXX`` escapes (see ``encode_cursor``), which msgspec refuses.
            cursor = msgspec.convert(json.loads(raw), _Cursor, strict=False)
    except (binascii.Error, ValueError, RecursionError, msgspec.DecodeError):
        raise InvalidParams(
            "invalid params: cursor is not a cursor this daemon issued", "$.cursor"
        ) from None
    if cursor.version != 1:
        raise InvalidParams("invalid params: cursor from another version", "$.cursor")
    return Continuation(
        params=cursor.params, remaining=_merge_ranges(cursor.remaining), resume=cursor.resume
    )


def read_request(params: ReadManyParams) -> ReadRequest:
    """The ``ReadRequest`` of validated ``params``: when they carry a cursor, the params
    it stores (validated; ``root`` is the request's when it names one, else the
    cursor's) and its continuation. Raises ``InvalidParams`` for a bad
    cursor, or for ``paths``/``files``/``include`` that differ from the request the
    cursor continues (send the cursor alone, or with the same request)."""
    if not params.cursor:
        return ReadRequest(params=params)
    continuation = decode_cursor(params.cursor)
    asked = _non_default(params)
    for name in ("paths", "files", "include"):
        if name in asked and asked[name] != continuation.params.get(name):
            raise InvalidParams(
                f"invalid params: $.{name} differs from the request $.cursor continues; "
                "send the cursor alone (or with the same request)",
                f"$.{name}",
            )
    stored = dict(continuation.params)
    if "root" in asked:
        # The root a request names wins over the cursor's (a cursor made without one
        # answered against the first folder): adapters read the root from here only.
        stored["root"] = asked["root"]
    return ReadRequest(params=decode_read_params(stored), continuation=continuation)


def decode_read_request(raw: Any, defaults: Mapping[str, Any] | None = None) -> ReadRequest:
    """Decode raw ``readMany/read`` params (aliases folded once, ``defaults`` filling
    what the request leaves out, see ``decode_read_params``) into a ``ReadRequest``.
    Raises ``InvalidParams`` naming the field."""
    return read_request(decode_read_params(raw, defaults))
