"""Open editor buffers of every connection: they win over disk (PROTOCOL §6)."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

from readmany_daemon.engine.workspace import Overlay


@dataclass
class _Buffer:
    text: str
    version: int
    shared: bool
    seq: int


class OverlayStore:
    """Open editor buffers by absolute real path, per connection. Thread-safe.

    A buffer is always visible to the connection that opened it; to the other
    connections only when it was opened with ``shared`` (the owner's ``shareOverlays``).
    When several connections hold the same file, a connection's own buffer wins, then
    the most recently changed shared one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs: dict[str, dict[int, _Buffer]] = {}
        self._seq = itertools.count(1)

    def put(self, path: str, conn_id: int, text: str, version: int, shared: bool) -> None:
        """Open or replace ``conn_id``'s buffer of ``path`` (absolute, real)."""
        with self._lock:
            self._docs.setdefault(path, {})[conn_id] = _Buffer(
                text, version, shared, next(self._seq)
            )

    def close(self, path: str, conn_id: int) -> None:
        """Forget ``conn_id``'s buffer of ``path`` (``textDocument/didClose``)."""
        with self._lock:
            owners = self._docs.get(path)
            if owners is not None:
                owners.pop(conn_id, None)
                if not owners:
                    del self._docs[path]

    def drop_connection(self, conn_id: int) -> int:
        """Forget every buffer of ``conn_id`` (the connection ended); returns how many."""
        dropped = 0
        with self._lock:
            for path in list(self._docs):
                owners = self._docs[path]
                if owners.pop(conn_id, None) is not None:
                    dropped += 1
                if not owners:
                    del self._docs[path]
        return dropped

    def lookup(self, path: str, conn_id: int | None) -> Overlay | None:
        """The buffer ``conn_id`` should see for ``path``, or None (read the disk)."""
        with self._lock:
            owners = self._docs.get(path)
            if not owners:
                return None
            own = owners.get(conn_id) if conn_id is not None else None
            if own is not None:
                return Overlay(own.text, own.version)
            best: _Buffer | None = None
            for buf in owners.values():
                if buf.shared and (best is None or buf.seq > best.seq):
                    best = buf
            return Overlay(best.text, best.version) if best is not None else None

    def set_shared(self, conn_id: int, shared: bool) -> None:
        """Apply a changed ``shareOverlays`` setting to ``conn_id``'s open buffers."""
        with self._lock:
            for owners in self._docs.values():
                buf = owners.get(conn_id)
                if buf is not None:
                    buf.shared = shared

    def __len__(self) -> int:
        with self._lock:
            return sum(len(owners) for owners in self._docs.values())
