"""Keeps one root's index current: watchdog → batched, merged change hints → ``Index.apply``.

With ``runtime/inotify.py`` and ``runtime/observer.py`` (off Linux), the only modules that
import watchdog. One ``Watcher`` per warm root:

* **What is watched.** On Linux, watchdog's ``InotifyFD`` (one inotify instance per root,
  its own reader thread) with one non-recursive watch per *walked* folder of the index,
  so ``node_modules/``, ``.venv/``, ``.git/`` and everything else the rules prune raise
  nothing; plus git's dir (``index``: the tracked set) and ``$GIT_COMMON_DIR/info/``
  (``exclude``), and a private cookie folder outside the workspace (below). The mask
  holds only change events (create, delete, moves, modify, close-after-write, attrib,
  delete/move of the folder itself), never ``IN_OPEN``/``IN_CLOSE_NOWRITE``/``IN_ACCESS``
  (every file the engine reads would raise events: DESIGN.md "Freshness facts"). The
  watches follow the index: the index's folder listener adds a watch for each folder a
  change walks and removes those it drops. watchdog's recursive observer is not used on
  Linux: it watches everything below the root, its move-pairing queue holds every later
  event back for 0.5 s behind an unpaired ``IN_MOVED_FROM`` (``DelayedQueue.get`` sleeps
  on the head), and it swallows add-watch errors below the root. Elsewhere (macOS
  FSEvents, Windows) a recursive ``Observer`` with an ``event_filter`` of change events
  feeds the same hints; there is no cookie there, so freshness uses the stat route.
* **Events are hints.** Each event becomes ``(rel, kinds)`` (``index.ENTRY`` for a
  created/deleted/renamed entry, ``CONTENT`` for a write, ``FOLDER`` when a watched
  folder itself went away, ``GIT_INDEX``, ``RULES``); ``Index.apply`` confirms with
  ``lstat``/``scandir``. Hints queue up on the reader thread (``runtime/hints.py``) and
  one applier thread applies whatever is queued as one batch (after ``BATCH_DELAY`` to
  merge a burst), holding the root's lock, so a ``git checkout`` of thousands of files
  costs one re-list per touched folder.
* **Freshness barrier** (PROTOCOL §6, ``barrier``): a cookie file
  ``.watchman-cookie-<pid>-<n>`` is created in the cookie folder and its ``IN_CREATE``
  awaited (``runtime/cookies.py``). One inotify instance keeps one queue in event
  order across all its watches, and the kernel queues an event before the writing
  syscall returns; so once the cookie comes through, every write that finished before
  the request has been read, and the queued hints are applied before the answer
  (~0.05 ms round trip measured on a 6k-folder tree, against ~17 ms to stat every
  folder). The cookie folder is private (under ``$XDG_RUNTIME_DIR`` or the temp dir):
  nothing is written into the workspace, and roots without ``.git`` get the same
  barrier. When the kernel queue is empty and the reader has handled every batch it
  read (``inotify.queue_quiet``: the usual case between two edits), the same holds
  without a cookie, and none is written: two reader wake-ups and two thread hand-offs
  fewer per request.
* **Trouble.** Queue overflow (``IN_Q_OVERFLOW``, or more than ``hints.MAX_PENDING``
  hints queued) → the root is walked again, ``on_reset`` is called (changes were lost: the
  service starts a new clock instance) and a warning is kept. A watch that cannot be added
  (``ENOSPC``: ``fs.inotify.max_user_watches``; ``max_watches`` for tests) leaves that
  folder unwatched: state ``degraded`` with a warning, and barriers also stat the
  unwatched folders. Every ``RECONCILE_INTERVAL`` s the applier stats every walked folder
  (``Index.verify``: folder mtimes), looks for virtualenv markers removed from hidden
  folders (``Index.recheck_markers``: those folders are not watched), retries unwatched
  folders and drops stray watches.
  Nothing here raises into callers; a bug on a watchdog thread is logged and degrades.
* **Dead threads.** Each barrier (and each wait for a cookie, every
  ``cookies.LIVENESS_STEP`` s) checks watchdog's reader and dispatcher threads and the
  applier; one gone restarts the watcher in place: a new inotify instance and watch
  table (``runtime/watches.py``), the watches added again, the root rescanned
  (``_rescan_locked``), logged at WARNING with the cause, which is also kept in
  ``warnings``. So no barrier waits for a cookie a dead thread cannot deliver. At most
  ``MAX_RESTARTS`` restarts in ``RESTART_WINDOW`` s; past that, or when a restart
  fails, barriers use stat checks and the state is ``degraded`` (docs/reliability.md).
* **watchdog's shape** (``inotify.barrier_shape``): checked once a process; when its
  private API does not fit, plain ``InotifyFD`` and cookies (``barrier_kind``
  ``"cookie"``, ``barrier_reason`` saying why; shown by ``readMany/status``).

States (``state``, shown by ``readMany/status``): ``starting`` (watches being added; the
barrier is the stat route meanwhile), ``running``, ``degraded`` (see above; answers stay
right through stat checks), ``off`` (no watcher could start), ``stopped``. ``warnings``
holds the last ``MAX_WARNINGS`` problems. Logs never hold file contents.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from readmany_daemon.index.model import Index
from readmany_daemon.index.records import CONTENT, ENTRY, FOLDER, GIT_INDEX, RULES
from readmany_daemon.racy import RACY_NS
from readmany_daemon.runtime.cookies import COOKIE_PREFIX, COOKIE_TIMEOUT, CookieSync
from readmany_daemon.runtime.hints import HintQueue
from readmany_daemon.runtime.inotify import (
    Shape,
    barrier_shape,
    death_cause,
    log_shape,
    max_user_watches,
    queue_quiet,
    reader_threads,
    watchdog_version,
)
from readmany_daemon.runtime.observer import start_observer
from readmany_daemon.runtime.watches import COOKIE, GIT, INFO, WatchTable

__all__ = ["BATCH_DELAY", "COOKIE_PREFIX", "RECONCILE_INTERVAL", "Watcher", "max_user_watches"]

log = logging.getLogger(__name__)

#: Seconds the applier waits after the first queued hint, to merge a burst into a batch.
BATCH_DELAY = 0.003
#: Seconds between two reconciles (every walked folder stat'ed, watches re-checked).
RECONCILE_INTERVAL = 60.0
#: Restarts of one root's watcher allowed within RESTART_WINDOW s; then stat checks.
MAX_RESTARTS = 3
RESTART_WINDOW = 600.0
MAX_WARNINGS = 20
#: Files written between the listing and the watches past which the clocks start afresh
#: rather than each being reported changed (``Watcher._written_before_the_watches``).
RESET_FILES = 50_000
#: The lag of file times behind ``time.time_ns()`` on a file system with sub-second
#: times (the kernel stamps files from a coarse clock, a tick of 1-10 ms behind).
FINE_MARGIN_NS = 100_000_000

# inotify(7) bits (linux/inotify.h); the same values as watchdog's InotifyConstants.
_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_EXCL_UNLINK = 0x04000000
_IN_ISDIR = 0x40000000
_ENTRY_BITS = _IN_CREATE | _IN_DELETE | _IN_MOVED_FROM | _IN_MOVED_TO
_CONTENT_BITS = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_ATTRIB
_SELF_BITS = _IN_DELETE_SELF | _IN_MOVE_SELF
#: Change events only (no IN_OPEN, IN_ACCESS, IN_CLOSE_NOWRITE); folders only; never
#: follow a symlink; no events from files unlinked while open.
WATCH_MASK = (
    _ENTRY_BITS | _CONTENT_BITS | _SELF_BITS | _IN_ONLYDIR | _IN_DONT_FOLLOW | _IN_EXCL_UNLINK
)


class Watcher:
    """Keeps ``index`` (of folder ``root``) current; see the module docstring.

    ``lock`` is the root's lock: every change to the index is made holding it (the
    applier thread takes it; ``barrier``/``drain`` expect the caller to hold it).
    ``cookie_dir``: a private folder for barrier cookies (created, removed at ``stop``;
    None: no cookies). ``on_reset()``: changes were lost (overflow), called on the applier
    thread holding ``lock``. ``backend``: ``"auto"`` (inotify on Linux, else an observer),
    ``"inotify"``, ``"observer"``. ``max_watches``: refuse watches past this count as the
    kernel would past ``max_user_watches`` (tests, or to cap what a root may take).
    ``shape``: the watchdog shape to use (``inotify.barrier_shape()`` when None; tests).

    A watcher thread found dead by a barrier (watchdog's reader or dispatcher, the
    applier) restarts the watcher in place (``_restart_locked``): a new inotify instance,
    the watches added again, the root rescanned; at most ``MAX_RESTARTS`` in
    ``RESTART_WINDOW`` s, then stat checks (state ``degraded``). Clocks stay valid: what
    the rescan finds goes through ``Index.apply`` like any change.
    """

    def __init__(
        self,
        root: str,
        index: Index,
        lock: threading.Lock,
        *,
        cookie_dir: str | None = None,
        on_reset: Callable[[], None] | None = None,
        backend: str = "auto",
        max_watches: int | None = None,
        batch_delay: float = BATCH_DELAY,
        reconcile_interval: float = RECONCILE_INTERVAL,
        shape: Shape | None = None,
    ) -> None:
        self.root = root
        self.index = index
        self.lock = lock
        self.state = "starting"
        self.warnings: list[str] = []
        self.batches = 0  # batches applied so far (status, tests)
        #: Times events may have been missed (degraded, restarted, stopped): a change
        #: log position taken while it was ``running`` holds every later change of a
        #: visible file only while this count stays the same (``runtime/ledger.py``).
        self.gaps = 0
        self._cookie_dir = cookie_dir
        self._on_reset = on_reset
        self._backend = backend
        self._max_watches = max_watches
        self._batch_delay = batch_delay
        self._reconcile_interval = reconcile_interval
        self._root_slash = root.rstrip("/") + "/"
        self._hints = HintQueue(root)
        self._cookies = CookieSync(cookie_dir)
        self._want_info = False  # $GIT_COMMON_DIR/info appeared: watch it
        self._shape = shape
        self._table: WatchTable | None = None  # the watches of the current instance
        self._fd: Any = None
        #: barrier route (protocol §2 ``barrier``) and why it is not ``quiet-queue``
        self.barrier_kind = "stat"
        self.barrier_reason = f"{watchdog_version()}: the watcher is starting"
        #: restarts (monotonic s) within RESTART_WINDOW; why the watcher is broken
        self._restarts: deque[float] = deque()
        self.broken: str | None = None  # why barriers use stat checks for good
        self._died: str | None = None  # the applier's exception, when it ended
        #: time.time_ns() at the start of the last barrier that proved every event handled
        self._synced_ns = time.time_ns()
        #: the root's own watch is gone (the folder deleted or moved away)
        self.root_lost = False
        #: when the last cookie round trip that arrived started (monotonic s; root lock)
        self._barrier_started = -math.inf
        self._fdlock = threading.Lock()  # _fd is set (started) or taken by stop() under it
        self._observer: Any = None
        self._stopping = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"readmany-watch {os.path.basename(root)}", daemon=True
        )
        self._next_reconcile = 0.0

    # ------------------------------------------------------------------------- public

    def start(self) -> None:
        """Start the applier thread; it adds the watches (state ``starting`` until they
        are in) and then applies hints as they come. Returns at once."""
        self._thread.start()

    def wait_started(self, timeout: float | None = None) -> bool:
        """Wait until the watches are in (or the start failed); True if that happened."""
        return self._started.wait(timeout)

    def stop(self) -> None:
        """Stop watching (idempotent): remove the watches, end the threads, remove the
        cookie folder. Does not take the root's lock."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._hints.wake()
        with self._fdlock:
            fd, self._fd = self._fd, None
        if fd is not None:
            fd.stop()
            fd.join(timeout=5)
        self._table = None
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._cookies.remove()
        self.state = "stopped"

    @property
    def cookie_round_trips(self) -> int:
        """Barriers that waited for a cookie (the others found the queue quiet: tests)."""
        return self._cookies.round_trips

    @property
    def watched(self) -> int:
        """How many workspace folders have a watch."""
        return self._table.watched if self._table is not None else 0

    @property
    def unwatched(self) -> int:
        """How many walked folders could not be watched."""
        return len(self._unwatched)

    @property
    def _unwatched(self) -> set[str]:
        return self._table.unwatched if self._table is not None else set()

    def drain(self) -> None:
        """Apply every queued hint now. The caller holds the root's lock."""
        self._drain_locked()

    def barrier(self, timeout: float = COOKIE_TIMEOUT, since: float | None = None) -> bool:
        """Make the index reflect every write that finished before this call (PROTOCOL §6)
        with a cookie round trip, then apply what is queued. The caller holds the root's
        lock. Returns False when the watcher cannot vouch for that (starting, degraded
        by an overflow, no cookie folder, a cookie that did not come within ``timeout``
        s): the caller uses stat checks instead. Folders left unwatched by the watch
        limit are stat'ed here.

        ``since``: when the request arrived (``time.monotonic()``, taken before waiting
        for the root's lock). A round trip that started after it (another
        request's, while this one waited) already covers every write that finished
        before it, so only the queue is applied: concurrent requests share barriers,
        as a group commit shares a disk flush."""
        dead = self._dead_thread()
        if dead is not None and not self._restart_locked(dead):
            self._drain_locked()
            return False
        cookies = self._cookies
        if not cookies.ok and time.monotonic() >= cookies.retry_at:
            cookies.ok = self._cookie_watched()
        if self.state not in ("running", "degraded") or not cookies.ok or self.root_lost:
            self._drain_locked()
            return False
        if since is not None and self._barrier_started > since:
            return self._settle()
        started, started_ns = time.monotonic(), time.time_ns()
        if queue_quiet(self._fd):
            # Nothing queued in the kernel and every batch read was handled: every write
            # that finished before now is in the hint queue (runtime/inotify.py).
            self._barrier_started, self._synced_ns = started, started_ns
            return self._settle()
        try:
            arrived = cookies.round_trip(timeout, lambda: self._dead_thread() is not None)
        except OSError as exc:
            self._warn(f"cannot create barrier cookies in {self._cookie_dir}: {exc.strerror}")
            self._drain_locked()
            return False
        if arrived is None:  # a thread died meanwhile: no cookie can come
            dead = self._dead_thread()
            if dead is None or not self._restart_locked(dead):
                self._drain_locked()
                return False
            return self._settle()
        if not arrived:  # cookies are tried again after COOKIE_RETRY s
            self._set_degraded(
                f"a barrier cookie did not arrive within {timeout:g} s; using stat checks"
            )
            self._drain_locked()
            return False
        self._barrier_started, self._synced_ns = started, started_ns
        return self._settle()

    def _settle(self) -> bool:
        """The end of a barrier: apply the queue, stat the unwatched folders; False when
        an overflow (or a state change) means the watcher cannot vouch."""
        self._drain_locked()
        if self._hints.overflow or self.state not in ("running", "degraded"):
            return False
        if self._unwatched:
            self.index.verify([d for d in self._unwatched if self.index.walks(d)])
            self._drain_locked()
        return True

    def push(self, hints: list[tuple[str, int]]) -> None:
        """Queue change hints from elsewhere (editor notifications, tests)."""
        self._hints.push(hints)

    # ------------------------------------------------------- watchdog callbacks (reader thread)

    def on_event(self, event: Any) -> None:
        """One inotify event (watchdog ``WatchCallback``): turn it into a hint."""
        try:
            self._on_event(event.wd, event.mask, event.name)
        except Exception:  # the thread boundary (below): logged, then a rescan
            # An exception here would end watchdog's reader thread and silently stop
            # every later event; log it and rescan as for a lost event.
            log.exception("watcher %s: handling an inotify event failed", self.root)
            self._hints.overflowed()
            self._set_degraded("an event could not be handled (see the log); rescanning the root")

    def _on_event(self, wd: int, mask: int, raw: bytes) -> None:
        name = os.fsdecode(raw)
        table = self._table
        if table is None:
            return
        rel, special = table.lookup(wd)  # a watch being added publishes under its lock
        if rel is None:
            if special == COOKIE:
                if mask & _IN_CREATE:
                    self._cookies.arrived(name)
            elif special == GIT:
                if name == "index" and mask & (_ENTRY_BITS | _IN_MODIFY | _IN_CLOSE_WRITE):
                    self._hints.push([("", GIT_INDEX)])
                elif name == "info" and mask & (_IN_CREATE | _IN_MOVED_TO):
                    self._hints.push([("", RULES)])
                    self._want_info = True
            elif (
                special == INFO
                and name == "exclude"
                and mask & (_ENTRY_BITS | _IN_MODIFY | _IN_CLOSE_WRITE)
            ):
                self._hints.push([("", RULES)])
            return
        if not raw:  # the watched folder itself
            if mask & (_SELF_BITS | _IN_ATTRIB):
                self._hints.push([(rel, FOLDER)])
            return
        path = f"{rel}/{name}" if rel else name
        kinds = 0
        if mask & _ENTRY_BITS:
            kinds |= ENTRY
        if mask & _CONTENT_BITS:
            kinds |= FOLDER if mask & _IN_ISDIR else CONTENT
        if kinds:
            self._hints.push([(path, kinds)])

    def on_watch_deleted(self, wd: int) -> None:
        """The kernel dropped a watch (its folder was deleted or unmounted)."""
        table = self._table
        if table is None or self._stopping.is_set():
            return
        rel, special = table.drop(wd)
        if rel == "":
            # The workspace folder itself was deleted or moved away: nothing watches what
            # may come in its place. Until the service starts a new watcher on it, the
            # barrier cannot vouch (answers go through stat checks).
            self.root_lost = True
            self._set_degraded(
                "the workspace folder was removed or replaced; using stat checks until "
                "it is watched again"
            )
            self.push([("", FOLDER)])
        elif rel is not None:
            self.push([(rel, FOLDER)])  # gone, or replaced: re-list; re-watch if still there
        elif special == INFO:
            self.push([("", RULES)])
        elif special == COOKIE:
            self._cookies.ok = False
            self._warn("the barrier cookie folder was removed; using stat checks")

    def on_queue_overflow(self) -> None:
        """The kernel queue overflowed: events were lost (watchdog logs it too)."""
        self._hints.overflowed()
        self._set_degraded("inotify queue overflowed: events were lost; rescanning the root")

    # ---------------------------------------------------------------------- internals

    def _warn(self, message: str) -> None:
        log.warning("watcher %s: %s", self.root, message)
        if message not in self.warnings:
            self.warnings.append(message)
            del self.warnings[:-MAX_WARNINGS]

    def _set_degraded(self, message: str) -> None:
        self.gaps += 1
        self._warn(message)
        if self.state in ("running", "starting"):
            self.state = "degraded"

    def _healthy_state(self) -> None:
        """Back to ``running`` once nothing degrades the watcher any more."""
        if (
            self.state == "degraded"
            and not self._unwatched
            and not self._hints.overflow
            and (self._cookies.ok or self._cookie_dir is None)
        ):
            self.state = "running"

    def _run(self) -> None:
        try:
            self._setup()
            self._started.set()
            self._loop()
        except Exception as exc:
            # Thread boundary: a bug here must not end the daemon. The next barrier finds
            # this thread dead and restarts the watcher; the traceback goes to the log.
            log.exception("watcher %s failed", self.root)
            self._died = f"{type(exc).__name__}: {exc}"
            if self._fd is None:
                self._set_degraded("the watcher failed (see the log); using stat checks")
        finally:
            self._started.set()

    def _setup(self) -> None:
        shape = None
        if self._backend in ("auto", "inotify"):
            shape = self._shape or barrier_shape()
        if shape is not None and shape.cls is not None:
            log_shape(shape)
            self.barrier_kind, self.barrier_reason = shape.barrier, shape.reason
            with self._fdlock:
                if self._stopping.is_set():
                    return
                try:
                    self._new_instance(shape.cls)
                except OSError as exc:
                    self.state = "off"
                    self._warn(f"cannot start inotify ({exc.strerror}); using stat checks")
                    return
            self._setup_inotify()
        else:
            self.barrier_reason = f"{watchdog_version()}: no inotify (a recursive observer)"
            self._setup_observer()
        self._next_reconcile = time.monotonic() + self._reconcile_interval

    def _new_instance(self, cls: Any) -> None:
        """Start a new inotify instance of ``cls`` with an empty watch table; events of
        any earlier instance are ignored from now on."""
        fd = cls()
        self._table = WatchTable(
            self.root,
            fd,
            WATCH_MASK,
            _Feed(self, fd),
            (self._limit_hit, self.push, self._set_degraded, self._warn),
            self._max_watches,
        )
        fd.start()
        self._fd = fd

    def _setup_inotify(self) -> None:
        with self.lock:
            dirs = self.index.walked_dirs()
            self.index.add_dir_listener(self._on_dirs)
        self._watch_all(dirs)
        self._written_before_the_watches()  # (a restart rescans instead: _rescan_locked)
        if self.state == "starting":
            self.state = "running"
        self._healthy_state()
        log.info("watcher %s: %d folders watched", self.root, self.watched)

    def _watch_all(self, dirs: list[str]) -> None:
        """Add the special watches and one per folder of ``dirs``, then re-check every
        walked folder once (changes between its listing and its watch)."""
        table = self._table
        assert table is not None
        self._cookies.ok = table.add_specials(self._cookie_dir, self.index.rules.repo)
        limit = max_user_watches()
        if limit is not None and len(dirs) > limit:
            self._warn(f"{len(dirs)} folders to watch but fs.inotify.max_user_watches is {limit}")
        for rel in dirs:
            if self._stopping.is_set():
                return
            table.add(rel)
        self._hints.verify()  # changes between the walk and the watches

    def _written_before_the_watches(self) -> None:
        """Files written in place between the index's listing and their folder's watch:
        a folder's mtime shows created, deleted and renamed files (``verify``), not a
        write into one, nor ``os.replace`` onto one, and no event came, so a clock
        handed out before the watches were in would say nothing changed
        (``changedSince``). Every file whose ctime (which every write sets, and
        nothing sets back) or mtime lies after ``Index.opened_ns`` less a margin is
        queued as changed (one written just before the listing too: reported once
        more, correct, only less precise). The margin covers the lag of the kernel's
        coarse clock behind ``time.time_ns()``: ``FINE_MARGIN_NS`` where the file
        system keeps sub-second times, else ``RACY_NS`` (whole seconds: FAT, some
        network file systems). Past ``RESET_FILES`` of them (a fresh checkout), the
        clocks start afresh instead (``on_reset``: every older clock is then a fresh
        instance)."""
        with self.lock:
            files = self.index.files()
        stats: list[tuple[str, int]] = []
        fine = False
        for rel in files:
            if self._stopping.is_set():
                return
            st = self.index.stat(rel)
            if st is not None:
                stats.append((rel, max(st.st_ctime_ns, st.st_mtime_ns)))
                fine = fine or st.st_ctime_ns % 1_000_000_000 != 0
        floor = self.index.opened_ns - (FINE_MARGIN_NS if fine else RACY_NS)
        written = [(rel, CONTENT) for rel, when in stats if when >= floor]
        if len(written) > RESET_FILES:
            with self.lock:
                if self._on_reset is not None:
                    self._on_reset()
        elif written:
            self.push(written)

    # ------------------------------------------------------------- dead threads, restarts

    def _dead_thread(self) -> str | None:
        """What ended, when a thread the barrier relies on is gone (watchdog's reader or
        dispatcher, the applier), else None. Not while starting or stopping."""
        fd = self._fd
        if self._stopping.is_set() or not self._started.is_set():
            return None
        if fd is None:  # given up: try again once RESTART_WINDOW allows
            return self.broken
        for name, alive in reader_threads(fd):
            if not alive:
                why = death_cause(fd)
                return f"{name} thread ended" + (f" ({why})" if why else "")
        if not self._thread.is_alive():
            return "the watcher's applier thread ended" + (f" ({self._died})" if self._died else "")
        return None

    def _restart_locked(self, cause: str) -> bool:
        """Restart the watcher after ``cause`` (holding the root's lock): a new inotify
        instance and applier, the watches added again, the root rescanned
        (``_rescan_locked``). False, leaving state ``degraded`` with the cause in
        ``warnings`` (barriers then use stat checks), past ``MAX_RESTARTS`` in
        ``RESTART_WINDOW`` s or when the restart fails."""
        self.gaps += 1
        now = time.monotonic()
        while self._restarts and now - self._restarts[0] > RESTART_WINDOW:
            self._restarts.popleft()
        if self.broken is None or self._fd is not None:
            self._retire_instance()
        if len(self._restarts) >= MAX_RESTARTS:
            if self.broken is None:
                self.broken = (
                    f"{cause}; restarted {MAX_RESTARTS} times in {RESTART_WINDOW / 60:g} "
                    "minutes, so using stat checks"
                )
                self._set_degraded(self.broken)
            return False
        self._restarts.append(now)
        shape = self._shape or barrier_shape()
        try:
            with self._fdlock:
                if self._stopping.is_set():
                    return False
                self._new_instance(shape.cls)
            self._watch_all(self.index.walked_dirs())
            if not self._thread.is_alive():
                self._died = None
                self._thread = threading.Thread(
                    target=self._loop_guarded, name=self._thread.name, daemon=True
                )
                self._thread.start()
            self._rescan_locked(self._synced_ns)
        except OSError as exc:
            self.broken = f"{cause}; the restart failed ({exc.strerror}), so using stat checks"
            self._restarts.extend([now] * MAX_RESTARTS)  # no retry before the window ends
            self._retire_instance()
            self._set_degraded(self.broken)
            return False
        self.broken = None
        self._warn(  # logged at WARNING too
            f"{cause}; the watcher was restarted ({len(self._restarts)} of {MAX_RESTARTS} "
            f"in {RESTART_WINDOW / 60:g} minutes)"
        )
        self._healthy_state()  # running again, unless a watch limit or overflow remains
        return True

    def _retire_instance(self) -> None:
        """Stop the current inotify instance (its callbacks are ignored from now on)."""
        with self._fdlock:
            fd, self._fd, self._table = self._fd, None, None
        if fd is not None:
            fd.stop()
            fd.join(timeout=1)

    def _rescan_locked(self, since_ns: int) -> None:
        """After events may have been lost from ``since_ns`` (``time.time_ns()``) on:
        re-list every walked folder that changed, and report as changed every visible
        file whose ctime or mtime is within ``RACY_NS`` of ``since_ns`` or later (ctime
        moves with every write, rename or chmod, and cannot be set back)."""
        self._drain_locked()
        self.index.verify()
        hints = touched_since(self.index, since_ns - RACY_NS)
        if hints:
            self.index.apply(hints)
        self._drain_locked()

    def _loop_guarded(self) -> None:
        """The applier's loop after a restart (a thread boundary as ``_run``)."""
        try:
            self._loop()
        except Exception as exc:
            # Thread boundary: the next barrier finds this thread dead and restarts.
            log.exception("watcher %s failed", self.root)
            self._died = f"{type(exc).__name__}: {exc}"

    def _limit_hit(self) -> None:
        limit = self._max_watches if self._max_watches is not None else max_user_watches()
        self._set_degraded(
            f"inotify watch limit reached (max_user_watches = {limit}): some folders are not "
            "watched and are checked by stat (raise fs.inotify.max_user_watches)"
        )

    @property
    def cookies_ready(self) -> bool:
        """Whether barriers can use the cookie folder now (status)."""
        return self._fd is not None and self._cookies.ok

    def _cookie_watched(self) -> bool:
        """Whether the cookie folder has its watch (barriers can use cookies)."""
        table = self._table
        return self._cookie_dir is not None and table is not None and table.has_special(COOKIE)

    def _on_dirs(self, added: list[str], removed: list[str]) -> None:
        """The index's folder listener (called holding the root's lock)."""
        table = self._table
        if table is None:
            return
        for rel in removed:
            table.remove(rel)
        stale: list[tuple[str, int]] = []
        for rel in added:
            if self.index.walks(rel):
                table.add(rel)
                # changed between its listing and its watch: list it once more (not a
                # folder whose listing just failed: it would fail again, and again)
                if rel not in self.index.unlisted and self.index.is_stale(rel):
                    stale.append((rel, FOLDER))
        if stale:
            self.push(stale)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._hints.wait(min(max(0.0, self._next_reconcile - time.monotonic()), 5.0))
            if self._stopping.is_set():
                return
            busy = self._hints.busy
            reconcile = time.monotonic() >= self._next_reconcile
            if not busy and not reconcile:
                continue
            if busy and self._batch_delay:
                time.sleep(self._batch_delay)
            while not self.lock.acquire(timeout=0.1):
                if self._stopping.is_set():
                    return
            try:
                self._drain_locked()
                if reconcile:
                    self._reconcile_locked()
            finally:
                self.lock.release()

    def _drain_locked(self) -> None:
        """Apply queued hints until none are left (holding the root's lock)."""
        table = self._table
        if self._want_info and table is not None:
            self._want_info = False
            repo = self.index.rules.repo
            if repo is not None:
                table.add_special(os.path.join(repo.commondir, "info"), INFO)
        for _ in range(100):  # each round only follows up on folders the last one added
            batch, verify, overflow = self._hints.take()
            if overflow:
                self.index.apply([("", RULES), ("", GIT_INDEX)])
                if self._on_reset is not None:
                    self._on_reset()
                self._cookies.retry_at = 0.0  # a cookie lost in the overflow: try again
                self.batches += 1
                self._healthy_state()
                continue
            if not batch and not verify:
                return
            if verify:
                self.index.verify()
            if batch:
                self.index.apply(batch)
            self.batches += 1
            self._healthy_state()
        log.warning("watcher %s: changes keep coming; the rest waits for the next batch", self.root)

    def _reconcile_locked(self) -> None:
        """The periodic safety net: stat every walked folder, retry unwatched folders,
        drop watches of folders the index no longer walks."""
        self._next_reconcile = time.monotonic() + self._reconcile_interval
        self.index.verify()
        self.index.recheck_markers()
        self._drain_locked()
        table = self._table
        if table is None:
            return
        if not self._cookies.ok:
            self._cookies.ok = self._cookie_watched()
        table.reconcile(set(self.index.walked_dirs()))
        self._healthy_state()

    def _setup_observer(self) -> None:
        """Off Linux: a recursive watchdog ``Observer`` (``runtime/observer.py``); no cookies."""
        self._observer = start_observer(self.root, self.index, self.push)
        self._hints.verify()
        self._written_before_the_watches()
        self.state = "running"


def touched_since(index: Index, floor_ns: int) -> list[tuple[str, int]]:
    """``(rel, CONTENT)`` for every visible file of ``index`` whose ctime or mtime
    (``time.time_ns()`` units) is ``floor_ns`` or later."""
    hints: list[tuple[str, int]] = []
    for rel in index.files():
        st = index.stat(rel)
        if st is not None and max(st.st_ctime_ns, st.st_mtime_ns) >= floor_ns:
            hints.append((rel, CONTENT))
    return hints


class _Feed:
    """watchdog's ``WatchCallback`` for one inotify instance of a ``Watcher``: forwards
    to the watcher while that instance is its current one (after a restart, the old
    instance's last events and watch removals are dropped). Never raises into watchdog's
    threads (``Watcher.on_event`` guards itself; the others only queue)."""

    def __init__(self, watcher: Watcher, fd: Any) -> None:
        self._watcher = watcher
        self._fd = fd

    def _current(self) -> bool:
        return self._watcher._fd is self._fd

    def on_event(self, event: Any) -> None:
        if self._current():
            self._watcher.on_event(event)

    def on_watch_deleted(self, wd: int) -> None:
        # A stopped instance removes every watch as it closes (watchdog 7.1.1 stops itself
        # when its dispatcher fails): no folder went away; the next barrier restarts.
        if self._watcher._fd is self._fd and not self._fd.stopped_event.is_set():
            self._watcher.on_watch_deleted(wd)

    def on_queue_overflow(self) -> None:
        if self._current():
            self._watcher.on_queue_overflow()

    def on_events_lost(self) -> None:
        """watchdog ≥ 7.1.1 calls it after ``on_queue_overflow``."""
