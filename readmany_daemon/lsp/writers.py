"""Transport writers: what the protocol writes framed messages to.

``BlockingWriter`` over a blocking binary stream (stdout), ``StreamWriter`` over an
asyncio stream (the daemon's socket connections) with ``sendmsg`` scatter-gather for
large answers and back-pressure, and ``NullWriter`` for a server nobody listens to
(``warm_up``). Writers take bytes; a large answer comes as chunks (``write_chunks``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import socket
from typing import Any, Final

from readmany_daemon.runtime.process import release_memory

log = logging.getLogger(__name__)


class BlockingWriter:
    """pygls writer over a blocking binary stream (stdout)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.closed = False

    def write(self, data: bytes) -> None:
        """Write and flush ``data`` (one framed message, bytes); nothing after ``close``."""
        if self.closed:
            return
        self._stream.write(data)
        self._stream.flush()

    def close(self) -> None:
        """Stop writing; flush what is buffered when the stream still takes it."""
        if not self.closed:
            self.closed = True
            # The client went away or the stream is closed: nothing left to flush.
            with contextlib.suppress(BrokenPipeError, ValueError):
                self._stream.flush()

    def write_chunks(self, chunks: list[bytes | memoryview]) -> None:
        """Write one message given as consecutive byte chunks (a large answer)."""
        if self.closed:
            return
        for chunk in chunks:
            self._stream.write(chunk)
        self._stream.flush()
        release_memory()


_SENT: Final = memoryview(b"")

#: Buffers handed to one ``sendmsg`` call (below every platform's ``IOV_MAX``).
SENDMSG_BUFFERS = 512

#: Socket send buffer asked for (the kernel caps it at ``net.core.wmem_max``) and the
#: transport's high-water mark: a large answer goes out in fewer, larger writes.
SEND_BUFFER_BYTES = 4 << 20


async def _writable(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    """Wait until ``sock`` can take more bytes (or has failed: the next send says)."""
    room: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not room.done():
            room.set_result(None)

    loop.add_writer(sock, ready)
    try:
        await room
    finally:
        loop.remove_writer(sock)


class StreamWriter:
    """pygls writer over an ``asyncio.StreamWriter`` (socket connections).

    A large message comes as chunks (:meth:`write_chunks`). When the transport holds
    nothing unsent, they go out with ``sendmsg`` (scatter-gather) on a second handle of
    the socket, as fast as the client reads, the event loop waiting for room between
    calls; otherwise one at a time, each after the transport has drained below its
    high-water mark. Either way the process never buffers a second copy of a large
    answer, and a client that stops reading holds only its own connection. Messages
    written meanwhile queue behind it, in order."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self.closed = False
        self._queue: collections.deque[bytes | memoryview] = collections.deque()
        self._flushing: asyncio.Task[None] | None = None
        # A second handle on the connection's socket, for large answers sent with
        # sendmsg (scatter-gather: the chunks are never joined or copied into the
        # transport's buffer).
        self._direct: socket.socket | None = None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
            with contextlib.suppress(OSError, ValueError):
                self._direct = socket.socket(fileno=os.dup(sock.fileno()))
                self._direct.setblocking(False)
        with contextlib.suppress(AttributeError, NotImplementedError):
            writer.transport.set_write_buffer_limits(high=SEND_BUFFER_BYTES)

    @property
    def stream(self) -> asyncio.StreamWriter:
        """The asyncio stream written to (its transport's buffer is the back-pressure
        gauge of ``serve``)."""
        return self._writer

    def write(self, data: bytes) -> None:
        """Queue ``data`` (one framed message, bytes) behind any large answer being sent;
        nothing after ``close``."""
        if self.closed or self._writer.is_closing():
            return
        if self._flushing is None:
            self._writer.write(data)
        else:
            self._queue.append(data)

    def write_chunks(self, chunks: list[bytes | memoryview]) -> None:
        """Queue one message given as consecutive byte chunks; written with back-pressure."""
        if self.closed or self._writer.is_closing():
            return
        self._queue.extend(chunks)
        if self._flushing is None:
            self._flushing = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        try:
            while self._queue:
                if self._writer.is_closing():
                    break
                if self._direct is not None and self._writer.transport.get_write_buffer_size() == 0:
                    # Nothing waits in the transport: the bytes go out in order from here
                    # (no local name keeps them: freed before release_memory below).
                    await self._send_direct(self._take_queue())
                    continue
                self._writer.write(self._queue.popleft())
                await self._writer.drain()
        except (ConnectionError, OSError):
            log.info("client went away while a large answer was written")
        finally:
            self._queue.clear()
            self._flushing = None
            if self.closed and self._direct is not None:
                self._direct.close()
            release_memory()

    def _take_queue(self) -> list[bytes | memoryview]:
        batch = list(self._queue)
        self._queue.clear()
        return batch

    async def _send_direct(self, chunks: list[bytes | memoryview]) -> None:
        """Send ``chunks`` in order with ``sendmsg`` on the non-blocking socket, waiting
        on the event loop for room whenever the kernel's buffer is full (a client that
        stops reading holds only its own connection). Raises ``ConnectionError`` or
        ``OSError`` when the peer is gone."""
        sock = self._direct
        assert sock is not None
        loop = asyncio.get_running_loop()
        views = [memoryview(c) for c in chunks]
        chunks.clear()  # the views alone keep the bytes, each dropped once sent
        i = 0
        while i < len(views):
            if self.closed:
                raise ConnectionError("the connection was closed during the answer")
            try:
                sent = sock.sendmsg(views[i : i + SENDMSG_BUFFERS])
            except BlockingIOError:
                await _writable(loop, sock)
                continue
            while sent:
                if sent >= len(views[i]):
                    sent -= len(views[i])
                    views[i] = _SENT
                    i += 1
                else:
                    views[i] = views[i][sent:]
                    sent = 0
            while i < len(views) and not len(views[i]):
                i += 1

    def close(self) -> None:
        """Stop writing and close the stream; a large answer still being sent is cancelled."""
        if not self.closed:
            self.closed = True
            self._writer.close()
            if self._flushing is not None:
                self._flushing.cancel()  # its cleanup closes the second handle
            elif self._direct is not None:
                self._direct.close()


class NullWriter:
    """A writer that drops everything (``warm_up``'s throwaway server)."""

    def write(self, data: bytes) -> None:
        """Drop ``data``."""
        pass

    def close(self) -> None:
        """Nothing to close."""
        pass
