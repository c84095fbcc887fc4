"""Encoding answers for the wire: JSON bodies with msgspec (lone surrogates through
``json``), and ``readMany/read`` answers encoded on the engine's thread as chunks
(``EncodedResult``: one for a small answer, many for a large one) that the protocol
frames and the writers send without ever joining them into one string.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from readmany_daemon.content.cache import ContentCache
from readmany_daemon.wire.messages import ReadManyResult, to_builtins


def encode_body(obj: Any) -> bytes:
    """``obj`` as a JSON body (UTF-8), with msgspec."""
    try:
        return msgspec.json.encode(obj)
    except UnicodeEncodeError:
        # A lone surrogate (a non-UTF-8 file name kept by surrogateescape): JSON's
        # \\udcXX escape carries it; msgspec refuses to write it.
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")


#: Answers whose ``llmContent`` parts hold fewer characters are joined and encoded whole.
SPLIT_ENCODE_CHARS = 1 << 20

#: Bytes of encoded ``llmContent`` per chunk written of a large answer (about), when
#: small parts are grouped.
CHUNK_BYTES = 1 << 20

#: Encoded parts at least this long (bytes) are chunks of their own, not copied into a
#: group.
OWN_CHUNK_BYTES = 16 << 10


@dataclass
class EncodedResult:
    """A JSON-RPC ``result`` already encoded: UTF-8 JSON as consecutive chunks whose
    lengths (bytes) add up to ``size``. Built off the event loop by
    :func:`encode_read_result`; ``ReadManyProtocol._send_data`` frames it."""

    chunks: list[bytes | memoryview]
    size: int


def _json_string_body(text: str) -> memoryview:
    """The JSON encoding of ``text`` without its quotes (JSON escapes are per character,
    so the bodies of consecutive parts concatenate to the body of their concatenation)."""
    return memoryview(encode_body(text))[1:-1]


#: Parts at least this long (characters) are looked up in the content cache's JSON forms.
CACHED_BODY_CHARS = 4096

#: The ``ContentCache.derived`` key of a cached text's JSON form.
JSON_BODY_KEY = "json-body"


def _kept_json_body(text: str) -> bytes | None:
    """``text`` as the body of a JSON string: UTF-8, escaped as ``msgspec.json`` escapes
    it, without the quotes; ``None`` for text JSON can't carry as UTF-8 (lone surrogates).
    """
    try:
        return msgspec.json.encode(text)[1:-1]
    except UnicodeEncodeError:
        return None


def cached_json_body(cache: ContentCache, text: str) -> bytes | None:
    """``text`` encoded as the body of a JSON string (UTF-8, escaped as ``msgspec.json``
    escapes it, without the quotes) when ``text`` *is* (the same object as) the text of
    an entry of ``cache`` and holds at least ``content.cache.DERIVED_MIN_CHARS``
    characters, else ``None`` (the caller encodes it). Made on the first call and kept
    with the entry (``ContentCache.derived``: charged to ``max_bytes``, with the UTF-8
    copy the encoder leaves on a non-ASCII str), so a cached file sent again is not
    escaped again. ``None`` too for text JSON can't carry as UTF-8 (lone surrogates)."""
    return cache.derived(text, JSON_BODY_KEY, _kept_json_body, size=len)


def encode_result(result: Any) -> bytes:
    """A result Struct as JSON (UTF-8), encoded from the Struct itself (no builtins in
    between: about half the time of ``encode_body(to_builtins(result))``, the same
    bytes); a lone surrogate goes through :func:`encode_body`'s ``\\udcXX`` escape."""
    try:
        return msgspec.json.encode(result)
    except UnicodeEncodeError:
        return encode_body(to_builtins(result))


def encode_read_result(
    result: ReadManyResult, parts: list[str], cache: ContentCache | None = None
) -> EncodedResult:
    """A ``readMany/read`` answer encoded for the wire, on the caller's thread (the
    engine's: the event loop only frames it): one chunk with ``llmContent`` joined when
    small, else chunks of about ``CHUNK_BYTES`` bytes of encoded ``llmContent``, never one
    string (a full read of a large tree would otherwise be copied whole by the join, the
    encoder and the transport).

    With ``cache``, a part that is a cached file's text is taken in the JSON form the
    cache keeps (:func:`cached_json_body`) instead of being escaped again."""
    if sum(map(len, parts)) < SPLIT_ENCODE_CHARS:
        result.llm_content = "".join(parts)
        whole = encode_result(result)
        return EncodedResult([whole], len(whole))
    encoded = encode_result(result)  # llmContent is "" and the first field
    prefix = b'{"llmContent":"'
    if not encoded.startswith(prefix):
        result.llm_content = "".join(parts)
        whole = encode_result(result)
        return EncodedResult([whole], len(whole))
    # Each part is encoded alone (joining text with one non-ASCII character in it would
    # widen the whole join to 2 or 4 bytes a character).
    chunks: list[bytes | memoryview] = [prefix]
    _group(chunks, parts, cache, JSON_BODY_KEY, _kept_json_body, _json_string_body)
    chunks.append(memoryview(encoded)[len(prefix) :])
    return EncodedResult(chunks, sum(map(len, chunks)))


def _group(
    chunks: list[bytes | memoryview],
    parts: list[str],
    cache: ContentCache | None,
    key: str,
    keep: Callable[[str], bytes | None],
    encode: Callable[[str], bytes | memoryview],
) -> None:
    """Append to ``chunks`` the encodings of ``parts``: the cache's kept form (made by
    ``keep`` under ``key``, for a cached file's text) or ``encode(part)``. Kept forms and
    a large part's bytes are chunks of their own, never copied again (the socket writer
    sends the chunks with scatter-gather); small ones (headers, short files) are joined
    in groups of about ``CHUNK_BYTES``."""
    group: list[bytes | memoryview] = []
    size = 0
    for part in parts:
        kept = (
            cache.derived(part, key, keep, size=len)
            if cache is not None and len(part) >= CACHED_BODY_CHARS
            else None
        )
        body = kept if kept is not None else encode(part)
        if kept is not None or len(body) >= OWN_CHUNK_BYTES:
            if group:
                chunks.append(group[0] if len(group) == 1 else b"".join(group))
                group, size = [], 0
            chunks.append(body)
            continue
        group.append(body)
        size += len(body)
        if size >= CHUNK_BYTES:
            chunks.append(b"".join(group))
            group, size = [], 0
    if group:
        chunks.append(group[0] if len(group) == 1 else b"".join(group))


#: The ``ContentCache.derived`` key of a cached text's UTF-8 form (content frames).
UTF8_KEY = "utf-8"


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, an undecodable byte kept by surrogateescape as that byte (as
    the CLI prints it). Raises ``UnicodeEncodeError`` for another lone surrogate."""
    return text.encode("utf-8", "surrogateescape")


def _kept_utf8(text: str) -> bytes | None:
    try:
        return _utf8(text)
    except UnicodeEncodeError:
        return None


@dataclass
class FramedResult:
    """A ``readMany/read`` answer for a connection that asked for content frames
    (``initializationOptions.llmContentFrames``, PROTOCOL §1): ``llmContent`` as raw
    UTF-8 ``content`` chunks (``size`` bytes in all), sent as one frame just before the
    JSON-RPC response, whose ``result`` (``llmContent`` "") is ``result``, encoded JSON."""

    content: list[bytes | memoryview]
    size: int
    result: bytes


def encode_read_framed(
    result: ReadManyResult, parts: list[str], cache: ContentCache | None = None
) -> Any:
    """A ``readMany/read`` answer as a :class:`FramedResult`, its ``llmContent`` encoded
    in chunks as :func:`encode_read_result` does (the cache keeps a file's UTF-8 form);
    :func:`encode_read_result`'s answer when the text holds a lone surrogate that is no
    undecodable byte (raw UTF-8 cannot carry it; JSON's ``\\uXXXX`` can)."""
    chunks: list[bytes | memoryview] = []
    try:
        _group(chunks, parts, cache, UTF8_KEY, _kept_utf8, _utf8)
    except UnicodeEncodeError:
        return encode_read_result(result, parts, cache)
    result.llm_content = ""
    return FramedResult(chunks, sum(map(len, chunks)), encode_result(result))
