"""The ``nextCursor`` codec: a read request's continuation, decoded at the edge, once.

A cursor (PROTOCOL §4) is an opaque, self-contained token: no server keeps anything for
it. It carries what the request it continues said (its non-default params, when they
fit), a digest binding it to the root it was answered in and to that request, and a
``Position``: the last key of the part of the request order already delivered, the keys
delivered beyond it (a smallest-first page), where a budget-cut file resumes, and what
the delivered part held when its page was built (to name files created in it since).
The token is the payload, JSON compressed with raw deflate, then a check of the JSON
(``CHECK_BYTES`` of BLAKE2b), in base64url; then ``.`` and the page's time in 20
digits (``SINCE_DIGITS``), so that the time alone never moves the rest of the token.
then ``TIME_CHECK_DIGITS`` digits checking the time with the payload. The checks turn
a cursor mangled on its way back (a character a model copied wrong) into -32602 rather
than a page that silently skips files or names no created file.

A key is ``(entry, path)``: the entry's index in the request (``paths``, then
``files``, then ``include``) and, for a match of a glob or folder, its path (compared in
byte order, as the expansion is sorted); ``""`` for a named entry. Keys, unlike
positions in an expansion, do not move when files are created or deleted.

``decode_read_request`` turns raw ``readMany/read`` params into a ``ReadRequest``: for a
cursor request, the params stored in the cursor (validated once, here) and the
``Continuation``; the engine answers a ``ReadRequest`` and never opens a cursor itself.
``cursor_stamp`` is made once per request (its non-default params and digest);
``encode_position`` makes the token of an answer with it (``encode_cursor`` from the
params).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import zlib
from collections.abc import Mapping
from typing import Any

import msgspec

from readmany_daemon.errors import InvalidParams
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyParams

#: A place in the request order: (entry index in the request, path; ``""`` for a named
#: entry). Ordered by entry, then by the path's bytes (``engine.items.key_order``).
Key = tuple[int, str]

#: The longest token ``encode_cursor`` aims for (PROTOCOL §4: at most 1,000 characters).
MAX_CURSOR_CHARS = 1000

#: The payload format; tokens of another one are refused naming ``$.cursor``.
VERSION = 4

#: Bytes of the check that follows the deflated payload (BLAKE2b of its JSON): a
#: mangled cursor passes it by chance once in 2**48.
CHECK_BYTES = 6

#: Digits of the page time (``Position.since``, ns since the epoch, zero-padded) that
#: end every token after a ``.``, outside the compressed payload. Every token of one
#: position then has the same length and the same o200k count whatever its time: the
#: digits are cut into tokens of three from the ``.`` (o200k's pre-tokenizer), so an
#: answer packed against a stand-in time holds the real cursor in the same budget.
SINCE_DIGITS = 20
#: Digits after the page time that check it with the payload (:func:`time_check`).
TIME_CHECK_DIGITS = 6

#: Decompressed payloads larger than this are not cursors readmany issued.
_MAX_PAYLOAD = 1 << 20

_NOT_OURS = "invalid params: cursor is not a cursor readmany issued"
#: A cursor's payload: URL-safe base64 without padding (RFC 4648 §5), as ``_token`` writes.
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")


class Position(msgspec.Struct, frozen=True, kw_only=True):
    """Where a chain of pages stands, in keys of the request order.

    ``after``: every file with a key up to it was delivered (None: nothing yet).
    ``beyond``: keys after ``after`` delivered too (a smallest-first page), sorted.
    ``resume``: ``(key, offset, limit)`` of the file the budget cut, to go on with;
    ``resume_column``: the 1-based character of line ``offset`` it goes on at, when the
    cut fell inside that line (a first line longer than the page held), else None;
    ``resume_sha256``: the first 16 hex digits of that file's ``sha256`` when the page
    cut it (None: it had none, over ``maxFileBytes``): changed, it is read again from
    its start (``paging.restarted``).
    ``count``/``total``: how many files the delivered part (keys up to ``after`` and
    ``beyond``) held when the page was built, and the sum of their ``key_hash``es
    modulo 2**64. ``since``: the time (ns since the epoch) just before that page looked
    at the tree; a file created in the delivered part after it is named on the next
    page. ``outlined``: ``packing: "outlines"`` gave outlines up to this key (files
    after ``after`` up to it are not outlined again: PROTOCOL §4 "Outlines")."""

    after: Key | None = None
    beyond: list[Key] = msgspec.field(default_factory=list)
    resume: tuple[Key, int, int | None] | None = None
    resume_column: int | None = None
    resume_sha256: str | None = None
    count: int = 0
    total: int = 0
    since: int = 0
    outlined: Key | None = None


class Continuation(msgspec.Struct, frozen=True, kw_only=True):
    """What a cursor continues: ``params`` are the non-default params of the request it
    came from, as sent (``root`` among them when it named one), or None when they were
    too large to carry (the request must then be sent beside the cursor); ``digest``
    binds the cursor to its root and request (``cursor_digest``); ``position`` says what
    was delivered."""

    params: dict[str, Any] | None
    digest: str
    position: Position


class ReadRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded ``readMany/read`` request: the params to answer (for a cursor request,
    those the cursor stores) and the ``continuation`` when a cursor was sent.
    ``params.root`` is the root the request is answered in, a cursor's included: the
    adapters resolve it from here and never open a cursor themselves."""

    params: ReadManyParams
    continuation: Continuation | None = None


_DEFAULT_PARAMS: dict[str, Any] = msgspec.to_builtins(ReadManyParams())


def _non_default(params: ReadManyParams) -> dict[str, Any]:
    """The fields of ``params`` that differ from the defaults (``cursor`` aside), so a
    cursor carries only what the request said."""
    return {
        k: v
        for k, v in msgspec.to_builtins(params).items()
        if k != "cursor" and v != _DEFAULT_PARAMS.get(k)
    }


def key_hash(key: Key) -> int:
    """A 64-bit hash of ``key``, the same in every process (for ``Position.total``)."""
    data = str(key[0]).encode() + b"\0" + os.fsencode(key[1])
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def cursor_digest(root: str, params: ReadManyParams) -> str:
    """The digest that binds a cursor to the (real) ``root`` it was answered in and to
    the request (its non-default params, ``root`` aside: the same folder may be named
    by name, path or URI)."""
    return cursor_stamp(root, params).digest


class CursorStamp(msgspec.Struct, frozen=True, kw_only=True):
    """What every cursor of one request carries, made once per request
    (:func:`cursor_stamp`): ``asked``, the request's non-default params as sent
    (``cursor`` aside), and ``digest`` (:func:`cursor_digest`)."""

    asked: dict[str, Any]
    digest: str


#: The member a cursor carries in place of ``focus``: a digest of it, never its text
#: (PROTOCOL §4 "Cursors": the client sends the cursor beside the same ``focus``).
FOCUS_DIGEST = "focusDigest"


def focus_digest(focus: str) -> str:
    """A digest of ``focus`` (12 URL-safe base64 characters of a BLAKE2b of its UTF-8)."""
    digest = hashlib.blake2b(focus.encode("utf-8", "surrogatepass"), digest_size=9).digest()
    return base64.urlsafe_b64encode(digest).decode()


def cursor_stamp(root: str, params: ReadManyParams) -> CursorStamp:
    """The :class:`CursorStamp` of ``params`` answered in the (real) ``root``; a
    ``focus`` is carried as its digest (:data:`FOCUS_DIGEST`), never as its text."""
    asked = _non_default(params)
    if params.focus is not None:
        del asked["focus"]
        asked[FOCUS_DIGEST] = focus_digest(params.focus)
    bound = {k: v for k, v in asked.items() if k != "root"}
    text = json.dumps([root, bound], sort_keys=True, separators=(",", ":"))
    digest = hashlib.blake2b(os.fsencode(text), digest_size=9).digest()
    return CursorStamp(asked=asked, digest=base64.urlsafe_b64encode(digest).decode())


def _pack_keys(keys: list[Key]) -> list[Any]:
    """Sorted keys, front-coded: ``[entry delta, shared prefix, rest of the path]``
    per key, flattened (paths of one expansion share most of their characters)."""
    out: list[Any] = []
    entry, path = 0, ""
    for e, p in sorted(keys, key=lambda k: (k[0], os.fsencode(k[1]))):  # request order
        shared = 0
        if e == entry:
            limit = min(len(p), len(path))
            while shared < limit and p[shared] == path[shared]:
                shared += 1
        out += [e - entry, shared, p[shared:]]
        entry, path = e, p
    return out


def _unpack_keys(flat: list[Any]) -> list[Key]:
    if len(flat) % 3:
        raise ValueError("bad key list")
    keys: list[Key] = []
    entry, path = 0, ""
    for k in range(0, len(flat), 3):
        delta, shared, rest = flat[k : k + 3]
        if not (isinstance(delta, int) and isinstance(shared, int) and isinstance(rest, str)):
            raise ValueError("bad key")
        if delta < 0 or shared < 0 or shared > len(path) or (delta and shared):
            raise ValueError("bad key")
        entry, path = entry + delta, path[:shared] + rest
        keys.append((entry, path))
    return keys


def payload_check(raw: bytes) -> bytes:
    """The check a token carries after its deflated payload: BLAKE2b of the payload's
    JSON ``raw``, :data:`CHECK_BYTES` long."""
    return hashlib.blake2b(raw, digest_size=CHECK_BYTES, person=b"readmany-cursor").digest()


def time_check(check: bytes, since: str) -> str:
    """The :data:`TIME_CHECK_DIGITS` digits after the page time: a BLAKE2b of the
    payload's check and the time's digits ``since``, in decimal, so that a changed time
    is refused too while every token of a position keeps its length and o200k count."""
    digest = hashlib.blake2b(check + since.encode(), digest_size=8, person=b"readmany-time")
    return f"{int.from_bytes(digest.digest(), 'big') % 10**TIME_CHECK_DIGITS:0{TIME_CHECK_DIGITS}d}"


def _token(payload: list[Any], since: int) -> str:
    # ensure_ascii: a file name that is not UTF-8 (surrogate escapes, PEP 383) is kept
    # as ``\udcXX`` escapes.
    raw = json.dumps(payload, separators=(",", ":")).encode()
    packed = zlib.compress(raw, 9)[2:-4]  # raw deflate: no zlib header or checksum
    check = payload_check(raw)
    body = base64.urlsafe_b64encode(packed + check).decode().rstrip("=")
    time = f"{since:0{SINCE_DIGITS}d}"
    return f"{body}.{time}{time_check(check, time)}"


def encode_cursor(
    params: ReadManyParams, root: str, position: Position, *, carry: bool = False
) -> str:
    """The ``nextCursor`` that continues ``params``, answered in ``root``, from
    ``position`` (:func:`encode_position` with their :func:`cursor_stamp`)."""
    return encode_position(cursor_stamp(root, params), position, carry=carry)


def encode_position(stamp: CursorStamp, position: Position, *, carry: bool = False) -> str:
    """The ``nextCursor`` of the request ``stamp`` was made of, from ``position``. The
    params are left out when the token would pass ``MAX_CURSOR_CHARS`` with them (the
    request must then be sent beside it), unless ``carry``; the caller keeps
    ``position`` small enough for the rest."""
    p = position
    tail: list[Any] = [
        [p.after[0], p.after[1]] if p.after is not None else None,
        _pack_keys(p.beyond),
        (
            [p.resume[0][0], p.resume[0][1], p.resume[1], p.resume[2]]
            + (
                [p.resume_column, p.resume_sha256]
                if p.resume_sha256 is not None
                else [p.resume_column]
                if p.resume_column is not None
                else []
            )
            if p.resume
            else None
        ),
        p.count,
        p.total,
    ]
    if p.outlined is not None:  # an optional last field: cursors without it still decode
        tail.append([p.outlined[0], p.outlined[1]])
    if not 0 <= p.since < 10**SINCE_DIGITS:
        raise ValueError(f"page time out of range: {p.since}")
    digest = stamp.digest
    token = _token([VERSION, stamp.asked, digest, *tail], p.since)
    if len(token) > MAX_CURSOR_CHARS and not carry:
        token = _token([VERSION, None, digest, *tail], p.since)
    return token


def decode_cursor(token: str) -> Continuation:
    """The ``Continuation`` of a cursor readmany issued; raises ``InvalidParams``
    naming ``$.cursor`` for anything else (a token of another version, such as one
    without the page time's digits, is refused as "from another version")."""
    body, dot, time = token.rpartition(".")
    if not dot:
        body, time = token, ""
    if not _BASE64URL.fullmatch(body):  # base64's decoder would skip other characters
        raise InvalidParams(_NOT_OURS, "$.cursor")
    try:
        packed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflate = zlib.decompressobj(-15)
        raw = inflate.decompress(packed, _MAX_PAYLOAD)
        if inflate.unconsumed_tail or not inflate.eof:
            raise ValueError("not a whole payload")
        payload = json.loads(raw)
        if not isinstance(payload, list) or not payload or not isinstance(payload[0], int):
            raise ValueError("not a payload")
    except (binascii.Error, ValueError, RecursionError, zlib.error):
        raise InvalidParams(_NOT_OURS, "$.cursor") from None
    if payload[0] != VERSION:
        raise InvalidParams("invalid params: cursor from another version", "$.cursor")
    check = payload_check(raw)
    if inflate.unused_data != check:  # changed on its way back
        raise InvalidParams(_NOT_OURS, "$.cursor")
    try:
        if len(payload) not in (8, 9) or len(time) != SINCE_DIGITS + TIME_CHECK_DIGITS:
            raise ValueError("bad payload")
        if not (time.isascii() and time.isdigit()):
            raise ValueError("bad page time")
        time, sealed = time[:SINCE_DIGITS], time[SINCE_DIGITS:]
        if sealed != time_check(check, time):
            raise ValueError("the page time was changed")
        _, params, digest, after, beyond, resume, count, total = payload[:8]
        since = int(time)
        outlined = payload[8] if len(payload) == 9 else None
        position = msgspec.convert(
            {
                "after": after,
                "beyond": _unpack_keys(beyond),
                "resume": [[resume[0], resume[1]], resume[2], resume[3]] if resume else None,
                "resume_column": resume[4] if resume and len(resume) >= 5 else None,
                "resume_sha256": resume[5] if resume and len(resume) == 6 else None,
                "count": count,
                "total": total,
                "since": since,
                "outlined": outlined,
            },
            Position,
        )
        if not isinstance(digest, str) or not (params is None or isinstance(params, dict)):
            raise ValueError("bad payload")
    except (ValueError, TypeError, IndexError, msgspec.ValidationError):
        raise InvalidParams(_NOT_OURS, "$.cursor") from None
    return Continuation(params=params, digest=digest, position=position)


def read_request(params: ReadManyParams) -> ReadRequest:
    """The ``ReadRequest`` of validated ``params``: when they carry a cursor, the params
    it stores (validated; ``root`` is the request's when it names one, else the
    cursor's) and its continuation. Raises ``InvalidParams`` naming ``$.cursor`` for a
    bad cursor, for ``paths``/``files``/``include`` that differ from the request the
    cursor continues (send the cursor alone, or with the same request), and for a
    cursor whose request was too large to carry, sent alone, and for a ``focus`` other
    than the one of the request the cursor continues (or none beside a focused one's)."""
    if not params.cursor:
        return ReadRequest(params=params)
    continuation = decode_cursor(params.cursor)
    _check_focus(continuation, params.focus)
    asked = _non_default(params)
    if continuation.params is None:
        if not (params.paths or params.files or params.include):
            raise InvalidParams(
                "invalid params: $.cursor continues a request too large to carry; "
                "send it with the request it continues",
                "$.cursor",
            )
        # The request sent beside it is answered; the digest checks it is the same one.
        plain = msgspec.structs.replace(params, cursor=None)
        return ReadRequest(params=plain, continuation=continuation)
    for name in ("paths", "files", "include"):
        if name in asked and asked[name] != continuation.params.get(name):
            raise InvalidParams(
                f"invalid params: $.cursor continues another request ($.{name} differs); "
                "send the cursor alone (or with the same request)",
                "$.cursor",
            )
    stored = dict(continuation.params)
    if stored.pop(FOCUS_DIGEST, None) is not None:
        stored["focus"] = params.focus  # the same (_check_focus): only its digest is kept
    if "root" in asked:
        # The root a request names wins over the cursor's (a cursor made without one
        # answered against the first folder): adapters read the root from here only.
        # The engine refuses the cursor when that root is not the one it was made in.
        stored["root"] = asked["root"]
    return ReadRequest(params=decode_read_params(stored), continuation=continuation)


def _check_focus(continuation: Continuation, focus: str | None) -> None:
    """Raise ``InvalidParams`` naming ``$.cursor`` unless ``focus`` (sent beside the
    cursor) is the focus of the request the cursor continues: the same text, or none
    for none. A cursor whose request was too large to carry is checked by its digest
    with the request sent beside it (``engine.options.options_for``)."""
    if continuation.params is None:
        return
    kept = continuation.params.get(FOCUS_DIGEST)
    if kept is None and focus is None:
        return
    if kept is None:
        raise InvalidParams(
            "invalid params: $.cursor continues a request without focus; send it without one",
            "$.cursor",
        )
    if focus is None or focus_digest(focus) != kept:
        raise InvalidParams(
            "invalid params: $.cursor continues a focused request; send it beside the same focus",
            "$.cursor",
        )


def decode_read_request(raw: Any, defaults: Mapping[str, Any] | None = None) -> ReadRequest:
    """Decode raw ``readMany/read`` params (aliases folded once, ``defaults`` filling
    what the request leaves out, see ``decode_read_params``) into a ``ReadRequest``.
    Raises ``InvalidParams`` naming the field."""
    return read_request(decode_read_params(raw, defaults))
