"""Keeping a root's full-text index current: what is still to index, and the work.

``IndexKeeper`` holds the files to check (``pending``) and the ones known current
(``fresh``). A file is checked by ``lstat``: the same mark (size, mtime, inode) as the
indexed one makes it fresh; else its text is read (below the root only, no symbolic link
followed: ``content.reader.open_beneath``), decoded, redacted (the function the engine
passes: secrets indexed as redacted), identifiers split (``words.index_text``) and
written. A file that is gone, or reported hidden by the index (``deleted``), is dropped.

In the daemon a background thread does the work (``start``); the index's change
listener re-queues every file a change touches (``note_change``), so a write is seen by
the next focused request once the thread took it (it waits at most 100 ms, ``wait``).
In process, ``work`` does it in the caller's thread until a deadline.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterable
from typing import Final

from readmany_daemon.content.decode import decode
from readmany_daemon.content.reader import open_beneath
from readmany_daemon.rank.fulltext import BUSY_MS, MAX_INDEX_CHARS, FullText
from readmany_daemon.rank.words import index_text

__all__ = ["BATCH_BYTES", "IndexKeeper", "read_text"]

log = logging.getLogger(__name__)

#: Text (bytes) written per transaction: a reader waits at most one batch's write.
BATCH_BYTES: Final = 4 * 1024 * 1024
BATCH_FILES: Final = 256


def read_text(root: str, rel: str, limit: int = MAX_INDEX_CHARS) -> str | None:
    """The text of ``rel`` below ``root``: its first ``limit`` bytes decoded
    (``content.decode``), or None for a binary file or one that cannot be read."""
    try:
        fd = open_beneath(root, rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)
    got = decode(data, complete=len(data) < limit)
    return got.text if got.kind == "text" else None


def mark_of(st: os.stat_result) -> str:
    """The mark that tells a changed file: ``"<st_size>:<st_mtime_ns>:<st_ino>"``."""
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


class IndexKeeper:
    """The work queue of ``fulltext`` for the files of ``root``; ``redact`` turns a text
    into what may be indexed (the engine's redaction)."""

    def __init__(self, root: str, fulltext: FullText, redact: Callable[[str], str]) -> None:
        self.root = root
        self.fulltext = fulltext
        self.redact = redact
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
        """Stop the thread (after its current batch)."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

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
                self.work(time.monotonic() + 0.05)
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
            with self._cv:
                batch: list[tuple[str, tuple[bool, int]]] = []
                for item in self._pending.items():
                    batch.append(item)
                    if len(batch) >= BATCH_FILES:
                        break
            if not batch:
                return
            self._do(batch, deadline)

    def _do(self, batch: list[tuple[str, tuple[bool, int]]], deadline: float) -> None:
        stored = self.fulltext.marks(rel for rel, _ in batch)
        puts: list[tuple[str, str, str]] = []
        drops: list[str] = []
        done: list[tuple[str, tuple[bool, int]]] = []
        size = 0
        for rel, ticket in batch:
            if size >= BATCH_BYTES or (puts and time.monotonic() >= deadline):
                break
            done.append((rel, ticket))
            deleted = ticket[0]
            try:
                st = None if deleted else os.lstat(os.path.join(self.root, rel))
            except OSError:
                st = None
            if st is None or not stat.S_ISREG(st.st_mode):
                if rel in stored:
                    drops.append(rel)
                continue
            mark = mark_of(st)
            if stored.get(rel) == mark:
                continue
            text = read_text(self.root, rel)
            if text is None:
                if rel in stored:
                    drops.append(rel)
                continue
            body = index_text(self.redact(text))
            puts.append((rel, mark, body))
            size += len(body)
        if (puts or drops) and not self.fulltext.write(puts, drops):
            with self._cv:  # another process writes: try again a little later
                self._cv.wait(BUSY_MS / 1000)
            return
        with self._cv:
            for rel, ticket in done:
                if self._pending.get(rel) == ticket:
                    del self._pending[rel]
                    if not ticket[0] and self._thread is None:
                        # with the thread, every change is queued again: nothing to
                        # remember per file (the daemon holds no per-file state here)
                        self._fresh.add(rel)
            self._cv.notify_all()
