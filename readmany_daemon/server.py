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
- ``pygls`` logs whole messages (file contents) at INFO: its logger stays at WARNING
  and its log arguments are redacted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import os
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcRequestCancelled,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import run_async
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
from readmany_daemon.errors import InvalidParams, ReadManyError, RootNotFound, jsonrpc_code
from readmany_daemon.messages import (
    ReadManyParams,
    decode_files_params,
    decode_read_params,
    fold_read_params,
    to_builtins,
)
from readmany_daemon.service import Cancelled, RequestContext, RootEntry, Service, index_key
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


class StreamWriter:
    """pygls writer over an ``asyncio.StreamWriter`` (socket connections)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed or self._writer.is_closing():
            return
        self._writer.write(data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._writer.close()


def _encode_body(obj: Any) -> bytes:
    try:
        return msgspec.json.encode(obj)
    except UnicodeEncodeError:
        # A lone surrogate (a non-UTF-8 file name kept by surrogateescape): JSON's
        # \\udcXX escape carries it; msgspec refuses to write it.
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")


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
    return to_builtins(await ls.engine(ls.service.read_sync, entry, params))


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
    would otherwise pay ~15 ms of the CLI's warm-path budget), and import the engine."""
    from readmany_daemon import request  # noqa: F401  (imported for its import cost)

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
    """Serve one connection until ``exit`` or end of input; returns its server (its
    ``exit_code`` is 0 after ``shutdown`` + ``exit``, else 1). While it runs, the
    server is in ``live`` (the daemon ends them all when it stops)."""
    server = ReadManyServer(service, kind=kind, token=token)
    server.on_stop_daemon = on_stop_daemon
    server.protocol.set_writer(writer)
    if live is not None:
        live.add(server)
    try:
        await run_async(
            stop_event=server.stop_event,
            reader=reader,
            protocol=server.protocol,
            logger=log,
            error_handler=server.report_server_error,
        )
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
