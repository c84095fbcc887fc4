"""Outlines, tags and token counts made ahead of requests, and kept on disk (the
daemon's; issue 25).

A focused read needs the outline of the file cut at the end of its budget
(``engine.outlines``), the tags of the files its reference graph takes (``rank.root``)
and the o200k counts of the files it packs (``engine.budget``); made on demand, they are
most of a read whose focus ranks files no read asked before (bench/README.md "Focus").
So the daemon makes them for every file of the root in a worker process, at low
priority, once the full-text index is built
(``rank.ahead_pass.AheadPass``), and keeps them here: tables of the root's full-text
index file (``index-<hash>.rank``: a 0600 file in a 0700 folder of the user's cache
folder, dropped with the snapshot), beside FTS5's.

* ``ahead_files(path, mark, digest)``: the file ``path`` (root-relative) had ``mark``
  (``prep.mark_of``: size, mtime, inode) when its text, whose :func:`outline_key` is
  ``digest``, was made;
* ``ahead_made(digest, outline, tags, count_key, tokens)``: the outline and tags of
  that text (msgpack, deflated), and its o200k token count under
  ``tokens.count_key`` (what the engine counts for a whole file shown as it is), once
  per distinct text;
* ``ahead_meta(key, value)``: the format, and what the last pass did (``files``,
  ``made``, ``bytes``, ``cpu_s``, ``wall_s``, ``done``).

A stored outline is used only for the text whose key it is (the engine's own text,
hashed); stored tags only while the file's mark is the stored one, as the ranking's
tags in memory are kept per (path, mark). The text is what ``prep.read_text`` gives,
which the ranking's tags are made of; a file of ``MAX_INDEX_CHARS`` bytes or more is not
made ahead. Both are made by ``content.outline`` exactly as on demand, the worker's parse
time limits counted on its own CPU time (``outline.set_parse_clock``).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sqlite3
import stat
import sys
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Final

import msgspec

from readmany_daemon.content import tokens
from readmany_daemon.content.outline import (
    Outline,
    Tags,
    language_for,
    outline_and_tags,
    outline_key,
    set_parse_clock,
)
from readmany_daemon.rank.fulltext import MAX_INDEX_CHARS
from readmany_daemon.rank.prep import Prepared, mark_of, read_text
from readmany_daemon.rank.searches import chunks

__all__ = ["FORMAT", "AheadStore", "make_batch", "serve"]

#: Bumped whenever what the tables hold changes meaning (the tables are made again).
FORMAT: Final = 2  # 2: no comment is a top-level node (Rust's, Java's line_comment)
#: How long (seconds) the worker's writes wait for another writer of the file.
WRITE_TIMEOUT: Final = 10.0

_TABLES: Final = """
CREATE TABLE IF NOT EXISTS ahead_files(
    path TEXT PRIMARY KEY, mark TEXT NOT NULL, digest BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ahead_made(
    digest BLOB PRIMARY KEY, outline BLOB NOT NULL, tags BLOB NOT NULL,
    count_key BLOB NOT NULL, tokens INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ahead_made_count ON ahead_made(count_key);
CREATE TABLE IF NOT EXISTS ahead_meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
"""
_DROP: Final = (
    "DROP TABLE IF EXISTS ahead_files; DROP TABLE IF EXISTS ahead_made;"
    " DROP TABLE IF EXISTS ahead_meta;"
)

_outline_decoder: Final = msgspec.msgpack.Decoder(Outline)
_tags_decoder: Final = msgspec.msgpack.Decoder(Tags)
_encoder: Final = msgspec.msgpack.Encoder()


def _pack(value: Outline | Tags) -> bytes:
    return zlib.compress(_encoder.encode(value), 1)


class AheadStore:
    """The ahead tables of the full-text index file ``path`` (made when missing; made
    again when of another ``FORMAT``). Thread-safe (one connection behind a lock).
    Raises ``sqlite3.Error`` or ``OSError`` when the file cannot be opened."""

    def __init__(self, path: str, timeout: float = 0.05) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=timeout
        )
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_TABLES)
            got = self._db.execute("SELECT value FROM ahead_meta WHERE key = 'format'").fetchone()
            if got is None or got[0] != FORMAT:
                self._db.executescript(_DROP + _TABLES)
                self._db.execute("INSERT INTO ahead_meta VALUES ('format', ?)", (FORMAT,))
        except sqlite3.Error:
            self._db.close()
            raise
        # a store dropped without ``close`` (an in-process answer's ranking) closes its
        # connection when collected, not in SQLite's finalizer, which warns (3.13+)
        weakref.finalize(self, self._db.close)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._db.close()

    def outline(self, key: bytes) -> Outline | None:
        """The outline made ahead of the text whose :func:`outline_key` is ``key``;
        None when none is kept (or the file cannot be read now)."""
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT outline FROM ahead_made WHERE digest = ?", (key,)
                ).fetchone()
            return None if row is None else _outline_decoder.decode(zlib.decompress(row[0]))
        except (sqlite3.Error, zlib.error, msgspec.DecodeError):
            return None

    def count(self, key: bytes) -> int | None:
        """The o200k tokens of the text whose ``tokens.count_key`` is ``key``, counted
        ahead; None when none is kept."""
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT tokens FROM ahead_made WHERE count_key = ?", (key,)
                ).fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else int(row[0])

    def tags(self, marks: Mapping[str, str]) -> dict[str, Tags]:
        """``{path: tags}`` made ahead for those of ``marks`` (``{path: mark now}``)
        whose stored mark is the one given; the others are left out."""
        out: dict[str, Tags] = {}
        try:
            for chunk in chunks(list(marks)):
                q = (
                    "SELECT f.path, f.mark, m.tags FROM ahead_files f"
                    " JOIN ahead_made m ON m.digest = f.digest"
                    " WHERE f.path IN ({})".format(",".join("?" * len(chunk)))
                )
                with self._lock:
                    rows = self._db.execute(q, list(chunk)).fetchall()
                for path, mark, blob in rows:
                    if marks.get(path) == mark:
                        out[path] = _tags_decoder.decode(zlib.decompress(blob))
        except (sqlite3.Error, zlib.error, msgspec.DecodeError):
            return out
        return out

    def meta(self) -> dict[str, object]:
        """What the last pass wrote in ``ahead_meta`` (``{}`` when it cannot be read)."""
        try:
            with self._lock:
                return dict(self._db.execute("SELECT key, value FROM ahead_meta"))
        except sqlite3.Error:
            return {}

    # -- the worker's side -------------------------------------------------------
    def known(self, paths: Sequence[str]) -> dict[str, str]:
        """``{path: mark}`` stored for those of ``paths`` made before."""
        q = "SELECT path, mark FROM ahead_files WHERE path IN ({})"
        with self._lock:
            return {
                p: m
                for chunk in chunks(list(paths))
                for p, m in self._db.execute(q.format(",".join("?" * len(chunk))), list(chunk))
            }

    def has(self, digest: bytes) -> bool:
        """Whether a text of key ``digest`` was made."""
        with self._lock:
            q = "SELECT 1 FROM ahead_made WHERE digest = ?"
            return self._db.execute(q, (digest,)).fetchone() is not None

    def write(
        self,
        files: Sequence[tuple[str, str, bytes]],
        made: Sequence[tuple[bytes, bytes, bytes, bytes, int]],
        drops: Sequence[str],
        meta: Mapping[str, object] = {},
    ) -> None:
        """In one transaction: ``files`` as ``(path, mark, digest)`` rows, ``made`` as
        ``(digest, outline, tags, count_key, tokens)`` rows (packed), ``drops``
        forgotten, ``meta`` set."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("DELETE FROM ahead_files WHERE path = ?", ((p,) for p in drops))
                db.executemany("INSERT OR REPLACE INTO ahead_files VALUES (?, ?, ?)", files)
                db.executemany("INSERT OR IGNORE INTO ahead_made VALUES (?, ?, ?, ?, ?)", made)
                db.executemany("INSERT OR REPLACE INTO ahead_meta VALUES (?, ?)", meta.items())
                db.execute("COMMIT")
            except sqlite3.Error:
                db.execute("ROLLBACK")
                raise

    def prune(self) -> int:
        """Forget the texts no file's row names any more; how many."""
        with self._lock:
            cur = self._db.execute(
                "DELETE FROM ahead_made WHERE digest NOT IN (SELECT digest FROM ahead_files)"
            )
            return cur.rowcount


class _Made(msgspec.Struct):
    """What a pass did so far (``ahead_meta``)."""

    files: int = 0
    made: int = 0
    bytes: int = 0
    cpu_s: float = 0.0


def _make_one(
    root: str, rel: str, deleted: bool, known: str | None, has: Callable[[bytes], bool], made: _Made
) -> tuple[Prepared, tuple[str, str, bytes] | None, tuple[bytes, bytes, bytes, bytes, int] | None]:
    """One queued file: (what was done, its ``ahead_files`` row, its ``ahead_made`` row);
    ``Prepared.mark`` None: its rows are to be dropped (gone, not a regular file, too
    big, unreadable, changing)."""
    try:
        st = None if deleted else os.lstat(os.path.join(root, rel))
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size >= MAX_INDEX_CHARS:
        return Prepared(rel, None, None), None, None
    mark = mark_of(st)
    if known == mark:
        return Prepared(rel, mark, None), None, None
    text = read_text(root, rel)
    try:
        again = mark_of(os.lstat(os.path.join(root, rel)))
    except OSError:
        again = None
    if text is None or again != mark:  # binary, unreadable, or written meanwhile
        return Prepared(rel, None, None), None, None
    data = text.encode("utf-8", "replace")
    digest = outline_key(data, language_for(rel, text) or "")
    row = (rel, mark, digest)
    if has(digest):
        return Prepared(rel, mark, None), row, None
    o, t = outline_and_tags(text, rel)
    made.made += 1
    made.bytes += len(data)
    made_row = (digest, _pack(o), _pack(t), tokens.count_key(text), tokens.count(text))
    return Prepared(rel, mark, None), row, made_row


def make_batch(
    root: str, items: Sequence[tuple[str, bool, str | None]], store: AheadStore, made: _Made
) -> list[Prepared]:
    """Make the outlines, tags and token counts of ``items`` (``(rel, deleted, _)``) of
    ``root`` that the store lacks for their marks, and write them in one transaction; one
    :class:`~readmany_daemon.rank.prep.Prepared` an item (``mark`` None: dropped)."""
    known = store.known([rel for rel, _, _ in items])
    out: list[Prepared] = []
    files: list[tuple[str, str, bytes]] = []
    rows: list[tuple[bytes, bytes, bytes, bytes, int]] = []
    drops: list[str] = []
    batch: set[bytes] = set()  # texts made by this batch (not written yet)

    def has(digest: bytes) -> bool:
        return digest in batch or store.has(digest)

    for rel, deleted, _ in items:
        done, row, text_row = _make_one(root, rel, deleted, known.get(rel), has, made)
        out.append(done)
        if done.mark is None and rel in known:
            drops.append(rel)
        if row is not None:
            files.append(row)
        if text_row is not None:
            rows.append(text_row)
            batch.add(text_row[0])
    made.files += len(items)
    made.cpu_s = time.process_time()
    meta = {
        "files": made.files,
        "made": made.made,
        "bytes": made.bytes,
        "cpu_s": made.cpu_s,
        "done": 0,
    }
    store.write(files, rows, drops, meta)
    return out


def serve(requests: IO[bytes] | None = None, answers: IO[bytes] | None = None) -> None:
    """The worker's side (``worker.PrepWorker(root, store_path, module=__name__)``):
    at the lowest CPU priority, reads ``(root, store path)``, answers its process id,
    then answers each ``(items, limit)`` with :func:`make_batch`'s list, in order; an
    empty batch ends the pass (``ahead_meta`` ``done``, texts no file names pruned).
    Nothing else may write to stdout: ``sys.stdout`` becomes stderr."""
    requests = requests if requests is not None else sys.stdin.buffer
    answers = answers if answers is not None else sys.stdout.buffer
    sys.stdout = sys.stderr
    with contextlib.suppress(OSError):
        os.nice(19)
    set_parse_clock(time.process_time)
    root, path = pickle.load(requests)
    store = AheadStore(path, timeout=WRITE_TIMEOUT)
    pickle.dump(os.getpid(), answers)
    answers.flush()
    made = _Made()
    start = time.monotonic()
    try:
        while True:
            try:
                items, _limit = pickle.load(requests)
            except (EOFError, OSError, pickle.UnpicklingError):
                return
            if items:
                got = make_batch(root, items, store, made)
            else:
                store.prune()
                wall = round(time.monotonic() - start, 3)
                store.write((), (), (), {"done": 1, "wall_s": wall, "cpu_s": time.process_time()})
                got = []
            pickle.dump(got, answers, pickle.HIGHEST_PROTOCOL)
            answers.flush()
    finally:
        store.close()
