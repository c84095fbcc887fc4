"""BM25 with the candidates' statistics: the content and names signals when the files a
request matches are a minority of the root's full-text index.

FTS5's ``bm25()`` weighs each word by the whole table (every indexed file of the root):
``idf = log((N - n + 0.5) / (n + 0.5))`` (floored at 1e-6), N the indexed files, n those
holding the word. A word common elsewhere in the root (``fixture`` in pytest's
``testing/``) but rare among the candidates (``src/**/*.py``) is weighed down, and one
rare in the root but held by most candidates is weighed up; FTS5 also divides a row's
length by the whole table's average (pytest's root holds many short files, so its
``src/`` files counted as long). The candidates' own statistics tell them apart better
(bench/README.md "Focus": on pytest 0.680 delivered whole through the daemon, 0.666
with the whole root's).

So the candidates are scored as an index of them alone would score them (a unit test
holds it). Each word is asked of FTS5 alone (``FullText.postings``: how many indexed
files hold it, and its single-word ``bm25()`` of the candidates among them, their row
lengths in tokens from ``docs_docsize``, kept as below); FTS5's
formula (``fts5_aux.c``, k1 = 1.2, b = 0.75: ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b +
b * length / average))``) is solved for the word's occurrences in the file and computed
again (``rescored``) with the candidates' idf (n: the candidates among the rows, N: the
indexed candidates) and their average row length (from ``docs_docsize``, kept per
candidate list while the index is unchanged, ``FullText.version``); a file's words are
summed, as FTS5 sums the phrases of an ``OR`` query. A word held by more than
``COMMON_SHARE`` of the candidates is left out, as the one-query path leaves out those of
more than that share of the index. The words asked are the rarest by the index's counts
while their postings add up to ``POSTINGS_BUDGET`` (each posting is scored by FTS5 once,
as in the one-query path). Where the candidates are more than ``MINORITY_SHARE`` of the
index the statistics differ little and the one query (``FullText.search_all``) answers:
the 100,000-file ``**/*.py`` read keeps its cost; so it does for more than
``MAX_CANDIDATES``, where filtering each word's postings costs more than the one query.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import logging
import math
import sqlite3
import weakref
from collections.abc import Mapping, Sequence
from itertools import compress
from operator import itemgetter
from typing import Final

from readmany_daemon.rank.fulltext import COMMON_SHARE, MIN_WORDS, POSTINGS_BUDGET, FullText

log = logging.getLogger(__name__)

__all__ = [
    "MAX_CANDIDATES",
    "MINORITY_SHARE",
    "fts5_idf",
    "json_available",
    "rescored",
    "search_candidates",
    "statistics_available",
    "varints",
]

#: Candidates at most this share of the indexed files are scored with their own
#: statistics; more, with the whole index's (one FTS5 query a search).
MINORITY_SHARE: Final = 0.5
#: More candidates than this are scored by FTS5's one query whatever their share: each
#: word's query filters its postings by the candidates' ids, and at 100,000 files ~18,000
#: candidates cost +24 ms a focused read over the one query, ~5,400 save ~13 ms
#: (bench/README.md "Focus").
MAX_CANDIDATES: Final = 8_000
#: FTS5's floor of a word's idf (``fts5_aux.c``: a word in half the rows or more).
IDF_FLOOR: Final = 1e-6
#: FTS5's ``bm25()`` parameters (``fts5_aux.c``).
K1: Final = 1.2
B: Final = 0.75


def fts5_idf(rows: int, holding: int) -> float:
    """BM25's idf as FTS5's ``bm25()`` computes it: ``log((rows - holding + 0.5) /
    (holding + 0.5))``, at least ``IDF_FLOOR`` (``rows``: the documents, ``holding``:
    those holding the word; counts of files)."""
    idf = math.log((rows - holding + 0.5) / (holding + 0.5))
    return idf if idf > 0 else IDF_FLOOR


_json: bool | None = None


def json_available() -> bool:
    """Whether the SQLite library Python links has ``json_each`` (built in since SQLite
    3.38; ``FullText.postings`` passes the candidates' ids as a JSON array). Without it
    the one-query path answers. Checked once per process."""
    global _json
    if _json is None:
        try:
            with contextlib.closing(sqlite3.connect(":memory:")) as db:
                db.execute("SELECT value FROM json_each('[1]')").fetchall()
            _json = True
        except sqlite3.Error:
            _json = False
    return _json


_usable: bool | None = None


def statistics_available() -> bool:
    """Whether the candidates' statistics can be computed here, checked once per
    process: SQLite has ``json_each`` (:func:`json_available`), and FTS5's own records
    this module reads (the averages record in ``docs_data``, the ``docs_docsize`` rows:
    FTS5's internals, not its documented interface) have the shape it expects. The
    probe indexes three files in memory and scores them as their own candidates, which
    must give FTS5's own ``bm25()`` (to 1e-6); anything else, and FTS5's one query
    answers every search."""
    global _usable
    if _usable is None:
        _usable = json_available() and _probe()
    return _usable


def _probe() -> bool:
    """Whether this module's scores of an index's own files are FTS5's (see
    :func:`statistics_available`)."""
    texts = ("alpha beta beta gamma delta", "alpha delta", "epsilon zeta eta theta iota kappa")
    paths = {f"{n}.py": n for n in range(len(texts))}
    try:
        ft = FullText(None)
        try:
            if not ft.write([(p, "0:0:0", t) for p, t in zip(paths, texts, strict=True)], []):
                return False
            words = ["beta", "delta", "zeta"]
            mine = dict(_search(ft, words, 10, "body", paths, ft.count())[0])
            fts5 = dict(ft.search(words, 10))
        finally:
            ft.close()
    except (sqlite3.Error, ValueError, KeyError, IndexError, ZeroDivisionError) as exc:
        log.warning("no candidates' statistics (FTS5's one query ranks): %s", exc)
        return False
    same = len(fts5) == 3 and mine.keys() == fts5.keys()
    same = same and all(math.isclose(mine[p], fts5[p], rel_tol=1e-6) for p in fts5)
    if not same:
        log.warning("no candidates' statistics: FTS5's records are not as expected")
    return same


def search_candidates(
    fulltext: FullText,
    asks: Sequence[tuple[Sequence[str], int, str]],
    candidates: Mapping[str, int],
    kept: list[str] | None = None,
) -> list[list[tuple[str, float]]]:
    """``fulltext.search_all(asks)`` restricted to ``candidates`` (root-relative paths ->
    0-based place), each query's words scored by BM25 with the candidates' statistics
    when the candidates are at most ``MINORITY_SHARE`` of the indexed files and at most
    ``MAX_CANDIDATES`` (see the module; with :func:`statistics_available`), else by FTS5's own
    ``bm25()``. Each answer: the best ``limit`` candidates as ``(path, score)``, score >
    0, best first. ``kept`` (when given) is extended with the words the first query
    searched, rarest first (among the candidates, or in the index on the one-query
    path): the words ``why`` may name."""
    indexed = fulltext.count()
    few = 0 < len(candidates) <= min(indexed * MINORITY_SHARE, MAX_CANDIDATES)
    if not few or not statistics_available():
        if kept is not None and asks:
            kept.extend(fulltext.informative(asks[0][0]))
        return [
            # kept in C: ~6,000 rows a focused call
            list(compress(found, map(candidates.__contains__, map(itemgetter(0), found))))
            for found in fulltext.search_all(asks)
        ]
    out: list[list[tuple[str, float]]] = []
    for i, (words, limit, column) in enumerate(asks):
        found, searched = _search(fulltext, words, limit, column, candidates, indexed)
        out.append(found)
        if i == 0 and kept is not None:
            kept.extend(searched)
    return out


def varints(blob: bytes) -> list[int]:
    """The unsigned integers of ``blob`` in SQLite's varint format (big-endian, 7 bits a
    byte while its high bit is set, the ninth byte whole), as FTS5 stores its sizes."""
    out: list[int] = []
    value = used = 0
    for byte in blob:
        used += 1
        if used == 9:
            out.append((value << 8) | byte)
            value = used = 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            out.append((value << 7) | byte)
            value = used = 0
    return out


def rescored(
    score: float,
    tokens: int,
    index: tuple[float, float],
    matched: tuple[float, float],
) -> float:
    """One word's BM25 in one file (``score``: FTS5's, with ``index`` = (the word's idf,
    the average row length in tokens) of the whole index) with the statistics of
    ``matched`` instead (the same pair among the candidates); ``tokens``: the file's
    row length (all columns, as FTS5's ``bm25()`` takes it). FTS5's formula
    (``fts5_aux.c``): ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * tokens / avg))``,
    solved for ``tf`` (the word's occurrences) and computed again."""
    part = score / index[0]  # the term-frequency part with the index's average
    k_index = K1 * (1 - B + B * tokens / index[1])
    tf = part * k_index / max((K1 + 1) - part, 1e-12)
    k_matched = K1 * (1 - B + B * tokens / matched[1])
    return matched[0] * tf * (K1 + 1) / (tf + k_matched)


class _Candidates:
    """The candidates as the index holds them: ``ids`` (a JSON array of their rowids),
    ``paths`` (rowid -> path), ``tokens`` (rowid -> row length in tokens, all columns)
    and their average row length."""

    def __init__(self, rows: Sequence[tuple[str, int, bytes]]) -> None:
        self.paths = {i: p for p, i, _ in rows}
        self.tokens = {i: sum(varints(z)) for _, i, z in rows}
        self.ids = json.dumps(list(self.paths))
        self.average = sum(self.tokens.values()) / len(rows) if rows else 0.0


#: Per index: (the candidates asked, the index's ``version``, what it holds of them).
_KEPT: weakref.WeakKeyDictionary[FullText, tuple[object, int, _Candidates]]
_KEPT = weakref.WeakKeyDictionary()


def _held(fulltext: FullText, candidates: Mapping[str, int]) -> _Candidates:
    """The indexed ``candidates``, kept while the same candidates object is asked of an
    unchanged index (a warm request asks again with it)."""
    version = fulltext.version()
    kept = _KEPT.get(fulltext)
    if kept is not None and kept[0] is candidates and kept[1] == version:
        return kept[2]
    got = _Candidates(fulltext.sizes(list(candidates)))
    _KEPT[fulltext] = (candidates, version, got)
    return got


def _search(
    fulltext: FullText,
    words: Sequence[str],
    limit: int,
    column: str,
    candidates: Mapping[str, int],
    indexed: int,
) -> tuple[list[tuple[str, float]], list[str]]:
    """One query's best ``limit`` candidates by BM25 with the candidates' statistics,
    and the words it searched, held by the fewest candidates first."""
    if not words:
        return [], []
    counts = fulltext.counts(words)
    held = _held(fulltext, candidates)
    files = len(held.paths)
    averages = varints(fulltext.averages())
    if not files or len(averages) < 2 or not averages[0]:
        return [], []
    average = sum(averages[1:]) / averages[0]
    common = max(2, int(files * COMMON_SHARE))
    scores: dict[int, float] = {}
    searched: dict[str, int] = {}
    postings = 0
    for word in sorted((w for w in dict.fromkeys(words) if counts[w] > 0), key=counts.__getitem__):
        if len(searched) >= MIN_WORDS and postings + counts[word] > POSTINGS_BUDGET:
            break
        postings += counts[word]
        rows, hits = fulltext.postings(word, column, held.ids)
        if not hits or len(hits) > common:
            continue
        searched[word] = len(hits)
        index = (fts5_idf(max(indexed, rows), rows), average)
        matched = (fts5_idf(files, len(hits)), held.average)
        get = scores.get
        for i, s in hits:
            scores[i] = get(i, 0.0) + rescored(s, held.tokens[i], index, matched)
    by_path = {held.paths[i]: s for i, s in scores.items()}
    best = heapq.nlargest(limit, by_path.items(), key=lambda item: (item[1], -candidates[item[0]]))
    return [(p, s) for p, s in best if s > 0], sorted(searched, key=searched.__getitem__)
