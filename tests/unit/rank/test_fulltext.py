"""rank/fulltext.py: which focus words a file's indexed text holds (``holding``), as
FTS5's tokenizer would match them, read from the texts rather than one query a word."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from readmany_daemon.rank import fulltext
from readmany_daemon.rank.fulltext import FullText


def _index(texts: dict[str, str]) -> FullText:
    ft = FullText(None)
    assert ft.write([(p, "1:1:1", t) for p, t in texts.items()], [])
    return ft


def test_holding_matches_tokens_not_substrings() -> None:
    ft = _index(
        {
            "a.py": "def fixture_scope(): pass  # Scope",
            "b.py": "telescope = microscopes",
            "c.py": "scope",
        }
    )
    got = ft.holding(["scope", "fixture", "pass"], ["a.py", "b.py", "c.py"])
    assert got == {"a.py": ["scope", "fixture", "pass"], "b.py": [], "c.py": ["scope"]}
    # the same words FTS5 finds, file by file
    for word in ("scope", "fixture", "pass"):
        found = {p for p, _ in ft.search([word], 10)}
        assert found == {p for p, ws in got.items() if word in ws}


def test_holding_of_unindexed_paths_and_no_words() -> None:
    ft = _index({"a.py": "alpha beta"})
    assert ft.holding(["alpha"], ["a.py", "gone.py"]) == {"a.py": ["alpha"], "gone.py": []}
    assert ft.holding([], ["a.py"]) == {"a.py": []}


def test_a_snake_case_focus_word_is_searched_as_the_phrase_of_its_tokens() -> None:
    ft = _index(
        {
            "a.py": "args = parse_known_args()",
            "b.py": "def parse(args, known): ...",
            "c.py": "nothing here",
        }
    )
    # the tokenizer splits at ``_``: no file holds the term ``parse_known_args``
    assert ft.informative(["parse_known_args", "missing_word"]) == ["parse_known_args"]
    assert [p for p, _ in ft.search(["parse_known_args"], 10)] == ["a.py"]


def test_search_all_answers_as_the_searches_one_by_one_and_close_ends_its_thread(
    tmp_path: Path,
) -> None:
    ft = FullText(str(tmp_path / "cache" / "index-x.rank"))
    texts = {
        "src/scope.py": "class Scope:\n    '''fixture scope: function, session'''\n",
        "src/fixtures.py": "def getfixturevalue(name):\n    return fixture_scope(name)\n",
        "docs/scope.txt": "the scope of a fixture, and more scope",
        **{f"other{i}.py": f"unrelated = {i}\n" for i in range(6)},
    }
    assert ft.write([(p, "1:1:1", t) for p, t in texts.items()], [])
    asks = [
        (["fixture", "scope"], 10, "body"),
        (["scope", "fixtures"], 10, "name"),
        (["nothing", "here"], 10, "body"),
        (["fixture_scope"], 10, "body"),
    ]
    before = set(threading.enumerate())  # other tests' indexes may keep theirs
    got = ft.search_all(asks)
    alone = FullText(ft.path)  # a connection of its own: no search kept yet
    assert got == [alone.search(w, n, c) for w, n, c in asks]
    alone.close()
    assert got[0] and got[1] and got[3] and got[2] == []
    started = [
        t for t in threading.enumerate() if t not in before and t.name.startswith("readmany-search")
    ]
    assert started
    ft.close()
    assert not any(t.is_alive() for t in started)


def test_holding_of_copies_looks_at_their_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ft = _index({"a/x.py": "alpha beta", "b/x.py": "alpha beta", "c.py": "beta gamma"})
    looked: list[str] = []
    real = fulltext._holds
    monkeypatch.setattr(fulltext, "_holds", lambda text, w: looked.append(text) or real(text, w))
    got = ft.holding(["alpha", "gamma"], ["a/x.py", "b/x.py", "c.py"])
    assert got == {"a/x.py": ["alpha"], "b/x.py": ["alpha"], "c.py": ["gamma"]}
    assert sorted(set(looked)) == ["alpha beta", "beta gamma"] and len(looked) == 4
    got["a/x.py"].append("mine")  # each path has its own list
    assert got["b/x.py"] == ["alpha"]
