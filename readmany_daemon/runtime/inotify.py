"""watchdog's ``InotifyFD`` (Linux), with what the freshness barrier needs to skip its
cookie round trip when the kernel queue is empty.

The kernel queues an inotify event before the syscall that caused it returns
(inotify(7); fsnotify is called in the VFS path of the write, create, rename or close).
So when a barrier finds the instance's queue empty (``FIONREAD`` is 0) *and* the reader
thread has handled every batch it read (its counters agree), every change that finished
before the barrier has reached the watcher's hint queue: no cookie is needed. Otherwise
the barrier falls back to its cookie (``watcher.Watcher.barrier``).

The counters: ``reads`` goes up on the reader thread when ``poll`` says the fd is
readable, just before watchdog's ``os.read``; ``handled`` takes the value of ``reads``
when the reader comes back for its next batch (watchdog's ``run`` handles a whole batch
between two ``read_events`` calls). A barrier reads ``FIONREAD`` first and the counters
second: an event consumed by a read before the barrier looked at the queue was read by
a batch that is still counted in ``reads``, and is handled by the time ``handled``
catches up. The two private names this relies on (``_check_inotify_fd``,
``_inotify_fd``) are checked against the installed watchdog by
``tests/unit/test_watchdog_contract.py``; without them the class is plain ``InotifyFD``
and every barrier uses its cookie.
"""

from __future__ import annotations

import fcntl
import functools
import struct
import termios
from typing import Any

__all__ = ["WATCHDOG_PRIVATE_NAMES", "inotify_fd_class", "max_user_watches", "queue_quiet"]

#: The names of watchdog's ``InotifyFD`` this module relies on beyond its public API.
WATCHDOG_PRIVATE_NAMES = ("_check_inotify_fd", "_inotify_fd")


def max_user_watches() -> int | None:
    """``/proc/sys/fs/inotify/max_user_watches`` (Linux), or None."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", "rb") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


@functools.cache
def inotify_fd_class() -> Any:
    """watchdog's ``InotifyFD`` (watchdog ≥ 7 on Linux) with read counters (see the
    module), plain ``InotifyFD`` when its private names are missing, or None (not Linux,
    or an older watchdog)."""
    try:
        from watchdog.observers.inotify_c import InotifyFD
    except (ImportError, OSError):  # not Linux (no libc inotify), or an older watchdog
        return None
    if not hasattr(InotifyFD, "add_callback"):
        return None
    if not hasattr(InotifyFD, "_check_inotify_fd"):
        return InotifyFD

    class CountingInotifyFD(InotifyFD):
        """``InotifyFD`` counting the batches its reader thread reads and handles."""

        def __init__(self) -> None:
            self.reads = 0
            self.handled = 0
            super().__init__()

        def _check_inotify_fd(self) -> bool:
            ready: bool = super()._check_inotify_fd()
            if ready:
                self.reads += 1  # before watchdog's os.read of this batch
            return ready

        def read_events(self, *args: Any, **kwargs: Any) -> Any:
            self.handled = self.reads  # the batch before this call was handled whole
            return super().read_events(*args, **kwargs)

    return CountingInotifyFD


def _pending_bytes(fd: int) -> int:
    """Bytes of events queued in inotify instance ``fd`` (``FIONREAD``); -1 on error."""
    try:
        got = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return -1
    value: int = struct.unpack("i", got)[0]
    return value


def queue_quiet(inotify: Any) -> bool:
    """Whether every event the kernel queued on ``inotify`` (a running instance of
    :func:`inotify_fd_class`) before this call has been handled by its reader thread;
    False when that is not known (plain ``InotifyFD``, a closed fd)."""
    fd = getattr(inotify, "_inotify_fd", None)
    if fd is None or not hasattr(inotify, "reads"):
        return False
    if _pending_bytes(fd) != 0:  # the queue first, the counters second (module doc)
        return False
    return bool(inotify.reads == inotify.handled)
