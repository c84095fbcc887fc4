"""What changed in one root after a clock, behind ``readMany/changedSince``: two logs.

- ``ChangeLog``: the index's changes by generation, for clocks ``instance:generation``;
  whole only while a watcher keeps the index current (every in-place edit reaches it).
- ``StatLog``: per-file stat snapshots, for clocks ``instance:generation.n`` minted
  when no watcher vouches for the root (``--no-watch``, a watcher off or degraded, the
  MCP's in-process backend): a folder's mtime does not move when a file in it is edited
  in place, so only a snapshot of every file sees that. Racy files (``racy.is_racy``)
  are compared by content hash, so an edit within the snapshot's timestamp tick is not
  missed either.
"""

from __future__ import annotations

import itertools
import os
import stat as stat_mod
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from readmany_daemon.paths import byte_order_key
from readmany_daemon.racy import StatKey, file_sha256, is_racy, stat_key
from readmany_daemon.wire.replies import ChangedSinceResult

#: Entries kept per root in the change log before the oldest are dropped (a client whose
#: clock is older than what was dropped gets ``isFreshInstance: true``).
CHANGE_LOG_LIMIT = 50_000


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

    def touched_after(self, generation: int) -> set[str] | None:
        """The workspace-relative paths recorded (changed or deleted) after
        ``generation``, or None when the log cannot tell (as ``since``). Reads the log
        from its newest entry back: the cost is the number of entries after
        ``generation``, not the log's length."""
        out: set[str] = set()
        with self._lock:
            if not self.attached or generation < self._floor:
                return None
            for gen, rel, _deleted in reversed(self._entries):
                if gen <= generation:
                    break
                out.add(rel)
        return out


#: Stat snapshots kept per root (``StatLog``): older snapshot clocks get a fresh instance.
SNAPSHOTS_KEPT = 4


@dataclass
class StatSnapshot:
    """The stat data of every visible file at ``taken_ns`` (``time.time_ns()`` before
    the listing), and the content hash of those racy then."""

    taken_ns: int
    files: dict[str, StatKey]
    digests: dict[str, str] = field(default_factory=dict)


class StatLog:
    """The last ``kept`` stat snapshots of one root, by the clock minted for each.

    ``changes`` takes a new snapshot and compares it with the one of the asked clock.
    The caller holds the root's lock."""

    def __init__(self, kept: int = SNAPSHOTS_KEPT) -> None:
        self.kept = kept
        self._snapshots: OrderedDict[str, StatSnapshot] = OrderedDict()
        self._minted = itertools.count(1)

    def __contains__(self, clock: str) -> bool:
        return clock in self._snapshots

    def changes(
        self,
        clock: str,
        base: str,
        abspath: Callable[[str], str],
        listing: Callable[[], Iterable[str]],
        max_bytes: int,
    ) -> ChangedSinceResult:
        """``readMany/changedSince`` from snapshots: ``listing()`` gives every visible
        file (workspace-relative; ``abspath`` makes them absolute), each is ``lstat``-ed
        (and hashed when racy, up to ``max_bytes``), and the snapshot is compared with
        the one of ``clock``: a file counts as changed when its stat data differ, when it
        was racy then and its hash differs now, or when it was racy then but could not be
        hashed. An unknown ``clock`` answers ``isFreshInstance`` with every file. The new
        snapshot's clock is ``{base}.{n}`` (``base``: the workspace clock); when nothing
        changed the asked clock is kept instead, its snapshot still the baseline."""
        started = time.time_ns()
        snap = StatSnapshot(started, {})

        def hashed(path: str) -> str | None:
            try:
                return file_sha256(path, max_bytes)
            except OSError:
                return None

        for rel in listing():
            path = abspath(rel)
            try:
                st = os.lstat(path)
            except OSError:
                continue  # deleted since the index listed it
            snap.files[rel] = stat_key(st)
            if is_racy(st.st_mtime_ns, started) and stat_mod.S_ISREG(st.st_mode):
                got = hashed(path)
                if got is not None:
                    snap.digests[rel] = got
        old = self._snapshots.get(clock)
        if old is None:
            return self._keep(f"{base}.{next(self._minted)}", snap, True, list(snap.files), [])

        def digest_now(rel: str) -> str | None:
            # A file racy in ``old`` but no longer racy now has no digest in ``snap``:
            # hash it now, or an unchanged file would count as changed.
            got = snap.digests.get(rel)
            return got if got is not None else hashed(abspath(rel))

        changed = [
            rel
            for rel, key in snap.files.items()
            if old.files.get(rel) != key
            or (rel in old.digests and old.digests[rel] != digest_now(rel))
            or (rel not in old.digests and is_racy(key.mtime_ns, old.taken_ns))
        ]
        deleted = sorted((rel for rel in old.files if rel not in snap.files), key=byte_order_key)
        if not changed and not deleted:
            self._snapshots.move_to_end(clock)
            return ChangedSinceResult(clock, False, [], [])
        return self._keep(f"{base}.{next(self._minted)}", snap, False, changed, deleted)

    def _keep(
        self, clock: str, snap: StatSnapshot, fresh: bool, changed: list[str], deleted: list[str]
    ) -> ChangedSinceResult:
        self._snapshots[clock] = snap
        while len(self._snapshots) > self.kept:
            self._snapshots.popitem(last=False)
        return ChangedSinceResult(clock, fresh, changed, deleted)
