"""The full-text index of one root: SQLite FTS5 (BM25) in one file of the user's cache
folder, beside the root's index snapshot (``index-<hash>.rank``, so the cache sweep drops
it with the snapshot; ``index/cachegc.py``).

Why FTS5 and not tantivy: measured at 100,000 files in bench/README.md "Ranking". FTS5
comes with Python (nothing to install), many processes may read and write one file (the
daemon and in-process answers share it; tantivy allows one writer per index folder), an
update is one transaction of a few rows, and one file goes with the snapshot.

Layout: table ``files(id INTEGER PRIMARY KEY, path TEXT UNIQUE, mark TEXT)`` (``mark``:
``"<st_size>:<st_mtime_ns>:<st_ino>"`` when indexed) and the FTS5 table ``docs(name,
body)`` whose rowid is ``files.id``; ``name`` is the words of the path (the file name's
twice: ``words.path_text``), ``body`` the file's text as the engine would show it
(secrets redacted) with camel-case identifiers split (``words.index_text``), at most
``MAX_INDEX_CHARS`` characters; ``term_files(term TEXT PRIMARY KEY, files INTEGER)``
(``WITHOUT ROWID``): how many rows of ``docs`` hold each token in either column, as
FTS5's ``fts5vocab`` ``row`` table counts them, written in the same transaction as the
rows (``_tally``) so that a word's count is one lookup rather than a read of its whole
doclist; during a first build (``defer_counts``) the writes leave it and mark it stale in
``term_files_state(stale)``, and ``settle_counts`` makes it again from ``fts5vocab`` at
the end (tokenizing every text twice would cost the build a third more). Mode 0600 in a
0700 folder; never inside the workspace. Thread-safe (one connection behind a lock); a
write another process holds is waited for at most ``BUSY_MS``, then skipped (the file
stays pending). The rows of the last few searches, and of their phrases
(``rank/searches.py``), are kept until the index changes (``searches.Kept``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import re
import sqlite3
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from readmany_daemon.rank.searches import (
    Job,
    Kept,
    Plan,
    Rows,
    Searched,
    chunks,
    halves,
    merged,
    quote,
    run_jobs,
    with_paths,
)
from readmany_daemon.rank.words import path_text

__all__ = ["BUSY_MS", "MAX_INDEX_CHARS", "RANK_SUFFIX", "FullText", "fts5_available", "rank_path"]

log = logging.getLogger(__name__)

#: A file's first this many characters are indexed (the rest of a huge file adds little).
MAX_INDEX_CHARS: Final = 1_000_000
#: How long (milliseconds) a write waits for another process's transaction.
BUSY_MS: Final = 50
#: Bumped whenever the layout or the meaning of a column changes (a file of another
#: format is started again; one of ``TALLY_FROM`` gets its ``term_files`` made from
#: ``fts5vocab``).
FORMAT: Final = 3
#: The format before ``term_files``: the same rows, the counts made once on open.
TALLY_FROM: Final = 2
#: A search word found in more than this share of the indexed files tells little and
#: costs the most (its posting list is the longest): left out of the query.
COMMON_SHARE: Final = 0.5

#: The full-text index beside ``index-<hash>.snap``: ``index-<hash>.rank`` (SQLite adds
#: ``-wal`` and ``-shm`` files, named after it: the cache sweep drops them too).
RANK_SUFFIX: Final = ".rank"

#: A query takes the rarest words while the files holding them add up to at most this
#: many (at least ``MIN_WORDS``): FTS5 scores every posting of every word (about 1 µs
#: each), so at 100,000 files all of a 300-character focus's words cost ~300 ms and the
#: rarest ones within this budget ~15 ms (bench/README.md "Focus"). A small root keeps
#: every word.
POSTINGS_BUDGET: Final = 10_000
MIN_WORDS: Final = 3
#: ``holding`` looks at a text's first this many characters.
HOLDING_CHARS: Final = 200_000
#: Words whose file counts are kept between writes.
DF_KEPT: Final = 10_000
#: A search whose words the index's files hold at most this many times in all (their
#: ``counts``) is made from its phrases' rows, kept between searches
#: (``rank/searches.py``: the same rows); more, by FTS5's one query (reading every row
#: into Python would cost more than it saves).
PHRASE_POSTINGS: Final = 2 * POSTINGS_BUDGET

#: A token as the ``unicode61`` tokenizer makes them: a run of letters and digits.
_TOKEN: Final = re.compile(r"[^\W_]+")

_fts5: bool | None = None


def rank_path(snapshot_path: str) -> str:
    """The full-text index of the root whose index snapshot is ``snapshot_path``
    (``index-<hash>.snap`` -> ``index-<hash>.rank``)."""
    base = snapshot_path[: -len(".snap")] if snapshot_path.endswith(".snap") else snapshot_path
    return base + RANK_SUFFIX


def fts5_available() -> bool:
    """Whether the SQLite library Python links has FTS5 (checked once per process)."""
    global _fts5
    if _fts5 is None:
        try:
            with contextlib.closing(sqlite3.connect(":memory:")) as db:
                db.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
            _fts5 = True
        except sqlite3.Error:
            _fts5 = False
    return _fts5


def _holds(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a token: not inside a longer run of letters
    and digits (FTS5's ``unicode61`` splits at every other character)."""
    end = len(text)
    pos = text.find(word)
    while pos >= 0:
        after = pos + len(word)
        if (pos == 0 or not text[pos - 1].isalnum()) and (
            after == end or not text[after].isalnum()
        ):
            return True
        pos = text.find(word, pos + 1)
    return False


def _close_all(db: sqlite3.Connection, readers: list[sqlite3.Connection]) -> None:
    for each in (db, *readers):
        each.close()


class FullText:
    """The FTS5 index in file ``path`` (None: in memory only). Raises ``sqlite3.Error``
    when the file cannot be opened (the caller ranks without content then)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        if path is not None:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self._db = sqlite3.connect(
            path or ":memory:",
            check_same_thread=False,
            isolation_level=None,
            timeout=BUSY_MS / 1000,
        )
        db = self._db
        # A ranking dropped without ``close`` (a one-shot answer, a test's workspace)
        # closes its connection when it is collected, not in SQLite's finalizer, which
        # warns (ResourceWarning, Python 3.13+).
        #: The search thread (``search_all``) and its read connections, made when first
        #: needed; closed with ``close`` or when this index is collected.
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._readers: list[sqlite3.Connection] = []
        self._local = threading.local()
        self._closed = False
        weakref.finalize(self, _close_all, db, self._readers)
        if path is not None:
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, TALLY_FROM, FORMAT):
            db.executescript(
                "DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS docs_terms;"
                " DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS term_files;"
                " DROP TABLE IF EXISTS term_files_state;"
            )
        if version != FORMAT:
            # a file of the format before (or written by code that did not keep the
            # counts since): its counts made again from the vocabulary, in one transaction
            db.executescript(
                f"""
                BEGIN IMMEDIATE;
                CREATE TABLE IF NOT EXISTS files(
                    id INTEGER PRIMARY KEY, path TEXT UNIQUE, mark TEXT);
                CREATE VIRTUAL TABLE IF NOT EXISTS docs
                    USING fts5(name, body, tokenize='unicode61');
                CREATE VIRTUAL TABLE IF NOT EXISTS docs_terms USING fts5vocab(docs, 'row');
                DROP TABLE IF EXISTS term_files;
                CREATE TABLE term_files(term TEXT PRIMARY KEY, files INTEGER NOT NULL)
                    WITHOUT ROWID;
                INSERT INTO term_files(term, files)
                    SELECT term, doc FROM docs_terms WHERE doc > 0;
                DROP TABLE IF EXISTS term_files_state;
                CREATE TABLE term_files_state(stale INTEGER NOT NULL);
                INSERT INTO term_files_state VALUES (0);
                PRAGMA user_version={FORMAT};
                COMMIT;
                """
            )
        # the rows a write adds or drops, tokenized as ``docs`` does, to count their terms
        # (contentless: only the terms are kept, and emptied at once)
        db.executescript(
            """
            CREATE VIRTUAL TABLE IF NOT EXISTS temp.tally
                USING fts5(name, body, tokenize='unicode61', content='', detail=none);
            CREATE VIRTUAL TABLE IF NOT EXISTS temp.tally_terms
                USING fts5vocab(temp, tally, 'row');
            """
        )
        self._count = int(db.execute("SELECT count(*) FROM files").fetchone()[0])
        #: This connection's writes leave ``term_files`` (``defer_counts``).
        self._deferred = False
        #: Files holding each word asked (``informative``), until this connection writes.
        self._df: dict[str, int] = {}
        #: Rows of the last searches and phrases, paths of rowids, valid while
        #: ``_generation`` stays (``_current``): this connection's writes and other
        #: connections' commits (``PRAGMA data_version``) move it.
        self._kept = Kept()
        self._generation = 0
        self._data_version: int | None = None

    def close(self) -> None:
        """Close the connections and end the search thread."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        with self._lock:
            self._db.close()
            for reader in self._readers:
                reader.close()
            self._readers.clear()

    def marks(self, paths: Iterable[str] | None = None) -> dict[str, str]:
        """``{path: mark}`` of the indexed files (of ``paths`` only when given)."""
        with self._lock:
            if paths is None:
                return dict(self._db.execute("SELECT path, mark FROM files"))
            out: dict[str, str] = {}
            chunk: list[str] = []
            for p in paths:
                chunk.append(p)
                if len(chunk) == 500:
                    out.update(self._marks_of(chunk))
                    chunk = []
            out.update(self._marks_of(chunk))
            return out

    def _marks_of(self, chunk: Sequence[str]) -> list[tuple[str, str]]:
        if not chunk:
            return []
        q = "SELECT path, mark FROM files WHERE path IN ({})".format(",".join("?" * len(chunk)))
        return list(self._db.execute(q, chunk))

    def count(self) -> int:
        """How many files the index holds (as of this connection's last write, or
        another connection's last commit)."""
        with self._lock:
            self._current()
            return self._count

    def write(self, puts: Sequence[tuple[str, str, str]], drops: Sequence[str]) -> bool:
        """In one transaction: index ``(path, mark, body)`` for each of ``puts`` (replacing
        what the path held) and forget each of ``drops``. False (nothing written) when
        another process held the file longer than ``BUSY_MS``."""
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                log.info("full-text index busy, write deferred: %s", exc)
                return False
            removed = 0
            try:
                # the rows the paths hold now, one query a chunk (none on a first build)
                old = [
                    i
                    for chunk in chunks([*drops, *(p for p, _, _ in puts)])
                    for _, i in self._marks_ids(chunk)
                ]
                tally = not self._deferred and not self._stale()
                if not tally:
                    db.execute("UPDATE term_files_state SET stale = 1")
                if old:
                    removed = len(old)
                    for chunk in chunks(old if tally else ()):
                        db.execute(
                            "INSERT INTO temp.tally(name, body) SELECT name, body FROM docs"
                            " WHERE rowid IN ({})".format(",".join("?" * len(chunk))),
                            list(chunk),
                        )
                    if tally:
                        self._tally(-1)
                    db.executemany("DELETE FROM docs WHERE rowid = ?", ((i,) for i in old))
                    db.executemany("DELETE FROM files WHERE id = ?", ((i,) for i in old))
                # ids as SQLite would give them (max + 1; the write lock is held)
                top = db.execute("SELECT coalesce(max(id), 0) FROM files").fetchone()[0]
                ids = range(top + 1, top + 1 + len(puts))
                db.executemany(
                    "INSERT INTO files(id, path, mark) VALUES (?, ?, ?)",
                    ((i, path, mark) for i, (path, mark, _) in zip(ids, puts, strict=True)),
                )
                db.executemany(
                    "INSERT INTO docs(rowid, name, body) VALUES (?, ?, ?)",
                    (
                        (i, path_text(path), body)
                        for i, (path, _, body) in zip(ids, puts, strict=True)
                    ),
                )
                if puts and tally:
                    db.executemany(
                        "INSERT INTO temp.tally(name, body) VALUES (?, ?)",
                        ((path_text(path), body) for path, _, body in puts),
                    )
                    self._tally(1)
                db.execute("COMMIT")
            except sqlite3.Error:
                db.execute("ROLLBACK")  # the temp schema's rows too
                raise
            self._count += len(puts) - removed
            self._df.clear()
            self._generation += 1
            self._kept.clear()
            return True

    def _stale(self) -> bool:
        """Whether ``term_files`` is behind the rows (the lock held)."""
        row = self._db.execute("SELECT stale FROM term_files_state").fetchone()
        return row is None or bool(row[0])

    def defer_counts(self) -> None:
        """Let this connection's writes leave ``term_files`` (marked stale: ``counts``
        then reads ``fts5vocab``) until :meth:`settle_counts`: a first build writes every
        file, and tallying each batch's terms would tokenize every text twice."""
        with self._lock:
            self._deferred = True

    def settle_counts(self) -> bool:
        """End :meth:`defer_counts`; when ``term_files`` is stale, make it again from
        ``fts5vocab`` in one transaction (~1.5 s of CPU at 100,000 files, the lock held).
        False when another process held the file longer than ``BUSY_MS`` (it stays
        stale, ``counts`` stays right, the next call tries again)."""
        with self._lock:
            self._deferred = False
            db = self._db
            if not self._stale():
                return True
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                log.info("full-text index busy, counts deferred: %s", exc)
                return False
            try:
                db.execute("DELETE FROM term_files")
                db.execute(
                    "INSERT INTO term_files(term, files)"
                    " SELECT term, doc FROM docs_terms WHERE doc > 0"
                )
                db.execute("UPDATE term_files_state SET stale = 0")
                db.execute("COMMIT")
            except sqlite3.Error:
                db.execute("ROLLBACK")
                raise
            return True

    def _tally(self, sign: int) -> None:
        """Add ``sign`` (1 or -1) times the files holding each term of the rows put in
        ``temp.tally`` to ``term_files`` (a term no file holds any more is dropped), then
        empty ``temp.tally``; the lock held, inside the write's transaction."""
        db = self._db
        db.execute(
            "INSERT INTO term_files(term, files) SELECT term, ? * doc FROM temp.tally_terms"
            " WHERE true ON CONFLICT(term) DO UPDATE SET files = files + excluded.files",
            (sign,),
        )
        if sign < 0:
            db.execute(
                "DELETE FROM term_files WHERE files <= 0"
                " AND term IN (SELECT term FROM temp.tally_terms)"
            )
        db.execute("INSERT INTO temp.tally(tally) VALUES ('delete-all')")

    def search(
        self, words: Sequence[str], limit: int, column: str = "body"
    ) -> list[tuple[str, float]]:
        """The best ``limit`` files for ``words`` (lower case) in ``column`` (``"body"``:
        the text, ``"name"``: the path) by BM25 (FTS5's ``bm25()``, k1 = 1.2, b = 0.75),
        best first, as ``(path, score)`` with ``score`` > 0 (higher is better). Words in
        more than ``COMMON_SHARE`` of the files are left out."""
        return self.search_all([(words, limit, column)])[0]

    def search_all(
        self, asks: Sequence[tuple[Sequence[str], int, str]]
    ) -> list[list[tuple[str, float]]]:
        """``[search(words, limit, column) for words, limit, column in asks]``, the
        queries run at once: about half of the FTS5 work on this connection in the
        caller's thread, the rest on a read connection in one helper thread (SQLite lets
        go of the GIL while FTS5 scores, so two cores score two queries; a file index
        only, an in-memory one runs them in turn). Each query sees the last committed
        state. The rows of the last ``searches.SEARCHES_KEPT`` queries are kept and given again
        while the index stays as it was (no write here, no commit by another
        connection): the same rows the query would give. A query of few postings
        (``PHRASE_POSTINGS``) is made from the rows of its words' phrases, which are
        kept the same way (``rank/searches.py``, the same rows): a focus sharing words
        with one asked before has only its new words searched."""
        out: list[list[tuple[str, float]]] = [[] for _ in asks]
        todo: list[tuple[int, Plan]] = []
        have: dict[str, Rows] = {}
        plans = [
            (i, limit, self._plan(words, column)) for i, (words, limit, column) in enumerate(asks)
        ]
        with self._lock:
            generation = self._current()
            for i, limit, plan in plans:
                if plan is None:
                    continue
                kept = self._kept.search((plan.query, limit))
                if kept is not None:  # the same query on the same index: its rows
                    out[i] = kept
                    continue
                plan.limit = limit
                todo.append((i, plan))
                for phrase, _ in plan.phrases or ():
                    got = self._kept.phrases.get(phrase)
                    if got is not None:
                        have[phrase] = got
        if todo:
            fresh = self._run([plan for _, plan in todo], have)
            for (i, _), rows in zip(todo, fresh, strict=True):
                out[i] = rows
            self._keep(
                generation,
                [(plan.query, plan.limit, out[i]) for i, plan in todo],
                have,
            )
        return out

    def _plan(self, words: Sequence[str], column: str) -> Plan | None:
        """How ``words`` are searched in ``column``: the FTS5 query of their informative
        ones and the files holding them (their ``counts``), and, when those add up to at
        most ``PHRASE_POSTINGS``, each word's own query (its phrase) with its files;
        None: no informative word."""
        kept = self.informative(words)
        if not kept:
            return None
        df = self.counts(kept)
        query = "{" + column + "} : (" + " OR ".join(quote(w) for w in kept) + ")"
        postings = sum(df[w] for w in kept)
        if postings > PHRASE_POSTINGS:
            return Plan(query, postings, None)
        return Plan(query, postings, [("{" + column + "} : " + quote(w), df[w]) for w in kept])

    def _current(self) -> int:
        """The index's generation now (the lock held): moved, the kept searches and
        word counts dropped and the files counted again, when another connection
        committed since the last look (an in-process answer writing the same file)."""
        version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
        if version != self._data_version:
            if self._data_version is not None:
                self._count = int(self._db.execute("SELECT count(*) FROM files").fetchone()[0])
                self._df.clear()
            self._data_version = version
            self._generation += 1
            self._kept.clear()
        return self._generation

    def _keep(
        self,
        generation: int,
        rows: Sequence[tuple[str, int, list[tuple[str, float]]]],
        phrases: Mapping[str, Rows],
    ) -> None:
        """Keep the rows of searches and ``phrases`` run at ``generation``, unless the
        index changed meanwhile (then they may be of either state: not kept)."""
        with self._lock:
            if not self._closed and self._current() == generation:
                self._kept.keep(rows, phrases)

    def _run(self, plans: Sequence[Plan], have: dict[str, Rows]) -> list[list[tuple[str, float]]]:
        """The rows of each of ``plans``: the phrases not in ``have`` (added to it) and
        the one queries of the plans without phrases asked of FTS5, in two halves of
        about the same postings when there are several (one in this thread, one in the
        search thread), then each phrased plan's rows merged (``searches.merged``)."""
        jobs: dict[Job, int] = {}  # -> postings
        for plan in plans:
            if plan.phrases is None:
                jobs[(plan.query, plan.limit)] = plan.postings
            else:
                jobs.update(((p, 0), n) for p, n in plan.phrases if p not in have)
        searched = self._fetch(jobs, have)
        best = [
            merged([have[p] for p, _ in plan.phrases], plan.limit) if plan.phrases else ([], [])
            for plan in plans
        ]
        with self._lock:
            paths = self._kept.paths(self._db, [r for ids, _ in best for r in ids])
            return [
                searched[(plan.query, plan.limit)]
                if plan.phrases is None
                else with_paths(paths, ids, scores)
                for plan, (ids, scores) in zip(plans, best, strict=True)
            ]

    def _fetch(self, jobs: Mapping[Job, int], phrases: dict[str, Rows]) -> Searched:
        """Ask FTS5 each of ``jobs`` (``searches.run_jobs``; the value: its postings), in
        two halves of about the same postings (``searches.halves``), one here and one in
        the search thread when there are several and the index is a file; the phrases'
        rows are put in ``phrases``, the searches' returned."""
        pool = self._search_pool() if len(jobs) > 1 and self.path is not None else None
        here, there = halves(jobs, pool is not None)
        future = None
        if there and pool is not None:
            try:
                future = pool.submit(self._read_jobs, there)
            except RuntimeError:  # closed meanwhile: in turn, here
                here, there = [*here, *there], []
        with self._lock:
            searched, rows_of = run_jobs(self._db, here)
        phrases.update(rows_of)
        if future is not None:
            more, rows_of = future.result()
            searched.update(more)
            phrases.update(rows_of)
        return searched

    def _search_pool(self) -> concurrent.futures.ThreadPoolExecutor | None:
        with self._lock:
            if self._closed:
                return None
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="readmany-search"
                )
            return self._pool

    def _read_jobs(self, jobs: Sequence[Job]) -> tuple[Searched, dict[str, Rows]]:
        """``jobs`` (``searches.run_jobs``) on the helper thread's own read connection."""
        reader = getattr(self._local, "db", None)
        if reader is None:
            assert self.path is not None
            reader = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_MS / 1000
            )
            reader.execute("PRAGMA query_only=1")
            self._local.db = reader
            with self._lock:
                self._readers.append(reader)
        return run_jobs(reader, jobs)

    def informative(self, words: Sequence[str]) -> list[str]:
        """``words`` that some indexed file holds and at most ``COMMON_SHARE`` of them,
        rarest first, within ``POSTINGS_BUDGET``. A word of several tokens (a snake-case
        identifier, ``parse_known_args``, which the tokenizer splits at ``_``) is searched
        as a phrase of them, and counts as held by as many files as its rarest token."""
        if not words:
            return []
        df = self.counts(words)
        limit = max(2, int(self._count * COMMON_SHARE))
        ranked = sorted((w for w in words if 0 < df.get(w, 0) <= limit), key=lambda w: df[w])
        kept: list[str] = []
        postings = 0
        for w in ranked:
            if len(kept) >= MIN_WORDS and postings + df[w] > POSTINGS_BUDGET:
                break
            kept.append(w)
            postings += df[w]
        return kept

    def counts(self, words: Sequence[str]) -> dict[str, int]:
        """``{word: files}`` for each of ``words`` (lower case): how many indexed files
        hold it (``term_files``: what the ``fts5vocab`` row table counts, without
        reading the word's doclist); a word of several tokens counts as
        its rarest token (an upper bound of its phrase's files). Kept until this
        connection writes or another one commits."""
        with self._lock:
            self._current()
            df = self._df
            missing = [w for w in dict.fromkeys(words) if w not in df]
            if missing:
                if len(df) > DF_KEPT:
                    df.clear()
                parts = {w: _TOKEN.findall(w) for w in missing}
                terms = list(dict.fromkeys(t for ts in parts.values() for t in ts))
                marks = ",".join("?" * len(terms))
                # stale during a first build (``defer_counts``): the vocabulary's counts
                src = "doc FROM docs_terms" if self._stale() else "files FROM term_files"
                q = f"SELECT term, {src} WHERE term IN ({marks})"
                held = dict(self._db.execute(q, terms)) if terms else {}
                for w, ts in parts.items():
                    df[w] = min((held.get(t, 0) for t in ts), default=0)
            return {w: df.get(w, 0) for w in words}

    def postings(self, word: str, column: str, ids: str) -> tuple[int, list[tuple[int, float]]]:
        """For ``word`` (lower case; a word of several tokens as their phrase) in
        ``column``: (how many indexed files hold it, ``[(rowid, score)]`` of those whose
        rowid is among ``ids``, a JSON array of ``files.id``), ``score`` being FTS5's
        ``-bm25()`` of that one-word query (higher is better), which weighs the word by
        the whole index's statistics (``rank.stats`` computes it again with the
        candidates'). FTS5 reads the word's postings, the caller bounds the words asked
        by their ``counts``; only the files of ``ids`` are scored."""
        query = "{" + column + "} : " + quote(word)
        with self._lock:
            held = int(
                self._db.execute(
                    "SELECT count(*) FROM docs WHERE docs MATCH ?", (query,)
                ).fetchone()[0]
            )
            # ``+rowid``: the ids filter the matches (not one FTS5 lookup an id)
            rows = self._db.execute(
                "SELECT rowid, -bm25(docs) FROM docs WHERE docs MATCH ?"
                " AND +rowid IN (SELECT value FROM json_each(?))",
                (query, ids),
            ).fetchall()
        return held, [(int(i), float(v)) for i, v in rows]

    def averages(self) -> bytes:
        """FTS5's averages record (``docs_data`` row 1: the rows, then each column's
        tokens, SQLite varints; empty before the first commit): what ``bm25()`` takes
        its average row length from."""
        with self._lock:
            row = self._db.execute("SELECT block FROM docs_data WHERE id = 1").fetchone()
        return bytes(row[0]) if row and row[0] is not None else b""

    def sizes(self, paths: Sequence[str]) -> list[tuple[str, int, bytes]]:
        """``(path, rowid, sizes)`` of the indexed ones of ``paths``, in no particular
        order; ``sizes``: the row's ``docs_docsize`` blob (its columns' lengths in
        tokens, SQLite varints), what ``bm25()`` takes a row's length from."""
        out: list[tuple[str, int, bytes]] = []
        with self._lock:
            for chunk in chunks(paths):
                q = (
                    "SELECT f.path, f.id, z.sz FROM files f JOIN docs_docsize z ON z.id = f.id"
                    " WHERE f.path IN ({})".format(",".join("?" * len(chunk)))
                )
                out.extend((p, int(i), bytes(z)) for p, i, z in self._db.execute(q, list(chunk)))
        return out

    def version(self) -> int:
        """The index's generation now: it moves with each write through this connection
        and when another connection has committed since the last look (SQLite's ``PRAGMA
        data_version``); equal twice, the index is unchanged in between."""
        with self._lock:
            return self._current()

    def holding(self, words: Sequence[str], paths: Sequence[str]) -> dict[str, list[str]]:
        """For each of ``paths`` (indexed), the ``words`` (lower case) its text holds as
        the tokenizer sees them (a run of letters and digits, any case), in the order
        of ``words``; only the first ``HOLDING_CHARS`` characters of each text are looked
        at. One read of the texts rather than one full-text query per word: a query reads
        the word's whole posting list (~4 ms each at 100,000 files); a text several of
        ``paths`` hold is looked at once."""
        out: dict[str, list[str]] = {p: [] for p in paths}
        if not paths or not words:
            return out
        with self._lock:
            ids = dict(self._marks_ids(paths))
            if not ids:
                return out
            back = {i: p for p, i in ids.items()}
            marks = ",".join(str(i) for i in ids.values())
            rows = self._db.execute(
                f"SELECT rowid, substr(body, 1, ?) FROM docs WHERE rowid IN ({marks})",
                (HOLDING_CHARS,),
            ).fetchall()
        seen: dict[str, list[str]] = {}  # texts held by several files (copies): once
        for rowid, body in rows:
            text = body or ""
            held = seen.get(text)
            if held is None:
                low = text.lower()
                held = seen[text] = [w for w in words if _holds(low, w)]
            out[back[rowid]] = list(held)
        return out

    def _marks_ids(self, paths: Sequence[str]) -> list[tuple[str, int]]:
        q = "SELECT path, id FROM files WHERE path IN ({})".format(",".join("?" * len(paths)))
        return list(self._db.execute(q, list(paths)))
