"""The in-process backend of ``readmany mcp``: answers without the daemon.

``LocalBackend`` is a thin wrapper over a ``runtime.service.Service`` of its own, with
no watcher, no snapshot files and no cache warm-up (``watch=False, snapshots=False,
warm_cache=False``): one long-lived workspace per root, one content cache for all,
freshness by the Service's stat route, and ``readMany/changedSince`` from the Service's
per-file stat snapshots (``runtime.changelog.StatLog``), so in-place edits are seen
without a watcher. It answers under ``--no-daemon`` (or ``READMANY_NO_DAEMON``), and
whenever the daemon cannot (``mcp/backend.py``).
"""

from __future__ import annotations

import logging
import math
import threading
from typing import TYPE_CHECKING, Any

from readmany_daemon.runtime.requests import RequestContext
from readmany_daemon.runtime.roots import RootEntry
from readmany_daemon.runtime.service import Service

if TYPE_CHECKING:
    from readmany_daemon.settings import Settings
    from readmany_daemon.wire.cursor import ReadRequest

log = logging.getLogger("readmany.mcp")


class LocalBackend:
    """Answers in this process through a watcher-less ``Service``; each root is
    acquired once and kept until ``clear``."""

    def __init__(self, settings: Settings | None = None) -> None:
        """``settings``: the server's (``mcp/front.py`` loads them); None: from the
        environment, each ignored setting logged."""
        if settings is None:
            from readmany_daemon.settings import load_settings

            settings, warnings = load_settings()
            for w in warnings:
                log.warning("%s", w)
        self.settings = settings
        self.service = Service(self.settings, watch=False, snapshots=False, warm_cache=False)
        self._roots: dict[str, RootEntry] = {}
        self._lock = threading.Lock()

    def _root(self, path: str) -> RootEntry:
        """The Service's root for ``path``; raises ``RootNotFound`` naming ``$.root``."""
        with self._lock:
            entry = self._roots.get(path)
            if entry is None:
                entry = self._roots[path] = self.service.acquire(path, self.settings)
            return entry

    def clear(self) -> None:
        """Forget every workspace (the daemon answers now)."""
        with self._lock:
            entries, self._roots = list(self._roots.values()), {}
        for entry in entries:
            self.service.release(entry)
        self.service.evict_idle(now=math.inf)

    def read(self, params: dict[str, Any], root: str, req: ReadRequest | None = None) -> Any:
        """``readMany/read`` for ``root``: ``req`` when the tool decoded it already (the
        arguments are decoded once, at the tool's edge), else ``params`` decoded here."""
        from readmany_daemon.wire.cursor import decode_read_request
        from readmany_daemon.wire.messages import to_builtins

        if req is None:
            req = decode_read_request(params)
        entry = self._root(root)
        answer = self.service.call(RequestContext(None), self.service.read_sync, entry, req)
        return to_builtins(answer)

    def files(self, params: dict[str, Any], root: str) -> Any:
        """``readMany/files`` for ``root`` with wire ``params``; the ``FilesResult`` as
        builtins."""
        from readmany_daemon.wire.decode import decode_files_params
        from readmany_daemon.wire.messages import to_builtins

        decoded = decode_files_params(params)
        entry = self._root(root)
        answer = self.service.call(RequestContext(None), self.service.files_sync, entry, decoded)
        return to_builtins(answer)

    def changed_since(self, params: dict[str, Any], root: str) -> Any:
        """``readMany/changedSince`` (``Service.changed_since_sync``): without a watcher,
        from per-file stat snapshots, the last ``changelog.SNAPSHOTS_KEPT`` per root."""
        from readmany_daemon.wire.decode import decode_changed_since_params
        from readmany_daemon.wire.messages import to_builtins

        clock = decode_changed_since_params(params).clock
        entry = self._root(root)
        answer = self.service.call(
            RequestContext(None), self.service.changed_since_sync, clock, entry
        )
        return to_builtins(answer)

    def ask(
        self, method: str, params: dict[str, Any], root: str, req: ReadRequest | None = None
    ) -> tuple[Any, int]:
        """``call``'s answer, and 0: no daemon connection gave it
        (``DaemonBackend.ask``)."""
        return self.call(method, params, root, req), 0

    def call(
        self, method: str, params: dict[str, Any], root: str, req: ReadRequest | None = None
    ) -> Any:
        """Answer ``method`` (a ``readMany/*`` name) for ``root``; ``req``: the decoded
        ``readMany/read`` request, when the caller has it."""
        if method == "readMany/read":
            return self.read(params, root, req)
        if method == "readMany/files":
            return self.files(params, root)
        return self.changed_since(params, root)
