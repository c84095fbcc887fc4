"""Freshness: the answer reflects every write that finished before the request (PROTOCOL §6).

Three routes, chosen per request by its ``sync`` and by the root's watcher:

- **cookie barrier** (``sync: "auto"`` with a healthy watcher): ``Watcher.barrier``
  creates a cookie file in the watcher's private cookie folder and waits for its event;
  once it arrives every earlier write has been seen and the queued hints are applied.
- **stat route** (``sync: "stat"``, or ``auto`` when the watcher cannot vouch: starting,
  degraded, stopped, none): ``stat_route(index)`` switches the index's stat checks on for
  the duration of one engine call, so each folder an expansion covers and each named
  path's folder is compared with the disk first (folder mtimes; file contents are
  validated by stat in the content cache).
- **none** (``sync: "none"``): the index as it is.

Before the first two, ``sync_outside_rules`` stats the rule sources no watch covers (git's
configuration files, ``core.excludesFile``'s file, ``info/exclude``; ``rules/outside.py``)
and walks the root again when one changed what is visible.

When no watcher runs for a root (``watch=False``, the watcher off or gone) the stat
route also compares each walked folder's ignore files with their stamps
(``sync_ignore_files``): an in-place edit of a ``.gitignore`` moves no folder's mtime.
Whether a watcher vouches for the root's change log (``watcher_vouches``) picks how
``readMany/changedSince`` answers: from the change log, else from per-file stat
snapshots (``changelog.StatLog``).

``Freshness`` runs these for the roots of one service and owns the cookie folders: one
folder of this process under ``$XDG_RUNTIME_DIR/readmany`` (else the temp dir), one
sub-folder per watcher; folders left by dead processes are swept on the way. Typical use::

    with freshness.ensure(entry, params.sync, since=arrived):
        result = answer(entry.ws, params)
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any

from readmany_daemon.index.model import Index
from readmany_daemon.index.records import RULES
from readmany_daemon.racy import stat_key
from readmany_daemon.runtime.roots import RootEntry
from readmany_daemon.runtime.watcher import Watcher
from readmany_daemon.wire.messages import Sync

log = logging.getLogger(__name__)

#: Prefix of this process's cookie folder: ``readmany-cookies-<pid>-<random>``.
COOKIE_ROOT_PREFIX = "readmany-cookies-"


@contextlib.contextmanager
def stat_route(index: Index) -> Iterator[Index]:
    """Turn ``index``'s stat checks on for the ``with`` body (the stat route), then set
    them back as they were. The caller holds the root's lock for the whole body."""
    before = index.stat_checks
    index.stat_checks = True
    try:
        yield index
    finally:
        index.stat_checks = before


def watcher_runs(entry: RootEntry) -> bool:
    """Whether a watcher keeps ``entry``'s index current, at least in part: one runs
    (starting, running or degraded) and its root was not lost."""
    watcher = entry.watcher
    return (
        watcher is not None
        and watcher.state in ("starting", "running", "degraded")
        and not watcher.root_lost
    )


def watcher_vouches(entry: RootEntry) -> bool:
    """Whether ``entry``'s change log holds every change: a watcher runs, with its
    watches in (while it starts, a write into a file whose folder has no watch yet
    reaches no event: the start reports those after, ``Watcher._written_before_the_watches``),
    and is not degraded (a degraded one leaves folders unwatched, whose in-place edits
    no event reports). Otherwise ``changedSince`` answers from stat snapshots."""
    watcher = entry.watcher
    return watcher is not None and watcher.state == "running" and not watcher.root_lost


def _under_any(rel: str, tops: set[str]) -> bool:
    """Whether folder ``rel`` is one of ``tops`` or below one (``""`` is the root)."""
    while True:
        if rel in tops:
            return True
        if not rel:
            return False
        rel = rel.rpartition("/")[0]


def _ignore_stamp(entry: RootEntry, rel_dir: str) -> tuple[Any, ...]:
    """The stat data of folder ``rel_dir``'s ignore files (those that exist)."""
    ws = entry.ws
    base = ws.abspath(rel_dir)
    out: list[Any] = []
    for name in (".gitignore", *ws.settings.ignore_file_names):
        try:
            st = os.stat(os.path.join(base, name))
        except OSError:
            continue
        out.append((name, stat_key(st)))
    return tuple(out)


def sync_ignore_files(entry: RootEntry, index: Index) -> None:
    """Before a stat-route answer for a root no watcher runs for: re-walk each walked
    folder whose ignore files changed since they were stamped, or that was walked since
    the last answer and is not stamped yet (trusted no further), and the whole root when
    git's index file changed (``git add``, a checkout). The first call after the index
    was built only stamps. The caller holds the root's lock."""
    known = entry.ignore_stamps
    if known is None:
        entry.ignore_stamps = {rel: _ignore_stamp(entry, rel) for rel in index.walked_dirs()}
        return
    stale = [rel for rel in index.walked_dirs() if known.get(rel) != _ignore_stamp(entry, rel)]
    if index.rules.tracked_changed():
        stale = [""]
    if not stale:
        return
    done: set[str] = set()
    for rel in sorted(stale, key=lambda r: (r.count("/"), r)):
        if not _under_any(rel, done):
            index.refresh(rel)
            done.add(rel)
    for sub in index.walked_dirs():
        if _under_any(sub, done):
            known[sub] = _ignore_stamp(entry, sub)


def sync_outside_rules(index: Index) -> None:
    """Before any answer but ``sync: "none"``: walk the root again when a rule source
    that no watch covers changed (git's configuration: ``core.ignoreCase``,
    ``core.excludesFile``; the file ``core.excludesFile`` names; ``info/exclude``):
    ``IgnoreRules.outside_changed``, a few ``stat`` calls. The caller holds the root's
    lock."""
    if index.rules.outside_changed():
        index.apply([("", RULES)])


def stamp_ignore_files(entry: RootEntry, index: Index) -> None:
    """After a stat-route answer: stamp the folders it walked."""
    known = entry.ignore_stamps
    if known is not None:
        for rel in index.walked_dirs():
            if rel not in known:
                known[rel] = _ignore_stamp(entry, rel)


class Freshness:
    """The freshness barrier and the watchers of one service's roots.

    ``new_instance()`` gives a new clock instance for a root whose watcher lost changes
    (``RootEntry.reset_clock``). Every method that takes a ``RootEntry`` expects the
    caller to hold ``entry.lock``, except ``unwatch``.
    """

    def __init__(self, new_instance: Callable[[], str]) -> None:
        self._new_instance = new_instance
        self._cookie_root: str | None = None
        self._cookie_seq = itertools.count(1)
        self._lock = threading.Lock()

    # -- watchers

    def watch(self, entry: RootEntry, index: Index) -> Watcher:
        """Start a watcher keeping ``index`` (``entry``'s) current; it becomes
        ``entry.watcher``."""

        def reset() -> None:
            entry.reset_clock(self._new_instance())

        watcher = Watcher(
            entry.ws.root, index, entry.lock, cookie_dir=self._cookie_dir(), on_reset=reset
        )
        entry.watcher = watcher
        watcher.start()
        return watcher

    @staticmethod
    def unwatch(entry: RootEntry) -> None:
        """Stop ``entry``'s watcher, if one runs (does not take the root's lock)."""
        watcher, entry.watcher = entry.watcher, None
        if watcher is not None:
            watcher.stop()

    # -- the barrier

    @contextlib.contextmanager
    def ensure(
        self, entry: RootEntry, mode: Sync = "auto", since: float | None = None
    ) -> Iterator[bool]:
        """Make ``entry``'s index fresh for the ``with`` body, by ``mode`` (the request's
        ``sync``): ``auto`` → the watcher's cookie round trip (shared with a round trip
        that started after ``since``, the request's arrival: see ``Watcher.barrier``), or
        the stat route when it cannot vouch; ``stat`` → the stat route; ``none`` →
        nothing. Yields whether the body runs on the stat route (with no watcher
        running, after ``sync_ignore_files``). ``entry`` must be indexed."""
        if mode == "none":
            yield False
            return
        watcher = entry.watcher
        if watcher is not None and watcher.root_lost and os.path.isdir(entry.ws.root):
            # The folder is back (recreated, moved back): watch it afresh. The old
            # watcher is stopped on another thread (its loop may wait for this lock).
            threading.Thread(target=watcher.stop, name="readmany-watcher-stop").start()
            # A new folder may be another repository, or none: git's facts and the
            # rule files are read again and the root walked with them.
            index = entry.ws.index
            index.rules.reload()
            index.apply([("", RULES)])
            self.watch(entry, index)
            watcher = None  # this answer goes through stat checks; later ones the barrier
        if mode == "auto" and watcher is not None and watcher.barrier(since=since):
            sync_outside_rules(entry.ws.index)
            yield False
            return
        if watcher is not None:
            watcher.drain()
        index = entry.ws.index
        sync_outside_rules(index)
        unwatched = not watcher_runs(entry)
        if unwatched:
            sync_ignore_files(entry, index)
        with stat_route(index):
            yield True
        if unwatched:
            stamp_ignore_files(entry, index)

    @staticmethod
    def settle(entry: RootEntry) -> None:
        """Apply every change ``entry``'s watcher saw before now (a barrier, else what it
        has queued), so that none of them lands after a walk that follows."""
        watcher = entry.watcher
        if watcher is not None and not watcher.barrier():
            watcher.drain()

    # -- cookie folders

    def _cookie_dir(self) -> str | None:
        """A fresh private folder for one watcher's barrier cookies, below this process's
        cookie folder (made on first use, sweeping those of dead processes). None when
        none can be made: that watcher's barriers fall back to the stat route."""
        with self._lock:
            if self._cookie_root is None:
                base = tempfile.gettempdir()
                runtime = os.environ.get("XDG_RUNTIME_DIR", "")
                if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
                    base = os.path.join(runtime, "readmany")
                try:
                    os.makedirs(base, mode=0o700, exist_ok=True)
                    sweep_cookie_roots(base)
                    self._cookie_root = tempfile.mkdtemp(
                        prefix=f"{COOKIE_ROOT_PREFIX}{os.getpid()}-", dir=base
                    )
                except OSError as exc:
                    log.warning("no folder for barrier cookies (%s); using stat checks", exc)
                    return None
            return os.path.join(self._cookie_root, str(next(self._cookie_seq)))

    def close(self) -> None:
        """Remove this process's cookie folder (stop the watchers first)."""
        with self._lock:
            root, self._cookie_root = self._cookie_root, None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


def sweep_cookie_roots(base: str) -> None:
    """Remove ``readmany-cookies-<pid>-*`` folders in ``base`` whose process is gone."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if not name.startswith(COOKIE_ROOT_PREFIX):
            continue
        pid_text = name[len(COOKIE_ROOT_PREFIX) :].partition("-")[0]
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        except PermissionError:
            pass  # someone else's live process
