"""rank/searches.py: a search made from its phrases' rows gives the very rows of FTS5's
one query (scores to the bit, ties in rowid order, the limit cutting among ties), and a
search sharing words with an earlier one asks FTS5 for its new words only."""

from __future__ import annotations

import sqlite3
from array import array
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readmany_daemon.rank import fulltext
from readmany_daemon.rank.fulltext import FullText
from readmany_daemon.rank.searches import PhraseRows, best_rows, halves, merged

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "parse", "known", "args"]


def _texts(draw_words: list[list[str]]) -> dict[str, str]:
    """One file per word list, and a copy of every third (equal scores: ties)."""
    texts: dict[str, str] = {}
    for n, words in enumerate(draw_words):
        text = " ".join(words) + "\n" + "parse_known_args()\n" * (n % 3 == 0)
        texts[f"src/m{n}.py"] = text
        if n % 3 == 1:
            texts[f"copy/m{n}.py"] = text
    return texts


def _one_query(ft: FullText, words: list[str], limit: int, column: str) -> list[tuple[str, float]]:
    """What FTS5's one ``OR`` query gives for the search (the form before phrases)."""
    plan = ft._plan(words, column)
    return [] if plan is None else best_rows(ft._db, plan.query, limit)


def _matches(ft: FullText) -> list[str]:
    """The full-text queries ``ft``'s own connection runs from now on."""
    ran: list[str] = []
    ft._db.set_trace_callback(
        lambda sql: ran.append(sql) if "MATCH" in sql and not sql.startswith("--") else None
    )
    return ran


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=12), min_size=3, max_size=30
    ),
    asks=st.lists(
        st.tuples(
            st.lists(
                st.sampled_from([*WORDS, "parse_known_args", "missing"]), min_size=1, max_size=6
            ),
            st.integers(1, 12),
            st.sampled_from(["body", "name"]),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_searches_made_from_phrases_give_the_one_querys_rows(
    docs: list[list[str]], asks: list[tuple[list[str], int, str]]
) -> None:
    ft = FullText(None)
    try:
        assert ft.write([(p, "1:1:1", t) for p, t in _texts(docs).items()], [])
        ft.search_all([(WORDS[:3], 5, "body")])  # some phrases kept from before
        got = ft.search_all(asks)
        assert got == [_one_query(ft, w, n, c) for w, n, c in asks]
        assert got == ft.search_all(asks)  # kept: the same rows again
    finally:
        ft.close()


def test_on_a_file_the_phrases_are_asked_on_two_threads_with_the_same_rows(
    tmp_path: Path,
) -> None:
    ft = FullText(str(tmp_path / "cache" / "index-x.rank"))
    try:
        texts = _texts([WORDS[k % 9 :] + WORDS[: k % 4] for k in range(40)])
        assert ft.write([(p, "1:1:1", t) for p, t in texts.items()], [])
        asks = [
            (WORDS, 7, "body"),
            (WORDS[2:], 9, "name"),
            (["parse_known_args", "zeta"], 5, "body"),
        ]
        assert ft.search_all(asks) == [_one_query(ft, w, n, c) for w, n, c in asks]
    finally:
        ft.close()


def test_a_search_sharing_words_with_an_earlier_one_asks_only_its_new_words() -> None:
    ft = FullText(None)
    texts = {
        "a.py": "pangolin scales armour",
        "b.py": "pangolin tongue",
        "c.py": "armour plates",
        "d.py": "other",
        "e.py": "other still",
        "f.py": "nothing",
    }
    assert ft.write([(p, "1:1:1", t) for p, t in texts.items()], [])
    ran = _matches(ft)
    assert [p for p, _ in ft.search(["pangolin", "armour"], 10)] == ["a.py", "b.py", "c.py"]
    assert len(ran) == 2  # one query a word
    got = ft.search(["pangolin", "armour", "tongue"], 10)
    assert len(ran) == 3 and '"tongue"' in ran[-1]  # the new word's only
    assert got == _one_query(ft, ["pangolin", "armour", "tongue"], 10, "body")


def test_a_search_of_many_postings_is_fts5s_one_query(monkeypatch: pytest.MonkeyPatch) -> None:
    ft = FullText(None)
    texts = {f"{n}.py": ("pangolin " if n < 3 else "") + f"w{n}" for n in range(8)}
    assert ft.write([(p, "1:1:1", t) for p, t in texts.items()], [])
    ran = _matches(ft)
    monkeypatch.setattr(fulltext, "PHRASE_POSTINGS", 3)  # 4: pangolin 3, w1 1
    got = ft.search(["pangolin", "w1"], 10)
    assert len(ran) == 1 and " OR " in ran[0]
    assert got == _one_query(ft, ["pangolin", "w1"], 10, "body") and len(got) == 3


def test_merged_sums_in_phrase_order_and_keeps_ties_in_rowid_order() -> None:
    a = (array("q", [1, 2, 5]), array("d", [0.1, 0.5, 0.5]))
    b = (array("q", [2, 3, 5]), array("d", [0.25, 0.6, 0.25]))
    ids, scores = merged([a, b], 3)
    assert ids == [2, 5, 3] and scores == [0.5 + 0.25, 0.5 + 0.25, 0.6]
    assert merged([a, b], 10)[0] == [2, 5, 3, 1]
    assert merged([], 5) == ([], [])


def test_phrase_rows_kept_are_bounded_oldest_first() -> None:
    kept = PhraseRows(limit=5)
    rows = (array("q", [1, 2, 3]), array("d", [1.0, 1.0, 1.0]))
    kept.put("a", rows)
    kept.put("b", rows)  # 6 rows: "a" goes
    assert kept.get("a") is None and kept.get("b") is rows and kept.rows == 3
    kept.put("big", (array("q", range(6)), array("d", [1.0] * 6)))  # over the limit alone
    assert kept.get("big") is None and kept.rows == 3
    kept.clear()
    assert kept.get("b") is None and kept.rows == 0


def test_halves_balance_the_postings() -> None:
    jobs = {("a", 0): 10, ("b", 0): 7, ("c", 0): 5, ("d", 5): 3}
    here, there = halves(jobs, True)
    assert here == [("a", 0), ("d", 5)] and there == [("b", 0), ("c", 0)]
    assert halves(jobs, False) == ([("a", 0), ("b", 0), ("c", 0), ("d", 5)], [])


def test_best_rows_is_fts5s_order() -> None:
    db = sqlite3.connect(":memory:")
    db.executescript(
        "CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT);"
        "CREATE VIRTUAL TABLE docs USING fts5(name, body);"
    )
    for i, body in enumerate(["x y", "x", "x", "y"], start=1):
        db.execute("INSERT INTO files VALUES (?, ?)", (i, f"{i}.py"))
        db.execute("INSERT INTO docs(rowid, name, body) VALUES (?, '', ?)", (i, body))
    query = '{body} : ("x" OR "y")'
    every = db.execute("SELECT rowid, -bm25(docs) FROM docs WHERE docs MATCH ?", (query,))
    want = sorted(every, key=lambda row: (-row[1], row[0]))[:3]  # ties: by rowid
    assert best_rows(db, query, 3) == [(f"{i}.py", s) for i, s in want]
    assert want[1][1] == want[2][1]  # rows 2 and 3 tie
    db.close()
