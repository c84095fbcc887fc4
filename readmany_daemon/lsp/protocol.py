"""``ReadManyProtocol``: every pygls override, and the only module that touches pygls'
private names (listed in ``PYGLS_PRIVATE_NAMES``; ``tests/unit/lsp/test_protocol.py``
checks them against the installed pygls, so an upgrade that drops one fails naming it).

pygls 2.1 facts this module works around (DESIGN.md):

- params of unknown methods are turned into namedtuples: ``structure_message`` keeps
  ``readMany/*`` params as plain JSON builtins;
- a non-attrs result is serialized through ``__dict__``: results are builtins, written
  with msgspec in ``_send_data``; ``readMany/read`` answers come encoded already
  (``encode.EncodedResult``, ``encode.FramedResult``: large ones in chunks);
- ``_execute_handler`` keeps a future per handled notification in
  ``_request_futures`` forever: pruned when it completes (memory stays flat);
- ``lsp_shutdown`` iterates ``_request_futures`` while cancelling them: it iterates a
  copy here;
- the built-in ``exit`` calls ``sys.exit``: here it ends only this connection;
- expected JSON-RPC errors are answered without a logged traceback;
- ``pygls.io_.run_async`` is replaced by ``framing.read_frame``/``serve.dispatch``,
  which use the small public wrappers below (``shutdown_received``, ``knows_method``,
  ``handler_futures``, :func:`share_stop_event`) instead of pygls' private names;
- ``pygls`` logs whole messages (file contents) at INFO: ``logs.configure_logging``
  keeps its logger at WARNING and redacts its log arguments.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Final, Protocol, cast

import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcServerNotInitialized
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    MsgId,
)
from pygls.server import JsonRPCServer

from readmany_daemon.frames import CONTENT_FRAME_TYPE
from readmany_daemon.lsp.encode import EncodedResult, FramedResult, encode_body

log = logging.getLogger(__name__)

#: Answers (bytes, framing included) below this size are joined and written as one
#: message; larger ones go to the writer's ``write_chunks`` (scatter-gather, no copy,
#: memory given back after).
JOINED_WRITE_BYTES = 1 << 20

#: The pygls private names this module relies on, as (owner, name): ``protocol`` is a
#: ``LanguageServerProtocol``, ``server`` a ``LanguageServer``, ``fm`` the protocol's
#: ``FeatureManager``. Checked against the installed pygls by
#: ``tests/unit/lsp/test_protocol.py``.
PYGLS_PRIVATE_NAMES: Final[tuple[tuple[str, str], ...]] = (
    ("protocol", "_server"),
    ("protocol", "_request_futures"),
    ("protocol", "_execute_handler"),
    ("protocol", "_send_data"),
    ("protocol", "_send_response"),
    ("protocol", "_send_handler_result"),
    ("protocol", "_serialize_message"),
    ("protocol", "_shutdown"),
    ("protocol", "lsp_shutdown"),
    ("protocol", "lsp_exit"),
    ("server", "_stop_event"),
    ("fm", "builtin_features"),
)


class Connection(Protocol):
    """What the protocol needs of its server (``session.ReadManyServer``)."""

    authenticated: bool
    stop_event: threading.Event

    def end(self, code: int) -> None:
        """End the connection with exit ``code`` (0 after ``shutdown``, 1 otherwise)."""


def share_stop_event(server: JsonRPCServer, event: threading.Event) -> None:
    """Make pygls' own stop event ``event``, so that ``server.shutdown()`` sets it."""
    server._stop_event = event


class ReadManyProtocol(LanguageServerProtocol):
    """``LanguageServerProtocol`` with the pygls 2.1 fixes listed in the module doc."""

    @property
    def connection(self) -> Connection:
        """The server of this connection (``session.ReadManyServer``)."""
        return cast(Connection, self._server)

    @property
    def shutdown_received(self) -> bool:
        """Whether ``shutdown`` was received (LSP §"shutdown")."""
        return self._shutdown

    @property
    def handler_futures(self) -> dict[MsgId, Any]:
        """The futures of the handlers still running, by message id (the live dict:
        back-pressure watches it)."""
        return self._request_futures

    def knows_method(self, method: str) -> bool:
        """Whether ``method`` has a handler (built-in or registered) or is
        ``$/cancelRequest``."""
        fm = self.fm
        return (
            method in fm.builtin_features or method in fm.features or method == types.CANCEL_REQUEST
        )

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
        if not self.connection.authenticated:
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
        chunks: list[bytes | memoryview] | None = None
        if isinstance(data, JsonRPCResponseMessage) and isinstance(data.result, EncodedResult):
            head = b'{"jsonrpc":"2.0","id":%s,"result":' % msgspec.json.encode(data.id)
            length = len(head) + data.result.size + 1
            chunks = [b"Content-Length: %d\r\n\r\n%s" % (length, head), *data.result.chunks, b"}"]
        elif isinstance(data, JsonRPCResponseMessage) and isinstance(data.result, FramedResult):
            # The content frame, then the response, in one write: nothing comes between.
            framed = data.result
            body = b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (
                msgspec.json.encode(data.id),
                framed.result,
            )
            chunks = [
                b"Content-Length: %d\r\nContent-Type: %s\r\n\r\n"
                % (framed.size, CONTENT_FRAME_TYPE),
                *framed.content,
                b"Content-Length: %d\r\n\r\n" % len(body),
                body,
            ]
        if chunks is not None:
            try:
                write_chunks = getattr(self.writer, "write_chunks", None)
                if write_chunks is not None and sum(map(len, chunks)) >= JOINED_WRITE_BYTES:
                    write_chunks(chunks)
                else:
                    self.writer.write(b"".join(chunks))
            except ConnectionError:
                log.info("client went away while a message was written")
                self.connection.stop_event.set()
            return
        if isinstance(data, JsonRPCResponseMessage) and (
            data.result is None or isinstance(data.result, (dict, list))
        ):
            body = encode_body({"jsonrpc": "2.0", "id": data.id, "result": data.result})
        else:
            body = json.dumps(data, default=self._serialize_message).encode("utf-8")
        try:
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        except ConnectionError:  # BrokenPipeError on stdio, reset on a socket
            log.info("client went away while a message was written")
            self.connection.stop_event.set()

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:  # type: ignore[override]  # pygls' is a generator
        """``exit`` ends this connection (not the process, unless it is stdio's)."""
        self.connection.end(0 if self._shutdown else 1)
