"""LSP base-protocol framing, strictly: ``read_frame`` and its limits.

pygls' ``run_async`` reads frames leniently: a frame without a usable ``Content-Length``
is skipped line by line (the connection then misreads everything after it and the
client waits forever), and any ``Content-Length`` is buffered whole. ``read_frame``
replaces it: where the framing itself is lost it raises ``FramingError`` (the error
response to send first is its ``code``: JSON-RPC 2.0 §5.1, ``id: null``) and
``serve`` closes the connection with a log line. Other connections never notice.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

#: Largest message body a connection accepts, in bytes (the ``Content-Length``). A larger
#: frame is refused unread (-32600) and its connection closed. 64 MiB holds a
#: ``textDocument/didOpen`` of a file at ``maxFileBytes`` (20 MiB) even if JSON escapes
#: triple it; PROTOCOL §1 (LSP base protocol) sets no limit of its own.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Largest header section (every header line and the blank line), in bytes.
MAX_HEADER_BYTES = 8192

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_HEADER_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class FramingError(Exception):
    """The byte stream is not LSP base-protocol framing (or breaks a limit above); the
    connection cannot find the next message and is closed. ``code`` is the JSON-RPC
    error sent first (-32700, or -32600 for a message over ``MAX_MESSAGE_BYTES``)."""

    def __init__(self, message: str, code: int = PARSE_ERROR) -> None:
        super().__init__(message)
        self.code = code


async def read_frame(reader: Any) -> bytes | None:
    """Read one LSP base-protocol frame (LSP 3.17 §"Base Protocol": header lines
    ``Name: value\\r\\n``, a blank line, then ``Content-Length`` bytes of body) and
    return the body; None at the end of input (also mid-frame: the client went away).

    Header names are matched case-insensitively; headers other than
    ``Content-Length`` (``Content-Type``) are ignored; a bare ``\\n`` line end is
    accepted. Raises ``FramingError`` for a line that is no header, a missing, negative
    or non-numeric ``Content-Length``, a header section over ``MAX_HEADER_BYTES`` or a
    line over the reader's limit, and a body over ``MAX_MESSAGE_BYTES`` (not read)."""
    length: int | None = None
    seen = 0
    headers = 0
    while True:
        try:
            line: bytes = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):
            # asyncio.StreamReader.readline: a line over its limit (the daemon's: 64 KiB)
            raise FramingError("a header line is too long") from None
        if not line or not line.endswith(b"\n"):
            return None
        seen += len(line)
        if seen > MAX_HEADER_BYTES:
            raise FramingError(f"the header section is over {MAX_HEADER_BYTES} bytes")
        text = line.rstrip(b"\r\n")
        if not text:
            if length is None:
                if not headers:
                    continue  # blank lines between frames: tolerated (up to the cap)
                raise FramingError("a header section without Content-Length")
            break
        headers += 1
        name, colon, value = text.partition(b":")
        if not colon or not _HEADER_NAME.fullmatch(name):
            raise FramingError(f"not a header line: {text[:40]!r}")
        if name.lower() == b"content-length":
            value = value.strip()
            if not value.isdigit() or len(value) > 15:
                raise FramingError(f"Content-Length {value[:20]!r} is not a byte count")
            length = int(value)
            if length > MAX_MESSAGE_BYTES:
                raise FramingError(
                    f"a message of {length} bytes is over the limit of "
                    f"{MAX_MESSAGE_BYTES} (lsp.framing.MAX_MESSAGE_BYTES)",
                    INVALID_REQUEST,
                )
    body: bytes = await reader.readexactly(length)
    return body if len(body) == length else None  # (StdinAsyncReader: short at EOF)
