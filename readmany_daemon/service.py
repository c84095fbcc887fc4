"""Process-wide state shared by every connection of one server process.

A ``Service`` owns what outlives a connection (PROTOCOL §1, §6, §7):

- the workspaces, one per (root, index-affecting settings), reference-counted by the
  connections that use them and kept warm for ``idleTimeoutSeconds`` after the last one
  lets go (``evict_idle``);
- the ``ContentCache`` shared by all roots (``cacheBytes``);
- the overlays (open editor buffers) of every connection: they win over disk, and with
  ``shareOverlays`` every connection to the same files sees them (PROTOCOL §6);
- a per-root change log behind ``readMany/changedSince``;
- the engine executor and the per-request context (connection id, cancel flag).

Nothing here imports pygls: ``server.py`` adapts this to JSON-RPC, ``daemon.py`` to
sockets. The engine (``request.answer``/``request.list_files``) runs in the executor
threads, one request per thread; a ``RequestContext`` set on the thread tells the overlay
lookup which connection is asking and lets ``$/cancelRequest`` stop the engine at its
next file (``checkpoint``).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from readmany_daemon import __version__
from readmany_daemon.errors import ReadManyError, RootNotFound
from readmany_daemon.settings import Settings
from readmany_daemon.workspace import Overlay, Workspace

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Entries kept per root in the change log before the oldest are dropped (a client whose
#: clock is older than what was dropped gets ``isFreshInstance: true``).
CHANGE_LOG_LIMIT = 50_000


# ----------------------------------------------------------------------- request context


class Cancelled(ReadManyError):
    """The request was cancelled by ``$/cancelRequest`` (LSP 3.17 §"Cancellation
    Support"); raised inside the engine thread at the next checkpoint."""


@dataclass(frozen=True)
class RequestContext:
    """Who is asking (``conn_id``) and whether they still want the answer (``cancel``)."""

    conn_id: int | None
    cancel: threading.Event = field(default_factory=threading.Event)


_local = threading.local()


def current_context() -> RequestContext | None:
    """The context of the request running on this thread, if any."""
    ctx: RequestContext | None = getattr(_local, "ctx", None)
    return ctx


def checkpoint() -> None:
    """Raise ``Cancelled`` when the request running on this thread was cancelled."""
    ctx = current_context()
    if ctx is not None and ctx.cancel.is_set():
        raise Cancelled("request cancelled")


# ------------------------------------------------------------------------------ overlays


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


# ---------------------------------------------------------------------------- change log


class ChangeLog:
    """A bounded log of ``(generation, path, deleted)`` for one root. Thread-safe.

    The index calls ``record`` for every workspace-relative path whose visible state
    changed when it applies a change batch or a refresh, with the index generation
    (``index.clock``) that change produced. ``since(g)`` answers ``readMany/changedSince``
    for a clock of generation ``g``; ``None`` means the log cannot tell (never attached,
    or entries after ``g`` were dropped): the caller answers ``isFreshInstance: true``.
    """

    def __init__(self, limit: int = CHANGE_LOG_LIMIT) -> None:
        self._entries: deque[tuple[int, str, bool]] = deque(maxlen=limit)
        self._floor = -1  # generations <= floor may have lost entries
        self._lock = threading.Lock()
        self.attached = False

    def record(self, generation: int, rel: str, deleted: bool) -> None:
        """Note that ``rel`` changed (or was ``deleted``) in ``generation``."""
        with self._lock:
            if len(self._entries) == self._entries.maxlen:
                self._floor = max(self._floor, self._entries[0][0])
            self._entries.append((generation, rel, deleted))

    def since(self, generation: int) -> tuple[list[str], list[str]] | None:
        """``(changed, deleted)`` paths after ``generation`` (each sorted, a path in at
        most one list, by its last state), or None when the log cannot tell."""
        with self._lock:
            if not self.attached or generation < self._floor:
                return None
            last: dict[str, bool] = {}
            for gen, rel, deleted in self._entries:
                if gen > generation:
                    last[rel] = deleted
        changed = sorted(p for p, d in last.items() if not d)
        gone = sorted(p for p, d in last.items() if d)
        return changed, gone


# --------------------------------------------------------------------------------- roots


def index_key(settings: Settings) -> tuple[Any, ...]:
    """The settings that shape an index and its rules: connections that differ in these
    get separate workspaces for the same folder; the rest (budgets, ``shareOverlays``,
    ``logLevel``) are per connection."""
    return (
        tuple(settings.ignore_file_names),
        tuple(settings.deny_patterns),
        tuple(settings.default_excludes),
        settings.max_file_bytes,
    )


@dataclass(eq=False)
class RootEntry:
    """One warm workspace and its bookkeeping."""

    key: tuple[Any, ...]
    ws: Workspace
    lock: threading.Lock = field(default_factory=threading.Lock)
    changelog: ChangeLog = field(default_factory=ChangeLog)
    refs: int = 0
    released_at: float = 0.0
    indexing: bool = False
    index_error: str | None = None
    #: The watcher keeping this root current (``watcher.py``), when one runs; status
    #: reads its ``state`` and ``warnings`` attributes.
    watcher: Any = None

    @property
    def indexed(self) -> bool:
        """True once the index has been built (``Workspace.index`` is cached)."""
        return "index" in self.ws.__dict__


def _file_count(entry: RootEntry) -> int | None:
    """How many visible files the root's index holds, or None when it is not built (or
    cannot say). Uses ``index.file_count`` (int or method), else ``len(index.files())``."""
    if not entry.indexed:
        return None
    index = entry.ws.index
    count = getattr(index, "file_count", None)
    if callable(count):
        count = count()
    if isinstance(count, int):
        return count
    files = getattr(index, "files", None)
    if callable(files):
        return len(files())
    return None


def _cache_stats(cache: Any) -> dict[str, Any]:
    """``{bytes, hitRate}`` of a ``ContentCache``: ``bytes`` from its ``bytes_used``
    (or ``bytes``, ``size_bytes``, ``total_bytes``); ``hitRate`` (0..1) from ``hit_rate`` or
    ``hits``/``misses``; 0 for what it does not expose."""
    if cache is None:
        return {"bytes": 0, "hitRate": 0.0}
    size = 0
    for name in ("bytes_used", "bytes", "size_bytes", "total_bytes"):
        value = getattr(cache, name, None)
        if callable(value):
            value = value()
        if isinstance(value, int):
            size = value
            break
    rate = getattr(cache, "hit_rate", None)
    if callable(rate):
        rate = rate()
    if not isinstance(rate, (int, float)):
        hits, misses = getattr(cache, "hits", 0), getattr(cache, "misses", 0)
        total = hits + misses if isinstance(hits, int) and isinstance(misses, int) else 0
        rate = hits / total if total else 0.0
    return {"bytes": size, "hitRate": round(float(rate), 4)}


def _watcher_status(entry: RootEntry) -> dict[str, Any]:
    w = entry.watcher
    if w is None:
        return {"state": "off", "warnings": []}
    return {
        "state": str(getattr(w, "state", "running")),
        "warnings": list(getattr(w, "warnings", []) or []),
    }


# ------------------------------------------------------------------------------- service


@dataclass
class _ConnInfo:
    kind: str
    since: float


class Service:
    """Process-wide state; one per server process. Methods named ``*_sync`` block (run
    them in ``executor`` through ``call``); the others are quick and may run anywhere.

    ``settings`` are the process's own (defaults, environment, daemon flags): its
    ``cacheBytes`` sizes the shared cache and its ``idleTimeoutSeconds`` the idle exit.
    """

    def __init__(self, settings: Settings, *, max_workers: int = 4) -> None:
        self.settings = settings
        self.started = time.monotonic()
        self.overlays = OverlayStore()
        self.executor = ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="readmany-engine"
        )
        self._roots: dict[tuple[Any, ...], RootEntry] = {}
        self._conns: dict[int, _ConnInfo] = {}
        self._conn_ids = itertools.count(1)
        self._lock = threading.Lock()
        self._cache: Any = None
        self._inflight = 0
        self._cancelled = 0
        self._workers = max_workers
        self.last_activity = time.monotonic()
        #: Called (on the caller's thread) when connections come or go; the daemon
        #: uses it to re-arm its idle timer.
        self.on_activity: Callable[[], None] | None = None

    # -- connections

    def connect(self, kind: str) -> int:
        """Register a new connection (``kind``: stdio, socket, tcp); returns its id."""
        with self._lock:
            conn_id = next(self._conn_ids)
            self._conns[conn_id] = _ConnInfo(kind, time.monotonic())
            self.last_activity = time.monotonic()
        self._activity()
        return conn_id

    def disconnect(self, conn_id: int, roots: Iterable[RootEntry] = ()) -> None:
        """The connection ended: release ``roots`` and drop its overlays."""
        for entry in roots:
            self.release(entry)
        self.overlays.drop_connection(conn_id)
        with self._lock:
            self._conns.pop(conn_id, None)
            self.last_activity = time.monotonic()
        self._activity()

    @property
    def connection_count(self) -> int:
        with self._lock:
            return len(self._conns)

    def _activity(self) -> None:
        if self.on_activity is not None:
            self.on_activity()

    # -- roots

    @property
    def cache(self) -> Any:
        """The content cache shared by every root (``content.ContentCache``), built on
        first use."""
        if self._cache is None:
            from readmany_daemon.content import ContentCache

            self._cache = ContentCache(self.settings.cache_bytes)
        return self._cache

    def acquire(self, path: str, settings: Settings) -> RootEntry:
        """The warm workspace for folder ``path`` under ``settings``, its reference count
        raised. Raises ``RootNotFound`` naming ``$.root`` when ``path`` is no folder."""
        real = os.path.realpath(path)
        key = (real, *index_key(settings))
        with self._lock:
            entry = self._roots.get(key)
            if entry is None:
                try:
                    ws = Workspace.open(real, settings, cache=self.cache, overlay=self._overlay)
                except OSError as exc:
                    raise RootNotFound(f"invalid params: $.root: {exc}", "$.root") from None
                entry = RootEntry(key=key, ws=ws)
                self._roots[key] = entry
                log.info("opened root %s", real)
            entry.refs += 1
            return entry

    def release(self, entry: RootEntry) -> None:
        """Drop one reference; the root stays warm until ``evict_idle`` finds it unused
        for ``idleTimeoutSeconds``."""
        with self._lock:
            entry.refs = max(0, entry.refs - 1)
            if entry.refs == 0:
                entry.released_at = time.monotonic()

    def evict_idle(self, now: float | None = None) -> list[str]:
        """Forget roots nobody used for ``idleTimeoutSeconds``; returns their paths."""
        now = time.monotonic() if now is None else now
        limit = self.settings.idle_timeout_seconds
        gone: list[RootEntry] = []
        with self._lock:
            for key, entry in list(self._roots.items()):
                if entry.refs == 0 and not entry.indexing and now - entry.released_at >= limit:
                    del self._roots[key]
                    gone.append(entry)
        for entry in gone:
            self._stop_watcher(entry)
            log.info("evicted idle root %s", entry.ws.root)
        return [e.ws.root for e in gone]

    def roots(self) -> list[RootEntry]:
        """Every warm root, in the order they were opened."""
        with self._lock:
            return list(self._roots.values())

    def by_instance(self, instance: str) -> RootEntry | None:
        """The root whose workspace instance (the part of a clock before ``:``) is
        ``instance``."""
        with self._lock:
            for entry in self._roots.values():
                if entry.ws.instance == instance:
                    return entry
        return None

    def _overlay(self, path: str) -> Overlay | None:
        """``Workspace.overlay`` of every root: the buffer the asking connection sees.
        Also the engine's cancellation point (called once per file it loads)."""
        ctx = current_context()
        if ctx is not None and ctx.cancel.is_set():
            raise Cancelled("request cancelled")
        return self.overlays.lookup(path, ctx.conn_id if ctx is not None else None)

    def _stop_watcher(self, entry: RootEntry) -> None:
        stop = getattr(entry.watcher, "stop", None)
        if callable(stop):
            stop()
        entry.watcher = None

    # -- engine work (blocking: run through ``call``)

    def call(self, ctx: RequestContext, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on this thread under ``ctx`` (the executor entry point)."""
        _local.ctx = ctx
        with self._lock:
            self._inflight += 1
        try:
            checkpoint()
            return fn(*args)
        except Cancelled:
            with self._lock:
                self._cancelled += 1
            raise
        finally:
            with self._lock:
                self._inflight -= 1
            _local.ctx = None

    def _locked(self, entry: RootEntry) -> threading.Lock:
        """``entry.lock``, acquired while honouring cancellation of the waiting request."""
        while not entry.lock.acquire(timeout=0.05):
            checkpoint()
        return entry.lock

    def index_sync(self, entry: RootEntry) -> int | None:
        """Build ``entry``'s index if needed and attach the change log to it; returns the
        file count. Raises what ``Index.build`` raises (``OSError``)."""
        lock = self._locked(entry)
        try:
            if entry.indexed:
                return _file_count(entry)
            entry.indexing = True
            started = time.monotonic()
            try:
                index = entry.ws.index
            finally:
                entry.indexing = False
            entry.index_error = None
            add = getattr(index, "add_listener", None)
            if callable(add):
                add(entry.changelog.record)
                entry.changelog.attached = True
            count = _file_count(entry)
            log.info(
                "indexed %s: %s files in %.3f s", entry.ws.root, count, time.monotonic() - started
            )
            return count
        finally:
            lock.release()

    def read_sync(self, entry: RootEntry, params: Any) -> Any:
        """``request.answer`` on ``entry`` (``params``: ``ReadManyParams``)."""
        from readmany_daemon import request

        lock = self._locked(entry)
        try:
            return request.answer(entry.ws, params)
        finally:
            lock.release()

    def files_sync(self, entry: RootEntry, params: Any) -> Any:
        """``request.list_files`` on ``entry`` (``params``: ``FilesParams``)."""
        from readmany_daemon import request

        lock = self._locked(entry)
        try:
            return request.list_files(entry.ws, params)
        finally:
            lock.release()

    def refresh_sync(self, entry: RootEntry, rel_dirs: Iterable[str]) -> str:
        """``index.refresh(rel_dir)`` for each folder (``""`` is the whole root), when
        the index is built; returns the clock after."""
        lock = self._locked(entry)
        try:
            if entry.indexed:
                for rel in sorted(set(rel_dirs)):
                    checkpoint()
                    entry.ws.index.refresh(rel)
            return entry.ws.clock()
        finally:
            lock.release()

    def rescan_sync(self, entry: RootEntry) -> str:
        """``readMany/rescan``: walk the whole root again (building the index if it was
        not yet); returns the clock after."""
        if not entry.indexed:
            self.index_sync(entry)
            return entry.ws.clock()
        return self.refresh_sync(entry, [""])

    def changed_since_sync(self, clock: str, default: RootEntry | None) -> dict[str, Any]:
        """``readMany/changedSince``: ``{clock, isFreshInstance, changed, deleted}``.

        ``clock`` names its root (``instance:generation``, see ``Workspace.clock``); a
        clock of an unknown instance (another daemon, an evicted root, garbage) answers
        for ``default`` with ``isFreshInstance: true`` and every visible file in
        ``changed`` (Watchman's rule). Without the index's change hook, any newer
        generation is answered the same way, which is correct, only less precise.
        """
        instance, _, gen_text = clock.rpartition(":")
        entry = self.by_instance(instance) if instance else None
        try:
            generation: int | None = int(gen_text)
        except ValueError:
            generation = None
        target = entry if entry is not None and generation is not None else default
        if target is None:
            raise RootNotFound(
                "invalid params: $.root: no workspace folder to answer for", "$.root"
            )
        self.index_sync(target)
        lock = self._locked(target)
        try:
            index = target.ws.index
            now = target.ws.clock()
            delta: tuple[list[str], list[str]] | None = None
            if target is entry and generation is not None:
                current = getattr(index, "clock", None)
                if generation == current:
                    delta = ([], [])
                elif isinstance(current, int) and generation < current:
                    own = getattr(index, "changes_since", None)
                    delta = own(generation) if callable(own) else target.changelog.since(generation)
            if delta is not None:
                return {
                    "clock": now,
                    "isFreshInstance": False,
                    "changed": delta[0],
                    "deleted": delta[1],
                }
            from readmany_daemon import request
            from readmany_daemon.ignore import Filters

            everything = request.list_paths(target.ws, [], Filters(True, True, True))
            return {"clock": now, "isFreshInstance": True, "changed": everything, "deleted": []}
        finally:
            lock.release()

    # -- status

    def status(self, primary: RootEntry | None = None) -> dict[str, Any]:
        """``readMany/status`` (PROTOCOL §2): every warm root of this process, the shared
        cache, the watchers, ``primary``'s clock, uptime (s), pid, version, how many
        connections are open, open overlays, and engine jobs: running (``inflight``) and
        stopped by ``$/cancelRequest`` so far (``cancelled``)."""
        roots = []
        total = 0
        warnings: list[str] = []
        states: set[str] = set()
        for entry in self.roots():
            count = _file_count(entry)
            total += count or 0
            watcher = _watcher_status(entry)
            states.add(watcher["state"])
            warnings.extend(f"{entry.ws.root}: {w}" for w in watcher["warnings"])
            item: dict[str, Any] = {
                "root": entry.ws.root,
                "name": entry.ws.name,
                "files": count,
                "clock": entry.ws.clock(),
                "indexed": entry.indexed,
                "connections": entry.refs,
                "watcher": watcher,
            }
            if entry.index_error:
                item["error"] = entry.index_error
            if entry.indexed:
                index = entry.ws.index
                found = list(getattr(index, "warnings", []) or []) + list(
                    getattr(getattr(index, "rules", None), "warnings", []) or []
                )
                if found:
                    item["warnings"] = found[:50]
            roots.append(item)
        if not states:
            state = "off"
        elif len(states) == 1:
            state = states.pop()
        else:
            state = "mixed"
        return {
            "roots": roots,
            "fileCount": total,
            "cache": _cache_stats(self._cache),
            "watcher": {"state": state, "warnings": warnings},
            "clock": primary.ws.clock() if primary is not None else "",
            "uptime": round(time.monotonic() - self.started, 3),
            "pid": os.getpid(),
            "version": __version__,
            "connections": self.connection_count,
            "overlays": len(self.overlays),
            "engine": {
                "inflight": self._inflight,
                "cancelled": self._cancelled,
                "workers": self._workers,
            },
        }

    def close(self) -> None:
        """Stop the executor (queued work is dropped) and the watchers."""
        for entry in self.roots():
            self._stop_watcher(entry)
        self.executor.shutdown(wait=False, cancel_futures=True)
