"""``readMany/status`` (PROTOCOL §2): the warm roots, the cache, the watchers, the engine.

Built from the typed attributes of ``RootEntry``, ``Index``, ``Watcher`` and
``ContentCache``; the result is the wire's ``StatusResult`` (``wire/messages.py``),
whose members are left out or sent as ``null`` as the protocol says.
"""

from __future__ import annotations

import os
import time

from readmany_daemon import __version__
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.runtime.inotify import watchdog_version
from readmany_daemon.runtime.requests import Jobs
from readmany_daemon.runtime.roots import RootEntry, present_warnings
from readmany_daemon.runtime.watcher import Watcher
from readmany_daemon.wire.replies import (
    CacheStatus,
    EngineStatus,
    RootStatus,
    SnapshotStatus,
    StatusResult,
    WatchersStatus,
    WatcherStatus,
)

#: ``barrierReason`` while a root's folder is deleted (or moved away): its watch is gone.
ROOT_GONE_REASON = "the workspace folder is gone"
#: ``barrierReason`` once a deleted root's folder is back, until a request watches it.
ROOT_BACK = "the workspace folder was replaced; it is watched again at the next request"

#: Index and rule warnings listed per root, at most.
MAX_ROOT_WARNINGS = 50


def barrier_route(watcher: Watcher | None) -> tuple[str, str]:
    """``(barrier, reason)`` of a root's watcher (protocol §2): ``"quiet-queue"`` (no
    cookie when the kernel queue is empty), ``"cookie"`` (a cookie round trip each
    barrier) or ``"stat"`` (stat checks), and, unless ``"quiet-queue"``, a reason naming
    the package, its version and what did not fit (``""`` for ``"quiet-queue"``). When
    the root's folder was deleted, the reason names that alone (``ROOT_GONE_REASON``,
    ``ROOT_BACK`` once it is back): no package is at fault."""
    who = watchdog_version()
    if watcher is None:
        return "stat", f"{who}: no watcher runs for this root"
    if watcher.broken is not None:
        return "stat", f"{who}: {watcher.broken}"
    if watcher.root_lost:
        # The user's doing, not the package's: no package named.
        if os.path.isdir(watcher.root):
            return "stat", ROOT_BACK
        return "stat", ROOT_GONE_REASON
    if watcher.state in ("off", "stopped"):
        return "stat", f"{who}: the watcher is {watcher.state}"
    if watcher.barrier_kind != "stat" and not watcher.cookies_ready:
        return "stat", f"{who}: no barrier cookie folder is watched yet"
    return watcher.barrier_kind, watcher.barrier_reason


def watcher_status(watcher: Watcher | None) -> WatcherStatus:
    """A root's watcher: ``off`` when none runs."""
    barrier, reason = barrier_route(watcher)
    if watcher is None:
        return WatcherStatus(state="off", warnings=[], barrier=barrier, barrier_reason=reason)
    return WatcherStatus(
        state=watcher.state,
        warnings=list(watcher.warnings),
        watched=watcher.watched,
        unwatched=watcher.unwatched,
        batches=watcher.batches,
        barrier=barrier,
        barrier_reason=reason if barrier != "quiet-queue" else None,
    )


def cache_status(cache: ContentCache) -> CacheStatus:
    """``bytes`` used and ``hitRate`` (0..1, 0 before any lookup) of the shared cache."""
    hits, misses = cache.hits, cache.misses
    rate = hits / (hits + misses) if hits + misses else 0.0
    return CacheStatus(cache.bytes_used, round(rate, 4))


def root_status(entry: RootEntry) -> RootStatus:
    """One warm root: files, clock, connections, watcher, snapshot, warnings."""
    item = RootStatus(
        root=entry.ws.root,
        name=entry.ws.name,
        files=entry.file_count,
        clock=entry.ws.clock(),
        indexed=entry.indexed,
        connections=entry.refs,
        watcher=watcher_status(entry.watcher),
    )
    if entry.index_ms is not None:
        item.index_ms = round(entry.index_ms, 1)
    if entry.index_error:
        item.error = entry.index_error
    if entry.snapshot_path is not None:
        item.snapshot = SnapshotStatus(
            path=entry.snapshot_path,
            loaded=entry.from_snapshot,
            saved=entry.saved is not None,
        )
    if entry.warmed:
        item.cache_warmed = entry.warmed
    # What is true now: a warning whose cause has gone is not listed.
    found = present_warnings(entry)
    if found:
        item.warnings = found[:MAX_ROOT_WARNINGS]
    return item


def overall_state(states: set[str]) -> str:
    """The watcher state of the whole process: ``off`` without roots, the one state
    every root shares, else ``mixed``."""
    if not states:
        return "off"
    if len(states) == 1:
        return next(iter(states))
    return "mixed"


def build_status(
    roots: list[RootEntry],
    *,
    cache: ContentCache,
    jobs: Jobs,
    primary: RootEntry | None,
    started: float,
    connections: int,
    overlays: int,
) -> StatusResult:
    """``readMany/status``: every warm root in ``roots``, the shared ``cache``, the
    watchers, ``primary``'s clock, uptime (s, since monotonic ``started``), pid,
    version, how many ``connections`` and ``overlays`` are open, and the engine
    ``jobs``: running (``inflight``) and stopped by ``$/cancelRequest`` (``cancelled``)."""
    items = [root_status(entry) for entry in roots]
    warnings = [f"{item.root}: {w}" for item in items for w in item.watcher.warnings]
    return StatusResult(
        roots=items,
        file_count=sum(item.files or 0 for item in items),
        cache=cache_status(cache),
        watcher=WatchersStatus(
            state=overall_state({item.watcher.state for item in items}),
            warnings=warnings,
        ),
        clock=primary.ws.clock() if primary is not None else "",
        uptime=round(time.monotonic() - started, 3),
        pid=os.getpid(),
        version=__version__,
        connections=connections,
        overlays=overlays,
        engine=EngineStatus(jobs.inflight, jobs.cancelled, jobs.workers),
    )
