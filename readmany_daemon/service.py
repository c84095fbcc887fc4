"""Process-wide state shared by every connection of one server process.

A ``Service`` owns what outlives a connection (PROTOCOL §1, §6, §7):

- the workspaces, one per (root, index-affecting settings), reference-counted by the
  connections that use them and kept warm for ``idleTimeoutSeconds`` after the last one
  lets go (``evict_idle``);
- the ``ContentCache`` shared by all roots (``cacheBytes``);
- the overlays (open editor buffers) of every connection: they win over disk, and with
  ``shareOverlays`` every connection to the same files sees them (PROTOCOL §6);
- a per-root change log behind ``readMany/changedSince``, fed by the index's listener;
- per root, the watcher keeping its index current (``watcher.py``), the freshness barrier
  run before each answer (PROTOCOL §6: a cookie round trip through the watcher, else stat
  checks of the folders an expansion covers; ``sync: "none"`` skips it), the index
  snapshot (``snapshot.py``: loaded instead of a walk when valid, saved
  ``FIRST_SAVE_DELAY`` s after a walk, at most every ``SNAPSHOT_INTERVAL`` s while the
  index changes, and when a root is evicted or the service closes), and a background
  warm-up of the content cache with small text files (paused while requests run);
- the engine executor and the per-request context (connection id, cancel flag).

Nothing here imports pygls: ``server.py`` adapts this to JSON-RPC, ``daemon.py`` to
sockets. The engine (``request.answer``/``request.list_files``) runs in the executor
threads, one request per thread; a ``RequestContext`` set on the thread tells the overlay
lookup which connection is asking and lets ``$/cancelRequest`` stop the engine at its
next file (``checkpoint``).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import secrets
import shutil
import stat
import tempfile
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

#: glibc ``mallopt`` parameter: the most malloc arenas (per-thread heaps).
_M_ARENA_MAX = -8


@functools.cache
def _libc() -> Any:
    """The C library through ctypes, or None (not glibc, or no ctypes); loaded once."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except (ImportError, OSError):
        return None


def tune_malloc(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas at ``arenas`` for this long-running process.

    glibc gives each thread that allocates concurrently its own arena (up to 8 per
    core) and does not hand one arena's free memory to another: a large answer built
    on one executor thread and the next on another kept both peaks resident (the full
    read of a 100,000-file tree left 5-10 GiB after a few requests instead of ~3).
    Returns whether the cap was set (False off glibc)."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(_M_ARENA_MAX, arenas) == 1)


def raise_open_files_limit() -> int | None:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit (capped at 1,048,576), as most
    servers do: every client connection and every file being read holds a descriptor.
    Returns the new soft limit, or None where it cannot be read or set."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = 1 << 20 if hard == resource.RLIM_INFINITY else min(hard, 1 << 20)
        if soft == resource.RLIM_INFINITY or soft >= target:
            return int(soft)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    except (ImportError, OSError, ValueError):
        return None


def release_memory() -> None:
    """Give free heap memory back to the system (glibc ``malloc_trim``), after a large
    answer has been sent; a no-op elsewhere."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


T = TypeVar("T")

#: Entries kept per root in the change log before the oldest are dropped (a client whose
#: clock is older than what was dropped gets ``isFreshInstance: true``).
CHANGE_LOG_LIMIT = 50_000
#: Seconds after a walk before its first snapshot is written (not while the first
#: answers are measured), and the least seconds between two snapshots of a changing root.
FIRST_SAVE_DELAY = 1.0
SNAPSHOT_INTERVAL = 30.0
#: Cache warm-up: files up to this size (bytes) are read; it starts this long (s) after
#: the last request and pauses whenever one runs.
WARM_MAX_FILE_BYTES = 256 * 1024
WARM_IDLE = 0.5


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
    #: Snapshot bookkeeping: its file, whether the index came from it, the (instance,
    #: generation) last written, when (monotonic), and when the index was built.
    snapshot_path: str | None = None
    from_snapshot: bool = False
    #: Milliseconds the index took to be ready (a walk, or a snapshot load + reconcile).
    index_ms: float | None = None
    saved: tuple[str, int] | None = None
    saved_at: float = 0.0
    built_at: float = 0.0
    #: Cache warm-up progress: walked folders still to visit (None: not started), files
    #: warmed so far.
    warm_dirs: list[str] | None = None
    warmed: int = 0

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
    out: dict[str, Any] = {
        "state": str(getattr(w, "state", "running")),
        "warnings": list(getattr(w, "warnings", []) or []),
    }
    for name, key in (("watched", "watched"), ("unwatched", "unwatched"), ("batches", "batches")):
        value = getattr(w, name, None)
        if isinstance(value, int):
            out[key] = value
    return out


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

    def __init__(
        self,
        settings: Settings,
        *,
        max_workers: int = 4,
        watch: bool = True,
        snapshots: bool = True,
        warm_cache: bool = True,
    ) -> None:
        """``watch``: keep indexes current with a watcher (else every ``sync: "auto"``
        answer stats the folders it expands); ``snapshots``: load and save index
        snapshots; ``warm_cache``: warm the content cache in the background."""
        tune_malloc()
        raise_open_files_limit()
        self.settings = settings
        self.watch = watch
        self.snapshots = snapshots
        self.warm_cache = warm_cache
        self._boot = secrets.token_hex(3)  # clocks of an earlier daemon never match
        self._instances = itertools.count(1)
        self._cookie_root: str | None = None
        self._cookie_seq = itertools.count(1)
        self._closing = threading.Event()
        self._wake = threading.Event()
        self._maintainer: threading.Thread | None = None
        self._last_call = 0.0
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
                ws.instance = self._new_instance()
                entry = RootEntry(key=key, ws=ws)
                if self.snapshots:
                    from readmany_daemon.snapshot import snapshot_path

                    entry.snapshot_path = snapshot_path(real, key)
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
            self.save_snapshot(entry, wait=1.0)
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

    def _new_instance(self) -> str:
        """A clock instance id (the part of a clock before ``:``): pid, a random token
        of this service and a counter, so no other daemon, restart or reset shares it."""
        return f"{os.getpid():x}.{self._boot}.{next(self._instances)}"

    # -- index lifecycle (each runs holding the root's lock)

    def _ensure_index(self, entry: RootEntry) -> Any:
        """``entry``'s index, built now if needed: from its snapshot when one is valid,
        else by a walk; then the change listener, the watcher and the background work
        are attached. Raises what ``Index.build`` raises (``OSError``)."""
        ws = entry.ws
        if "index" in ws.__dict__:
            return ws.index
        from readmany_daemon.index import Index

        entry.indexing = True
        started = time.monotonic()
        warnings: list[str] = []
        index: Any = None
        try:
            if entry.snapshot_path is not None:
                from readmany_daemon import snapshot

                index, warnings = snapshot.load(
                    entry.snapshot_path, ws.root, ws.settings, entry.key, reconcile=not self.watch
                )
            entry.from_snapshot = index is not None
            if index is None:
                index = Index.build(ws.root, ws.settings)
        finally:
            entry.indexing = False
        for w in warnings:
            log.warning("%s", w)
        index.warnings.extend(warnings)
        ws.__dict__["index"] = index
        ws.__dict__.pop("rules", None)  # the engine must use the index's (live) rules
        entry.built_at = time.monotonic()
        entry.index_ms = (entry.built_at - started) * 1000
        if entry.from_snapshot:
            entry.saved = (ws.instance, index.clock)  # the file holds this state already
        record = self._recorder(entry)
        index.add_listener(record)
        entry.changelog.attached = True
        if self.watch:
            self._start_watcher(entry, index)
        self._start_maintainer()
        log.info(
            "indexed %s: %s files in %.3f s (%s)",
            ws.root,
            index.file_count,
            time.monotonic() - started,
            "snapshot" if entry.from_snapshot else "walk",
        )
        return index

    def _recorder(self, entry: RootEntry) -> Callable[[int, str, bool], None]:
        """The index listener of ``entry``: the change log, and the cache forgets the
        file (it would be re-validated by stat anyway; this frees it early)."""
        prefix = entry.ws.root.rstrip("/") + "/"

        def record(generation: int, rel: str, deleted: bool) -> None:
            entry.changelog.record(generation, rel, deleted)
            cache = self._cache
            if cache is not None:
                cache.invalidate(prefix + rel)

        return record

    def _start_watcher(self, entry: RootEntry, index: Any) -> None:
        from readmany_daemon.watcher import Watcher

        def reset() -> None:
            # Changes were lost (queue overflow): clocks handed out so far cannot be
            # answered precisely any more; a new instance makes them fresh-instance.
            entry.ws.instance = self._new_instance()
            entry.changelog = ChangeLog()
            entry.changelog.attached = True

        watcher = Watcher(
            entry.ws.root, index, entry.lock, cookie_dir=self._cookie_dir(), on_reset=reset
        )
        entry.watcher = watcher
        watcher.start()

    def _cookie_dir(self) -> str | None:
        """A fresh private folder for one watcher's barrier cookies, below one folder of
        this process in ``$XDG_RUNTIME_DIR/readmany`` (else the temp dir); folders left
        by dead processes are removed on the way. None when none can be made."""
        if self._cookie_root is None:
            base = tempfile.gettempdir()
            runtime = os.environ.get("XDG_RUNTIME_DIR", "")
            if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
                base = os.path.join(runtime, "readmany")
            try:
                os.makedirs(base, mode=0o700, exist_ok=True)
                _sweep_cookie_roots(base)
                self._cookie_root = tempfile.mkdtemp(
                    prefix=f"readmany-cookies-{os.getpid()}-", dir=base
                )
            except OSError as exc:
                log.warning("no folder for barrier cookies (%s); using stat checks", exc)
                return None
        return os.path.join(self._cookie_root, str(next(self._cookie_seq)))

    def _fresh_for(self, entry: RootEntry, mode: str, since: float | None = None) -> None:
        """The freshness barrier of PROTOCOL §6 before an answer (``mode`` is the
        request's ``sync``): ``auto`` → the watcher's cookie round trip (shared with a
        round trip that started after ``since``, the request's arrival: see
        ``Watcher.barrier``), or when it cannot vouch (starting, degraded, none) stat
        checks; ``stat`` → stat checks; ``none`` → the index as it is. Stat checks are
        switched off again by ``_after``."""
        if mode == "none":
            return
        watcher = entry.watcher
        if watcher is not None and watcher.root_lost and os.path.isdir(entry.ws.root):
            # The folder is back (recreated, moved back): watch it afresh. The old
            # watcher is stopped on another thread (its loop may wait for this lock).
            threading.Thread(target=watcher.stop, name="readmany-watcher-stop").start()
            self._start_watcher(entry, entry.ws.index)
            watcher = None  # this answer goes through stat checks; later ones the barrier
        if mode == "auto" and watcher is not None and watcher.barrier(since=since):
            return
        if watcher is not None:
            watcher.drain()
        entry.ws.index.stat_checks = True

    @staticmethod
    def _after(entry: RootEntry) -> None:
        if entry.indexed:
            entry.ws.index.stat_checks = False

    # -- snapshots and the cache warm-up (background)

    def save_snapshot(self, entry: RootEntry, wait: float | None = None) -> bool:
        """Write ``entry``'s snapshot when its index changed since the last one; returns
        whether one was written. ``wait``: seconds to wait for the root's lock (None:
        block). Problems are logged and kept as index warnings, never raised."""
        if not self.snapshots or entry.snapshot_path is None or not entry.indexed:
            return False
        from readmany_daemon import snapshot

        if not entry.lock.acquire(timeout=-1 if wait is None else wait):
            return False
        try:
            index = entry.ws.index
            state = (entry.ws.instance, index.clock)
            if entry.saved == state:
                return False
            dump = index.dump()
            rules_hash = index.rules.ignore_files_hash()
        finally:
            entry.lock.release()
        started = time.monotonic()
        try:
            size = snapshot.save(entry.snapshot_path, index, dump, entry.key, rules_hash)
        except snapshot.SnapshotWarning as exc:
            log.warning("%s", exc)
            if str(exc) not in index.warnings:
                index.warnings.append(str(exc))
            entry.saved, entry.saved_at = state, time.monotonic()  # do not retry in a loop
            return False
        entry.saved, entry.saved_at = state, time.monotonic()
        log.info(
            "saved the index snapshot of %s (%d bytes, %.3f s)",
            entry.ws.root,
            size,
            time.monotonic() - started,
        )
        return True

    def _start_maintainer(self) -> None:
        with self._lock:
            if self._maintainer is not None or self._closing.is_set():
                return
            self._maintainer = threading.Thread(
                target=self._maintain, name="readmany-maintain", daemon=True
            )
            self._maintainer.start()

    def _maintain(self) -> None:
        """Background duties: snapshots of changed roots, then the cache warm-up in
        slices while no request runs."""
        with contextlib.suppress(OSError, AttributeError):  # best effort: Linux threads
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while not self._closing.is_set():
            now = time.monotonic()
            sleep = 1.0
            for entry in self.roots():
                if not entry.indexed or entry.snapshot_path is None:
                    continue
                if entry.saved == (entry.ws.instance, entry.ws.index.clock):
                    continue
                if entry.saved is None:
                    due = entry.built_at + FIRST_SAVE_DELAY
                else:
                    due = entry.saved_at + SNAPSHOT_INTERVAL
                if now >= due:
                    self.save_snapshot(entry, wait=0.5)
                else:
                    sleep = min(sleep, due - now)
            worked = False
            if self.warm_cache and self._idle(now):
                for entry in self.roots():
                    if entry.indexed and now - entry.built_at >= FIRST_SAVE_DELAY:
                        worked = self._warm_slice(entry) or worked
                        if worked:
                            break
            self._wake.wait(0.01 if worked else max(sleep, 0.01))
            self._wake.clear()

    def _idle(self, now: float) -> bool:
        return self._inflight == 0 and now - self._last_call >= WARM_IDLE

    def _warm_slice(self, entry: RootEntry, budget: float = 0.02) -> bool:
        """Read small text files of ``entry`` into the cache for about ``budget`` s;
        returns False when there is nothing left to do (done, or the cache is full:
        entries are never evicted for the warm-up)."""
        cache = self.cache
        if cache.bytes_used >= cache.max_bytes:
            return False
        if entry.warm_dirs is None:
            with entry.lock:
                entry.warm_dirs = entry.ws.index.walked_dirs()[::-1]
        if not entry.warm_dirs:
            return False
        from readmany_daemon import content

        index = entry.ws.index
        prefix = entry.ws.root.rstrip("/") + "/"
        max_file = min(WARM_MAX_FILE_BYTES, entry.ws.settings.max_file_bytes)
        deadline = time.monotonic() + budget
        while entry.warm_dirs and time.monotonic() < deadline:
            if self._inflight or self._closing.is_set():
                return True
            rel = entry.warm_dirs.pop()
            base = prefix + rel + "/" if rel else prefix
            for name in index.dir_entries(rel):
                if name[-1] == "/":
                    continue
                path = base + name
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode) or not 0 < st.st_size <= max_file:
                    continue
                if path in cache:
                    continue
                if cache.bytes_used + 2 * st.st_size + 1024 > cache.max_bytes:
                    entry.warm_dirs = []
                    return False
                loaded = content.read_file(
                    path,
                    max_file_bytes=entry.ws.settings.max_file_bytes,
                    want_full=True,
                )
                if loaded.kind == "text" and loaded.complete_text and cache.put(path, loaded):
                    entry.warmed += 1
        return True

    # -- engine work (blocking: run through ``call``)

    def call(self, ctx: RequestContext, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on this thread under ``ctx`` (the executor entry point)."""
        _local.ctx = ctx
        with self._lock:
            self._inflight += 1
            self._last_call = time.monotonic()
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
                self._last_call = time.monotonic()
            _local.ctx = None

    def _locked(self, entry: RootEntry) -> threading.Lock:
        """``entry.lock``, acquired while honouring cancellation of the waiting request."""
        while not entry.lock.acquire(timeout=0.05):
            checkpoint()
        return entry.lock

    def index_sync(self, entry: RootEntry) -> int | None:
        """Build ``entry``'s index if needed (``_ensure_index``: snapshot or walk, change
        log, watcher); returns the file count. Raises what ``Index.build`` raises
        (``OSError``)."""
        lock = self._locked(entry)
        try:
            self._ensure_index(entry)
            entry.index_error = None
            return _file_count(entry)
        finally:
            lock.release()

    def read_sync(self, entry: RootEntry, params: Any, parts: bool = False) -> Any:
        """``request.answer`` on ``entry`` (``params``: ``ReadManyParams``), after the
        freshness barrier its ``sync`` asks for; with ``parts``, ``request.answer_parts``
        (a ``(result, llm_content_parts)`` pair)."""
        from readmany_daemon import request

        arrived = time.monotonic()
        lock = self._locked(entry)
        try:
            self._ensure_index(entry)
            self._fresh_for(entry, getattr(params, "sync", "auto"), arrived)
            if parts:
                return request.answer_parts(entry.ws, params)
            return request.answer(entry.ws, params)
        finally:
            self._after(entry)
            lock.release()

    def files_sync(self, entry: RootEntry, params: Any) -> Any:
        """``request.list_files`` on ``entry`` (``params``: ``FilesParams``), after the
        freshness barrier (``sync`` is always ``auto`` here)."""
        from readmany_daemon import request

        arrived = time.monotonic()
        lock = self._locked(entry)
        try:
            self._ensure_index(entry)
            self._fresh_for(entry, getattr(params, "sync", "auto"), arrived)
            return request.list_files(entry.ws, params)
        finally:
            self._after(entry)
            lock.release()

    def hint_sync(self, entry: RootEntry, rels: Iterable[str]) -> str:
        """Change hints from a client (``workspace/didChangeWatchedFiles``): each
        workspace-relative path may have been created, changed or deleted. Applied when
        the index is built (hints are confirmed by stat); returns the clock after."""
        from readmany_daemon.index import CONTENT, ENTRY

        lock = self._locked(entry)
        try:
            if entry.indexed:
                entry.ws.index.apply([(rel, ENTRY | CONTENT) for rel in rels])
            return entry.ws.clock()
        finally:
            lock.release()

    def refresh_sync(self, entry: RootEntry, rel_dirs: Iterable[str]) -> str:
        """``index.refresh(rel_dir)`` for each folder (``""`` is the whole root), when
        the index is built; returns the clock after. The watcher's events raised before
        are applied first (a barrier), so none of them lands after the walk."""
        lock = self._locked(entry)
        try:
            if entry.indexed:
                if entry.watcher is not None and not entry.watcher.barrier():
                    entry.watcher.drain()
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
        lock = self._locked(target)
        try:
            index = self._ensure_index(target)
            self._fresh_for(target, "auto")
            if index.stat_checks:  # no cookie barrier: stat every folder, so the log is whole
                index.verify()
            self._after(target)
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
                **({"indexMs": round(entry.index_ms, 1)} if entry.index_ms is not None else {}),
                "watcher": watcher,
            }
            if entry.index_error:
                item["error"] = entry.index_error
            if entry.snapshot_path is not None:
                item["snapshot"] = {
                    "path": entry.snapshot_path,
                    "loaded": entry.from_snapshot,
                    "saved": entry.saved is not None,
                }
            if entry.warmed:
                item["cacheWarmed"] = entry.warmed
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
        """Save the snapshots of changed roots, stop the watchers, the background thread
        and the executor (queued work is dropped); remove the cookie folders."""
        self._closing.set()
        self._wake.set()
        maintainer = self._maintainer
        if maintainer is not None:
            maintainer.join(timeout=5)
        for entry in self.roots():
            self.save_snapshot(entry, wait=2.0)
            self._stop_watcher(entry)
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self._cookie_root is not None:
            shutil.rmtree(self._cookie_root, ignore_errors=True)


def _sweep_cookie_roots(base: str) -> None:
    """Remove ``readmany-cookies-<pid>-*`` folders in ``base`` whose process is gone."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if not name.startswith("readmany-cookies-"):
            continue
        pid_text = name[len("readmany-cookies-") :].partition("-")[0]
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        except PermissionError:
            pass  # someone else's live process
