"""The JSON-RPC adapter: one pygls ``LanguageServer`` per connection over a ``Service``.

Handlers are a few lines each: decode (``messages``), call the service/engine, encode
(``messages.to_builtins``). What a connection owns lives on ``ReadManyServer``: its
settings (defaults, environment, ``initializationOptions``, then
``workspace/didChangeConfiguration``), its workspace folders (acquired from the shared
``Service``), its per-connection request defaults, its overlays.

Methods (PROTOCOL §2): the LSP lifecycle (``initialize``, ``initialized``, ``shutdown``,
``exit``; LSP 3.17 §"Lifecycle Messages"), ``workspace/didChangeWorkspaceFolders``,
``workspace/didChangeConfiguration``, ``workspace/didChangeWatchedFiles`` (hints: the
named paths are checked by stat, as watcher events are),
``textDocument/didOpen|didChange|didClose`` (full and incremental sync, pygls applies
the edits in the negotiated position encoding; the buffer becomes an overlay),
``$/cancelRequest``, ``$/progress`` while a first index is built, and
``readMany/read|files|status|changedSince|rescan`` (plus ``readMany/stopDaemon`` on the
shared daemon's connections).

pygls 2.1 facts this module works around (DESIGN.md):

- params of unknown methods are turned into namedtuples: ``structure_message`` keeps
  ``readMany/*`` params as plain JSON builtins;
- a non-attrs result is serialized through ``__dict__``: results are builtins, written
  with msgspec in ``_send_data``;
- ``_execute_handler`` keeps a future per handled notification in
  ``_request_futures`` forever: pruned when it completes (memory stays flat);
- the built-in ``exit`` calls ``sys.exit``: here it ends only this connection;
- ``pygls.io_.run_async`` skips a badly framed message line by line (and misreads the
  rest of the stream), buffers any ``Content-Length``, and answers nothing for a body
  that is not JSON or not a message: ``read_frame``/``dispatch`` replace it (error
  responses, ``MAX_MESSAGE_BYTES``, back-pressure; see "reading side");
- ``pygls`` logs whole messages (file contents) at INFO: its logger stays at WARNING
  and its log arguments are redacted.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import hmac
import json
import logging
import math
import os
import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import msgspec
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcRequestCancelled,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    MsgId,
)
from pygls.uris import to_fs_path

from readmany_daemon import __version__
from readmany_daemon.content import ContentCache
from readmany_daemon.errors import InvalidParams, ReadManyError, RootNotFound, jsonrpc_code
from readmany_daemon.messages import (
    ReadManyParams,
    ReadManyResult,
    decode_files_params,
    decode_read_params,
    fold_read_params,
    to_builtins,
)
from readmany_daemon.service import (
    Cancelled,
    RequestContext,
    RootEntry,
    Service,
    index_key,
    release_memory,
)
from readmany_daemon.settings import Settings, load_settings

log = logging.getLogger(__name__)
T = TypeVar("T")

SERVER_NAME = "readmany"

READ = "readMany/read"
FILES = "readMany/files"
STATUS = "readMany/status"
CHANGED_SINCE = "readMany/changedSince"
RESCAN = "readMany/rescan"
#: Ends the shared daemon (``readmany stop``, replacing a daemon of another version).
STOP_DAEMON = "readMany/stopDaemon"

#: ``ReadManyParams`` fields a connection may default through ``initializationOptions``
#: (budgets and format are per connection, PROTOCOL §7); what to read never is.
_NOT_DEFAULTABLE = frozenset({"paths", "files", "include", "cursor", "root"})
#: ``initializationOptions`` keys that are neither settings nor request defaults.
_NOT_SETTINGS = frozenset({"environment", "authToken"})


# ------------------------------------------------------------------------------ logging


class _RedactArgs(logging.Filter):
    """Drop the arguments of pygls log records: they hold whole messages (document
    text, answers) and logs never hold file contents (PROTOCOL §1)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and record.name.startswith("pygls"):
            record.msg = f"{record.msg} [arguments redacted]"
            record.args = ()
        return True


class _Throttle(logging.Filter):
    """At most one record per ``every`` seconds for each message text that repeats
    without end when the process is out of descriptors (asyncio logs
    "socket.accept() out of system resource" with a traceback for every failed accept:
    hundreds of thousands of lines a minute, a log that fills the disk)."""

    NOISY = ("socket.accept() out of system resource",)

    def __init__(self, every: float = 60.0) -> None:
        super().__init__()
        self.every = every
        self._last: dict[str, float] = {}
        self._dropped: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        key = next((n for n in self.NOISY if n in text), None)
        if key is None:
            return True
        now = time.monotonic()
        if now - self._last.get(key, -math.inf) < self.every:
            self._dropped[key] = self._dropped.get(key, 0) + 1
            return False
        self._last[key] = now
        dropped = self._dropped.pop(key, 0)
        if dropped:
            record.msg = f"{text} ({dropped} more like it in the last {self.every:g} s)"
        return True


def configure_logging(level: str = "WARNING", log_file: str | None = None) -> None:
    """Log to ``log_file`` (created with its folder, mode 0600) or stderr — never
    stdout, which carries the protocol. ``pygls`` stays at WARNING whatever ``level``."""
    if log_file:
        os.makedirs(os.path.dirname(log_file) or ".", mode=0o700, exist_ok=True)
        fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        handler: logging.Handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    # On the handler: a logger's own filters do not see its children's records.
    handler.addFilter(_RedactArgs())
    handler.addFilter(_Throttle())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.getLevelNamesMapping().get(str(level).upper(), logging.WARNING))
    logging.getLogger("pygls").setLevel(logging.WARNING)


# ---------------------------------------------------------------------------- transport


class BlockingWriter:
    """pygls writer over a blocking binary stream (stdout)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        self._stream.write(data)
        self._stream.flush()

    def close(self) -> None:
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

    def write(self, data: bytes) -> None:
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
        if not self.closed:
            self.closed = True
            self._writer.close()
            if self._flushing is not None:
                self._flushing.cancel()  # its cleanup closes the second handle
            elif self._direct is not None:
                self._direct.close()


def _encode_body(obj: Any) -> bytes:
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
    return memoryview(_encode_body(text))[1:-1]


#: Parts at least this long (characters) are looked up in the content cache's JSON forms.
CACHED_BODY_CHARS = 4096


def encode_read_result(
    result: ReadManyResult, parts: list[str], cache: ContentCache | None = None
) -> Any:
    """A ``readMany/read`` answer ready for the wire: builtins with ``llmContent`` joined
    when small, else an :class:`EncodedResult` whose ``llmContent`` is encoded in chunks
    of about ``CHUNK_BYTES`` bytes, never as one string (a full read of a large tree
    would otherwise be copied whole by the join, the encoder and the transport).

    With ``cache``, a part that is a cached file's text is taken in the JSON form the
    cache keeps (``ContentCache.json_body``) instead of being escaped again."""
    if sum(map(len, parts)) < SPLIT_ENCODE_CHARS:
        result.llm_content = "".join(parts)
        return to_builtins(result)
    encoded = _encode_body(to_builtins(result))  # llmContent is "" and the first field
    prefix = b'{"llmContent":"'
    if not encoded.startswith(prefix):
        result.llm_content = "".join(parts)
        return to_builtins(result)
    # Each part is encoded alone (joining text with one non-ASCII character in it would
    # widen the whole join to 2 or 4 bytes a character). The cache's kept forms and a
    # large part's bytes are chunks of their own, never copied again (the socket writer
    # sends the chunks with scatter-gather); small ones (headers, short files) are
    # joined in groups.
    chunks: list[bytes | memoryview] = [prefix]
    group: list[bytes | memoryview] = []
    size = 0
    for part in parts:
        kept = (
            cache.json_body(part) if cache is not None and len(part) >= CACHED_BODY_CHARS else None
        )
        body = kept if kept is not None else _json_string_body(part)
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
    chunks.append(memoryview(encoded)[len(prefix) :])
    return EncodedResult(chunks, sum(map(len, chunks)))


# ----------------------------------------------------------------------------- protocol


class ReadManyProtocol(LanguageServerProtocol):
    """``LanguageServerProtocol`` with the pygls 2.1 fixes listed in the module doc."""

    _server: ReadManyServer

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Keep ``readMany/*`` params as JSON builtins (pygls would make namedtuples)."""
        method = data.get("method")
        if "jsonrpc" in data and isinstance(method, str) and method.startswith("readMany/"):
            if "id" in data:
                return JsonRPCRequestMessage(
                    id=data["id"], method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
                )
            return JsonRPCNotification(
                method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
            )
        return super().structure_message(data)

    def handle_message(self, message: Any) -> None:
        """Refuse everything but ``initialize``/``exit`` until the connection has
        authenticated (TCP); error -32002 for requests (LSP §"initialize")."""
        if not self._server.authenticated:
            method = getattr(message, "method", None)
            if method not in (types.INITIALIZE, types.EXIT):
                if method is not None and hasattr(message, "id"):
                    self._send_response(
                        message.id,
                        error=JsonRpcServerNotInitialized(
                            "initialize with authToken first"
                        ).to_response_error(),
                    )
                return
        super().handle_message(message)

    def _execute_handler(
        self,
        msg_id: MsgId,
        handler: Any,
        callback: Callable[[Any], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls keeps the future of every handled notification (and of every step of
        its generator handlers) in ``_request_futures`` under a fresh uuid and never
        removes it: remove it once it is done, so memory stays flat."""
        futures = self._request_futures

        def done(future: Any) -> None:
            try:
                callback(future)
            finally:
                if futures.get(msg_id) is future:
                    del futures[msg_id]

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:
        """pygls cancels the pending requests while iterating ``_request_futures``; the
        done-callbacks of ``_execute_handler`` delete from that dict as each future is
        cancelled ("dictionary changed size during iteration", exit code 1 after a
        shutdown that raced a read). Let pygls iterate a copy; deletions still reach
        the original, which is put back afterwards."""
        original = self._request_futures
        self._request_futures = dict(original)
        try:
            return (yield from super().lsp_shutdown(*args))
        finally:
            self._request_futures = original

    def _send_handler_result(self, future: Any, *, msg_id: MsgId) -> None:
        """Expected errors (invalid params, cancelled, ...) are answered without the
        traceback pygls logs for them."""
        if not future.cancelled():
            exc = future.exception()
            if isinstance(exc, JsonRpcException) and exc.code != -32603:
                self._request_futures.pop(msg_id, None)
                self._send_response(msg_id, error=exc.to_response_error())
                return
        super()._send_handler_result(future, msg_id=msg_id)

    def _send_data(self, data: Any) -> None:
        """Frame and write one message (LSP §"Base Protocol": ``Content-Length`` counts
        the UTF-8 bytes of the body). Builtin results are encoded with msgspec."""
        if not data or self.writer is None:
            return
        if isinstance(data, JsonRPCResponseMessage) and isinstance(data.result, EncodedResult):
            head = b'{"jsonrpc":"2.0","id":%s,"result":' % msgspec.json.encode(data.id)
            length = len(head) + data.result.size + 1
            chunks = [b"Content-Length: %d\r\n\r\n%s" % (length, head), *data.result.chunks, b"}"]
            try:
                write_chunks = getattr(self.writer, "write_chunks", None)
                if write_chunks is not None:
                    write_chunks(chunks)
                else:
                    self.writer.write(b"".join(chunks))
            except ConnectionError:
                log.info("client went away while a message was written")
                self._server.stop_event.set()
            return
        if isinstance(data, JsonRPCResponseMessage) and (
            data.result is None or isinstance(data.result, (dict, list))
        ):
            body = _encode_body({"jsonrpc": "2.0", "id": data.id, "result": data.result})
        else:
            body = json.dumps(data, default=self._serialize_message).encode("utf-8")
        try:
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        except ConnectionError:  # BrokenPipeError on stdio, reset on a socket
            log.info("client went away while a message was written")
            self._server.stop_event.set()

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:  # type: ignore[override]  # pygls' is a generator
        """``exit`` ends this connection (not the process, unless it is stdio's)."""
        self._server.end(0 if self._shutdown else 1)


# ------------------------------------------------------------------------------- server


@dataclass(eq=False)
class Folder:
    """A workspace folder of the connection and the warm root behind it."""

    uri: str
    name: str
    entry: RootEntry


def _uri_path(uri: str) -> str | None:
    """The absolute real path of a ``file:`` URI, else None."""
    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return os.path.realpath(path) if path else None


_CONVERTER: Any = None


def _shared_converter() -> Any:
    """One cattrs converter for every connection: its dispatch caches are what makes
    (un)structuring fast, and a fresh one per connection costs ~10 ms an ``initialize``.
    Converters hold hooks only, no per-connection state."""
    global _CONVERTER
    if _CONVERTER is None:
        from pygls.protocol import default_converter

        _CONVERTER = default_converter()  # type: ignore[no-untyped-call]
    return _CONVERTER


class ReadManyServer(LanguageServer):
    """The language server of one connection, over the shared ``service``.

    ``kind`` is ``stdio``, ``socket`` or ``tcp``; with ``token`` set, ``initialize``
    must carry ``initializationOptions.authToken`` equal to it (compared in constant
    time) or the connection gets an error and is closed.
    """

    protocol: ReadManyProtocol

    def __init__(self, service: Service, *, kind: str, token: str | None = None) -> None:
        super().__init__(
            SERVER_NAME,
            __version__,
            protocol_cls=ReadManyProtocol,
            converter_factory=_shared_converter,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.service = service
        self.kind = kind
        self.token = token
        self.authenticated = token is None
        self.conn_id = service.connect(kind)
        self.stop_event = threading.Event()
        self._stop_event = self.stop_event
        self.exit_code: int | None = None
        self.on_stop_daemon: Callable[[], None] | None = None
        self.settings: Settings = service.settings
        self.init_options: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self.read_defaults: dict[str, Any] = {}
        self.folders: list[Folder] = []
        self.extra_roots: dict[str, RootEntry] = {}
        self.pending_warnings: list[str] = []
        self._doc_paths: dict[str, str] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        _register(self)

    # -- lifecycle

    def end(self, code: int) -> None:
        """Stop reading and close the transport (``exit``, a failed auth, a stop)."""
        if self.exit_code is None:
            self.exit_code = code
        self.stop_event.set()
        writer = self.protocol.writer
        if writer is not None:
            writer.close()

    def close(self) -> None:
        """The connection is over: cancel its work, release its roots and overlays."""
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        roots = [f.entry for f in self.folders] + list(self.extra_roots.values())
        self.folders.clear()
        self.extra_roots.clear()
        self.service.disconnect(self.conn_id, roots)
        self.end(self.exit_code if self.exit_code is not None else 1)
        self.shutdown()  # type: ignore[no-untyped-call]

    def spawn(self, coro: Awaitable[T]) -> asyncio.Task[T]:
        """Run ``coro`` as a task owned by this connection (cancelled when it closes)."""
        task: asyncio.Task[T] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- helpers for handlers

    async def engine(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking engine work in the service's executor; if this request is
        cancelled, the engine is told to stop at its next file."""
        ctx = RequestContext(self.conn_id)
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.service.executor, self.service.call, ctx, fn, *args)
        try:
            return await future
        except asyncio.CancelledError:
            ctx.cancel.set()
            raise

    def warn(self, message: str) -> None:
        """A problem the user should see: ``window/logMessage`` (Warning) and the log."""
        log.warning("%s", message)
        self.window_log_message(
            types.LogMessageParams(type=types.MessageType.Warning, message=f"readmany: {message}")
        )

    def client_supports(self, dotted: str) -> bool:
        """Whether the client capability at ``dotted`` (``window.work_done_progress``)
        is true."""
        node: Any = getattr(self.protocol, "client_capabilities", None)
        for part in dotted.split("."):
            node = getattr(node, part, None)
            if node is None:
                return False
        return bool(node)

    def apply_settings(self, source_warnings: list[str]) -> None:
        """Recompute settings and request defaults from ``init_options`` and ``config``
        (later wins, PROTOCOL §7); re-open the roots when index rules changed.

        ``initializationOptions.environment`` (an object of ``READMANY_*`` variables,
        sent by the CLI) replaces the server's environment as the settings source."""
        old = self.settings
        base = self.service.settings
        env = self.init_options.get("environment")
        if isinstance(env, dict):
            # A CLI client's READMANY_* variables replace the daemon's own environment,
            # so the daemon answers as that CLI would have in its own process.
            variables = {k: v for k, v in env.items() if isinstance(v, str)}
            base = Settings()
            if variables:
                base, env_warnings = load_settings(environ=variables)
                source_warnings.extend(env_warnings)
        settings = base
        # (Settings.merged walks msgspec's field table, ~0.3 ms: only when there is
        # something to merge, which the CLI's one-shot connections usually lack.)
        if set(self.init_options) - _NOT_SETTINGS:
            settings = base.merged(self.init_options, "initializationOptions", source_warnings)
        if self.config:
            settings = settings.merged(
                self.config, "workspace/didChangeConfiguration", source_warnings
            )
        self.settings = settings
        self.read_defaults = _read_defaults({**self.init_options, **self.config}, source_warnings)
        if settings.share_overlays != old.share_overlays:
            self.service.overlays.set_shared(self.conn_id, settings.share_overlays)
        if self.folders and index_key(settings) != index_key(old):
            fresh: list[Folder] = []
            for folder in self.folders:
                self.service.release(folder.entry)
                fresh.append(
                    Folder(
                        folder.uri,
                        folder.name,
                        self.service.acquire(folder.entry.ws.root, settings),
                    )
                )
            self.folders = fresh
            self.spawn(self.index_roots([f.entry for f in fresh]))

    def add_folder(self, uri: str, name: str | None) -> Folder | None:
        """Acquire the root of workspace folder ``uri``; a warning when it is no local
        folder."""
        path = (
            _uri_path(uri)
            if uri.startswith("file:")
            else (os.path.realpath(uri) if os.path.isabs(uri) else None)
        )
        if path is None:
            self.pending_warnings.append(f"workspace folder {uri} is not a local folder; ignored")
            return None
        try:
            entry = self.service.acquire(path, self.settings)
        except RootNotFound as exc:
            self.pending_warnings.append(f"workspace folder {uri}: {exc}")
            return None
        folder = Folder(uri, name or os.path.basename(path), entry)
        self.folders.append(folder)
        return folder

    def remove_folder(self, uri: str) -> None:
        path = _uri_path(uri)
        for folder in list(self.folders):
            if folder.uri == uri or (path is not None and folder.entry.ws.root == path):
                self.folders.remove(folder)
                self.service.release(folder.entry)

    def root_for(self, root: str | None) -> RootEntry:
        """The root a request names (``root``: folder name, path or ``file:`` URI; None:
        the first folder). An existing folder that is not a workspace folder is opened
        for this connection. Raises ``RootNotFound`` naming ``$.root``."""
        if root is None:
            if self.folders:
                return self.folders[0].entry
            raise RootNotFound(
                "invalid params: $.root: no workspace folder (send workspaceFolders or "
                "rootUri in initialize, or name one in root)",
                "$.root",
            )
        for folder in self.folders:
            if root in (folder.name, folder.uri):
                return folder.entry
        path = to_fs_path(root) if root.startswith("file:") else root
        if path and os.path.isabs(path):
            real = os.path.realpath(path)
            for folder in self.folders:
                if folder.entry.ws.root == real:
                    return folder.entry
            if real in self.extra_roots:
                return self.extra_roots[real]
            if os.path.isdir(real):
                entry = self.service.acquire(real, self.settings)
                self.extra_roots[real] = entry
                return entry
        raise RootNotFound(f"invalid params: $.root: {root!r} names no workspace folder", "$.root")

    def put_overlay(self, uri: str) -> None:
        path = self._doc_paths.get(uri) or _uri_path(uri)
        if path is None:
            return
        self._doc_paths[uri] = path
        doc = self.workspace.get_text_document(uri)
        self.service.overlays.put(
            path, self.conn_id, doc.source, doc.version or 0, self.settings.share_overlays
        )

    def drop_overlay(self, uri: str) -> None:
        path = self._doc_paths.pop(uri, None) or _uri_path(uri)
        if path is not None:
            self.service.overlays.close(path, self.conn_id)

    async def index_roots(self, entries: list[RootEntry]) -> None:
        """Build the indexes not built yet, with ``$/progress`` when the client supports
        work-done progress (LSP 3.17 §"Server Initiated Progress":
        ``window/workDoneProgress/create``, then begin, report, end)."""
        pending = [e for e in dict.fromkeys(entries) if not e.indexed]
        if not pending:
            return
        token: str | None = None
        progress = self.work_done_progress
        if self.client_supports("window.work_done_progress"):
            token = f"readmany-index-{uuid.uuid4().hex}"
            try:
                await progress.create_async(token)
            except JsonRpcException:
                token = None  # the client refused the token: index without progress
        total = 0
        try:
            if token is not None:
                names = ", ".join(e.ws.name for e in pending)
                progress.begin(
                    token,
                    types.WorkDoneProgressBegin(
                        title="readmany: indexing", message=names, percentage=0, cancellable=False
                    ),
                )
            for n, entry in enumerate(pending, 1):
                try:
                    count = await self.engine(self.service.index_sync, entry)
                except OSError as exc:
                    entry.index_error = str(exc)
                    self.warn(f"could not index {entry.ws.root}: {exc}")
                    count = None
                except Exception as exc:
                    # Task boundary: a bug in the index must not die silently in a
                    # background task; requests on this root will meet it again.
                    log.exception("indexing %s failed", entry.ws.root)
                    entry.index_error = f"{type(exc).__name__}: {exc}"
                    self.warn(f"could not index {entry.ws.root}: {entry.index_error}")
                    count = None
                total += count or 0
                if token is not None:
                    progress.report(
                        token,
                        types.WorkDoneProgressReport(
                            message=f"{entry.ws.name}: {count} files",
                            percentage=100 * n // len(pending),
                        ),
                    )
        finally:
            if token is not None:
                progress.end(token, types.WorkDoneProgressEnd(message=f"indexed {total} files"))
                progress.tokens.pop(token, None)


@functools.cache
def _defaultable() -> frozenset[str]:
    return (
        frozenset(f.encode_name for f in msgspec.structs.fields(ReadManyParams)) - _NOT_DEFAULTABLE
    )


def _read_defaults(options: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """Per-connection ``ReadManyParams`` defaults (budgets, format, filters) found among
    ``options``; each is validated alone and a bad one is a warning."""
    if not set(options) - _NOT_SETTINGS:
        return {}
    fields = _defaultable()
    try:
        folded = fold_read_params({k: v for k, v in options.items() if k != "authToken"})
    except InvalidParams as exc:
        warnings.append(f"initializationOptions: {exc}")
        return {}
    out: dict[str, Any] = {}
    for key, value in folded.items():
        if key not in fields:
            continue
        try:
            decode_read_params({key: value, "paths": ["."]})
        except InvalidParams as exc:
            warnings.append(f"ignoring default {key}: {exc}")
            continue
        out[key] = value
    return out


def _with_defaults(defaults: dict[str, Any], raw: Any) -> Any:
    """Request params over the connection's defaults (``fileFilteringOptions`` merged
    key by key). Aliases are folded first; non-objects pass through to be refused."""
    if not defaults or not isinstance(raw, dict):
        return raw
    params = fold_read_params(raw)
    merged = {**defaults, **params}
    if isinstance(defaults.get("fileFilteringOptions"), dict) and isinstance(
        params.get("fileFilteringOptions"), dict
    ):
        merged["fileFilteringOptions"] = {
            **defaults["fileFilteringOptions"],
            **params["fileFilteringOptions"],
        }
    return merged


def _cursor_root(params: ReadManyParams) -> str | None:
    """The ``root`` of the request a cursor continues (it resolves against the same
    folder); None when the cursor does not say or cannot be read (the engine then
    refuses it with -32602)."""
    if params.root is not None or not params.cursor:
        return params.root
    from readmany_daemon import request

    try:
        root = request._decode_cursor(params.cursor).params.get("root")
    except InvalidParams:
        return None
    return root if isinstance(root, str) else None


# ----------------------------------------------------------------------------- handlers

Handler = Callable[[ReadManyServer, Any], Awaitable[Any]]


def _boundary(fn: Handler) -> Handler:
    """Map the exception tree to JSON-RPC errors (errors.JSONRPC_CODES): invalid params
    → -32602 with ``data.field``; a cancelled engine → -32800. Anything else is a bug:
    pygls answers it with -32603 and logs the traceback."""

    @functools.wraps(fn)
    async def wrapped(ls: ReadManyServer, params: Any) -> Any:
        try:
            return await fn(ls, params)
        except InvalidParams as exc:
            raise JsonRpcInvalidParams(message=str(exc), data={"field": exc.field}) from None
        except Cancelled:
            raise JsonRpcRequestCancelled(message="request cancelled") from None
        except ReadManyError as exc:
            raise JsonRpcException(message=str(exc), code=jsonrpc_code(exc)) from None

    return wrapped


def _initialize(ls: ReadManyServer, params: types.InitializeParams) -> None:
    options = (
        params.initialization_options if isinstance(params.initialization_options, dict) else {}
    )
    if ls.token is not None:
        given = options.get("authToken")
        if not isinstance(given, str) or not hmac.compare_digest(given.encode(), ls.token.encode()):
            log.warning("refused a connection: missing or wrong authToken")
            asyncio.get_running_loop().call_soon(ls.end, 1)
            raise JsonRpcInvalidRequest(
                message="authentication failed: initializationOptions.authToken is missing or wrong"
            )
        ls.authenticated = True
    ls.init_options = dict(options)
    ls.apply_settings(ls.pending_warnings)
    for folder in params.workspace_folders or []:
        ls.add_folder(folder.uri, folder.name)
    if not ls.folders:
        root = params.root_uri or params.root_path
        if root:
            ls.add_folder(root, None)


async def _initialized(ls: ReadManyServer, params: types.InitializedParams) -> None:
    warnings, ls.pending_warnings = ls.pending_warnings, []
    for w in warnings:
        ls.warn(w)
    ls.spawn(ls.index_roots([f.entry for f in ls.folders]))


def _folders_changed(ls: ReadManyServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    for removed in params.event.removed or []:
        ls.remove_folder(removed.uri)
    added = [
        f for f in (ls.add_folder(a.uri, a.name) for a in params.event.added or []) if f is not None
    ]
    warnings, ls.pending_warnings = ls.pending_warnings, []
    for w in warnings:
        ls.warn(w)
    ls.spawn(ls.index_roots([f.entry for f in added]))


async def _configuration_changed(
    ls: ReadManyServer, params: types.DidChangeConfigurationParams
) -> None:
    settings = params.settings
    if not settings and ls.client_supports("workspace.configuration"):
        # Pull model (LSP 3.17 §"workspace/configuration"): the notification is a hint.
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SERVER_NAME)])
        )
        settings = result[0] if result else None
    if isinstance(settings, dict) and isinstance(settings.get(SERVER_NAME), dict):
        settings = settings[SERVER_NAME]
    if not isinstance(settings, dict):
        if settings is not None:
            ls.warn("workspace/didChangeConfiguration: settings are not an object; ignored")
        return
    ls.config = dict(settings)
    warnings: list[str] = []
    ls.apply_settings(warnings)
    for w in warnings:
        ls.warn(w)


async def _watched_files_changed(
    ls: ReadManyServer, params: types.DidChangeWatchedFilesParams
) -> None:
    paths: dict[RootEntry, set[str]] = {}
    for change in params.changes:
        path = _uri_path(change.uri)
        if path is None:
            continue
        for entry in [f.entry for f in ls.folders] + list(ls.extra_roots.values()):
            rel = entry.ws.relpath(path)
            if rel:
                paths.setdefault(entry, set()).add(rel)
    for entry, rels in paths.items():
        await ls.engine(ls.service.hint_sync, entry, sorted(rels))


def _did_open(ls: ReadManyServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.put_overlay(params.text_document.uri)


def _did_change(ls: ReadManyServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.put_overlay(params.text_document.uri)


def _did_close(ls: ReadManyServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.drop_overlay(params.text_document.uri)


@_boundary
async def _read(ls: ReadManyServer, raw: Any) -> Any:
    params = decode_read_params(_with_defaults(ls.read_defaults, raw))
    entry = ls.root_for(_cursor_root(params))
    return await ls.engine(_read_encoded, ls.service, entry, params)


def _read_encoded(service: Service, entry: RootEntry, params: ReadManyParams) -> Any:
    """``Service.read_sync`` then :func:`encode_read_result`, on the engine's thread: a
    large answer is encoded off the event loop, after the root's lock is released."""
    result, parts = service.read_sync(entry, params, True)
    return encode_read_result(result, parts, entry.ws.cache)


@_boundary
async def _files(ls: ReadManyServer, raw: Any) -> Any:
    params = decode_files_params(raw)
    entry = ls.root_for(params.root)
    return to_builtins(await ls.engine(ls.service.files_sync, entry, params))


@_boundary
async def _status(ls: ReadManyServer, raw: Any) -> Any:
    primary = ls.folders[0].entry if ls.folders else None
    return ls.service.status(primary)


def _object(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InvalidParams("invalid params: expected an object", "$")
    return raw


def _optional_str(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidParams(
            f"invalid params: Expected `str`, got `{type(value).__name__}` - at `$.{name}`",
            f"$.{name}",
        )
    return value


@_boundary
async def _changed_since(ls: ReadManyServer, raw: Any) -> Any:
    params = _object(raw)
    clock = _optional_str(params, "clock")
    if clock is None:
        raise InvalidParams(
            "invalid params: Object missing required field `clock` - at `$`", "$.clock"
        )
    root = _optional_str(params, "root")
    default = ls.root_for(root) if (root is not None or ls.folders) else None
    return await ls.engine(ls.service.changed_since_sync, clock, default)


@_boundary
async def _rescan(ls: ReadManyServer, raw: Any) -> Any:
    entry = ls.root_for(_optional_str(_object(raw), "root"))
    return {"clock": await ls.engine(ls.service.rescan_sync, entry)}


@_boundary
async def _stop_daemon(ls: ReadManyServer, raw: Any) -> Any:
    if ls.on_stop_daemon is None:
        raise ReadManyError(f"{STOP_DAEMON}: this server is not the shared daemon")
    asyncio.get_running_loop().call_soon(ls.on_stop_daemon)
    return {"pid": os.getpid()}


def _register(ls: ReadManyServer) -> None:
    """Register every handler on ``ls`` (features are per server instance in pygls)."""
    ls.feature(types.INITIALIZE)(_initialize)
    ls.feature(types.INITIALIZED)(_initialized)
    ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(_folders_changed)
    ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(_configuration_changed)
    ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(_watched_files_changed)
    ls.feature(types.TEXT_DOCUMENT_DID_OPEN)(_did_open)
    ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)(_did_change)
    ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)(_did_close)
    ls.feature(READ)(_read)
    ls.feature(FILES)(_files)
    ls.feature(STATUS)(_status)
    ls.feature(CHANGED_SINCE)(_changed_since)
    ls.feature(RESCAN)(_rescan)
    if ls.kind != "stdio":
        ls.feature(STOP_DAEMON)(_stop_daemon)


# ------------------------------------------------------------------------------ serving


class _NullWriter:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def warm_up(service: Service) -> None:
    """Run one ``initialize`` through a throwaway server before the first client, so
    that the shared converter's dispatch caches are built (the first real connection
    would otherwise pay ~15 ms of the CLI's warm-path budget), and import the engine,
    the snapshots and the watcher."""
    # Every module a request may need, imported now: an install replaced under a
    # running daemon (pip install -e over pip install .) must not break its first
    # snapshot or watcher with ModuleNotFoundError hours later.
    from readmany_daemon import request, snapshot, watcher  # noqa: F401

    server = ReadManyServer(service, kind="warm-up")
    server.protocol.set_writer(_NullWriter())
    message = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": types.INITIALIZE,
        "params": {"capabilities": {}},
    }
    server.protocol.handle_message(server.protocol.structure_message(message))
    server.close()


# ------------------------------------------------------------------------ reading side
#
# pygls' ``run_async`` reads frames leniently: a frame without a usable ``Content-Length``
# is skipped line by line (the connection then misreads everything after it and the
# client waits forever), any ``Content-Length`` is buffered whole, and a body that is
# not JSON, or JSON that is not a message, gets no answer at all. ``_serve`` replaces it:
# the faults below are answered (JSON-RPC 2.0 §5.1 codes, ``id: null`` when no id could
# be read) and, where the framing itself is lost, the connection is closed with a log
# line. Other connections never notice.

#: Largest message body a connection accepts, in bytes (the ``Content-Length``). A larger
#: frame is refused unread (-32600) and its connection closed. 64 MiB holds a
#: ``textDocument/didOpen`` of a file at ``maxFileBytes`` (20 MiB) even if JSON escapes
#: triple it; PROTOCOL §1 (LSP base protocol) sets no limit of its own.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Largest header section (every header line and the blank line), in bytes.
MAX_HEADER_BYTES = 8192
#: Requests and notifications one connection may have running before it stops reading
#: more, so that a client pipelining thousands of requests queues at most this many
#: engine jobs ahead of the other connections' (the executor is shared).
MAX_PENDING_MESSAGES = 64
#: Bytes of answers a client may leave unread before its connection stops reading
#: requests (until the client reads), so that a client that never reads cannot make the
#: daemon buffer answers without end.
MAX_UNREAD_ANSWER_BYTES = 16 * 1024 * 1024

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
                    f"{MAX_MESSAGE_BYTES} (server.MAX_MESSAGE_BYTES)",
                    INVALID_REQUEST,
                )
    body: bytes = await reader.readexactly(length)
    return body if len(body) == length else None  # (StdinAsyncReader: short at EOF)


def _send_error(server: ReadManyServer, msg_id: Any, code: int, message: str) -> None:
    """Write a JSON-RPC error response (``id`` null when the message's id is unknown)."""
    writer = server.protocol.writer
    if writer is None:
        return
    body = json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}},
        separators=(",", ":"),
    ).encode("ascii")
    try:
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    except ConnectionError:
        server.stop_event.set()


def _valid_id(value: Any) -> bool:
    # JSON-RPC 2.0 §4: a string, a number (without a fraction: an int here) or null.
    return value is None or isinstance(value, str) or type(value) is int


def _params_error(exc: JsonRpcException) -> str:
    """The message of a -32602 raised while pygls structured LSP-typed params: the
    fields cattrs named (``$.processId``), else pygls' own message."""
    cause = exc.__cause__
    if cause is None:
        return str(exc.message)
    import cattrs

    if not isinstance(cause, (cattrs.ClassValidationError, cattrs.IterableValidationError)):
        return str(exc.message)
    out = []
    found = cattrs.transform_error(cause)
    for item in found:
        text, _, path = item.rpartition(" @ ")
        path = re.sub(r"^\$\.params", "$", path)
        path = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), path)
        out.append(f"{text} at `{path}`")
    return "invalid params: " + "; ".join(out) if out else str(exc.message)


def _known_method(server: ReadManyServer, method: str) -> bool:
    fm = server.protocol.fm
    return method in fm.builtin_features or method in fm.features or method == types.CANCEL_REQUEST


def dispatch(server: ReadManyServer, body: bytes) -> None:
    """Decode one message body and hand it to the protocol; the faults a client can
    cause get an error response (JSON-RPC 2.0 §5.1): a body that is not UTF-8 or not
    JSON → -32700; JSON that is not a message object (an array: batches are not part of
    LSP; a number; no ``"jsonrpc": "2.0"``; an id that is not a string or an integer; a
    method that is not a string) → -32600; LSP-typed params of the wrong shape → -32602
    naming the fields. Unknown methods are pygls': -32601 for a request, a notification
    is ignored. Never raises for what a client sends."""
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        _send_error(server, None, PARSE_ERROR, f"Parse error: the body is not UTF-8 ({exc})")
        return
    except (ValueError, RecursionError) as exc:
        _send_error(server, None, PARSE_ERROR, f"Parse error: the body is not JSON ({exc})")
        return
    if not isinstance(data, dict):
        kind = "an array (batches are not supported)" if isinstance(data, list) else "not an object"
        _send_error(server, None, INVALID_REQUEST, f"Invalid Request: the message is {kind}")
        return
    msg_id = data.get("id")
    reply_id = msg_id if _valid_id(msg_id) else None
    problem = None
    if data.get("jsonrpc") != "2.0":
        problem = '"jsonrpc" must be "2.0"'
    elif not _valid_id(msg_id):
        problem = '"id" must be a string or an integer'
    elif "method" in data and not isinstance(data["method"], str):
        problem = '"method" must be a string'
    elif "method" not in data and "id" not in data:
        problem = 'a message needs a "method" or an "id"'
    if problem is not None:
        _send_error(server, reply_id, INVALID_REQUEST, f"Invalid Request: {problem}")
        return
    is_request = "method" in data and "id" in data
    protocol = server.protocol
    method = data.get("method")
    if method is not None and not _known_method(server, method):
        # Decided here: pygls' message types need ``params`` and fail (-32603) without.
        if is_request:
            _send_error(server, reply_id, -32601, f"Method Not Found: {method}")
        else:
            log.info("connection %d: ignored a notification of %r", server.conn_id, method)
        return
    if is_request and protocol._shutdown and method != types.EXIT:
        # LSP §"shutdown": requests after it are errors (InvalidRequest).
        _send_error(server, reply_id, INVALID_REQUEST, "Invalid Request: shutdown was received")
        return
    if method == types.CANCEL_REQUEST:
        params = data.get("params")
        if not isinstance(params, dict) or not _valid_id(params.get("id")):
            log.info("connection %d: ignored a $/cancelRequest without a valid id", server.conn_id)
            return
    try:
        message = protocol.structure_message(data)
    except JsonRpcInvalidParams as exc:
        if is_request:
            _send_error(server, reply_id, exc.code, _params_error(exc))
        else:
            log.warning("connection %d: %s: bad params ignored", server.conn_id, data["method"])
        return
    except JsonRpcException as exc:
        if is_request:
            _send_error(server, reply_id, exc.code, str(exc.message))
        return
    try:
        protocol.handle_message(message)
    except Exception:
        # Connection boundary: a bug met while dispatching one message must not end the
        # connection (or the daemon); it is logged with its traceback and answered.
        log.exception("connection %d: could not handle a message", server.conn_id)
        if is_request:
            _send_error(server, reply_id, -32603, "Internal error (see the daemon log)")


async def _wait_for_room(server: ReadManyServer, writer: Any) -> None:
    """Back-pressure between messages: wait while the connection has
    ``MAX_PENDING_MESSAGES`` handlers running, or ``MAX_UNREAD_ANSWER_BYTES`` of answers
    its client has not read (socket connections)."""
    futures = server.protocol._request_futures
    while len(futures) >= MAX_PENDING_MESSAGES and not server.stop_event.is_set():
        running: list[Any] = [f for f in futures.values() if isinstance(f, asyncio.Future)]
        if not running:
            break
        await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
    stream = getattr(writer, "_writer", None)
    if isinstance(stream, asyncio.StreamWriter) and not stream.is_closing():
        transport = stream.transport
        if transport.get_write_buffer_size() > MAX_UNREAD_ANSWER_BYTES:
            # drain() returns once the buffer is below the transport's low-water mark.
            with contextlib.suppress(ConnectionError):
                await stream.drain()


async def _serve(server: ReadManyServer, reader: Any, writer: Any) -> None:
    """Read and dispatch frames until ``exit``, the end of input or a framing fault."""
    while not server.stop_event.is_set():
        try:
            body = await read_frame(reader)
        except FramingError as exc:
            log.warning("connection %d: %s; closing the connection", server.conn_id, exc)
            _send_error(server, None, exc.code, f"{exc}; closing the connection")
            server.end(1)
            return
        if body is None:
            log.info("connection %d: end of input", server.conn_id)
            return
        dispatch(server, body)
        await _wait_for_room(server, writer)


async def run_connection(
    service: Service,
    reader: Any,
    writer: BlockingWriter | StreamWriter,
    *,
    kind: str,
    token: str | None = None,
    on_stop_daemon: Callable[[], None] | None = None,
    live: set[ReadManyServer] | None = None,
) -> ReadManyServer:
    """Serve one connection until ``exit``, end of input or a framing fault (see
    ``read_frame``: an error response, then the connection is closed); returns its
    server (its ``exit_code`` is 0 after ``shutdown`` + ``exit``, else 1). While it
    runs, the server is in ``live`` (the daemon ends them all when it stops)."""
    server = ReadManyServer(service, kind=kind, token=token)
    server.on_stop_daemon = on_stop_daemon
    server.protocol.set_writer(writer)
    if live is not None:
        live.add(server)
    try:
        await _serve(server, reader, writer)
    except (ConnectionError, asyncio.IncompleteReadError):
        log.info("connection %d: client went away", server.conn_id)
    finally:
        if live is not None:
            live.discard(server)
        server.close()
    return server


async def _stdio_main(service: Service) -> int:
    loop = asyncio.get_running_loop()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but protocol may reach the real stdout
    reader: Any = asyncio.StreamReader(limit=1 << 20)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except (ValueError, OSError):
        # Not a pipe, socket or terminal (a regular file): read it in a thread.
        from pygls.io_ import StdinAsyncReader

        reader = StdinAsyncReader(stdin, service.executor)
    server = await run_connection(service, reader, BlockingWriter(stdout), kind="stdio")
    return server.exit_code if server.exit_code is not None else 1


def serve_stdio(settings: Settings, log_file: str | None = None) -> int:
    """``readmany serve --stdio``: one connection on stdin/stdout; returns the exit
    code (LSP §"exit": 0 after ``shutdown``, else 1)."""
    configure_logging(settings.log_level, log_file)
    service = Service(settings)
    try:
        return asyncio.run(_stdio_main(service))
    finally:
        service.close()
