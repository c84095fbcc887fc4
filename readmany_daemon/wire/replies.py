"""The results of the methods besides ``readMany/read`` (PROTOCOL §2): ``readMany/files``,
``readMany/changedSince``, ``readMany/rescan``, ``readMany/stopDaemon`` and
``readMany/status``, as msgspec Structs (their params and ``readMany/read``'s result are
``wire.messages``')."""

from __future__ import annotations

import msgspec

__all__ = [
    "CacheStatus",
    "ChangedSinceResult",
    "EngineStatus",
    "FileInfo",
    "FilesResult",
    "RescanResult",
    "RootStatus",
    "SnapshotStatus",
    "StatusResult",
    "StopDaemonResult",
    "WatcherStatus",
    "WatchersStatus",
]


class FileInfo(msgspec.Struct, rename="camel"):
    """One ``readMany/files`` entry: size in bytes, mtime in milliseconds since the epoch."""

    path: str
    size: int
    mtime_ms: float


class FilesResult(msgspec.Struct, rename="camel"):
    """``readMany/files``' answer (PROTOCOL §2): the visible files with size and mtime, and the
    warnings: one ``<folder>: not listed: <reason>`` line for each folder of the root that
    could not be listed (PROTOCOL §3, "Depth"), whose files the listing lacks; always on
    the wire, ``[]`` when none."""

    files: list[FileInfo]
    clock: str
    warnings: list[str] = msgspec.field(default_factory=list)


class ChangedSinceResult(msgspec.Struct, rename="camel"):
    """``readMany/changedSince``'s answer (PROTOCOL §2, §6): the new ``clock`` and the
    workspace-relative paths that changed (created or modified) or were deleted after
    the asked clock, each list sorted; with ``is_fresh_instance`` the asked clock could
    not be answered for and ``changed`` holds every visible file (Watchman's rule)."""

    clock: str
    is_fresh_instance: bool
    changed: list[str]
    deleted: list[str]


class RescanResult(msgspec.Struct, rename="camel"):
    """``readMany/rescan``'s answer (PROTOCOL §2): the root's clock after the walk."""

    clock: str


class StopDaemonResult(msgspec.Struct, rename="camel"):
    """``readMany/stopDaemon``'s answer: the daemon's process id (it exits after)."""

    pid: int


class WatcherStatus(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """One root's watcher in ``readMany/status`` (PROTOCOL §2): ``state`` (``starting``,
    ``running``, ``degraded``, ``off``, ``stopped``), its ``warnings``, the folders it
    watches and could not watch and the change batches it applied (absent without a
    watcher), and how the root's freshness barrier works (``barrier``:
    ``"quiet-queue"``, ``"cookie"`` or ``"stat"``; ``barrier_reason``, absent for
    ``"quiet-queue"``, says why not)."""

    state: str
    warnings: list[str]
    watched: int | None = None
    unwatched: int | None = None
    batches: int | None = None
    barrier: str
    barrier_reason: str | None = None


class SnapshotStatus(msgspec.Struct, rename="camel"):
    """One root's index snapshot in ``readMany/status``: its file ``path``, whether the
    index was ``loaded`` from it and whether it was ``saved`` since."""

    path: str
    loaded: bool
    saved: bool


class RootStatus(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """One warm root in ``readMany/status`` (PROTOCOL §2): folder and name, indexed files
    (``None``, on the wire ``null``, until indexed), clock, open connections, watcher;
    ``index_ms`` (milliseconds the index took), ``error`` (why it could not be built),
    ``snapshot``, ``cache_warmed`` (files put in the cache at start) and ``warnings``
    (the index's and the rules' present ones) only when there is something to say."""

    root: str
    name: str
    files: int | None
    clock: str
    indexed: bool
    connections: int
    watcher: WatcherStatus
    index_ms: float | None = None
    error: str | None = None
    snapshot: SnapshotStatus | None = None
    cache_warmed: int | None = None
    warnings: list[str] | None = None


class CacheStatus(msgspec.Struct, rename="camel"):
    """The shared content cache in ``readMany/status``: ``bytes`` used and ``hit_rate``
    (0..1, rounded to 4 places; 0 before any lookup)."""

    bytes: int
    hit_rate: float


class WatchersStatus(msgspec.Struct, rename="camel"):
    """Every root's watcher summed up in ``readMany/status``: the one ``state`` they
    share (``off`` without roots, else ``mixed``) and their warnings, each prefixed
    with its root (``<root>: <warning>``)."""

    state: str
    warnings: list[str]


class EngineStatus(msgspec.Struct, rename="camel"):
    """The engine's jobs in ``readMany/status``: running now (``inflight``), stopped by
    ``$/cancelRequest`` so far (``cancelled``), and the worker threads."""

    inflight: int
    cancelled: int
    workers: int


class StatusResult(msgspec.Struct, rename="camel"):
    """``readMany/status``'s answer (PROTOCOL §2): the warm roots, their files in all,
    the cache, the watchers, the connection's first root's clock (``""`` without one),
    uptime in seconds, pid, version, open connections and overlays, the engine."""

    roots: list[RootStatus]
    file_count: int
    cache: CacheStatus
    watcher: WatchersStatus
    clock: str
    uptime: float
    pid: int
    version: str
    connections: int
    overlays: int
    engine: EngineStatus
