"""The warm roots: one workspace per (folder, index-affecting settings), reference-counted.

``RootRegistry.acquire`` hands out the ``RootEntry`` of a folder (opening it on first
use), ``release`` drops a reference, and ``evict_idle`` forgets roots nobody used for
``idleTimeoutSeconds`` (PROTOCOL §7). ``open_index`` builds a root's index: from its
snapshot (``snapshot.py``) when one is valid, else by a walk.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from readmany_daemon.engine.workspace import Overlay, Workspace
from readmany_daemon.errors import RootNotFound
from readmany_daemon.index import cachegc, snapshot
from readmany_daemon.index.changes import ROOT_GONE
from readmany_daemon.index.model import Index
from readmany_daemon.index.stable_order import order_path
from readmany_daemon.rank.fulltext import rank_path
from readmany_daemon.runtime.changelog import ChangeLog, StatLog
from readmany_daemon.settings import Settings

if TYPE_CHECKING:
    from readmany_daemon.content.cache import ContentCache
    from readmany_daemon.runtime.watcher import Watcher

log = logging.getLogger(__name__)

#: A root's identity: its real path followed by ``index_key`` of its settings.
RootKey = tuple[object, ...]


def index_key(settings: Settings) -> RootKey:
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

    key: RootKey
    ws: Workspace
    lock: threading.Lock = field(default_factory=threading.Lock)
    changelog: ChangeLog = field(default_factory=ChangeLog)
    #: Per-file stat snapshots behind ``changedSince`` while no watcher vouches.
    statlog: StatLog = field(default_factory=StatLog)
    #: While no watcher runs: the stat stamps of each walked folder's ignore files
    #: (``freshness.sync_ignore_files`` compares them and takes the first;
    #: ``freshness.stamp_ignore_files`` adds folders walked since); None until the first
    #: request after the index.
    ignore_stamps: dict[str, tuple[object, ...]] | None = None
    refs: int = 0
    released_at: float = 0.0
    indexing: bool = False
    index_error: str | None = None
    #: The watcher keeping this root current (``runtime/watcher.py``), when one runs.
    watcher: Watcher | None = None
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
        """True once the index has been built (``Workspace.has_index``)."""
        return self.ws.has_index

    @property
    def file_count(self) -> int | None:
        """How many visible files the index holds, or None when it is not built."""
        return self.ws.index.file_count if self.indexed else None

    def reset_clock(self, instance: str) -> None:
        """Changes were lost (the watcher's queue overflowed): clocks handed out so far
        cannot be answered precisely any more, so the workspace takes the new clock
        ``instance`` (older clocks become fresh-instance) and a new change log."""
        self.ws.instance = instance
        changelog = ChangeLog()
        changelog.attached = True
        self.changelog = changelog


def outdated_warnings(entry: RootEntry) -> list[str]:
    """The index warnings of ``entry`` whose cause has gone: while its root is a folder
    again, "the workspace folder … is gone" (``index.changes.ROOT_GONE``) and "not saving
    the index snapshot: <root>: …" (``snapshot.NOT_SAVING``, the root missing when a save
    was tried). A root's warnings describe its present state (issue 22, item 6). Empty
    before the index is built; one ``stat`` of the root when there is a candidate."""
    if not entry.indexed:
        return []
    root = entry.ws.root
    gone = ROOT_GONE.format(root)
    unsaved = f"{snapshot.NOT_SAVING}{root}: "
    found = [w for w in entry.ws.index.warnings if w == gone or w.startswith(unsaved)]
    if not found or not os.path.isdir(root):
        return []
    return found


def present_warnings(entry: RootEntry) -> list[str]:
    """``entry``'s index and rule warnings without those ``outdated_warnings`` names
    (what ``readMany/status`` lists); read-only."""
    if not entry.indexed:
        return []
    index = entry.ws.index
    stale = outdated_warnings(entry)
    return [w for w in index.warnings if w not in stale] + index.rules.warnings


def drop_outdated_warnings(entry: RootEntry) -> None:
    """Remove ``outdated_warnings`` from ``entry``'s index (hold ``entry.lock``). When a
    snapshot save had failed for want of the root, the next save is due now (the failed
    state was marked saved so that it is not retried in a loop)."""
    stale = outdated_warnings(entry)
    if not stale:
        return
    index = entry.ws.index
    index.warnings[:] = [w for w in index.warnings if w not in stale]
    if any(w.startswith(snapshot.NOT_SAVING) for w in stale):
        entry.saved = None


def open_index(entry: RootEntry, *, reconcile: bool) -> Index:
    """Build ``entry``'s index and install it in its workspace: from its snapshot when
    one is valid (``reconcile``: check folder mtimes against the disk, for a root without
    a watcher), else by a walk. Records how (``from_snapshot``, ``index_ms``,
    ``built_at``, ``saved``); snapshot problems become index warnings. Raises what
    ``Index.build`` raises (``OSError``)."""
    ws = entry.ws
    entry.indexing = True
    started = time.monotonic()
    warnings: list[str] = []
    index: Index | None = None
    try:
        if entry.snapshot_path is not None:
            index, warnings = snapshot.load(
                entry.snapshot_path, ws.root, ws.settings, entry.key, reconcile=reconcile
            )
        entry.from_snapshot = index is not None
        if index is None:
            index = Index.build(ws.root, ws.settings)
    finally:
        entry.indexing = False
    for w in warnings:
        log.warning("%s", w)
    index.warnings.extend(warnings)
    ws.install_index(index)
    entry.built_at = time.monotonic()
    entry.index_ms = (entry.built_at - started) * 1000
    if entry.from_snapshot:
        entry.saved = (ws.instance, index.clock)  # the file holds this state already
    if ws.settings.ranking_index == "always":
        ws.ranking.start()  # built in the background from now on
    return index


class RootRegistry:
    """The warm roots of one service, by ``(real path, *index_key(settings))``.
    Thread-safe. Every workspace shares ``cache``, the ``overlay`` lookup and the
    cancellation ``checkpoint``; with ``snapshots`` each root gets its snapshot file."""

    def __init__(
        self,
        cache: ContentCache,
        overlay: Callable[[str], Overlay | None],
        *,
        checkpoint: Callable[[], None] | None = None,
        snapshots: bool,
    ) -> None:
        self.cache = cache
        self.overlay = overlay
        self.checkpoint = checkpoint
        self.snapshots = snapshots
        self._boot = secrets.token_hex(3)  # clocks of an earlier daemon never match
        self._instances = itertools.count(1)
        self._roots: dict[RootKey, RootEntry] = {}
        self._lock = threading.Lock()

    def new_instance(self) -> str:
        """A clock instance id (the part of a clock before ``:``): pid, a random token
        of this registry and a counter, so no other daemon, restart or reset shares it."""
        return f"{os.getpid():x}.{self._boot}.{next(self._instances)}"

    def acquire(self, path: str, settings: Settings) -> RootEntry:
        """The warm workspace for folder ``path`` under ``settings``, its reference count
        raised; with snapshots, the root is marked used now in the cache folder
        (``cachegc.record_use``). Raises ``RootNotFound`` naming ``$.root`` when ``path``
        is no folder."""
        real = os.path.realpath(path)
        key = (real, *index_key(settings))
        with self._lock:
            entry = self._roots.get(key)
            if entry is None:
                try:
                    ws = Workspace.open(
                        real,
                        settings,
                        cache=self.cache,
                        overlay=self.overlay,
                        checkpoint=self.checkpoint,
                    )
                except OSError as exc:
                    raise RootNotFound(f"invalid params: $.root: {exc}", "$.root") from None
                ws.instance = self.new_instance()
                ws.rank_background = True  # kept current by the watcher's changes
                entry = RootEntry(key=key, ws=ws)
                if self.snapshots:
                    entry.snapshot_path = snapshot.snapshot_path(real, key)
                    ws.order_file = order_path(entry.snapshot_path)
                    ws.rank_file = rank_path(entry.snapshot_path)
                self._roots[key] = entry
                log.info("opened root %s", real)
            entry.refs += 1
        if entry.snapshot_path is not None:
            try:  # the root's last use, for the cache sweep (``index/cachegc.py``)
                cachegc.record_use(entry.snapshot_path, real)
            except OSError as exc:
                log.info("cannot mark %s as used in the cache folder: %s", real, exc)
        return entry

    def release(self, entry: RootEntry) -> None:
        """Drop one reference; the root stays warm until ``evict_idle`` finds it unused."""
        with self._lock:
            entry.refs = max(0, entry.refs - 1)
            if entry.refs == 0:
                entry.released_at = time.monotonic()

    def evict_idle(self, limit: float, now: float) -> list[RootEntry]:
        """Forget the roots with no reference, not being indexed, released at least
        ``limit`` s before ``now``; returns them (the caller saves and stops them)."""
        gone: list[RootEntry] = []
        with self._lock:
            for key, entry in list(self._roots.items()):
                if entry.refs == 0 and not entry.indexing and now - entry.released_at >= limit:
                    del self._roots[key]
                    gone.append(entry)
        return gone

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
