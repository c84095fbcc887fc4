"""Keeps one root's index current: watchdog → batched, merged change hints → ``Index.apply``.

With ``runtime/inotify.py``, the only module that imports watchdog. One ``Watcher`` per
warm root:

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
  ``lstat``/``scandir``. Hints queue up on the reader thread and one applier thread
  applies whatever is queued as one batch (after ``BATCH_DELAY`` to merge a burst),
  holding the root's lock, so a ``git checkout`` of thousands of files costs one re-list
  per touched folder.
* **Freshness barrier** (PROTOCOL §6, ``barrier``): a cookie file
  ``.watchman-cookie-<pid>-<n>`` is created in the cookie folder and its ``IN_CREATE``
  awaited. One inotify instance keeps one queue in event order across all its watches,
  and the kernel queues an event before the writing syscall returns; so once the cookie
  comes through, every write that finished before the request has been read, and the
  queued hints are applied before the answer (~0.05 ms round trip measured on a 6k-folder
  tree, against ~17 ms to stat every folder). The cookie folder is private (under
  ``$XDG_RUNTIME_DIR`` or the temp dir): nothing is written into the workspace, and roots
  without ``.git`` get the same barrier. When the kernel queue is empty and the reader
  has handled every batch it read (``inotify.queue_quiet``: the usual case between two
  edits), the same holds without a cookie, and none is written: two reader wake-ups and
  two thread hand-offs fewer per request.
* **Trouble.** Queue overflow (``IN_Q_OVERFLOW``, or more than ``MAX_PENDING`` hints
  queued) → the root is walked again, ``on_reset`` is called (changes were lost: the
  service starts a new clock instance) and a warning is kept. A watch that cannot be added
  (``ENOSPC``: ``fs.inotify.max_user_watches``; ``max_watches`` for tests) leaves that
  folder unwatched: state ``degraded`` with a warning, and barriers also stat the
  unwatched folders. Every ``RECONCILE_INTERVAL`` s the applier stats every walked folder
  (``Index.verify``: folder mtimes), looks for virtualenv markers removed from hidden
  folders (``Index.recheck_markers``: those folders are not watched), retries unwatched
  folders and drops stray watches.
  Nothing here raises into callers; a bug on a watchdog thread is logged and degrades.

States (``state``, shown by ``readMany/status``): ``starting`` (watches being added; the
barrier is the stat route meanwhile), ``running``, ``degraded`` (see above; answers stay
right through stat checks), ``off`` (no watcher could start), ``stopped``. ``warnings``
holds the last ``MAX_WARNINGS`` problems. Logs never hold file contents.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import math
import os
import shutil
import threading
import time
from collections.abc import Callable
from typing import Any

from readmany_daemon.index.model import Index
from readmany_daemon.index.records import CONTENT, ENTRY, FOLDER, GIT_INDEX, RULES
from readmany_daemon.runtime.inotify import inotify_fd_class, max_user_watches, queue_quiet

__all__ = ["BATCH_DELAY", "COOKIE_PREFIX", "RECONCILE_INTERVAL", "Watcher", "max_user_watches"]

log = logging.getLogger(__name__)

#: Seconds the applier waits after the first queued hint, to merge a burst into a batch.
BATCH_DELAY = 0.003
#: Seconds between two reconciles (every walked folder stat'ed, watches re-checked).
RECONCILE_INTERVAL = 60.0
#: Seconds a barrier waits for its cookie before it falls back to stat checks.
COOKIE_TIMEOUT = 2.0
#: Seconds barriers use stat checks after a cookie did not arrive, before trying again.
COOKIE_RETRY = 5.0
#: Hints queued beyond this count are dropped for one rescan (bounded memory).
MAX_PENDING = 200_000
MAX_WARNINGS = 20
COOKIE_PREFIX = ".watchman-cookie-"

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

_COOKIE = "cookie"
_GIT = "git"
_INFO = "info"


class Watcher:
    """Keeps ``index`` (of folder ``root``) current; see the module docstring.

    ``lock`` is the root's lock: every change to the index is made holding it (the
    applier thread takes it; ``barrier``/``drain`` expect the caller to hold it).
    ``cookie_dir``: a private folder for barrier cookies (created, removed at ``stop``;
    None: no cookies). ``on_reset()``: changes were lost (overflow), called on the applier
    thread holding ``lock``. ``backend``: ``"auto"`` (inotify on Linux, else an observer),
    ``"inotify"``, ``"observer"``. ``max_watches``: refuse watches past this count as the
    kernel would past ``max_user_watches`` (tests, or to cap what a root may take).
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
    ) -> None:
        self.root = root
        self.index = index
        self.lock = lock
        self.state = "starting"
        self.warnings: list[str] = []
        self.batches = 0  # batches applied so far (status, tests)
        #: barriers that waited for a cookie (the others found the queue quiet: tests)
        self.cookie_round_trips = 0
        self._cookie_dir = cookie_dir
        self._on_reset = on_reset
        self._backend = backend
        self._max_watches = max_watches
        self._batch_delay = batch_delay
        self._reconcile_interval = reconcile_interval
        self._root_slash = root.rstrip("/") + "/"
        self._plock = threading.Lock()  # pending hints, cookies, flags
        self._cond = threading.Condition(self._plock)
        self._pending: list[tuple[str, int]] = []
        self._verify_all = False
        self._overflow = False
        self._cookies: dict[str, threading.Event] = {}
        self._cookie_seq = itertools.count(1)
        self._cookie_ok = False
        self._cookie_retry_at = 0.0  # after a cookie timed out: when to try again
        self._want_info = False  # $GIT_COMMON_DIR/info appeared: watch it
        self._wlock = threading.Lock()  # the watch maps
        #: rel → wd << 32 | callback id (one int a folder: the maps cost ~12 B a file)
        self._by_rel: dict[str, int] = {}
        self._by_wd: dict[int, str] = {}
        self._special: dict[int, str] = {}  # wd → _COOKIE | _GIT | _INFO
        self._unwatched: set[str] = set()
        self._cids = itertools.count(1)
        self._fd: Any = None
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
        with self._cond:
            self._cond.notify_all()
        with self._fdlock:
            fd, self._fd = self._fd, None
        if fd is not None:
            fd.stop()
            fd.join(timeout=5)
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if self._cookie_dir is not None:
            shutil.rmtree(self._cookie_dir, ignore_errors=True)
        self.state = "stopped"

    @property
    def watched(self) -> int:
        """How many workspace folders have a watch."""
        return len(self._by_rel)

    @property
    def unwatched(self) -> int:
        """How many walked folders could not be watched."""
        return len(self._unwatched)

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
        if not self._cookie_ok and time.monotonic() >= self._cookie_retry_at:
            self._cookie_ok = self._cookie_watched()
        if self.state not in ("running", "degraded") or not self._cookie_ok or self.root_lost:
            self._drain_locked()
            return False
        if since is not None and self._barrier_started > since:
            return self._settle()
        started = time.monotonic()
        if queue_quiet(self._fd):
            # Nothing queued in the kernel and every batch read was handled: every write
            # that finished before now is in the hint queue (runtime/inotify.py).
            self._barrier_started = started
            return self._settle()
        assert self._cookie_dir is not None
        name = f"{COOKIE_PREFIX}{os.getpid()}-{next(self._cookie_seq)}"
        self.cookie_round_trips += 1
        got = threading.Event()
        with self._plock:
            self._cookies[name] = got
        path = os.path.join(self._cookie_dir, name)
        try:
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            except OSError as exc:
                self._cookie_ok = False
                self._warn(f"cannot create barrier cookies in {self._cookie_dir}: {exc.strerror}")
                self._drain_locked()
                return False
            arrived = got.wait(timeout)
            # removed already by someone cleaning the temp dir: nothing to undo
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        finally:
            with self._plock:
                self._cookies.pop(name, None)
        if not arrived:
            # Retried after COOKIE_RETRY s: a stuck queue must not cost every request the
            # whole timeout.
            self._cookie_ok = False
            self._cookie_retry_at = time.monotonic() + COOKIE_RETRY
            self._set_degraded(
                f"a barrier cookie did not arrive within {timeout:g} s; using stat checks"
            )
            self._drain_locked()
            return False
        self._barrier_started = started
        return self._settle()

    def _settle(self) -> bool:
        """The end of a barrier: apply the queue, stat the unwatched folders; False when
        an overflow (or a state change) means the watcher cannot vouch."""
        self._drain_locked()
        if self._overflow or self.state not in ("running", "degraded"):
            return False
        if self._unwatched:
            self.index.verify([d for d in self._unwatched if self.index.walks(d)])
            self._drain_locked()
        return True

    def push(self, hints: list[tuple[str, int]]) -> None:
        """Queue change hints from elsewhere (editor notifications, tests)."""
        with self._cond:
            self._queue(hints)

    # ------------------------------------------------------- watchdog callbacks (reader thread)

    def on_event(self, event: Any) -> None:
        """One inotify event (watchdog ``WatchCallback``): turn it into a hint."""
        try:
            self._on_event(event.wd, event.mask, event.name)
        except Exception:
            # Thread boundary: an exception here would end watchdog's reader thread and
            # silently stop every later event; log it and rescan as for a lost event.
            log.exception("watcher %s: handling an inotify event failed", self.root)
            with self._cond:
                self._overflow = True
                self._pending.clear()
                self._cond.notify()
            self._set_degraded("an event could not be handled (see the log); rescanning the root")

    def _on_event(self, wd: int, mask: int, raw: bytes) -> None:
        name = os.fsdecode(raw)
        with self._wlock:  # a watch being added publishes its folder under this lock
            rel = self._by_wd.get(wd)
            special = self._special.get(wd) if rel is None else None
        with self._cond:
            if rel is None:
                if special == _COOKIE:
                    got = self._cookies.get(name)
                    if got is not None and mask & _IN_CREATE:
                        got.set()
                elif special == _GIT:
                    if name == "index" and mask & (_ENTRY_BITS | _IN_MODIFY | _IN_CLOSE_WRITE):
                        self._queue([("", GIT_INDEX)])
                    elif name == "info" and mask & (_IN_CREATE | _IN_MOVED_TO):
                        self._queue([("", RULES)])
                        self._want_info = True
                elif (
                    special == _INFO
                    and name == "exclude"
                    and mask & (_ENTRY_BITS | _IN_MODIFY | _IN_CLOSE_WRITE)
                ):
                    self._queue([("", RULES)])
                return
            if not raw:  # the watched folder itself
                if mask & (_SELF_BITS | _IN_ATTRIB):
                    self._queue([(rel, FOLDER)])
                return
            path = f"{rel}/{name}" if rel else name
            kinds = 0
            if mask & _ENTRY_BITS:
                kinds |= ENTRY
            if mask & _CONTENT_BITS:
                kinds |= FOLDER if mask & _IN_ISDIR else CONTENT
            if kinds:
                self._queue([(path, kinds)])

    def on_watch_deleted(self, wd: int) -> None:
        """The kernel dropped a watch (its folder was deleted or unmounted)."""
        with self._wlock:
            rel = self._by_wd.pop(wd, None)
            if rel is not None and self._by_rel.get(rel, -1) >> 32 == wd:
                del self._by_rel[rel]
            special = self._special.pop(wd, None)
        if self._stopping.is_set():
            return
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
        elif special == _INFO:
            self.push([("", RULES)])
        elif special == _COOKIE:
            self._cookie_ok = False
            self._warn("the barrier cookie folder was removed; using stat checks")

    def on_queue_overflow(self) -> None:
        """The kernel queue overflowed: events were lost (watchdog logs it too)."""
        with self._cond:
            self._overflow = True
            self._pending.clear()
            self._cond.notify()
        self._set_degraded("inotify queue overflowed: events were lost; rescanning the root")

    # ---------------------------------------------------------------------- internals

    def _queue(self, hints: list[tuple[str, int]]) -> None:
        """Append hints (holding ``_plock``); past ``MAX_PENDING`` keep one rescan."""
        if self._overflow:
            return
        if len(self._pending) + len(hints) > MAX_PENDING:
            self._overflow = True
            self._pending.clear()
            log.warning(
                "watcher %s: more than %d changes queued; rescanning", self.root, MAX_PENDING
            )
        else:
            self._pending.extend(hints)
        self._cond.notify()

    def _warn(self, message: str) -> None:
        log.warning("watcher %s: %s", self.root, message)
        if message not in self.warnings:
            self.warnings.append(message)
            del self.warnings[:-MAX_WARNINGS]

    def _set_degraded(self, message: str) -> None:
        self._warn(message)
        if self.state in ("running", "starting"):
            self.state = "degraded"

    def _healthy_state(self) -> None:
        """Back to ``running`` once nothing degrades the watcher any more."""
        if (
            self.state == "degraded"
            and not self._unwatched
            and not self._overflow
            and (self._cookie_ok or self._cookie_dir is None)
        ):
            self.state = "running"

    def _run(self) -> None:
        try:
            self._setup()
            self._started.set()
            self._loop()
        except Exception:
            # Thread boundary: a bug here must not end the daemon; answers fall back to
            # stat checks (state degraded) and the traceback goes to the log.
            log.exception("watcher %s failed", self.root)
            self._set_degraded("the watcher failed (see the log); using stat checks")
        finally:
            self._started.set()

    def _setup(self) -> None:
        inotify = inotify_fd_class() if self._backend in ("auto", "inotify") else None
        if inotify is not None:
            with self._fdlock:
                if self._stopping.is_set():
                    return
                try:
                    fd = inotify()
                except OSError as exc:
                    self.state = "off"
                    self._warn(f"cannot start inotify ({exc.strerror}); using stat checks")
                    return
                fd.start()
                self._fd = fd
            self._setup_inotify()
        else:
            self._setup_observer()
        self._next_reconcile = time.monotonic() + self._reconcile_interval

    def _setup_inotify(self) -> None:
        if self._cookie_dir is not None:
            try:
                os.makedirs(self._cookie_dir, mode=0o700, exist_ok=True)
                self._cookie_ok = self._add_special(self._cookie_dir, _COOKIE)
            except OSError as exc:
                self._warn(f"no barrier cookies ({self._cookie_dir}: {exc.strerror})")
        repo = self.index.rules.repo
        if repo is not None:
            self._add_special(repo.gitdir, _GIT)
            info = os.path.join(repo.commondir, "info")
            if os.path.isdir(info):
                self._add_special(info, _INFO)
            if repo.commondir != repo.gitdir:
                self._add_special(repo.commondir, _GIT)
        with self.lock:
            dirs = self.index.walked_dirs()
            self.index.add_dir_listener(self._on_dirs)
        limit = max_user_watches()
        if limit is not None and len(dirs) > limit:
            self._warn(f"{len(dirs)} folders to watch but fs.inotify.max_user_watches is {limit}")
        for rel in dirs:
            if self._stopping.is_set():
                return
            self._add(rel)
        with self._cond:
            self._verify_all = True  # changes between the walk and the watches
            self._cond.notify()
        if self.state == "starting":
            self.state = "running"
        self._healthy_state()
        log.info("watcher %s: %d folders watched", self.root, len(self._by_rel))

    def _add_special(self, path: str, kind: str) -> bool:
        cid = next(self._cids)
        fd = self._fd
        if fd is None:  # stopped meanwhile
            return False
        try:
            wd = fd.add_callback(os.fsencode(path), WATCH_MASK, self, cid)
        except OSError as exc:
            self._warn(f"cannot watch {path}: {exc.strerror}")
            return False
        if wd < 0:
            fd.remove_callbacks([(wd, cid)])
            return False
        with self._wlock:
            self._special[wd] = kind
        return True

    def _add(self, rel: str) -> None:
        """Watch walked folder ``rel`` (no-op when watched)."""
        with self._wlock:
            if rel in self._by_rel:
                return
            if self._max_watches is not None and len(self._by_rel) >= self._max_watches:
                self._unwatched.add(rel)
                self._limit_hit()
                return
            cid = next(self._cids)
            path = self._root_slash + rel if rel else self.root
            fd = self._fd
            if fd is None:  # stopped meanwhile
                return
            try:
                wd = fd.add_callback(os.fsencode(path), WATCH_MASK, self, cid)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    self._unwatched.add(rel)
                    self._limit_hit()
                elif exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    self._queue_locked_free([(rel, FOLDER)])  # gone meanwhile: re-list
                elif exc.errno == errno.ENAMETOOLONG:
                    # past PATH_MAX: the walk could not list it either and warns so;
                    # stat-checked at each barrier, like a folder we may not read
                    self._unwatched.add(rel)
                else:
                    self._unwatched.add(rel)
                    self._set_degraded(f"cannot watch {rel or '.'}: {exc.strerror}")
                return
            if wd < 0:  # EACCES: watchdog returns -1 instead of raising
                fd.remove_callbacks([(wd, cid)])
                self._unwatched.add(rel)
                return
            other = self._by_wd.get(wd)
            if other is not None and other != rel:
                # The same folder known under another name (moved without our seeing
                # the old name go): that name is stale; re-list it.
                self._queue_locked_free([(other, FOLDER)])
            self._by_rel[rel] = wd << 32 | cid
            self._by_wd[wd] = rel
            self._unwatched.discard(rel)

    def _cookie_watched(self) -> bool:
        """Whether the cookie folder has its watch (barriers can use cookies)."""
        if self._cookie_dir is None:
            return False
        with self._wlock:
            return _COOKIE in self._special.values()

    def _queue_locked_free(self, hints: list[tuple[str, int]]) -> None:
        """Queue hints from code holding ``_wlock`` (not ``_plock``)."""
        with self._cond:
            self._queue(hints)

    def _remove(self, rel: str) -> None:
        with self._wlock:
            self._unwatched.discard(rel)
            got = self._by_rel.pop(rel, None)
            if got is None:
                return
            wd, cid = got >> 32, got & 0xFFFFFFFF
            if self._by_wd.get(wd) == rel:
                del self._by_wd[wd]
            self._fd.remove_callbacks([(wd, cid)])

    def _limit_hit(self) -> None:
        limit = self._max_watches if self._max_watches is not None else max_user_watches()
        self._set_degraded(
            f"inotify watch limit reached (max_user_watches = {limit}): some folders are not "
            "watched and are checked by stat (raise fs.inotify.max_user_watches)"
        )

    def _on_dirs(self, added: list[str], removed: list[str]) -> None:
        """The index's folder listener (called holding the root's lock)."""
        if self._fd is None:
            return
        for rel in removed:
            self._remove(rel)
        stale: list[tuple[str, int]] = []
        for rel in added:
            if self.index.walks(rel):
                self._add(rel)
                # changed between its listing and its watch: list it once more
                if self.index.is_stale(rel):
                    stale.append((rel, FOLDER))
        if stale:
            self.push(stale)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            with self._cond:
                if not self._pending and not self._verify_all and not self._overflow:
                    wait = max(0.0, self._next_reconcile - time.monotonic())
                    self._cond.wait(timeout=min(wait, 5.0))
            if self._stopping.is_set():
                return
            busy = self._pending or self._verify_all or self._overflow
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
        if self._want_info and self._fd is not None:
            self._want_info = False
            repo = self.index.rules.repo
            if repo is not None:
                self._add_special(os.path.join(repo.commondir, "info"), _INFO)
        for _ in range(100):  # each round only follows up on folders the last one added
            with self._cond:
                batch, self._pending = self._pending, []
                verify, self._verify_all = self._verify_all, False
                overflow, self._overflow = self._overflow, False
            if overflow:
                self.index.apply([("", RULES), ("", GIT_INDEX)])
                if self._on_reset is not None:
                    self._on_reset()
                self._cookie_retry_at = 0.0  # a cookie lost in the overflow: try again
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
        if self._fd is None:
            return
        if not self._cookie_ok:
            self._cookie_ok = self._cookie_watched()
        records = set(self.index.walked_dirs())
        with self._wlock:
            extra = [rel for rel in self._by_rel if rel not in records]
            missing = [rel for rel in records if rel not in self._by_rel]
            self._unwatched.intersection_update(records)
        for rel in extra:
            self._remove(rel)
        if missing:
            retry = [rel for rel in missing if rel in self._unwatched] or missing
            for rel in retry:
                with self._wlock:
                    self._unwatched.discard(rel)
                self._add(rel)
        self._healthy_state()

    # ---------------------------------------------------------------- other platforms

    def _setup_observer(self) -> None:
        """A recursive watchdog ``Observer`` over the root (FSEvents on macOS,
        ReadDirectoryChangesW on Windows) with change events only; no cookies."""
        from watchdog.events import (
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileSystemEvent,
            FileSystemEventHandler,
        )
        from watchdog.observers import Observer

        watcher = self
        repo = self.index.rules.repo
        gitdir = os.path.realpath(repo.gitdir) if repo is not None else None
        info = os.path.join(os.path.realpath(repo.commondir), "info") if repo else None

        class Handler(FileSystemEventHandler):
            def dispatch(self, event: FileSystemEvent) -> None:
                for raw in (event.src_path, getattr(event, "dest_path", "")):
                    if raw:
                        watcher._observed(os.fsdecode(raw), event, gitdir, info)

        observer = Observer()
        kinds: list[type[FileSystemEvent]] = [
            FileCreatedEvent,
            DirCreatedEvent,
            FileDeletedEvent,
            DirDeletedEvent,
            FileMovedEvent,
            DirMovedEvent,
            FileModifiedEvent,
            FileClosedEvent,
        ]
        handler = Handler()
        observer.schedule(handler, self.root, recursive=True, event_filter=kinds)
        if gitdir is not None and not gitdir.startswith(self._root_slash):
            observer.schedule(handler, gitdir, recursive=False, event_filter=kinds)
        observer.start()
        self._observer = observer
        with self._cond:
            self._verify_all = True
            self._cond.notify()
        self.state = "running"

    def _observed(self, path: str, event: Any, gitdir: str | None, info: str | None) -> None:
        if gitdir is not None and (path == gitdir or path.startswith(gitdir + os.sep)):
            tail = path[len(gitdir) + 1 :]
            if tail == "index":
                self.push([("", GIT_INDEX)])
            return
        if info is not None and path == os.path.join(info, "exclude"):
            self.push([("", RULES)])
            return
        if not path.startswith(self._root_slash):
            return
        rel = path[len(self._root_slash) :].replace(os.sep, "/")
        if rel == ".git" or rel.startswith(".git/") or "/.git/" in rel:
            return
        if event.event_type in ("created", "deleted", "moved"):
            self.push([(rel, ENTRY)])
        elif not event.is_directory:
            self.push([(rel, CONTENT)])
