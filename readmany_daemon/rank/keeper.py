"""Keeping a root's full-text index current: what is still to index, and the work.

``IndexKeeper`` holds the files to check (``pending``) and the ones known current
(``fresh``). A file is checked by ``lstat``: the same mark (size, mtime, inode) as the
indexed one makes it fresh; else its text is read (below the root only, no symbolic link
followed: ``content.reader.open_beneath``), decoded, redacted (the function the engine
passes: secrets indexed as redacted), identifiers split (``prep.prepare``) and written.
A file that is gone, or reported hidden by the index (``deleted``), is dropped.

A big queue (``POOL_MIN_FILES``, a first build) is worked through by two cores: a worker
process (``worker.PrepWorker``) prepares the texts of the next batches while the thread
writes the last one (SQLite FTS5 indexes ~67 MB of text a CPU second, the preparation
~85: bench/README.md "Focus"). The worker ends with the queue; one that dies or cannot
start leaves its batches to the thread.

In the daemon a background thread does the work (``start``); the index's change
listener re-queues every file a change touches (``note_change``), so a write is seen by
the next focused request once the thread took it (it waits at most 100 ms, ``wait``).
In process, ``work`` does it in the caller's thread until a deadline.
"""

from __future__ import annotations

import ctypes
import logging
import os
import pickle
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Final

from readmany_daemon.rank.fulltext import BUSY_MS, FullText
from readmany_daemon.rank.prep import Prepared, mark_of, prepare, read_text
from readmany_daemon.rank.worker import PrepWorker, WorkerGone

__all__ = ["BATCH_BYTES", "POOL_MIN_FILES", "IndexKeeper", "mark_of", "read_text"]

log = logging.getLogger(__name__)

#: Text (bytes) written per transaction: a reader waits at most one batch's write.
BATCH_BYTES: Final = 4 * 1024 * 1024
BATCH_FILES: Final = 256
#: The thread prepares texts in a worker process (``worker.PrepWorker``) while this many
#: files or more are queued (a first build): one core reads, decodes, redacts and splits,
#: the other writes. Fewer files (a change, a small root) are done in the thread.
POOL_MIN_FILES: Final = 2000
#: Batches handed to the worker ahead of the one being written.
POOL_AHEAD: Final = 2
#: A pause after each write while the worker prepares: the texts are often ready at
#: once, and without it the thread takes ``FullText``'s lock again before a focused call
#: woken by its release gets it (a search waited up to 600 ms at 100,000 files, under
#: 75 ms with it; bench/README.md "Focus").
HANDOFF_SECONDS: Final = 0.002


def _release_heap() -> None:
    """Give the heap a big queue left free back to the system (glibc's ``malloc_trim``;
    elsewhere nothing): the texts of ~1 GB passed through this thread's malloc arena, and
    without it ~25 MB stay with the daemon after the build (bench/README.md "Focus")."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


class IndexKeeper:
    """The work queue of ``fulltext`` for the files of ``root``; ``redact`` turns a text
    into what may be indexed (the engine's redaction)."""

    def __init__(
        self,
        root: str,
        fulltext: FullText,
        redact: Callable[[str], str],
        pool_min_files: int = POOL_MIN_FILES,
    ) -> None:
        self.root = root
        self.fulltext = fulltext
        self.redact = redact
        #: Queued files from which the thread prepares texts in a worker process (0:
        #: never); the worker is used only when ``redact`` pickles.
        self.pool_min_files = pool_min_files
        self._pool: PrepWorker | None = None
        self._pool_failed = False
        #: Batches the worker process prepared and this keeper wrote.
        self.pooled_batches = 0
        #: Files checked since the heap was last given back (``_release_heap``).
        self._since_trim = 0
        self._cv = threading.Condition()
        #: rel -> (deleted, ticket), oldest first; a new ticket per change noted, so a
        #: file changed again while its batch ran stays queued
        self._pending: dict[str, tuple[bool, int]] = {}
        self._tickets = 0
        self._fresh: set[str] = set()
        self._started = False
        self._closed = False
        self._thread: threading.Thread | None = None

    # -- state --------------------------------------------------------------
    @property
    def indexed(self) -> int:
        """Files the full-text index holds."""
        return self.fulltext.count()

    @property
    def started(self) -> bool:
        """Whether the whole root was queued (``start``)."""
        return self._started

    def pending_count(self) -> int:
        """Files queued and not yet checked."""
        with self._cv:
            return len(self._pending)

    def unchecked(self, rels: Iterable[str]) -> list[str]:
        """Those of ``rels`` not known current (queued, or never checked)."""
        with self._cv:
            fresh, pending = self._fresh, self._pending
            return [r for r in rels if r not in fresh or r in pending]

    def forget_checks(self) -> None:
        """Take no file as current any more (in process, where no watcher reports
        changes, each call checks its candidates' marks again)."""
        with self._cv:
            self._fresh.clear()

    def note_change(self, _generation: int, rel: str, deleted: bool) -> None:
        """The index's change listener (``FolderRecords.add_listener``): ``rel`` was
        added or changed (``deleted=False``) or is gone or hidden now (True)."""
        with self._cv:
            self._fresh.discard(rel)
            if self._started or deleted:
                self._tickets += 1
                self._pending.pop(rel, None)
                self._pending[rel] = (deleted, self._tickets)
                self._cv.notify_all()

    def queue(self, rels: Iterable[str]) -> None:
        """Check ``rels`` (visible files) when the work gets to them."""
        with self._cv:
            for rel in rels:
                if rel not in self._fresh and rel not in self._pending:
                    self._tickets += 1
                    self._pending[rel] = (False, self._tickets)
            self._cv.notify_all()

    # -- the work -------------------------------------------------------------
    def start(self, files: Iterable[str], background: bool) -> None:
        """Queue every visible file of the root (``files``) and, with ``background``,
        start the thread that works through the queue (once)."""
        with self._cv:
            if self._started:
                return
            self._started = True
        self.queue(files)
        if background:
            self._thread = threading.Thread(
                target=self._run, name=f"readmany-rank:{os.path.basename(self.root)}", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        """Stop the thread (after its current batch) and end the worker process."""
        with self._cv:
            self._closed = True
            pool = self._pool
            self._cv.notify_all()
        if pool is not None:  # the thread waits for the worker's batch: end it now
            pool.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def settle(self, seconds: float) -> bool:
        """Wait until nothing is queued and the worker process (if any) has ended, at
        most ``seconds``; whether it is so."""
        with self._cv:
            return self._cv.wait_for(
                lambda: (not self._pending and self._pool is None) or self._closed,
                timeout=seconds,
            )

    def worker_pid(self, seconds: float = 0.0) -> int | None:
        """The process id of the worker preparing texts, while the build uses one;
        waits at most ``seconds`` for it to start."""
        with self._cv:
            self._cv.wait_for(lambda: self._pool is not None or self._closed, timeout=seconds)
            return None if self._pool is None else self._pool.pid

    def wait(self, seconds: float) -> None:
        """Wait until nothing is queued, at most ``seconds``."""
        with self._cv:
            self._cv.wait_for(lambda: not self._pending or self._closed, timeout=seconds)

    def _run(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: bool(self._pending) or self._closed)
                if self._closed:
                    return
            try:
                if self._pool_wanted():
                    self.fulltext.defer_counts()  # made once at the end (``settle_counts``)
                    self._work_pooled()
                else:
                    self.work(time.monotonic() + 0.05)
                with self._cv:
                    settle = not self._pending and not self._closed
                if settle:  # the word counts, if a build left them (one read when not)
                    self.fulltext.settle_counts()
            except sqlite3.Error as exc:  # a broken file: ranking goes on without content
                log.warning("full-text index %s: %s", self.fulltext.path, exc)
                with self._cv:
                    self._pending.clear()
                return

    def work(self, deadline: float, only: Iterable[str] | None = None) -> None:
        """Check queued files (or those of ``only``, queued or not) until ``deadline``
        (``time.monotonic()``), a batch at a time."""
        if only is not None:
            self.queue(only)
        while time.monotonic() < deadline:
            batch = self._take(set())
            if not batch:
                return
            self._do(batch, deadline)

    def _take(self, skip: set[str]) -> list[tuple[str, tuple[bool, int]]]:
        """The oldest ``BATCH_FILES`` queued files not in ``skip``, with their tickets."""
        batch: list[tuple[str, tuple[bool, int]]] = []
        with self._cv:
            for item in self._pending.items():
                if item[0] not in skip:
                    batch.append(item)
                    if len(batch) >= BATCH_FILES:
                        break
        return batch

    def _pool_wanted(self) -> bool:
        """Whether the thread should prepare texts in a worker process now."""
        if self._pool_failed or self.pool_min_files <= 0:
            return False
        with self._cv:
            if len(self._pending) < self.pool_min_files:
                return False
        try:
            pickle.dumps(self.redact)
        except (pickle.PicklingError, AttributeError, TypeError):
            self._pool_failed = True  # a lambda or closure: the thread does it all
            return False
        return True

    def _work_pooled(self) -> None:
        """Until the queue is empty: the worker prepares up to ``POOL_AHEAD`` batches
        while this thread writes the oldest. A worker that cannot start or dies leaves
        its batches queued for the thread alone (no worker again for this keeper)."""
        try:
            pool = PrepWorker(self.root, self.redact)
        except Exception as exc:  # any failure to start: the thread works alone
            log.warning("no worker process for the full-text index of %s: %s", self.root, exc)
            self._pool_failed = True
            return
        with self._cv:
            self._pool = pool
            self._cv.notify_all()
        try:
            self._pipeline(pool)
        finally:
            pool.close()
            _release_heap()
            with self._cv:
                self._pool = None
                self._cv.notify_all()

    def _pipeline(self, pool: PrepWorker) -> None:
        ahead: deque[tuple[list[tuple[str, tuple[bool, int]]], dict[str, str]]] = deque()
        taken: set[str] = set()
        while not self._closed:
            while len(ahead) < POOL_AHEAD and (batch := self._take(taken)):
                stored = self.fulltext.marks(rel for rel, _ in batch)
                items = [(rel, deleted, stored.get(rel)) for rel, (deleted, _) in batch]
                try:
                    pool.submit(items, BATCH_BYTES)
                except WorkerGone as exc:  # closed meanwhile, or the worker died
                    self._pool_lost(exc)
                    return
                ahead.append((batch, stored))
                taken.update(rel for rel, _ in batch)
            if not ahead:
                return
            batch, stored = ahead.popleft()
            try:
                done = pool.result()
            except WorkerGone as exc:  # the worker died (or closed): the thread goes on
                self._pool_lost(exc)
                return
            taken.difference_update(rel for rel, _ in batch)
            self._commit(batch, stored, done)
            self.pooled_batches += 1
            time.sleep(HANDOFF_SECONDS)

    def _pool_lost(self, exc: Exception) -> None:
        """The worker failed (unless the keeper is closing): none again for this keeper;
        the batches it held stay queued for the thread."""
        if not self._closed:
            log.warning("full-text index worker of %s failed: %s", self.root, exc)
            self._pool_failed = True

    def _do(self, batch: list[tuple[str, tuple[bool, int]]], deadline: float) -> None:
        stored = self.fulltext.marks(rel for rel, _ in batch)
        done: list[Prepared] = []
        size = 0
        for rel, (deleted, _) in batch:
            if size >= BATCH_BYTES or (done and time.monotonic() >= deadline):
                break
            done.append(prepare(self.root, rel, deleted, stored.get(rel), self.redact))
            size += len(done[-1].body or "")
        self._commit(batch, stored, done)

    def _commit(
        self,
        batch: list[tuple[str, tuple[bool, int]]],
        stored: dict[str, str],
        done: list[Prepared],
    ) -> None:
        """Write what the first ``len(done)`` files of ``batch`` need and take them off
        the queue (those noted changed again since stay queued)."""
        puts = [(p.path, p.mark, p.body) for p in done if p.mark is not None and p.body is not None]
        drops = [p.path for p in done if p.mark is None and p.path in stored]
        if (puts or drops) and not self.fulltext.write(puts, drops):
            with self._cv:  # another process writes: try again a little later
                self._cv.wait(BUSY_MS / 1000)
            return
        with self._cv:
            for rel, ticket in batch[: len(done)]:
                if self._pending.get(rel) == ticket:
                    del self._pending[rel]
                    if not ticket[0] and self._thread is None:
                        # with the thread, every change is queued again: nothing to
                        # remember per file (the daemon holds no per-file state here)
                        self._fresh.add(rel)
            self._since_trim += len(done)
            emptied = not self._pending and self._since_trim >= POOL_MIN_FILES
            if not emptied:
                self._cv.notify_all()
        if emptied:  # a big queue done: its texts' heap back first, then say so
            _release_heap()
            with self._cv:
                self._since_trim = 0
                self._cv.notify_all()
