"""rank/stats.py: BM25 with the candidates' statistics, on the real FTS5, and a root's
ranking that uses them when a request matches a minority of the indexed files."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.rank import stats
from readmany_daemon.rank.fulltext import FullText
from readmany_daemon.rank.stats import fts5_idf, json_available, search_candidates, varints
from readmany_daemon.rules.kinds import ALL
from readmany_daemon.settings import Settings
from tests.helpers import write_tree

#: ``fixture`` is held by every test file and one source file (many times): common in
#: the root, rare among the sources; ``marker`` by one source file only.
SOURCES = {
    "src/fixtures.py": "use(fixture, fixture, fixture, fixture)\n" + "x = 1\n" * 20,
    "src/mark.py": "use(marker)\n" + "y = 2\n" * 20,
    "src/a.py": "def alpha(): return 1\n" * 5,
    "src/b.py": "def beta(): return 2\n" * 5,
    "src/c.py": "def gamma(): return 3\n" * 5,
    "src/d.py": "def delta(): return 4\n" * 5,
}
TESTS = {f"testing/test_{i}.py": f"def test_{i}(fixture): assert fixture\n" for i in range(30)}


def _index(texts: dict[str, str]) -> FullText:
    ft = FullText(None)
    assert ft.write([(p, "1:1:1", t) for p, t in texts.items()], [])
    return ft


def test_fts5_idf_is_fts5s_formula_with_its_floor() -> None:
    assert fts5_idf(10, 1) == pytest.approx(math.log(9.5 / 1.5))
    assert fts5_idf(10, 5) == 1e-6  # log(1) = 0: floored
    assert fts5_idf(10, 9) == 1e-6


def test_the_sqlite_python_links_has_json_each() -> None:
    assert json_available()  # else the one-query path answers (and the tests below fail)


def test_fts5s_records_are_as_this_module_reads_them() -> None:
    assert stats._probe()  # else the one-query path answers (and the tests below fail)


def test_records_of_another_shape_leave_the_search_to_fts5s_one_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An FTS5 whose averages record is not what this module reads (another SQLite's
    internals) fails the probe at the first search, with a warning, and every search is
    FTS5's own one query, as without the candidates' statistics."""
    ft = _index({**SOURCES, **TESTS})
    cand = {p: i for i, p in enumerate(SOURCES)}
    asks = [(["fixture", "marker"], 100, "body")]
    monkeypatch.setattr(stats, "_usable", None)
    monkeypatch.setattr(FullText, "averages", lambda self: b"\x00")
    got = search_candidates(ft, asks, cand)
    assert stats._usable is False
    one_query = [(p, s) for p, s in ft.search(["fixture", "marker"], 100) if p in cand]
    assert got == [one_query]


def test_varints_are_sqlites() -> None:
    assert varints(b"\x02\x03") == [2, 3]
    assert varints(b"\x81\x00\x7f") == [128, 127]
    assert varints(b"\xff" * 8 + b"\x01") == [(1 << 64) - 255]
    assert varints(b"") == []


def test_the_candidates_score_as_an_index_of_them_alone() -> None:
    """BM25 with the candidates' statistics is FTS5's ``bm25()`` of an index that holds
    the candidates only: the same files, the same scores, for text, paths and phrases."""
    ft = _index({**SOURCES, **TESTS, "docs/notes.txt": "marker " * 50})
    alone = _index(SOURCES)
    cand = {p: i for i, p in enumerate(SOURCES)}
    asks = [
        (["fixture", "marker", "use", "def"], 10, "body"),
        (["fixtures", "mark", "src"], 10, "name"),
        (["use_fixture", "return"], 10, "body"),
    ]
    got = search_candidates(ft, asks, cand)
    want = alone.search_all(asks)
    for g, w in zip(got, want, strict=True):
        assert [p for p, _ in g] == [p for p, _ in w]
        assert [s for _, s in g] == pytest.approx([s for _, s in w], rel=1e-9)


def test_a_write_is_seen_by_the_next_search() -> None:
    ft = _index({**SOURCES, **TESTS})
    cand = {p: i for i, p in enumerate(SOURCES)}
    before = search_candidates(ft, [(["marker"], 10, "body")], cand)[0]
    # mark.py grows: its BM25 falls (a longer row), its candidates' average moves
    assert ft.write([("src/mark.py", "2:2:2", "use(marker)\n" + "z = 3\n" * 200)], [])
    after = search_candidates(ft, [(["marker"], 10, "body")], cand)[0]
    alone = _index({**SOURCES, "src/mark.py": "use(marker)\n" + "z = 3\n" * 200})
    assert after[0][1] < before[0][1]
    assert after[0][1] == pytest.approx(alone.search(["marker"], 10)[0][1], rel=1e-9)


def test_candidates_that_are_the_whole_index_score_as_fts5s_bm25() -> None:
    ft = _index({**SOURCES, "docs/x.txt": "marker and fixture notes"})
    everything = {p: i for i, p in enumerate([*SOURCES, "docs/x.txt"])}
    # every file a candidate: the one query of the whole index answers
    want = ft.search_all([(["marker", "fixture"], 10, "body")])[0]
    assert search_candidates(ft, [(["marker", "fixture"], 10, "body")], everything)[0] == want
    # the per-word path with the same statistics gives the same scores
    got, searched = stats._search(ft, ["marker", "fixture"], 10, "body", everything, ft.count())
    assert searched == ["marker", "fixture"]  # held by the fewest candidates first
    assert [p for p, _ in got] == [p for p, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert a == pytest.approx(b, rel=1e-9)


def test_a_word_common_in_the_root_but_rare_among_the_candidates_ranks_its_file() -> None:
    ft = _index({**SOURCES, **TESTS})
    cand = {p: i for i, p in enumerate(SOURCES)}
    # the whole index's statistics: ``fixture`` is in most files (left out of the query,
    # its idf floored), so only ``marker`` ranks
    whole = [p for p, _ in ft.search(["fixture", "marker"], 10) if p in cand]
    assert whole == ["src/mark.py"]
    # the candidates' statistics: each word is in one of six sources, and fixtures.py
    # holds its word four times
    kept: list[str] = []
    (got,) = search_candidates(ft, [(["fixture", "marker"], 10, "body")], cand, kept)
    assert [p for p, _ in got] == ["src/fixtures.py", "src/mark.py"]
    assert sorted(kept) == ["fixture", "marker"]
    assert all(s > 0 for _, s in got)


def test_a_word_most_candidates_hold_is_left_out() -> None:
    ft = _index({**SOURCES, **TESTS})
    cand = {p: i for i, p in enumerate(SOURCES)}
    (got,) = search_candidates(ft, [(["return", "marker"], 10, "body")], cand)
    assert [p for p, _ in got] == ["src/mark.py"]  # ``return``: four of six sources


def test_the_name_column_and_unknown_words() -> None:
    ft = _index({**SOURCES, **TESTS})
    cand = {p: i for i, p in enumerate(SOURCES)}
    by_name, none, empty = search_candidates(
        ft,
        [(["fixtures", "test"], 10, "name"), (["nowhere"], 10, "body"), ([], 10, "body")],
        cand,
    )
    assert [p for p, _ in by_name] == ["src/fixtures.py"]
    assert (none, empty) == ([], [])
    assert search_candidates(ft, [(["fixture"], 10, "body")], {}) == [[]]


def test_a_root_ranks_a_glob_by_its_own_statistics(tmp_path: Path) -> None:
    """Through ``Workspace.ranking`` as the daemon keeps it (the whole root indexed)."""
    root = tmp_path / "w"
    write_tree(root, {**SOURCES, **TESTS})
    ws = Workspace.open(str(root), Settings())
    ws.rank_file = str(tmp_path / "cache" / "index-0123456789abcdef0123456789abcdef.rank")
    ws.rank_background = True
    cand = ws.index.glob("src/**/*.py", ALL, True)
    try:
        for _ in range(1000):
            got = ws.ranking.rank(cand, "the fixture marker", [])
            if got.pending_files == 0:
                break
        assert got.indexed_files == len(SOURCES) + len(TESTS)
        assert got.order[0] == "src/fixtures.py"
        assert got.why["src/fixtures.py"].startswith('content: "fixture')
    finally:
        ws.ranking.close()


def test_more_candidates_than_the_bound_are_scored_by_the_one_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ft = _index({**SOURCES, **TESTS})
    cand = {p: i for i, p in enumerate(SOURCES)}
    monkeypatch.setattr(stats, "MAX_CANDIDATES", len(SOURCES) - 1)
    kept: list[str] = []
    (got,) = search_candidates(ft, [(["fixture", "marker"], 10, "body")], cand, kept)
    assert [p for p, _ in got] == ["src/mark.py"]  # the whole index's statistics
    assert kept == ["marker"]
