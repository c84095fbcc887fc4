"""The daemon's pass that makes the outlines, tags and token counts of a root's files
ahead of the requests that need them (``rank.ahead``: what is made, and where it is kept).

``AheadPass.start`` queues the root's visible files (``RootRanking`` does it when it
queues them for the full-text index); the index's change listener queues each file a
change touches (``note_change``). A thread works through the queue, but only once the
full-text index is built and idle (``IndexKeeper.settle``: the pass never slows the
build): it starts a worker process (``worker.PrepWorker`` running ``rank.ahead.serve``:
an isolated interpreter at the lowest CPU priority, which reads the files, parses them
and writes the store itself), hands it ``BATCH_FILES`` paths at a time, and ends it
when the queue is empty. Requests never wait for it: they read the store (its own
connection), and make what it lacks on demand as before. A worker that fails is not
started again for this root (made on demand then).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Final

from readmany_daemon.rank.ahead import AheadStore
from readmany_daemon.rank.keeper import IndexKeeper
from readmany_daemon.rank.worker import PrepWorker, WorkerGone

__all__ = ["BATCH_FILES", "AheadPass"]

log = logging.getLogger(__name__)

#: Paths handed to the worker at a time (one transaction of the store each).
BATCH_FILES: Final = 64
#: How often (seconds) the thread looks whether the full-text index is idle, or closed.
POLL_SECONDS: Final = 0.5


class AheadPass:
    """The ahead pass of the files of ``root`` (absolute) into the store in ``path``
    (the root's full-text index file), after ``keeper``'s build. Raises
    ``sqlite3.Error`` or ``OSError`` when the store cannot be opened."""

    def __init__(self, root: str, path: str, keeper: IndexKeeper) -> None:
        self.root = root
        self.path = path
        #: The store read by requests (``outline``, ``tags``).
        self.store = AheadStore(path)
        self._keeper = keeper
        self._cv = threading.Condition()
        #: The root's files queued by ``start``, taken from ``_at`` on (a list: the
        #: daemon holds a pointer a file while the pass runs).
        self._files: Sequence[str] = ()
        self._at = 0
        #: Files changed since, oldest first: rel -> deleted.
        self._changed: dict[str, bool] = {}
        self._busy = False
        self._failed = False
        self._closed = False
        self._thread: threading.Thread | None = None
        #: The worker while a pass runs (``close`` ends it: the thread may wait for it).
        self._worker: PrepWorker | None = None
        #: Passes finished (the queue emptied by a worker).
        self.passes = 0

    def start(self, files: Sequence[str]) -> None:
        """Queue the root's visible ``files`` and start the thread (once)."""
        with self._cv:
            if self._thread is not None or self._closed:
                return
            self._files, self._at = files, 0
            self._thread = threading.Thread(
                target=self._run, name=f"readmany-ahead:{os.path.basename(self.root)}", daemon=True
            )
            self._thread.start()

    def note_change(self, rel: str, deleted: bool) -> None:
        """The index's change listener: ``rel`` changed (or is gone: ``deleted``)."""
        with self._cv:
            if self._thread is None:
                return
            self._changed.pop(rel, None)
            self._changed[rel] = deleted
            self._cv.notify_all()

    def pending(self) -> int:
        """Files queued and not yet handed to the worker."""
        with self._cv:
            return len(self._files) - self._at + len(self._changed)

    def settle(self, seconds: float) -> bool:
        """Wait until nothing is queued or being made, at most ``seconds``; whether so."""
        with self._cv:
            return self._cv.wait_for(
                lambda: self._closed or self._failed or (not self._queued() and not self._busy),
                timeout=seconds,
            )

    def close(self) -> None:
        """Stop the thread (after the batch in hand), end the worker, close the store."""
        with self._cv:
            self._closed = True
            worker = self._worker
            self._cv.notify_all()
        if worker is not None:  # the thread waits for its batch: end it now
            worker.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=15)
        self.store.close()

    def _queued(self) -> bool:
        return self._at < len(self._files) or bool(self._changed)

    def _take(self) -> list[tuple[str, bool, str | None]]:
        """The next ``BATCH_FILES`` queued files, as the worker's items."""
        with self._cv:
            out: list[tuple[str, bool, str | None]] = []
            while self._changed and len(out) < BATCH_FILES:
                rel = next(iter(self._changed))
                out.append((rel, self._changed.pop(rel), None))
            end = min(len(self._files), self._at + BATCH_FILES - len(out))
            out.extend((rel, False, None) for rel in self._files[self._at : end])
            self._at = end
            if self._at >= len(self._files):
                self._files, self._at = (), 0
            return out

    def _run(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._queued() or self._closed)
                if self._closed:
                    return
            # the full-text build first, untouched: its queue empty, its worker gone
            while not self._keeper.settle(POLL_SECONDS):
                if self._closed:
                    return
            if not self._one_pass():
                with self._cv:
                    self._failed = True
                    self._cv.notify_all()
                return

    def _one_pass(self) -> bool:
        """A worker through the queue until it is empty; False when the worker failed."""
        with self._cv:
            self._busy = True
        try:
            worker = PrepWorker(self.root, self.path, module="readmany_daemon.rank.ahead")
        except Exception as exc:  # any failure to start: made on demand from now on
            log.warning("no ahead worker for %s: %s", self.root, exc)
            self._idle()
            return False
        with self._cv:
            self._worker = worker
            self._cv.notify_all()
            if self._closed:  # closed meanwhile: ``close`` saw no worker to end
                worker.close()
        try:
            while not self._closed and (batch := self._take()):
                worker.submit(batch, 0)
                worker.result()
            if not self._closed:
                worker.submit([], 0)  # the pass is done: the worker says so in the store
                worker.result()
                self.passes += 1
        except WorkerGone as exc:
            if not self._closed:
                log.warning("ahead worker of %s failed: %s", self.root, exc)
                return False
        finally:
            worker.close()
            self._idle()
        return True

    def _idle(self) -> None:
        with self._cv:
            self._worker = None
            self._busy = False
            self._cv.notify_all()
