"""The hint queue of one root's watcher (``watcher.Watcher``): change hints on their way
from the threads that see changes to the one applier thread that applies them.

watchdog's reader (or dispatcher) thread, the watch table and editor notifications put
``(rel, kinds)`` hints here (``push``); the watcher's applier thread sleeps on the queue
(``wait``) and takes everything queued as one batch (``take``). Besides the hints the
queue holds two requests: verify every walked folder (``verify``: set once the watches
are in, for changes between a folder's listing and its watch) and rescan the root
(``overflowed``: events were lost). Past ``MAX_PENDING`` queued hints the queue drops
them and keeps one rescan instead, so memory stays bounded during a flood.

One condition (``cond``) guards all of it. Nothing else is taken or called while it is
held (a log line at most), so any thread may push while it holds other locks.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["MAX_PENDING", "HintQueue"]

#: Logged under the watcher's name: its log lines are the watcher's, as before the split.
log = logging.getLogger("readmany_daemon.runtime.watcher")

#: Hints queued beyond this count are dropped for one rescan (bounded memory).
MAX_PENDING = 200_000


class HintQueue:
    """The pending hints of the watcher of folder ``root`` (``root`` only names it in the
    log). A hint is ``(rel, kinds)``: a workspace-relative path and a bit set of
    ``index.records`` kinds (``ENTRY``, ``CONTENT``, ``FOLDER``, ``GIT_INDEX``,
    ``RULES``). ``pending``, ``verify_all`` and ``overflow`` change only under ``cond``;
    reading them without it (``busy``) gives a hint of whether work waits, no more.
    Thread-safe."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.cond = threading.Condition(threading.Lock())
        self.pending: list[tuple[str, int]] = []
        #: every walked folder is to be stat'ed (``Index.verify``) with the next batch
        self.verify_all = False
        #: hints were lost: the next batch rescans the root instead
        self.overflow = False

    @property
    def busy(self) -> bool:
        """Whether hints or a request wait (read without the condition)."""
        return bool(self.pending or self.verify_all or self.overflow)

    def push(self, hints: list[tuple[str, int]]) -> None:
        """Queue ``hints`` and wake the applier; past ``MAX_PENDING`` queued, drop them
        all for one rescan (logged at WARNING). Nothing is queued after an overflow
        until ``take``: the rescan covers it."""
        with self.cond:
            if self.overflow:
                return
            if len(self.pending) + len(hints) > MAX_PENDING:
                self.overflow = True
                self.pending.clear()
                log.warning(
                    "watcher %s: more than %d changes queued; rescanning", self.root, MAX_PENDING
                )
            else:
                self.pending.extend(hints)
            self.cond.notify()

    def overflowed(self) -> None:
        """Events were lost (the kernel queue overflowed, or one could not be handled):
        drop what is queued and ask for one rescan of the root."""
        with self.cond:
            self.overflow = True
            self.pending.clear()
            self.cond.notify()

    def verify(self) -> None:
        """Ask the applier to stat every walked folder with its next batch."""
        with self.cond:
            self.verify_all = True
            self.cond.notify()

    def wake(self) -> None:
        """Wake every thread waiting in ``wait`` (the watcher stops)."""
        with self.cond:
            self.cond.notify_all()

    def wait(self, timeout: float) -> None:
        """Sleep until something is queued or ``timeout`` s passed (at once when
        something is queued already)."""
        with self.cond:
            if not self.pending and not self.verify_all and not self.overflow:
                self.cond.wait(timeout=timeout)

    def take(self) -> tuple[list[tuple[str, int]], bool, bool]:
        """Everything queued, leaving the queue empty: ``(hints, verify_all, overflow)``."""
        with self.cond:
            batch, self.pending = self.pending, []
            verify, self.verify_all = self.verify_all, False
            overflow, self.overflow = self.overflow, False
        return batch, verify, overflow
