"""Past commits like the task: the files changed by the commits whose messages match the
focus (part of the recency signal, from git's history).

A task much like one done before touches the files its commit touched: the messages of
the last ``HISTORY_COMMITS`` commits that changed a file under the root (merges left
out), each with the files it changed there (``git log --name-only --relative -- .``),
are searched by BM25 with SQLite FTS5 in memory (k1 = 1.2, b = 0.75, as FTS5's
``bm25()``). A file's score is the sum, over the
``MATCHED_COMMITS`` best-matching commits that changed it, of each one's score divided
by the square root of the number of files it changed (``FILES_EXPONENT``; chosen on
pytest, pip and attrs tasks: bench/README.md "Focus").

The table is made in a thread of its own, again when ``HEAD`` moves (asked with ``git
rev-parse`` when the caller's key moves); a call waits for it at most ``wait`` (the
daemon's ``WAIT_SECONDS``; longer in process, where nothing is kept for a next call),
and until it is made the table before (or none) answers. Outside git, without FTS5, or
when git fails, there is no table and every call answers ``{}``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import weakref
import zlib
from collections.abc import Hashable, Sequence
from typing import Final

from readmany_daemon.rules.git import GitCall

__all__ = ["HISTORY_COMMITS", "MATCHED_COMMITS", "CommitHistory"]

log = logging.getLogger(__name__)

#: How many commits back (merges left out) the messages are searched.
HISTORY_COMMITS: Final = 5000
#: The best-matching commits whose files score.
MATCHED_COMMITS: Final = 50
#: A commit changing more files than this says nothing of a task (an import, a
#: reformat, a rename of a folder): its files are left out.
MAX_CHANGED: Final = 100
#: A commit's score is shared among the files it changed: divided by their number to
#: this power (a commit of one file says more of it than a commit of twenty).
FILES_EXPONENT: Final = 0.5
#: The focus words asked of the messages (the first carry the task).
MAX_WORDS: Final = 64
#: How long a call waits for the table (seconds).
WAIT_SECONDS: Final = 0.05
#: How long a write of the log kept in the ranking's file waits for the daemon's writer.
STORE_BUSY_SECONDS: Final = 0.2
#: The table of that file that keeps git's log for one ``HEAD`` (the latest made).
_LOG_TABLE: Final = "CREATE TABLE IF NOT EXISTS history_log (head TEXT PRIMARY KEY, log BLOB)"


def parse_log(out: bytes) -> list[tuple[str, list[str]]]:
    """``[(message, [root-relative path, ...]), ...]`` newest first, from the output of
    ``git log --format=format:%x1e%s%n%b%x1f --name-only -z``: each commit is a record
    separator (0x1e), its message, a unit separator (0x1f), then its paths, each ended
    by a NUL. A commit with more than ``MAX_CHANGED`` paths keeps its message and no
    path."""
    commits: list[tuple[str, list[str]]] = []
    for record in out.split(b"\x1e")[1:]:
        message, _, names = record.partition(b"\x1f")
        paths = [os.fsdecode(n) for n in names.lstrip(b"\n").split(b"\0") if n.strip(b"\n")]
        if len(paths) > MAX_CHANGED:
            paths = []
        commits.append((message.decode("utf-8", "replace"), paths))
    return commits


def _close_held(held: list[sqlite3.Connection]) -> None:
    for db in held:
        db.close()


class CommitHistory:
    """The searchable history of the git work tree holding ``root`` (absolute);
    ``wait``: how long (seconds) a call waits for the table (None: ``WAIT_SECONDS``, the
    daemon's); ``store``: the ranking's file (the root's full-text index, in the user's
    cache folder), which keeps git's log for the last ``HEAD`` read (deflated, ~0.3 MB
    for 5,000 commits), so that the next process (a one-shot in-process answer) makes
    the table without asking git for it (None: not kept)."""

    def __init__(self, root: str, wait: float | None = None, store: str | None = None) -> None:
        self.root = root
        self.wait = WAIT_SECONDS if wait is None else wait
        self.store = store
        self._key: Hashable = object()
        self._lock = threading.Lock()
        self._running: threading.Thread | None = None
        #: ``(HEAD's commit id, the messages' table, each row's paths by rowid)``.
        self._table: tuple[str, sqlite3.Connection, list[list[str]]] | None = None
        #: Whether a table for a ``HEAD`` not searched before is in the making.
        self._making = False
        #: The table's connection, closed when this history is collected without
        #: ``close`` (an in-process answer's ranking), not in SQLite's finalizer, which
        #: warns (ResourceWarning, Python 3.13+).
        self._held: list[sqlite3.Connection] = []
        weakref.finalize(self, _close_held, self._held)

    def matches(
        self, key: Hashable, words: Sequence[str], wait: float | None = None
    ) -> tuple[dict[str, float], bool]:
        """``({root-relative path: score}, pending)``, scores > 0, for ``words`` (lower
        case, the focus's search words). A score is the sum, over the ``MATCHED_COMMITS``
        commits whose messages match ``words`` best, of each commit's BM25 score divided
        by (the number of files it changed) ** ``FILES_EXPONENT``, for each file it
        changed. ``pending``: a table for a new ``HEAD`` was in the making when the
        search ran (read at the same moment as the table searched).
        ``key`` (the index's clock): when it moves, git is asked whether ``HEAD`` moved
        (and the table made again); waits at most ``wait`` (None: the instance's own).
        Never raises."""
        with self._lock:
            running = self._running
            if key != self._key and running is None:
                self._key = key
                self._making = self._table is None  # a first table: surely (unless no git)
                running = self._running = threading.Thread(
                    target=self._refresh, name="readmany-history", daemon=True
                )
                running.start()
        if running is not None:
            running.join(self.wait if wait is None else wait)
        with self._lock:
            table, making = self._table, self._making
            if table is None or not words:
                return {}, making
            _, db, paths = table
            query = " OR ".join('"' + w.replace('"', '""') + '"' for w in words[:MAX_WORDS])
            try:
                rows = db.execute(
                    "SELECT rowid, -bm25(messages) FROM messages WHERE messages MATCH ?"
                    " ORDER BY bm25(messages) LIMIT ?",
                    (query, MATCHED_COMMITS),
                ).fetchall()
            except sqlite3.Error as exc:  # a word FTS5 cannot parse: no history
                log.debug("history search failed: %s", exc)
                return {}, making
        out: dict[str, float] = {}
        for rowid, score in rows:
            changed = paths[rowid - 1]
            if score > 0 and changed:
                share = score / len(changed) ** FILES_EXPONENT
                for p in changed:
                    out[p] = out.get(p, 0.0) + share
        return out, making

    @property
    def pending(self) -> bool:
        """Whether a table for a ``HEAD`` not searched before is in the making (the
        first one, or one after a commit or a checkout): until it is, ``matches``
        answers from the table before, or ``{}``."""
        with self._lock:
            return self._making

    def settle(self, timeout: float) -> None:
        """Wait for the table in the making, at most ``timeout`` seconds."""
        with self._lock:
            running = self._running
        if running is not None:
            running.join(timeout)

    def close(self) -> None:
        """Drop the table (a running refresh finishes on its own)."""
        with self._lock:
            table, self._table = self._table, None
            self._held.clear()
        if table is not None:
            table[1].close()

    def _refresh(self) -> None:
        try:
            made = self._make()
        except (sqlite3.Error, OSError, ValueError) as exc:
            log.warning("no commit history for %s: %s", self.root, exc)
            made = None
        with self._lock:
            old = self._table
            if made is not None:
                self._table = made
                self._held[:] = [made[1]]
            self._running = None
            self._making = False
        if made is not None and old is not None and old[1] is not made[1]:
            old[1].close()

    def _make(self) -> tuple[str, sqlite3.Connection, list[list[str]]] | None:
        """The table for ``HEAD`` now: the one held when ``HEAD`` has not moved; None
        outside git (or when git fails: the table held stays)."""
        head = GitCall(["rev-parse", "--verify", "-q", "HEAD"], self.root).output()
        if head is None:
            return None
        commit = head.decode("ascii", "replace").strip()
        with self._lock:
            held = self._table
        if held is not None and held[0] == commit:
            return held
        with self._lock:
            self._making = True
        out = self._kept_log(commit)
        if out is None:
            out = self._read_log(commit)
            if out is not None:
                self._keep_log(commit, out)
        if out is None:
            return None
        commits = parse_log(out)
        db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        db.execute("CREATE VIRTUAL TABLE messages USING fts5(message)")
        db.executemany(
            "INSERT INTO messages(rowid, message) VALUES (?, ?)",
            ((i, message) for i, (message, _) in enumerate(commits, 1)),
        )
        return commit, db, [paths for _, paths in commits]

    def _read_log(self, commit: str) -> bytes | None:
        """git's log of the ``HISTORY_COMMITS`` commits up to ``commit`` (``parse_log``'s
        input); None when git fails."""
        return GitCall(
            [
                "-c",
                "core.quotepath=off",
                "log",
                f"-n{HISTORY_COMMITS}",
                "--no-merges",
                "--format=format:%x1e%s%n%b%x1f",
                "--name-only",
                "--relative",
                "-z",
                commit,
                "--",
                ".",
            ],
            self.root,
        ).output()

    def _connect(self) -> sqlite3.Connection | None:
        """A connection to ``store`` with the log's table (None: no store, or it cannot
        be opened: the log is then asked of git)."""
        if self.store is None or not os.path.exists(self.store):
            return None  # the full-text index makes the file (0600, in a 0700 folder)
        try:
            db = sqlite3.connect(self.store, timeout=STORE_BUSY_SECONDS, isolation_level=None)
        except sqlite3.Error:
            return None
        try:
            db.execute(_LOG_TABLE)
        except sqlite3.Error:
            db.close()
            return None
        return db

    def _kept_log(self, commit: str) -> bytes | None:
        """The log kept in ``store`` for ``commit``; None when none is (or it is damaged)."""
        db = self._connect()
        if db is None:
            return None
        with contextlib.closing(db):
            try:
                row = db.execute("SELECT log FROM history_log WHERE head = ?", (commit,)).fetchone()
                return None if row is None else zlib.decompress(row[0])
            except (sqlite3.Error, zlib.error) as exc:
                log.debug("kept history log unreadable: %s", exc)
                return None

    def _keep_log(self, commit: str, out: bytes) -> None:
        """Keep ``out`` in ``store`` as the log of ``commit``, in place of the one before
        (another process writing: not kept this time)."""
        db = self._connect()
        if db is None:
            return
        with contextlib.closing(db):
            try:
                with db:
                    db.execute("BEGIN IMMEDIATE")
                    db.execute("DELETE FROM history_log")
                    db.execute(
                        "INSERT INTO history_log VALUES (?, ?)", (commit, zlib.compress(out, 6))
                    )
            except sqlite3.Error as exc:
                log.debug("history log not kept: %s", exc)
