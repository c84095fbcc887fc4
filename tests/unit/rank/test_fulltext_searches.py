"""rank/fulltext.py keeps the rows of its last searches while the index stays as it was
(``SEARCHES_KEPT``): a focused read's next page, or another read with the same focus,
asks the same queries again. A write on this connection, or a commit by another one
(another process answering in process), drops them."""

from __future__ import annotations

from pathlib import Path

from readmany_daemon.rank.fulltext import FullText
from readmany_daemon.rank.searches import SEARCHES_KEPT, PhraseRows


def _matches(ft: FullText) -> list[str]:
    """The full-text queries ``ft``'s own connection runs from now on (FTS5's own
    statements within one, traced with ``-- ``, left out)."""
    ran: list[str] = []
    ft._db.set_trace_callback(
        lambda sql: ran.append(sql) if "MATCH" in sql and not sql.startswith("--") else None
    )
    return ran


def test_a_search_asked_again_on_the_same_index_runs_no_query() -> None:
    ft = FullText(None)
    assert ft.write([("a.py", "1:1:1", "pangolin scales"), ("b.py", "1:1:1", "other")], [])
    ran = _matches(ft)
    first = ft.search(["pangolin"], 10)
    assert [p for p, _ in first] == ["a.py"] and len(ran) == 1
    first.clear()  # what a caller does with its rows is its own
    assert ft.search(["pangolin"], 10) == ft.search(["pangolin"], 10) != []
    assert len(ran) == 1
    # another limit: another search, made from the word's kept rows (no query)
    assert ft.search(["pangolin"], 5) and len(ran) == 1


def test_a_write_drops_the_kept_searches() -> None:
    ft = FullText(None)
    assert ft.write([("a.py", "1:1:1", "pangolin")], [])
    assert [p for p, _ in ft.search(["pangolin"], 10)] == ["a.py"]
    assert ft.write([("b.py", "1:1:1", "pangolin pangolin")], ["a.py"])
    assert [p for p, _ in ft.search(["pangolin"], 10)] == ["b.py"]


def test_a_commit_by_another_connection_drops_the_kept_searches(tmp_path: Path) -> None:
    path = str(tmp_path / "cache" / "index-x.rank")
    daemon, other = FullText(path), FullText(path)
    try:
        assert daemon.write([("a.py", "1:1:1", "pangolin")], [])
        assert [p for p, _ in daemon.search(["pangolin"], 10)] == ["a.py"]
        assert other.write([("b.py", "1:1:1", "pangolin pangolin")], [])
        assert {p for p, _ in daemon.search(["pangolin"], 10)} == {"a.py", "b.py"}
    finally:
        daemon.close()
        other.close()


def test_a_commit_by_another_connection_moves_the_word_counts(tmp_path: Path) -> None:
    """A word no file held when first counted, then written by another connection (an
    in-process answer while the daemon's connection waits), is found: the counts that
    choose the searched words are those of the index as it is now."""
    path = str(tmp_path / "cache" / "index-x.rank")
    daemon, other = FullText(path), FullText(path)
    try:
        assert daemon.write([("a.py", "1:1:1", "other words"), ("c.py", "1:1:1", "more")], [])
        assert daemon.search(["quuxfrobnicate"], 10) == []
        assert daemon.counts(["quuxfrobnicate"]) == {"quuxfrobnicate": 0}
        assert other.write([("b.py", "1:1:1", "quuxfrobnicate here")], [])
        assert daemon.count() == 3
        assert daemon.counts(["quuxfrobnicate"]) == {"quuxfrobnicate": 1}
        assert [p for p, _ in daemon.search(["quuxfrobnicate"], 10)] == ["b.py"]
    finally:
        daemon.close()
        other.close()


def test_only_the_last_searches_are_kept() -> None:
    ft = FullText(None)
    ft._kept.phrases = PhraseRows(limit=0)  # no phrase kept: a search dropped is asked again
    words = [f"word{i}" for i in range(SEARCHES_KEPT + 1)]
    assert ft.write([(f"{w}.py", "1:1:1", w) for w in words], [])
    ran = _matches(ft)
    for w in words:
        assert ft.search([w], 10)
    assert ft.search([words[-1]], 10) and len(ran) == len(words)  # kept
    assert ft.search([words[0]], 10) and len(ran) == len(words) + 1  # the oldest: gone
