"""Serving connections: the loop that reads frames (``framing.read_frame``) and
dispatches them, with back-pressure, per connection (``run_connection``, used by the
socket daemon) or on stdin/stdout (``serve_stdio``); ``warm_up`` before the first
client.

pygls' ``run_async`` answers nothing for a body that is not JSON, or JSON that is not a
message: ``dispatch`` answers those faults (JSON-RPC 2.0 §5.1 codes, ``id: null`` when
no id could be read) and never raises for what a client sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import selectors
import sys
from collections.abc import Callable
from typing import Any, Final

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from readmany_daemon.logs import configure_logging
from readmany_daemon.lsp import clientlog
from readmany_daemon.lsp.framing import INVALID_REQUEST, PARSE_ERROR, FramingError, read_frame
from readmany_daemon.lsp.handlers import register_handlers
from readmany_daemon.lsp.session import ReadManyServer
from readmany_daemon.lsp.writers import BlockingWriter, NullWriter, StreamWriter
from readmany_daemon.runtime.service import Service
from readmany_daemon.settings import Settings

log = logging.getLogger(__name__)

#: Requests and notifications one connection may have running before it stops reading
#: more, so that a client pipelining thousands of requests queues at most this many
#: engine jobs ahead of the other connections' (the executor is shared).
MAX_PENDING_MESSAGES = 64
#: Bytes of answers a client may leave unread before its connection stops reading
#: requests (until the client reads), so that a client that never reads cannot make the
#: daemon buffer answers without end.
MAX_UNREAD_ANSWER_BYTES = 16 * 1024 * 1024


def _new_server(service: Service, *, kind: str, token: str | None = None) -> ReadManyServer:
    """The server of one connection, its handlers registered."""
    server = ReadManyServer(service, kind=kind, token=token)
    register_handlers(server)
    return server


def warm_up(service: Service) -> None:
    """Run one ``initialize`` through a throwaway server before the first client, so
    that the shared converter's dispatch caches are built (the first real connection
    would otherwise pay ~15 ms of the CLI's warm-path budget), and import the engine,
    the snapshots and the watcher."""
    # Every module a request may need, imported now: an install replaced under a
    # running daemon (pip install -e over pip install .) must not break its first
    # snapshot or watcher with ModuleNotFoundError hours later.
    from readmany_daemon.engine import answer  # noqa: F401
    from readmany_daemon.index import snapshot  # noqa: F401
    from readmany_daemon.runtime import watcher  # noqa: F401

    server = _new_server(service, kind="warm-up")
    server.protocol.set_writer(NullWriter())
    message = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": types.INITIALIZE,
        "params": {"capabilities": {}},
    }
    server.protocol.handle_message(server.protocol.structure_message(message))
    server.close()


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


def dispatch(server: ReadManyServer, body: bytes) -> None:
    """Decode one message body and hand it to the protocol; the faults a client can
    cause get an error response (JSON-RPC 2.0 §5.1): a body that is not UTF-8 or not
    JSON → -32700; JSON that is not a message object (an array: batches are not part of
    LSP; a number; no ``"jsonrpc": "2.0"``; an id that is not a string or an integer; a
    method that is not a string) → -32600; LSP-typed params of the wrong shape → -32602
    naming the fields. Unknown methods are pygls': -32601 for a request, a notification
    is ignored. Never raises for what a client sends."""
    data = decode_message(server, body)
    if data is not None:
        handle(server, data)


def decode_message(server: ReadManyServer, body: bytes) -> dict[str, Any] | None:
    """The message object of ``body``, or None when it is none (answered here: the
    -32700 and -32600 cases of ``dispatch``)."""
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        _send_error(server, None, PARSE_ERROR, f"Parse error: the body is not UTF-8 ({exc})")
        return None
    except (ValueError, RecursionError) as exc:
        _send_error(server, None, PARSE_ERROR, f"Parse error: the body is not JSON ({exc})")
        return None
    if not isinstance(data, dict):
        kind = "an array (batches are not supported)" if isinstance(data, list) else "not an object"
        _send_error(server, None, INVALID_REQUEST, f"Invalid Request: the message is {kind}")
        return None
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
        return None
    return data


def handle(server: ReadManyServer, data: dict[str, Any]) -> None:
    """Hand message object ``data`` (``decode_message``'s) to the protocol (the rest of
    ``dispatch``)."""
    msg_id = data.get("id")
    reply_id = msg_id if _valid_id(msg_id) else None
    is_request = "method" in data and "id" in data
    protocol = server.protocol
    method = data.get("method")
    if method is not None and not protocol.knows_method(method):
        # Decided here: pygls' message types need ``params`` and fail (-32603) without.
        if is_request:
            _send_error(server, reply_id, -32601, f"Method Not Found: {method}")
        else:
            log.info("connection %d: ignored a notification of %r", server.conn_id, method)
        return
    if is_request and protocol.shutdown_received and method != types.EXIT:
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
    except Exception:  # the connection boundary (below): logged and answered -32603
        # A bug met while dispatching one message must not end the connection (or the
        # daemon); it is logged with its traceback and answered.
        log.exception("connection %d: could not handle a message", server.conn_id)
        if is_request:
            _send_error(server, reply_id, -32603, "Internal error (see the daemon log)")


async def _wait_for_room(server: ReadManyServer, writer: Any) -> None:
    """Back-pressure between messages: wait while the connection has
    ``MAX_PENDING_MESSAGES`` handlers running, or ``MAX_UNREAD_ANSWER_BYTES`` of answers
    its client has not read (socket connections)."""
    futures = server.protocol.handler_futures
    while len(futures) >= MAX_PENDING_MESSAGES and not server.stop_event.is_set():
        running: list[Any] = [f for f in futures.values() if isinstance(f, asyncio.Future)]
        if not running:
            break
        await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
    stream = writer.stream if isinstance(writer, StreamWriter) else None
    if stream is not None and not stream.is_closing():
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
            await _answer_pending(server)
            return
        data = decode_message(server, body)
        if data is None:
            continue
        if data.get("method") in _ENDING:
            await _answer_pending(server)
        handle(server, data)
        await _wait_for_room(server, writer)


#: Messages handled only once every request before them is answered: ``shutdown``'s
#: answer then says the earlier ones are, and ``exit`` (which closes the connection)
#: loses none of them.
_ENDING: Final = (types.SHUTDOWN, types.EXIT)


async def _answer_pending(server: ReadManyServer) -> None:
    """Wait until the requests already handed to the protocol are answered (a
    connection's messages are handled in order, PROTOCOL §1: a request sent before
    ``shutdown``, ``exit`` or the end of input gets its answer; pygls would cancel them
    at ``shutdown`` and drop them at ``exit``). Returns at once when the connection is
    being stopped (the daemon stopping, the client gone)."""
    futures = server.protocol.handler_futures
    while not server.stop_event.is_set():
        running = [
            f if isinstance(f, asyncio.Future) else asyncio.wrap_future(f)
            for f in list(futures.values())
            if not f.done()
        ]
        if not running:
            return
        await asyncio.wait(running, timeout=_STOP_CHECK_SECONDS)  # (and the stop event)


#: How often ``_answer_pending`` looks at the stop event while it waits (seconds).
_STOP_CHECK_SECONDS: Final = 0.25


async def run_connection(
    service: Service,
    reader: Any,
    writer: BlockingWriter | StreamWriter,
    *,
    kind: str,
    token: str | None = None,
    on_stop_daemon: Callable[[str | None], None] | None = None,
    live: set[ReadManyServer] | None = None,
    on_server: Callable[[ReadManyServer], None] | None = None,
) -> ReadManyServer:
    """Serve one connection until ``exit``, end of input or a framing fault (see
    ``read_frame``: an error response, then the connection is closed); returns its
    server (its ``exit_code`` is 0 after ``shutdown`` + ``exit``, else 1). While it
    runs, the server is in ``live`` (the daemon ends them all when it stops);
    ``on_server`` gets it before the first message is read."""
    server = _new_server(service, kind=kind, token=token)
    if on_server is not None:
        on_server(server)
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


def pollable(fd: int) -> bool:
    """Whether the event loop's selector (epoll on Linux) can watch file descriptor
    ``fd`` for reading. A regular file or ``/dev/null`` cannot (epoll_ctl: EPERM), and
    asyncio's ``connect_read_pipe`` accepts a character device only to fail later, in a
    callback, leaving the read waiting forever; such stdin is read on a thread instead.
    Never raises."""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
    except (OSError, ValueError):
        return False
    return True


async def _stdio_main(service: Service, on_server: Callable[[ReadManyServer], None]) -> int:
    loop = asyncio.get_running_loop()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but protocol may reach the real stdout
    reader: Any = asyncio.StreamReader(limit=1 << 20)
    try:
        if not pollable(stdin.fileno()):
            raise ValueError("stdin cannot be polled")
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except (ValueError, OSError):
        # Not a pipe, socket or terminal (a regular file, /dev/null): blocking reads on
        # executor threads, which end at its end of file.
        from pygls.io_ import StdinAsyncReader

        reader = StdinAsyncReader(stdin, service.executor)
    server = await run_connection(
        service, reader, BlockingWriter(stdout), kind="stdio", on_server=on_server
    )
    return server.exit_code if server.exit_code is not None else 1


def serve_stdio(settings: Settings, log_file: str | None = None) -> int:
    """``readmany serve --stdio``: one connection on stdin/stdout; returns the exit
    code (LSP §"exit": 0 after ``shutdown``, else 1)."""
    configure_logging(settings.log_level, log_file)
    # The client shows stderr as errors: the log below ERROR goes to it (clientlog),
    # until the service has closed (saving the index snapshot logs too).
    client_log = clientlog.install()
    service = Service(settings)
    try:
        return asyncio.run(_stdio_main(service, client_log.attach))
    finally:
        service.close()
        clientlog.uninstall(client_log)
