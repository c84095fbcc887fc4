"""A full-text search's FTS5 statements, and what the index keeps of its searches while
it stays as it was (:class:`Kept`): a search of few postings is made from the rows of its
phrases, each phrase's kept (``FullText.search_all``).

Why it gives the very rows of the query: FTS5's ``bm25()`` of a row for an ``OR`` query
of phrases (``fts5_aux.c``, ``fts5Bm25Function``) is ``-(0.0 + t_1 + t_2 + ...)``
summed in the query's phrase order, ``t_i = idf_i * f_i * (k1 + 1) / (f_i + k1 * (1 - b
+ b * D / avgdl))``, where ``f_i`` counts phrase ``i`` in the row, ``idf_i`` comes from
the rows holding phrase ``i`` in the whole table, ``D`` is the row's length and
``avgdl`` the table's: each term depends on its phrase and the row alone, and is ``0.0``
in a row without the phrase. A one-phrase query's ``-bm25()`` of a row is its ``t_i``,
so adding those in the query's phrase order, from ``0.0``, gives the same double (a unit
test holds it on real indexes). The query ``ORDER BY bm25(docs) LIMIT n`` keeps equal
scores in ascending rowid (FTS5 yields its matches by rowid, SQLite's sorter keeps their
order); :func:`merged` does the same.

A focus asked after another one shares most of its words (a focused read's next glob,
the task told again with a new name): only its new phrases are asked of FTS5. A phrase's
rows are kept as two arrays (8-byte rowids and scores: 16 bytes a row), at most
``KEPT_ROWS`` rows in all (bench/README.md "Focus").
"""

from __future__ import annotations

import sqlite3
from array import array
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Final, TypeVar

__all__ = [
    "KEPT_ROWS",
    "PATHS_KEPT",
    "SEARCHES_KEPT",
    "Job",
    "Kept",
    "PhraseRows",
    "Plan",
    "Searched",
    "best_rows",
    "chunks",
    "halves",
    "merged",
    "phrase_rows",
    "quote",
    "run_jobs",
    "with_paths",
]

#: Rows (rowid, score) of phrases kept in all (16 bytes each: ~1 MB).
KEPT_ROWS: Final = 64_000
#: Searches (query, limit) whose rows are kept until the index changes: the pages of one
#: focused read and reads of other globs with the same focus ask the same three queries
#: again; at most 2,000 rows each.
SEARCHES_KEPT: Final = 6
#: Paths of the rowids searches gave, kept while the index stays as it was: a new focus
#: sharing words with the last one finds most of the same files.
PATHS_KEPT: Final = 10_000

_T = TypeVar("_T")

#: One phrase's rows: (rowids ascending, each one's score), as two arrays.
Rows = tuple["array[int]", "array[float]"]
#: A query asked of FTS5 (``run_jobs``): (its text, the rows wanted; 0: every row of a
#: phrase).
Job = tuple[str, int]
#: Searches' best rows by (query, limit): ``[(path, score)]``, best first.
Searched = dict[Job, list[tuple[str, float]]]


def quote(word: str) -> str:
    """``word`` as an FTS5 string (a phrase of its tokens)."""
    return '"' + word.replace('"', '""') + '"'


class Plan:
    """How one search is asked (``FullText._plan``): its FTS5 ``query`` (an ``OR`` of
    phrases in one column), the files its words are held by (``postings``, from the
    index's counts), its phrases' own queries with theirs (None: the one query answers),
    and the rows wanted (``limit``)."""

    __slots__ = ("limit", "phrases", "postings", "query")

    def __init__(self, query: str, postings: int, phrases: list[tuple[str, int]] | None) -> None:
        self.query = query
        self.postings = postings
        self.phrases = phrases
        self.limit = 0


def best_rows(db: sqlite3.Connection, query: str, limit: int) -> list[tuple[str, float]]:
    """The best ``limit`` ``(path, score)`` of FTS5 ``query`` on ``db``, best first."""
    # the best ``limit`` first, then their paths: a path looked up per match cost ~10 %
    # more at 100,000 files (bench/README.md "Focus")
    rows = db.execute(
        "SELECT f.path, s FROM (SELECT rowid AS r, -bm25(docs) AS s FROM docs"
        " WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?)"
        " JOIN files f ON f.id = r ORDER BY s DESC",
        (query, limit),
    ).fetchall()
    return [(p, float(s)) for p, s in rows]


def phrase_rows(db: sqlite3.Connection, query: str) -> Rows:
    """Every row FTS5 ``query`` (one phrase, with its column filter) matches on ``db``:
    (rowids ascending, each one's ``-bm25()``, higher is better)."""
    rows = db.execute("SELECT rowid, -bm25(docs) FROM docs WHERE docs MATCH ?", (query,)).fetchall()
    return array("q", [r for r, _ in rows]), array("d", [float(s) for _, s in rows])


def run_jobs(db: sqlite3.Connection, jobs: Sequence[Job]) -> tuple[Searched, dict[str, Rows]]:
    """Each of ``jobs`` asked on ``db``: ``(query, limit)`` its :func:`best_rows`, ``(query,
    0)`` its :func:`phrase_rows`; (the former by job, the latter by query)."""
    searched: Searched = {}
    phrases: dict[str, Rows] = {}
    for query, limit in jobs:
        if limit:
            searched[(query, limit)] = best_rows(db, query, limit)
        else:
            phrases[query] = phrase_rows(db, query)
    return searched, phrases


def halves(jobs: Mapping[Job, int], split: bool) -> tuple[list[Job], list[Job]]:
    """``jobs`` (-> their postings, what FTS5's work grows with) in two lists of about
    the same postings (the biggest first, each to the lighter one); ``split`` False:
    all in the first."""
    here: list[Job] = []
    there: list[Job] = []
    weight = [0, 0]
    for job in sorted(jobs, key=jobs.__getitem__, reverse=True):
        side = 1 if split and weight[1] < weight[0] else 0
        (there if side else here).append(job)
        weight[side] += jobs[job]
    return here, there


def merged(parts: Sequence[Rows], limit: int) -> tuple[list[int], list[float]]:
    """The best ``limit`` rows of the ``OR`` query of ``parts`` (each phrase's
    :func:`phrase_rows`, in the query's phrase order) as (rowids, their scores), best
    first, equal scores in ascending rowid: what FTS5 gives for the query (see the
    module)."""
    acc: dict[int, float] = {}
    for ids, scores in parts:
        if not acc:  # 0.0 + s is s
            acc = dict(zip(ids, scores, strict=True))
            continue
        get = acc.get
        for rowid, score in zip(ids, scores, strict=True):
            acc[rowid] = get(rowid, 0.0) + score
    best = sorted(acc)
    best.sort(key=acc.__getitem__, reverse=True)  # stable: ties keep ascending rowids
    del best[limit:]
    return best, list(map(acc.__getitem__, best))


class PhraseRows:
    """The rows of the last phrases asked, by the phrase's FTS5 query (its column filter
    and its quoted words), at most ``limit`` rows in all (the oldest phrases dropped
    first). Not locked: its owner's lock guards it."""

    def __init__(self, limit: int = KEPT_ROWS) -> None:
        self.limit = limit
        self.rows = 0
        self._kept: OrderedDict[str, Rows] = OrderedDict()

    def get(self, key: str) -> Rows | None:
        """The kept rows of ``key`` (made the newest), or None."""
        got = self._kept.get(key)
        if got is not None:
            self._kept.move_to_end(key)
        return got

    def put(self, key: str, rows: Rows) -> None:
        """Keep ``rows`` for ``key`` (a phrase of more than ``limit`` rows is not kept)."""
        if len(rows[0]) > self.limit:
            return
        old = self._kept.pop(key, None)
        if old is not None:
            self.rows -= len(old[0])
        self._kept[key] = rows
        self.rows += len(rows[0])
        while self.rows > self.limit:
            _, dropped = self._kept.popitem(last=False)
            self.rows -= len(dropped[0])

    def clear(self) -> None:
        """Forget every phrase (the index changed)."""
        self._kept.clear()
        self.rows = 0


def chunks(items: Sequence[_T], size: int = 500) -> Iterator[Sequence[_T]]:
    """``items`` in slices of at most ``size`` (SQLite's bound parameters per query)."""
    for at in range(0, len(items), size):
        yield items[at : at + size]


def with_paths(
    paths: Mapping[int, str], ids: Sequence[int], scores: Sequence[float]
) -> list[tuple[str, float]]:
    """``[(path, score)]`` of the rowids ``ids`` (each with its score) that ``paths``
    holds, in their order (made in C: ~6,000 rows a focused call)."""
    got = list(map(paths.get, ids))
    if None in got:  # gone since (a write between the search and the look-up)
        return [(p, s) for p, s in zip(got, scores, strict=True) if p is not None]
    return list(zip(got, scores, strict=True))  # type: ignore[arg-type]


class Kept:
    """What a full-text index keeps of its searches while it stays as it was (its owner
    calls ``clear`` when it changes): the rows of the last ``SEARCHES_KEPT`` searches by
    (query, limit), those of the last phrases (``phrases``, :class:`PhraseRows`), and
    the paths of the rowids searches gave (about ``PATHS_KEPT``). Not locked: its
    owner's lock guards it."""

    def __init__(self) -> None:
        self.phrases = PhraseRows()
        self._searches: OrderedDict[Job, list[tuple[str, float]]] = OrderedDict()
        self._path_of: dict[int, str] = {}

    def clear(self) -> None:
        """Forget everything (the index changed)."""
        self._searches.clear()
        self.phrases.clear()
        self._path_of.clear()

    def search(self, key: Job) -> list[tuple[str, float]] | None:
        """A copy of the kept rows of search ``key`` (made the newest), or None."""
        got = self._searches.get(key)
        if got is None:
            return None
        self._searches.move_to_end(key)
        return list(got)

    def keep(
        self, rows: Sequence[tuple[str, int, list[tuple[str, float]]]], phrases: Mapping[str, Rows]
    ) -> None:
        """Keep the ``rows`` of searches ``(query, limit, rows)`` and of ``phrases``."""
        for query, limit, got in rows:
            self._searches[(query, limit)] = list(got)
        while len(self._searches) > SEARCHES_KEPT:
            self._searches.popitem(last=False)
        for phrase, got_rows in phrases.items():
            if self.phrases.get(phrase) is None:
                self.phrases.put(phrase, got_rows)

    def paths(self, db: sqlite3.Connection, ids: Sequence[int]) -> Mapping[int, str]:
        """``{rowid: path}`` holding those of ``ids`` that ``db``'s ``files`` holds (read
        it before the next call): the paths of rowids asked before are kept (about
        ``PATHS_KEPT``: past it, those of the last ``ids`` only), the others looked up."""
        known = self._path_of
        missing = sorted({r for r in ids if r not in known})
        if len(known) + len(missing) > PATHS_KEPT:  # only those of ``ids`` stay
            kept = {r: known[r] for r in ids if r in known}
            known.clear()
            known.update(kept)
        for chunk in chunks(missing):
            q = "SELECT id, path FROM files WHERE id IN ({})".format(",".join("?" * len(chunk)))
            known.update(db.execute(q, chunk))
        return known
