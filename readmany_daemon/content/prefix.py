"""The prefix read of a file over ``max_file_bytes``: 1 MiB chunks decoded only as far
as the asked window needs (:class:`StreamDecoder`), the
rest scanned for newlines without decoding
(:class:`~readmany_daemon.content.lines.LineCounter`), never more than
:data:`~readmany_daemon.content.fileread.SCAN_BYTES` in all."""

from __future__ import annotations

import codecs
import hashlib

from msgspec.structs import replace

from readmany_daemon.content.decode import Decoded, decode, replace_escapes
from readmany_daemon.content.fileread import (
    READ_CHUNK_BYTES,
    SCAN_BYTES,
    FileRead,
    WindowArgs,
    binary_read,
    read_upto,
)
from readmany_daemon.content.lines import LineCounter, count_lines, skip_lines, window, window_of
from readmany_daemon.errors import Code

__all__ = ["PrefixTracker", "StreamDecoder", "read_prefix", "stream_codec"]


def stream_codec(decoded: Decoded) -> tuple[str, int]:
    """``(codec, bom_length_in_bytes)`` to continue decoding after :func:`decode`.

    ``decoded`` is what :func:`decode` made of a file's first chunk (text). ``codec`` is
    the Python codec of the file's bytes after its BOM (``"utf-8"`` for UTF-8 with a BOM,
    and for a first chunk too short to tell); ``bom_length_in_bytes`` is how many bytes
    the file starts with before them: 3 (UTF-8), 2 (UTF-16), 4 (UTF-32) or 0."""
    encoding = decoded.encoding or "utf-8"
    if encoding == "utf-8-sig":
        return "utf-8", len(codecs.BOM_UTF8)
    if decoded.bom:
        return encoding, (4 if encoding.startswith("utf-32") else 2)
    return encoding, 0


class StreamDecoder:
    """Decodes a file's chunks in order with ``codec``, invalid bytes as U+FFFD: for UTF-8
    one per byte, counted in ``replaced_bytes`` (as :func:`decode` does for mostly-UTF-8
    text); for UTF-16/32, an incomplete last character as one U+FFFD, counted once;
    otherwise as the codec's ``"replace"`` handler does.

    UTF-8 chunks are decoded strictly first (the one C call valid text costs); only a
    chunk that fails is decoded again with each bad byte marked, then replaced. A
    character cut by a chunk's end waits for the next chunk (``_pending``).

    ``replaced_bytes`` counts the U+FFFD made so far (as ``Decoded.replaced_bytes``).
    The codec comes from :func:`stream_codec`; an unknown one raises ``LookupError``."""

    def __init__(self, codec: str) -> None:
        name = codecs.lookup(codec).name
        self._utf8 = name == "utf-8"
        self._unicode = name.startswith(("utf-16", "utf-32"))
        self._decoder = None if self._utf8 else codecs.getincrementaldecoder(codec)("replace")
        self._pending = b""
        self.replaced_bytes = 0

    def decode(self, chunk: bytes, final: bool) -> str:
        """The text of ``chunk``, the next bytes of the file (past any BOM), as far as
        its characters are whole; ``final`` says it is the last chunk, whose cut last
        character is then replaced, not kept for later. Raises nothing."""
        if self._decoder is not None:
            legacy: str = self._decoder.decode(chunk, final=final and not self._unicode)
            if final and self._unicode:
                # UTF-16/32 cut inside its last character: one U+FFFD, counted once (as
                # content.decode does for a whole file).
                cut, _ = self._decoder.getstate()
                if cut:
                    self._decoder.reset()
                    self.replaced_bytes += 1
                    legacy += "\ufffd"
            return legacy
        data = self._pending + chunk if self._pending else chunk
        try:
            piece, used = codecs.utf_8_decode(data, "strict", final)
        except UnicodeDecodeError:
            escaped, used = codecs.utf_8_decode(data, "surrogateescape", final)
            piece, bad = replace_escapes(escaped)
            self.replaced_bytes += bad
        self._pending = data[used:]
        return piece


class PrefixTracker:
    """Collects decoded pieces and tells when they hold the whole asked window."""

    def __init__(
        self, offset: int, limit: int | None, max_chars: int | None, column: int = 1
    ) -> None:
        self._before = offset - 1  # newlines before the window's first line
        self._limit = limit
        # Characters past the first line's start that the window may need: those before
        # its column, then ``max_chars`` (and one more, to know whether it goes on).
        self._max_chars = None if max_chars is None else max_chars + column - 1
        self._pieces: list[str] = []
        self._chars = 0
        self._newlines = 0
        self._start: int | None = 0 if offset == 1 else None
        self.done = False
        self._update()

    def add(self, piece: str) -> None:
        if piece:
            found = piece.count("\n")
            if self._start is None and self._newlines + found >= self._before:
                at = skip_lines(piece, self._before - self._newlines, 0)
                self._start = self._chars + (at if at is not None else len(piece))
            self._newlines += found
            self._chars += len(piece)
            self._pieces.append(piece)
        self._update()

    def _update(self) -> None:
        if self._start is None:
            return
        if self._limit is not None and self._newlines >= self._before + self._limit:
            self.done = True
        if self._max_chars is not None and self._chars - self._start > self._max_chars:
            self.done = True

    @property
    def started(self) -> bool:
        """Whether the window's first line was reached (its start is in the pieces)."""
        return self._start is not None

    def text(self) -> str:
        return "".join(self._pieces)


def read_prefix(fd: int, base: FileRead, window_args: WindowArgs) -> FileRead:
    """The over-``max_file_bytes`` path of :func:`read_file` (see there); ``base`` holds
    the ``fstat`` fields.

    At most :data:`SCAN_BYTES` are read, window search and newline count together, so
    the cost does not grow with the file (a 10 GB file answers as fast as a 64 MiB one).
    A window that does not start within them is ``too-large``; a file that goes on past
    them has ``total_lines=None`` (the window's ``next_offset`` is then always set)."""
    size = base.size or 0
    first = read_upto(fd, min(READ_CHUNK_BYTES, size))
    got = len(first)
    eof = got >= size or got < min(READ_CHUNK_BYTES, size)
    sniff = decode(first, complete=eof)
    if sniff.text is None:
        return binary_read(base, size, got)
    codec, bom_length = stream_codec(sniff)
    decoder = StreamDecoder(codec)
    counter = LineCounter(codec)
    hasher = hashlib.sha256(first)
    offset, limit, max_chars, column = window_args
    tracker = PrefixTracker(offset, limit, max_chars, column)
    body = first[bom_length:]
    counter.feed(body)
    tracker.add(decoder.decode(body, eof))
    while not eof and not tracker.done and got < SCAN_BYTES:
        want = min(READ_CHUNK_BYTES, size - got)
        chunk = read_upto(fd, want)
        got += len(chunk)
        eof = got >= size or len(chunk) < want
        hasher.update(chunk)
        counter.feed(chunk)
        tracker.add(decoder.decode(chunk, eof))
    text = tracker.text()
    partial = replace(
        base,
        kind="text",
        text=text,
        encoding=sniff.encoding,
        bom=sniff.bom,
        replaced_bytes=decoder.replaced_bytes,
    )
    if eof:
        return replace(
            partial,
            complete_text=True,
            total_lines=(line_count := count_lines(text)),
            window=window(text, offset, limit, max_chars, line_count, column),
            sha256=hasher.hexdigest(),
            bytes_read=got,
        )
    if not tracker.started:
        return replace(
            base,
            code=Code.TOO_LARGE,
            message=(
                f"File too large: {size} bytes, and line {offset} does not start within the"
                f" first {got} bytes read; ask for an earlier line window instead."
            ),
            bytes_read=got,
        )
    ended = False
    while got < size and got < SCAN_BYTES:
        want = min(READ_CHUNK_BYTES, size - got)
        chunk = read_upto(fd, want)
        got += len(chunk)
        counter.feed(chunk)
        if len(chunk) < want:
            ended = True  # the file shrank meanwhile: what was there is all there is
            break
    total = counter.total() if ended or got >= size else None
    return replace(
        partial,
        total_lines=total,
        window=window_of(text, offset, limit, max_chars, total, False, column),
        bytes_read=got,
    )
