"""The barrier cookies of one root's watcher (``watcher.Watcher.barrier``), as watchman's
cookie sync: a file ``.watchman-cookie-<pid>-<n>`` is created in a private folder the
watcher watches, and its ``IN_CREATE`` is awaited. One inotify instance keeps one queue
in event order, so once the cookie's event comes through, every write that finished
before the file was created has been read (PROTOCOL §6).

``CookieSync`` owns the folder's cookies: the round trip (create, wait, unlink), the
cookies being waited for (the reader thread marks them arrived), how many round trips
were made, and whether cookies can be used now (``ok``; after a cookie that did not come,
not before ``retry_at``). Whether the folder has its watch is the watcher's to say: it
sets ``ok`` from its watch table.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import threading
import time
from collections.abc import Callable

__all__ = ["COOKIE_PREFIX", "COOKIE_RETRY", "COOKIE_TIMEOUT", "LIVENESS_STEP", "CookieSync"]

#: Seconds a barrier waits for its cookie before it falls back to stat checks.
COOKIE_TIMEOUT = 2.0
#: Seconds barriers use stat checks after a cookie did not arrive, before trying again.
COOKIE_RETRY = 5.0
#: Seconds between two looks at the watcher's threads while a barrier waits for a cookie.
LIVENESS_STEP = 0.05
COOKIE_PREFIX = ".watchman-cookie-"


class CookieSync:
    """The barrier cookies in private folder ``folder`` (absolute; None: no cookies).

    ``ok``: whether barriers may use cookies now (set by the watcher when the folder has
    its watch; cleared here when a cookie cannot be created or does not come).
    ``retry_at``: after a cookie did not come, the ``time.monotonic()`` before which
    barriers use stat checks without asking again. ``round_trips``: cookies created so
    far (status, tests). Thread-safe: the cookies waited for are kept under one lock,
    taken by the barrier's thread and by watchdog's reader thread (``arrived``), never
    while waiting."""

    def __init__(self, folder: str | None) -> None:
        self.folder = folder
        self.ok = False
        self.retry_at = 0.0
        self.round_trips = 0
        self._lock = threading.Lock()
        self._waiting: dict[str, threading.Event] = {}
        self._seq = itertools.count(1)

    def round_trip(self, timeout: float, dead: Callable[[], bool]) -> bool | None:
        """Create a cookie and wait up to ``timeout`` s for ``arrived`` to be called with
        its name, asking ``dead()`` every ``LIVENESS_STEP`` s whether a thread that would
        deliver it has ended. True: it came; False: it did not come in time (``ok`` is
        cleared until ``retry_at``, ``COOKIE_RETRY`` s from now: a stuck queue must not
        cost every request the whole timeout); None: ``dead()`` said so first. The cookie
        file is removed before returning. Raises ``OSError`` when it cannot be created
        (``ok`` cleared)."""
        assert self.folder is not None
        name = f"{COOKIE_PREFIX}{os.getpid()}-{next(self._seq)}"
        self.round_trips += 1
        got = threading.Event()
        with self._lock:
            self._waiting[name] = got
        path = os.path.join(self.folder, name)
        try:
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            except OSError:
                self.ok = False
                raise
            arrived = self._await(got, timeout, dead)
            # removed already by someone cleaning the temp dir: nothing to undo
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        finally:
            with self._lock:
                self._waiting.pop(name, None)
        if arrived is False:
            self.ok = False
            self.retry_at = time.monotonic() + COOKIE_RETRY
        return arrived

    @staticmethod
    def _await(got: threading.Event, timeout: float, dead: Callable[[], bool]) -> bool | None:
        """Wait up to ``timeout`` s for ``got``, asking ``dead()`` every
        ``LIVENESS_STEP`` s: None as soon as it says True."""
        deadline = time.monotonic() + timeout
        while not got.wait(min(LIVENESS_STEP, max(0.0, deadline - time.monotonic()))):
            if dead():
                return None
            if time.monotonic() >= deadline:
                return False
        return True

    def arrived(self, name: str) -> None:
        """The cookie folder's ``IN_CREATE`` for file ``name`` was read (watchdog's
        reader or dispatcher thread): wake the barrier waiting for it, if one is."""
        with self._lock:
            got = self._waiting.get(name)
        if got is not None:
            got.set()

    def remove(self) -> None:
        """Remove the cookie folder and what is in it (the watcher stops)."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
