"""The per-connection session: ``ReadManyServer``, one pygls ``LanguageServer`` per
connection over the shared ``Service``.

What a connection owns lives here: its settings (defaults, environment,
``initializationOptions``, then ``workspace/didChangeConfiguration``; PROTOCOL §7), its
workspace folders and extra roots (acquired from the shared ``Service``), its
per-connection request defaults, its overlays (open documents), and the ``$/progress``
of a first index.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from readmany_daemon import __version__
from readmany_daemon.errors import InvalidParams, RootNotFound
from readmany_daemon.lsp.clientlog import CLIENT_NOTIFIED, ClientLog
from readmany_daemon.lsp.protocol import ReadManyProtocol, share_stop_event
from readmany_daemon.paths import uri_to_path
from readmany_daemon.roots import Root, resolve_root
from readmany_daemon.runtime.ledger import Ledger
from readmany_daemon.runtime.requests import RequestContext
from readmany_daemon.runtime.roots import RootEntry, index_key
from readmany_daemon.runtime.service import Service
from readmany_daemon.settings import Settings, load_settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.fold import fold_read_params
from readmany_daemon.wire.messages import SERVER_NAME, ReadManyParams

log = logging.getLogger(__name__)
T = TypeVar("T")

#: ``ReadManyParams`` fields a connection may default through ``initializationOptions``
#: (budgets and format are per connection, PROTOCOL §7); what to read never is.
_NOT_DEFAULTABLE = frozenset({"paths", "files", "include", "cursor", "root"})
#: ``initializationOptions`` keys that are neither settings nor request defaults.
#: ``llmContentFrames``: ``readMany/read`` answers carry ``llmContent`` in a content
#: frame (PROTOCOL §1; ``lsp.encode.FramedResult``).
_NOT_SETTINGS = frozenset({"environment", "authToken", "llmContentFrames"})


@dataclass(eq=False)
class Folder:
    """A workspace folder of the connection and the warm root behind it."""

    uri: str
    name: str
    entry: RootEntry


def real_uri_path(uri: str) -> str | None:
    """The real (symlink-resolved) path of a local ``file:`` URI
    (``paths.uri_to_path``), else None."""
    path = uri_to_path(uri)
    return os.path.realpath(path) if path is not None else None


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
    time) or the connection gets an error and is closed. Its handlers are registered by
    ``serve`` (``handlers.register_handlers``) once it is built.
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
        share_stop_event(self, self.stop_event)
        self.exit_code: int | None = None
        self.on_stop_daemon: Callable[[str | None], None] | None = None
        self.settings: Settings = service.settings
        self.init_options: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self.read_defaults: dict[str, Any] = {}
        self.folders: list[Folder] = []
        self.extra_roots: dict[str, RootEntry] = {}
        self.pending_warnings: list[str] = []
        #: The files this connection was given, for ``stale`` (``runtime.ledger``).
        self.ledger = Ledger()
        #: ``serve --stdio``'s log handler sending records to this client (``clientlog``)
        self.client_log: ClientLog | None = None
        self._doc_paths: dict[str, str] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

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
        log.warning("%s", message, extra={CLIENT_NOTIFIED: True})
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

    @property
    def content_frames(self) -> bool:
        """Whether this connection asked for content frames
        (``initializationOptions.llmContentFrames: true``, PROTOCOL §1)."""
        return self.init_options.get("llmContentFrames") is True

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
            real_uri_path(uri)
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
        """Forget the workspace folder ``uri`` (its URI or its real path) and release its root."""
        path = real_uri_path(uri)
        for folder in list(self.folders):
            if folder.uri == uri or (path is not None and folder.entry.ws.root == path):
                self.folders.remove(folder)
                self.service.release(folder.entry)

    def root_for(self, root: str | None) -> RootEntry:
        """The root a request names (``root``: folder name, absolute path or ``file:``
        URI; None: the first folder), resolved by ``roots.resolve_root``. An existing
        folder that is not a workspace folder is opened for this connection. Raises
        ``RootNotFound`` naming ``$.root``."""
        candidates = [Root(f.entry.ws.root, f.name, f.uri) for f in self.folders]
        real = resolve_root(root, candidates)
        for folder in self.folders:
            if folder.entry.ws.root == real:
                return folder.entry
        entry = self.extra_roots.get(real)
        if entry is None:
            entry = self.extra_roots[real] = self.service.acquire(real, self.settings)
        return entry

    def put_overlay(self, uri: str) -> None:
        """Make the open document ``uri``'s current text an overlay of its real path (PROTOCOL
        §6); documents outside a file: URI are ignored."""
        path = self._doc_paths.get(uri) or real_uri_path(uri)
        if path is None:
            return
        self._doc_paths[uri] = path
        doc = self.workspace.get_text_document(uri)
        self.service.overlays.put(
            path, self.conn_id, doc.source, doc.version or 0, self.settings.share_overlays
        )

    def drop_overlay(self, uri: str) -> None:
        """Close the overlay of document ``uri``: disk is the truth for it again."""
        path = self._doc_paths.pop(uri, None) or real_uri_path(uri)
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
