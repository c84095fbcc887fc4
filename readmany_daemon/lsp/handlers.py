"""The JSON-RPC method handlers: one short function per method (decode → ``Service`` →
encode), ``_boundary`` (the exception tree → JSON-RPC errors) and ``register_handlers``.

Methods (PROTOCOL §2): the LSP lifecycle (``initialize``, ``initialized``; ``shutdown``
and ``exit`` are the protocol's, LSP 3.17 §"Lifecycle Messages"),
``workspace/didChangeWorkspaceFolders``, ``workspace/didChangeConfiguration``,
``workspace/didChangeWatchedFiles`` (hints: the named paths are checked by stat, as
watcher events are), ``textDocument/didOpen|didChange|didClose`` (full and incremental
sync, pygls applies the edits in the negotiated position encoding; the buffer becomes an
overlay), and ``readMany/read|files|status|changedSince|rescan`` (plus
``readMany/stopDaemon`` on the shared daemon's connections). ``$/cancelRequest`` and
``$/progress`` are pygls' (progress: ``session.ReadManyServer.index_roots``).
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcRequestCancelled,
)

from readmany_daemon.errors import Cancelled, InvalidParams, ReadManyError, jsonrpc_code
from readmany_daemon.lsp.encode import encode_read_framed, encode_read_result
from readmany_daemon.lsp.session import ReadManyServer, real_uri_path
from readmany_daemon.runtime.ledger import Ledger
from readmany_daemon.runtime.roots import RootEntry
from readmany_daemon.runtime.service import Service
from readmany_daemon.runtime.stale import read_with_stale
from readmany_daemon.wire.cursor import ReadRequest, decode_read_request
from readmany_daemon.wire.decode import (
    decode_changed_since_params,
    decode_files_params,
    decode_rescan_params,
    decode_status_params,
    decode_stop_daemon_params,
)
from readmany_daemon.wire.messages import (
    CHANGED_SINCE,
    FILES,
    READ,
    RESCAN,
    SERVER_NAME,
    STATUS,
    STOP_DAEMON,
    to_builtins,
)
from readmany_daemon.wire.replies import RescanResult, StopDaemonResult

log = logging.getLogger(__name__)


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
    if ls.client_log is not None:
        ls.client_log.ready()  # logMessage may be sent from now on (LSP §"initialize")
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
        path = real_uri_path(change.uri)
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
    req = decode_read_request(raw, ls.read_defaults)
    if req.params.redact_secrets is None and not ls.settings.redact_secrets:
        # This connection's setting (a CLI's READMANY_REDACT_SECRETS, say): the root's
        # workspace is shared with connections that may redact.
        params = msgspec.structs.replace(req.params, redact_secrets=False)
        req = msgspec.structs.replace(req, params=params)
    entry = ls.root_for(req.params.root)
    return await ls.engine(_read_encoded, ls.service, entry, req, ls.content_frames, ls.ledger)


def _read_encoded(
    service: Service, entry: RootEntry, req: ReadRequest, framed: bool, ledger: Ledger
) -> Any:
    """``Service.read_sync``, the connection's ``stale`` (``runtime.ledger``), then
    :func:`encode_read_result` (``framed``: :func:`encode_read_framed`), on the engine's
    thread: a large answer is encoded off the event loop, after the root's lock is
    released."""
    result, parts = read_with_stale(service, entry, req, ledger)
    encode = encode_read_framed if framed else encode_read_result
    return encode(result, parts, entry.ws.cache)


@_boundary
async def _files(ls: ReadManyServer, raw: Any) -> Any:
    params = decode_files_params(raw)
    entry = ls.root_for(params.root)
    return to_builtins(await ls.engine(ls.service.files_sync, entry, params))


@_boundary
async def _status(ls: ReadManyServer, raw: Any) -> Any:
    decode_status_params(raw)
    primary = ls.folders[0].entry if ls.folders else None
    return to_builtins(ls.service.status(primary))


@_boundary
async def _changed_since(ls: ReadManyServer, raw: Any) -> Any:
    params = decode_changed_since_params(raw)
    root = params.root
    default = ls.root_for(root) if (root is not None or ls.folders) else None
    return to_builtins(await ls.engine(ls.service.changed_since_sync, params.clock, default))


@_boundary
async def _rescan(ls: ReadManyServer, raw: Any) -> Any:
    entry = ls.root_for(decode_rescan_params(raw).root)
    return to_builtins(RescanResult(await ls.engine(ls.service.rescan_sync, entry)))


@_boundary
async def _stop_daemon(ls: ReadManyServer, raw: Any) -> Any:
    if ls.on_stop_daemon is None:
        raise ReadManyError(f"{STOP_DAEMON}: this server is not the shared daemon")
    reason = decode_stop_daemon_params(raw).reason
    asyncio.get_running_loop().call_soon(ls.on_stop_daemon, reason)
    return to_builtins(StopDaemonResult(os.getpid()))


def register_handlers(ls: ReadManyServer) -> None:
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
