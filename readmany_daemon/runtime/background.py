"""Background work of the service: index snapshots of changed roots and the cache warm-up.

One maintainer thread (at a lower priority) per service, started with the first index:

- **snapshots** (``snapshot.py``): a root's index is saved ``FIRST_SAVE_DELAY`` s after
  its walk, then at most every ``SNAPSHOT_INTERVAL`` s while it changes (and by the
  service when a root is evicted or the service closes: ``save_snapshot``);
- **cache warm-up**: small text files of each root are read into the shared content
  cache in short slices, starting ``WARM_IDLE`` s after the last request and pausing
  whenever one runs; it never evicts entries to make room.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable

from readmany_daemon.content import reader
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.index import snapshot
from readmany_daemon.runtime.requests import Jobs
from readmany_daemon.runtime.roots import RootEntry

log = logging.getLogger(__name__)

#: Seconds after a walk before its first snapshot is written (not while the first
#: answers are measured), and the least seconds between two snapshots of a changing root.
FIRST_SAVE_DELAY = 1.0
SNAPSHOT_INTERVAL = 30.0
#: Cache warm-up: files up to this size (bytes) are read; it starts this long (s) after
#: the last request and pauses whenever one runs.
WARM_MAX_FILE_BYTES = 256 * 1024
WARM_IDLE = 0.5


def save_snapshot(entry: RootEntry, wait: float | None = None) -> bool:
    """Write ``entry``'s snapshot when its index changed since the last one; returns
    whether one was written. ``wait``: seconds to wait for the root's lock (None:
    block). Problems are logged and kept as index warnings, never raised."""
    if entry.snapshot_path is None or not entry.indexed:
        return False
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
    # Saved: a warning that saving failed no longer says what is true.
    index.warnings[:] = [
        w for w in index.warnings if not w.startswith((snapshot.NOT_SAVING, snapshot.NOT_WRITTEN))
    ]
    log.info(
        "saved the index snapshot of %s (%d bytes, %.3f s)",
        entry.ws.root,
        size,
        time.monotonic() - started,
    )
    return True


def warm_slice(
    entry: RootEntry, cache: ContentCache, busy: Callable[[], bool], budget: float
) -> bool:
    """Read small text files of ``entry`` into ``cache`` for about ``budget`` s, yielding
    as soon as ``busy()``; returns False when there is nothing left to do (done, or the
    cache is full: entries are never evicted for the warm-up)."""
    if cache.bytes_used >= cache.max_bytes:
        return False
    if entry.warm_dirs is None:
        with entry.lock:
            entry.warm_dirs = entry.ws.index.walked_dirs()[::-1]
    if not entry.warm_dirs:
        return False
    index = entry.ws.index
    prefix = entry.ws.root.rstrip("/") + "/"
    max_file = min(WARM_MAX_FILE_BYTES, entry.ws.settings.max_file_bytes)
    deadline = time.monotonic() + budget
    while entry.warm_dirs and time.monotonic() < deadline:
        if busy():
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
            read = reader.ReadOptions(
                max_file_bytes=entry.ws.settings.max_file_bytes, want_full=True
            )
            loaded = reader.read_file(path, read)
            if loaded.kind == "text" and loaded.complete_text and cache.put(path, loaded):
                entry.warmed += 1
    return True


class Maintainer:
    """The maintainer thread of one service (see the module docstring).

    ``roots()`` lists the warm roots; ``jobs`` tells when requests run (the warm-up
    waits for quiet); ``warm_cache`` switches the warm-up on. ``start`` is idempotent
    and does nothing once ``close`` was called."""

    def __init__(
        self,
        roots: Callable[[], list[RootEntry]],
        cache: ContentCache,
        jobs: Jobs,
        *,
        warm_cache: bool,
    ) -> None:
        self.roots = roots
        self.cache = cache
        self.jobs = jobs
        self.warm_cache = warm_cache
        self.closing = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the thread (once)."""
        with self._lock:
            if self._thread is not None or self.closing.is_set():
                return
            self._thread = threading.Thread(target=self._run, name="readmany-maintain", daemon=True)
            self._thread.start()

    def close(self, timeout: float = 5) -> None:
        """Stop the thread, waiting up to ``timeout`` s for it to end."""
        self.closing.set()
        self._wake.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout=timeout)

    def _busy(self) -> bool:
        return self.jobs.inflight > 0 or self.closing.is_set()

    def _run(self) -> None:
        """Snapshots of changed roots, then the cache warm-up in slices while no request
        runs."""
        with contextlib.suppress(OSError, AttributeError):  # best effort: Linux threads
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while not self.closing.is_set():
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
                    save_snapshot(entry, wait=0.5)
                else:
                    sleep = min(sleep, due - now)
            worked = False
            if self.warm_cache and self.jobs.quiet_for(WARM_IDLE, now):
                for entry in self.roots():
                    if entry.indexed and now - entry.built_at >= FIRST_SAVE_DELAY:
                        worked = warm_slice(entry, self.cache, self._busy, 0.02) or worked
                        if worked:
                            break
            self._wake.wait(0.01 if worked else max(sleep, 0.01))
            self._wake.clear()
