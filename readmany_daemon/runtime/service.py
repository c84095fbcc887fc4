"""The warm service: process-wide state shared by every connection of one server process.

A ``Service`` owns what outlives a connection (PROTOCOL §1, §6, §7) and composes the
runtime's parts:

- the warm roots (``roots.py``): one workspace per (root, index-affecting settings),
  reference-counted by the connections that use them and kept warm for
  ``idleTimeoutSeconds`` after the last one lets go (``evict_idle``); each root's index is
  loaded from its snapshot or walked on first use;
- the ``ContentCache`` shared by all roots (``cacheBytes``);
- the overlays (``overlays.py``): open editor buffers of every connection, which win over
  disk, shared between connections with ``shareOverlays`` (PROTOCOL §6);
- per root, what changed after a clock (``changelog.py``) behind
  ``readMany/changedSince``: the change log fed by the index's listener while a watcher
  vouches, else per-file stat snapshots;
- freshness (``freshness.py``): per root the watcher keeping its index current, and the
  barrier run before each answer (a cookie round trip through the watcher, else stat
  checks, and ignore-file stamps when no watcher runs; ``sync: "none"`` skips it);
- background work (``background.py``): snapshot saves and the cache warm-up;
- the engine executor and the per-request context (``requests.py``: connection id,
  cancel flag, job counts); ``readMany/status`` is built by ``status.py``.

Nothing here imports pygls: ``lsp/`` adapts this to JSON-RPC, ``daemon.py`` to sockets.
Methods named ``*_sync`` run the engine (``engine.answer.answer``,
``engine.files.list_files``) and block: run them in ``executor`` through ``call``, one
request per thread; ``$/cancelRequest`` stops the engine at its next file (each
workspace's ``checkpoint`` is ``requests.checkpoint``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final, Literal, ParamSpec, TypeVar, overload

from readmany_daemon.content import tokens
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine import answer as engine_answer
from readmany_daemon.engine.files import list_files, list_paths
from readmany_daemon.engine.workspace import Overlay
from readmany_daemon.errors import RootNotFound
from readmany_daemon.index import cachegc, snapshot
from readmany_daemon.index.model import Index
from readmany_daemon.index.records import CONTENT, ENTRY
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.runtime import background
from readmany_daemon.runtime.background import Maintainer
from readmany_daemon.runtime.freshness import Freshness, watcher_vouches
from readmany_daemon.runtime.overlays import OverlayStore
from readmany_daemon.runtime.process import raise_open_files_limit, tune_malloc
from readmany_daemon.runtime.requests import Jobs, RequestContext, checkpoint, current_context
from readmany_daemon.runtime.roots import (
    RootEntry,
    RootRegistry,
    drop_outdated_warnings,
    open_index,
)
from readmany_daemon.runtime.status import build_status
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import ReadRequest
from readmany_daemon.wire.messages import FilesParams, ReadManyResult
from readmany_daemon.wire.replies import ChangedSinceResult, FilesResult, StatusResult

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

#: How long ``changedSince`` waits for a starting watcher's watches (seconds); past it,
#: stat snapshots answer (a clock of the change log: as a fresh instance).
WATCH_START_WAIT: Final = 10.0


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
        self.started = time.monotonic()
        #: The content cache shared by every root.
        self.cache = ContentCache(settings.cache_bytes)
        self.overlays = OverlayStore()
        self.jobs = Jobs(max_workers)
        self.executor = ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="readmany-engine"
        )
        self.registry = RootRegistry(
            self.cache, self._overlay, checkpoint=checkpoint, snapshots=snapshots
        )
        self.freshness = Freshness(self.registry.new_instance)
        self.maintainer = Maintainer(
            self.registry.roots, self.cache, self.jobs, warm_cache=warm_cache
        )
        if warm_cache:
            # The token counter's vocabulary (~0.07 s) loads now, beside the first
            # index walk, instead of inside the first answer (every answer counts).
            threading.Thread(target=tokens.warm, name="readmany-tokens", daemon=True).start()
        #: ``start_cache_sweeps``'s thread, and what ends it.
        self._sweeper: threading.Thread | None = None
        self._closing = threading.Event()
        self._conns: dict[int, _ConnInfo] = {}
        self._conn_ids = itertools.count(1)
        self._lock = threading.Lock()
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
        """How many connections are open (for the idle exit and ``readMany/status``)."""
        with self._lock:
            return len(self._conns)

    def _activity(self) -> None:
        if self.on_activity is not None:
            self.on_activity()

    # -- roots

    def acquire(self, path: str, settings: Settings) -> RootEntry:
        """The warm workspace for folder ``path`` under ``settings``, its reference count
        raised. Raises ``RootNotFound`` naming ``$.root`` when ``path`` is no folder."""
        return self.registry.acquire(path, settings)

    def release(self, entry: RootEntry) -> None:
        """Drop one reference; the root stays warm until ``evict_idle`` finds it unused
        for ``idleTimeoutSeconds``."""
        self.registry.release(entry)

    def evict_idle(self, now: float | None = None) -> list[str]:
        """Forget roots nobody used for ``idleTimeoutSeconds`` (their snapshots saved,
        their watchers stopped); returns their paths."""
        now = time.monotonic() if now is None else now
        gone = self.registry.evict_idle(self.settings.idle_timeout_seconds, now)
        for entry in gone:
            background.save_snapshot(entry, wait=1.0)
            self.freshness.unwatch(entry)
            entry.ws.close_ranking()
            log.info("evicted idle root %s", entry.ws.root)
        return [e.ws.root for e in gone]

    def roots(self) -> list[RootEntry]:
        """Every warm root, in the order they were opened."""
        return self.registry.roots()

    def _overlay(self, path: str) -> Overlay | None:
        """``Workspace.overlay`` of every root: the buffer the asking connection sees."""
        ctx = current_context()
        return self.overlays.lookup(path, ctx.conn_id if ctx is not None else None)

    def _ensure_index(self, entry: RootEntry) -> Index:
        """``entry``'s index, built now if needed (``open_index``: snapshot or walk);
        then the change listener, the watcher and the background work are attached. A
        built index first loses the warnings whose cause has gone
        (``roots.drop_outdated_warnings``). Runs holding the root's lock. Raises what
        ``Index.build`` raises (``OSError``)."""
        if entry.indexed:
            drop_outdated_warnings(entry)
            return entry.ws.index
        started = time.monotonic()
        index = open_index(entry, reconcile=not self.watch)
        index.add_listener(self._recorder(entry))
        entry.changelog.attached = True
        if self.watch:
            self.freshness.watch(entry, index)
        if self.snapshots or self.warm_cache:
            self.maintainer.start()
        log.info(
            "indexed %s: %s files in %.3f s (%s)",
            entry.ws.root,
            index.file_count,
            time.monotonic() - started,
            "snapshot" if entry.from_snapshot else "walk",
        )
        return index

    def _recorder(self, entry: RootEntry) -> Callable[[int, str, bool], None]:
        """The index listener of ``entry``: the change log, and the cache forgets the
        file (it would be re-validated by stat anyway; this frees it early)."""
        prefix = entry.ws.root.rstrip("/") + "/"
        cache = self.cache

        def record(generation: int, rel: str, deleted: bool) -> None:
            entry.changelog.record(generation, rel, deleted)
            cache.invalidate(prefix + rel)

        return record

    # -- engine work (blocking: run through ``call``)

    def call(self, ctx: RequestContext, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn(*args)`` on this thread under ``ctx`` (the executor entry point)."""
        with self.jobs.running(ctx):
            checkpoint()
            return fn(*args, **kwargs)

    @staticmethod
    @contextlib.contextmanager
    def _locked(entry: RootEntry) -> Iterator[None]:
        """Hold ``entry.lock``; waiting for it honours cancellation of the request."""
        while not entry.lock.acquire(timeout=0.05):
            checkpoint()
        try:
            yield
        finally:
            entry.lock.release()

    def index_sync(self, entry: RootEntry) -> int | None:
        """Build ``entry``'s index if needed (``_ensure_index``: snapshot or walk, change
        log, watcher); returns the file count. Raises what ``Index.build`` raises
        (``OSError``)."""
        with self._locked(entry):
            self._ensure_index(entry)
            entry.index_error = None
            return entry.file_count

    @overload
    def read_sync(
        self,
        entry: RootEntry,
        req: ReadRequest,
        parts: Literal[False] = False,
        on_barrier: Callable[[bool], None] | None = None,
    ) -> ReadManyResult: ...

    @overload
    def read_sync(
        self,
        entry: RootEntry,
        req: ReadRequest,
        parts: Literal[True],
        on_barrier: Callable[[bool], None] | None = None,
    ) -> tuple[ReadManyResult, list[str]]: ...

    def read_sync(
        self,
        entry: RootEntry,
        req: ReadRequest,
        parts: bool = False,
        on_barrier: Callable[[bool], None] | None = None,
    ) -> ReadManyResult | tuple[ReadManyResult, list[str]]:
        """``engine.answer.answer`` on ``entry`` for a request decoded at the edge
        (``wire.cursor.decode_read_request``), after the freshness barrier its ``sync``
        asks for; with ``parts``, ``answer_parts`` (a ``(result, llm_content_parts)``
        pair). ``on_barrier(stat_route)`` is called right after the barrier, holding the
        root's lock, before any content is loaded (a session's change ledger takes its
        mark there: ``runtime/ledger.py``)."""
        arrived = time.monotonic()
        with self._locked(entry):
            self._ensure_index(entry)
            with self.freshness.ensure(entry, req.params.sync, arrived) as stat_route:
                if on_barrier is not None:
                    on_barrier(stat_route)
                if parts:
                    return engine_answer.answer_parts(entry.ws, req)
                return engine_answer.answer(entry.ws, req)

    def files_sync(self, entry: RootEntry, params: FilesParams) -> FilesResult:
        """``engine.files.list_files`` on ``entry``, after the freshness barrier (``sync`` is
        always ``auto`` here)."""
        arrived = time.monotonic()
        with self._locked(entry):
            self._ensure_index(entry)
            with self.freshness.ensure(entry, "auto", arrived):
                return list_files(entry.ws, params)

    def hint_sync(self, entry: RootEntry, rels: Iterable[str]) -> str:
        """Change hints from a client (``workspace/didChangeWatchedFiles``): each
        workspace-relative path may have been created, changed or deleted. Applied when
        the index is built (hints are confirmed by stat); returns the clock after."""
        with self._locked(entry):
            if entry.indexed:
                entry.ws.index.apply([(rel, ENTRY | CONTENT) for rel in rels])
            return entry.ws.clock()

    def refresh_sync(self, entry: RootEntry, rel_dirs: Iterable[str]) -> str:
        """``index.refresh(rel_dir)`` for each folder (``""`` is the whole root), when
        the index is built; returns the clock after. The watcher's events raised before
        are applied first (a barrier), so none of them lands after the walk."""
        with self._locked(entry):
            if entry.indexed:
                self.freshness.settle(entry)
                for rel in sorted(set(rel_dirs)):
                    checkpoint()
                    entry.ws.index.refresh(rel)
            return entry.ws.clock()

    def rescan_sync(self, entry: RootEntry) -> str:
        """``readMany/rescan``: walk the whole root again (building the index if it was
        not yet); returns the clock after."""
        if not entry.indexed:
            self.index_sync(entry)
            return entry.ws.clock()
        return self.refresh_sync(entry, [""])

    def changed_since_sync(self, clock: str, default: RootEntry | None) -> ChangedSinceResult:
        """``readMany/changedSince``: ``{clock, isFreshInstance, changed, deleted}``.

        ``clock`` names its root: ``instance:generation`` (``Workspace.clock``) or, when
        minted by a stat snapshot, ``instance:generation.n``. While a watcher vouches for
        the root (``freshness.watcher_vouches``) the change log answers; otherwise (no
        watcher, or one off or degraded) a folder's mtime would not show an in-place
        edit, so per-file stat snapshots answer (``StatLog.changes``) and mint the new
        clock. A clock of an unknown instance (another daemon, an evicted root,
        garbage) answers for ``default`` with ``isFreshInstance: true`` and every visible
        file in ``changed`` (Watchman's rule), and so does a clock the route taken
        cannot answer for (a generation the change log lost, a snapshot not kept, a
        generation while no watcher vouches), which is correct, only less precise.
        """
        instance, _, gen_text = clock.rpartition(":")
        entry = self.registry.by_instance(instance) if instance else None
        try:
            generation: int | None = int(gen_text)
        except ValueError:
            generation = None
        known = entry is not None and (generation is not None or clock in entry.statlog)
        target = entry if known else default
        if target is None:
            raise RootNotFound(
                "invalid params: $.root: no workspace folder to answer for", "$.root"
            )
        watcher = target.watcher
        if watcher is not None:  # a starting one cannot vouch yet: its start is awaited
            # (outside the root's lock, which the start takes)
            watcher.wait_started(WATCH_START_WAIT)
        with self._locked(target):
            index = self._ensure_index(target)
            with self.freshness.ensure(target, "auto") as stat_route:
                if not watcher_vouches(target):
                    ws = target.ws
                    return target.statlog.changes(
                        clock,
                        ws.clock(),
                        ws.abspath,
                        lambda: list_paths(ws, [], Filters(True, True, True)),
                        ws.settings.max_file_bytes,
                    )
                if stat_route:  # no cookie barrier: stat every folder, so the log is whole
                    index.verify()
            now = target.ws.clock()
            delta: tuple[list[str], list[str]] | None = None
            if target is entry and generation is not None:
                if generation == index.clock:
                    delta = ([], [])
                elif generation < index.clock:
                    delta = target.changelog.since(generation)
            if delta is not None:
                return ChangedSinceResult(now, False, delta[0], delta[1])
            everything = list_paths(target.ws, [], Filters(True, True, True))
            return ChangedSinceResult(now, True, everything, [])

    # -- status and shutdown

    def status(self, primary: RootEntry | None = None) -> StatusResult:
        """``readMany/status`` (PROTOCOL §2), see ``status.build_status``; ``primary``
        gives the top-level ``clock``. A root whose lock is free first loses its outdated
        warnings (``roots.drop_outdated_warnings``); a busy one's are left out of the
        answer all the same (``roots.present_warnings``)."""
        roots = self.roots()
        for entry in roots:
            if entry.lock.acquire(blocking=False):
                try:
                    drop_outdated_warnings(entry)
                finally:
                    entry.lock.release()
        return build_status(
            roots,
            cache=self.cache,
            jobs=self.jobs,
            primary=primary,
            started=self.started,
            connections=self.connection_count,
            overlays=len(self.overlays),
        )

    # -- the cache folder

    def sweep_cache(self) -> list[cachegc.Dropped]:
        """Bound the snapshot cache folder now (``cachegc.sweep``: roots gone, unused for
        30 days, then least recently used over 1 GiB), keeping the warm roots' files;
        each group dropped is logged at INFO. Returns what was dropped."""
        keep = {
            h
            for entry in self.roots()
            if entry.snapshot_path is not None
            and (h := cachegc.snapshot_hash(entry.snapshot_path)) is not None
        }
        dropped = cachegc.sweep(snapshot.cache_dir(), keep=keep)
        for d in dropped:
            log.info("cache sweep: dropped %s (%s, %d bytes)", d.root or d.hash, d.reason, d.size)
        return dropped

    def start_cache_sweeps(self, interval: float = cachegc.SWEEP_INTERVAL) -> None:
        """Sweep the cache folder now (on a thread of its own) and every ``interval``
        seconds (default once a day) until ``close``; nothing without snapshots. The
        shared daemon calls it at start."""
        if not self.snapshots or self._sweeper is not None:
            return

        def run() -> None:
            while True:
                try:
                    self.sweep_cache()
                except OSError as exc:  # the folder itself unusable: try again later
                    log.warning("cache sweep failed: %s", exc)
                if self._closing.wait(interval):
                    return

        self._sweeper = threading.Thread(target=run, name="readmany-cache-sweep", daemon=True)
        self._sweeper.start()

    def close(self) -> None:
        """Save the snapshots of changed roots, stop the watchers, the background thread,
        the cache sweeps and the executor (queued work is dropped); remove the cookie
        folders."""
        self._closing.set()
        self.maintainer.close(timeout=5)
        for entry in self.roots():
            background.save_snapshot(entry, wait=2.0)
            self.freshness.unwatch(entry)
            entry.ws.close_ranking()
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.freshness.close()
