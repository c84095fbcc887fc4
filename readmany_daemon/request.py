"""Deprecated shim: the engine moved to ``readmany_daemon.engine`` (one module per stage).

``answer``/``answer_parts`` here still take validated ``ReadManyParams`` whose cursor is
not yet decoded and decode it with ``wire.cursor.read_request`` before calling the
engine; the adapters no longer use them (they call ``wire.cursor.decode_read_request``
once and pass the ``ReadRequest`` down) — only ``mcp/local.py``'s ``LocalBackend.read``
does, until it answers a ``ReadRequest``. The lead removes this shim at integration.
"""

from __future__ import annotations

from readmany_daemon.engine import answer as _answer
from readmany_daemon.engine.files import list_files as list_files
from readmany_daemon.engine.files import list_paths as list_paths
from readmany_daemon.engine.items import Item as Item
from readmany_daemon.engine.items import Items as Items
from readmany_daemon.engine.items import LoadedItem
from readmany_daemon.engine.items import Resolved as Resolved
from readmany_daemon.engine.load import RequestPaths as RequestPaths
from readmany_daemon.engine.load import load as load
from readmany_daemon.engine.pack import MAX_LISTED as MAX_LISTED
from readmany_daemon.engine.resolve import resolve as resolve
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.wire.cursor import ReadRequest, read_request
from readmany_daemon.wire.messages import ReadManyParams, ReadManyResult

#: The engine's item after load, renamed ``LoadedItem`` (``content.Loaded`` is a file read).
Loaded = LoadedItem


def _request(params: ReadManyParams | ReadRequest) -> ReadRequest:
    return params if isinstance(params, ReadRequest) else read_request(params)


def answer(ws: Workspace, params: ReadManyParams | ReadRequest) -> ReadManyResult:
    """``engine.answer.answer`` after decoding ``params.cursor`` (see the module doc)."""
    return _answer.answer(ws, _request(params))


def answer_parts(
    ws: Workspace, params: ReadManyParams | ReadRequest
) -> tuple[ReadManyResult, list[str]]:
    """``engine.answer.answer_parts`` after decoding ``params.cursor``."""
    return _answer.answer_parts(ws, _request(params))
