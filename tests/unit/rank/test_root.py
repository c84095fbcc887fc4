"""A root's ranking (``rank/root.py``) on small real trees with the real full-text
engine (SQLite FTS5): each signal, the index kept current, in the cache folder only."""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.index.records import CONTENT, ENTRY
from readmany_daemon.rules.kinds import ALL
from readmany_daemon.settings import Settings
from tests.helpers import git, write_tree

FIXTURES = "def getFixtureValue(name):\n    return lookup(name)\n\n\ndef lookup(name):\n    ...\n"
SCOPE = "class Scope:\n    '''fixture scope: function, class, module, session'''\n"
OTHER = "def unrelated():\n    return 42\n"


def _ws(root: Path, cache: Path, **settings: object) -> Workspace:
    ws = Workspace.open(str(root), Settings(**settings))  # type: ignore[arg-type]
    ws.rank_file = str(cache / "index-0123456789abcdef0123456789abcdef.rank")
    return ws


def _all(ws: Workspace) -> list[str]:
    return ws.index.glob("**", ALL, True)


def _indexed(path: str) -> set[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return {p for (p,) in db.execute("SELECT path FROM files")}


def test_content_ranks_the_file_whose_text_holds_the_focus_words(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write_tree(root, {"a.py": OTHER, "b.py": SCOPE, "c.py": OTHER.replace("42", "43")})
    ws = _ws(root, tmp_path / "cache")
    got = ws.ranking.rank(_all(ws), "the session scope of a fixture", [])
    assert got.order[0] == "b.py"
    assert sorted(got.order) == ["a.py", "b.py", "c.py"]
    assert got.signals[:2] == ("content", "names")
    assert got.why["b.py"].startswith('content: "')
    assert (got.indexed_files, got.pending_files) == (3, 0)


def test_camel_case_in_the_text_is_found_by_its_words_and_the_other_way(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write_tree(root, {"a.py": OTHER, "fx.py": FIXTURES, "z.py": "get_fixture_value = 1\n"})
    ws = _ws(root, tmp_path / "cache")
    got = ws.ranking.rank(_all(ws), "get fixture value", [])
    assert set(got.order[:2]) == {"fx.py", "z.py"}
    got = ws.ranking.rank(_all(ws), "getFixtureValue", [])
    assert got.order[0] == "fx.py"


@pytest.mark.parametrize("mode", ["off", "on-demand"])  # a scan of paths; the name column
def test_names_rank_paths_and_the_symbols_files_define(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "w"
    write_tree(root, {"a.py": OTHER, "src/scheduler.py": OTHER, "m.py": "def frobnicate(): ...\n"})
    ws = _ws(root, tmp_path / "cache", ranking_index=mode)
    got = ws.ranking.rank(_all(ws), "the scheduler", [])
    assert got.order[0] == "src/scheduler.py"
    assert got.why["src/scheduler.py"] == "path: scheduler"
    assert ("content" in got.signals) is (mode != "off")
    got = ws.ranking.rank(_all(ws), "why does frobnicate fail", [])
    assert got.order[0] == "m.py"
    assert got.why["m.py"].endswith("defines frobnicate")


def test_a_write_is_seen_by_the_next_rank(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write_tree(root, {"a.py": OTHER, "b.py": OTHER + "# pangolin\n"})
    ws = _ws(root, tmp_path / "cache")
    assert ws.ranking.rank(_all(ws), "pangolin", []).order[0] == "b.py"
    write_tree(root, {"a.py": OTHER + "# pangolin pangolin pangolin\n", "b.py": OTHER})
    assert ws.ranking.rank(_all(ws), "pangolin", []).order[0] == "a.py"
    # another process (a new workspace) reads the same file and finds it current
    again = _ws(root, tmp_path / "cache")
    assert again.ranking.rank(_all(again), "pangolin", []).order[0] == "a.py"


def test_denied_and_ignored_files_never_enter_the_index_and_secrets_are_redacted(
    repo: Path, tmp_path: Path
) -> None:
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    write_tree(
        repo,
        {
            ".gitignore": "build/\n",
            "build/out.py": "pangolin\n",
            ".env": "TOKEN=pangolin\n",
            "app.py": f"# pangolin\ntoken = '{key}'\n",
        },
    )
    ws = _ws(repo, tmp_path / "cache")
    ws.ranking.rank(["app.py", "build/out.py", ".env"], "pangolin", [])
    path = str(ws.rank_file)
    assert _indexed(path) == {"app.py"}
    with contextlib.closing(sqlite3.connect(path)) as db:
        (body,) = db.execute("SELECT body FROM docs").fetchone()
    assert key not in body
    assert "«redacted:" in body
    assert not [p for p in os.listdir(repo) if p.endswith(".rank") or "index-" in p]


def test_the_index_file_is_0600_in_a_0700_folder(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write_tree(root, {"a.py": OTHER})
    ws = _ws(root, tmp_path / "cache")
    ws.ranking.rank(_all(ws), "unrelated", [])
    assert stat.S_IMODE(os.stat(tmp_path / "cache").st_mode) == 0o700
    for name in os.listdir(tmp_path / "cache"):
        assert stat.S_IMODE(os.stat(tmp_path / "cache" / name).st_mode) == 0o600, name


def test_an_index_file_inside_the_root_is_never_used(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write_tree(root, {"a.py": OTHER})
    ws = Workspace.open(str(root), Settings())
    ws.rank_file = str(root / ".cache" / "index-x.rank")
    ws.ranking.rank(_all(ws), "unrelated", [])
    assert sorted(os.listdir(root)) == ["a.py"]


def test_recency_ranks_files_changed_in_the_work_tree_then_recent_commits(repo: Path) -> None:
    write_tree(repo, {"a.py": OTHER, "b.py": OTHER, "c.py": OTHER, "d.py": OTHER})
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    write_tree(repo, {"c.py": OTHER + "# x\n"})
    git(repo, "commit", "-qam", "two")
    write_tree(repo, {"d.py": OTHER + "# y\n"})
    ws = Workspace.open(str(repo), Settings(ranking_index="off"))
    ws.ranking.recency.ages(ws.index.clock)  # git asked in the background
    ws.ranking.recency.settle(60)
    got = ws.ranking.rank(["a.py", "b.py", "c.py", "d.py"], "nothing matches here", [])
    assert "recency" in got.signals
    assert got.order[:2] == ("d.py", "c.py")
    assert got.why["d.py"] == "changed in work tree"
    assert got.why["c.py"] == "changed 1 commit ago"


def test_recency_says_pending_with_the_ages_it_read(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ages and whether git's first answer is still to come are read together: a
    ``pending`` read later (after git answered) would call the empty ages complete."""
    from readmany_daemon.rank import recency

    write_tree(repo, {"a.py": OTHER})
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    monkeypatch.setattr(recency, "WAIT_SECONDS", 0.0)
    r = recency.Recency(str(repo))
    assert r.ages(1) == ({}, True)  # git asked, its answer to come
    r.settle(60)
    assert not r.pending
    ages, pending = r.ages(1)
    assert ages == {"a.py": 1} and not pending
    not_git = repo.parent / "plain"
    not_git.mkdir()
    outside = recency.Recency(str(not_git))
    outside.ages(1)
    outside.settle(60)
    assert outside.ages(1) == ({}, False)  # git said no: nothing pending


def test_pagerank_seeded_by_an_anchor_ranks_what_it_references(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write_tree(
        root,
        {
            "main.py": "from lib import helper\n\nhelper()\n",
            "lib.py": "def helper():\n    return other()\n",
            "noise.py": "def noise():\n    pass\n",
            "zzz.py": "def zzz():\n    pass\n",
        },
    )
    ws = _ws(root, tmp_path / "cache", ranking_index="off")
    cands = ["main.py", "noise.py", "zzz.py", "lib.py"]
    got = ws.ranking.rank(cands, "nothing matches here", ["main.py"])
    assert got.order[0] == "lib.py"
    assert "references" in got.signals
    # without the anchor nothing seeds the graph: request order
    assert ws.ranking.rank(cands, "nothing matches here", []).order == tuple(cands)


def test_without_fts5_the_other_signals_rank_and_signals_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from readmany_daemon.rank import fulltext

    monkeypatch.setattr(fulltext, "_fts5", False)  # as a SQLite built without FTS5
    root = tmp_path / "w"
    write_tree(root, {"a.py": OTHER, "scope.py": OTHER})
    ws = _ws(root, tmp_path / "cache")
    got = ws.ranking.rank(_all(ws), "fixture scope", [])
    assert got.signals == ("names", "references")
    assert got.order[0] == "scope.py"
    assert not (tmp_path / "cache").exists()


def test_files_whose_tags_are_still_to_be_made_count_as_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from readmany_daemon.rank import root as rank_root

    root_dir = tmp_path / "w"
    write_tree(root_dir, {"a.py": OTHER, "fx.py": FIXTURES, "use.py": "x = getFixtureValue('a')\n"})
    monkeypatch.setattr(rank_root, "TAG_SECONDS", -1.0)  # no time left for tags in a call
    # in process a call makes the graph's tags (for up to INPROCESS_SECONDS): complete
    ws = _ws(root_dir, tmp_path / "cache")
    got = ws.ranking.rank(_all(ws), "getFixtureValue", [])
    assert (got.indexed_files, got.pending_files) == (3, 0)
    ws.ranking.close()
    # ... and what it could not make by then counts (git's answers still waited for)
    ws = _ws(root_dir, tmp_path / "cache2")
    ranking = ws.ranking
    monkeypatch.setattr(rank_root, "INPROCESS_SECONDS", -1.0)
    got = ranking.rank(_all(ws), "getFixtureValue", [])
    assert (got.indexed_files, got.pending_files) == (3, 3)
    ws.ranking.close()
    # the daemon keeps them: they count until a call has made them (the pass making
    # them ahead, rank/ahead_pass.py, held back here)
    monkeypatch.setattr(rank_root.AheadPass, "start", lambda _self, _files: None)
    ws = _ws(root_dir, tmp_path / "cache")
    ws.rank_background = True
    files = _all(ws)
    try:
        for _ in range(200):
            got = ws.ranking.rank(files, "getFixtureValue", [])
            if got.indexed_files == 3:
                break
        assert got.pending_files == 3  # the full-text index is complete; no tags yet
        monkeypatch.setattr(rank_root, "TAG_SECONDS", 5.0)
        got = ws.ranking.rank(files, "getFixtureValue", [])
        assert got.pending_files == 0
        assert "defines getfixturevalue" in got.why["fx.py"].lower()  # the tags made now
    finally:
        ws.ranking.close()


def test_a_file_changed_then_undone_is_no_work_tree_change_once_git_answers(repo: Path) -> None:
    write_tree(repo, {"a.py": OTHER, "b.py": OTHER})
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    ws = Workspace.open(str(repo), Settings(ranking_index="off"))
    ranking = ws.ranking
    write_tree(repo, {"b.py": OTHER + "# more\n"})
    ws.index.apply([("b.py", ENTRY | CONTENT)])  # reported as the watcher would
    got = ranking.rank(["a.py", "b.py"], "nothing matches here", [])
    assert got.why["b.py"] == "changed in work tree"  # before git answers, too
    write_tree(repo, {"b.py": OTHER})  # undone: git status is clean again
    ws.index.apply([("b.py", ENTRY | CONTENT)])
    for _ in range(5):  # git answers for the clock now (one question at a time)
        ranking.rank(["a.py", "b.py"], "nothing matches here", [])
        ranking.recency.settle(60)
        answered = ranking.recency.answered
        if isinstance(answered, tuple) and answered[0] == ws.index.clock:
            break
    got = ranking.rank(["a.py", "b.py"], "nothing matches here", [])
    assert "changed in work tree" not in got.why["b.py"]


def test_a_path_the_focus_names_ranks_first_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "w"
    files = {f"src/pkg/m{i}.py": "import pkg\n# pkg src helpers\n" * 3 for i in range(6)}
    files["src/pkg/fixtures.py"] = OTHER
    write_tree(root, files)
    ws = _ws(root, tmp_path / "cache")
    every = _all(ws)
    for focus in (
        "see src/pkg/fixtures.py for the pkg helpers",
        "in ./src/pkg/fixtures.py:12, pkg src.",
        "src/pkg/fixtures.py.",
        # as agents paste it: absolute, or a file: URI (the root's folders no words)
        f"fix {ws.root}/src/pkg/fixtures.py, pkg src helpers",
        f"fix <{Path(ws.root, 'src/pkg/fixtures.py').as_uri()}>; pkg src helpers",
        f"fix file:{ws.root}/src/pkg/fixtures.py, pkg src helpers",
    ):
        got = ws.ranking.rank(every, focus, [])
        assert got.order[0] == "src/pkg/fixtures.py", focus
        assert got.why["src/pkg/fixtures.py"].startswith("named in the focus")
    # a root whose name an URI escapes (a space, an accent: as as_uri and editors write it)
    spaced = tmp_path / "sp ace" / "é dir"
    write_tree(spaced, files)
    other = _ws(spaced, tmp_path / "cache2")
    uri = Path(other.root, "src/pkg/fixtures.py").as_uri()
    assert "%20" in uri
    got = other.ranking.rank(_all(other), f"see {uri} for the pkg helpers", [])
    assert got.order[0] == "src/pkg/fixtures.py"
    assert got.why["src/pkg/fixtures.py"].startswith("named in the focus")
    # a path the request does not match is never added
    got = ws.ranking.rank([p for p in every if "fixtures" not in p], "src/pkg/fixtures.py", [])
    assert "src/pkg/fixtures.py" not in got.order


def test_a_ranking_dropped_without_close_closes_every_connection_it_opened(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an in-process answer drops its workspace unclosed: each SQLite connection (the
    # full-text index, the outlines made ahead, the commits' table) is closed when its
    # owner is collected, never left to SQLite's finalizer (ResourceWarning on 3.13+)
    write_tree(repo, {"a.py": OTHER, "b.py": SCOPE})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Fix the fixture scope")
    first = _ws(repo, tmp_path / "cache")  # makes the ranking file the next one reads
    first.ranking.rank(_all(first), "fixture scope", [])
    first.ranking.close()
    opened: list[sqlite3.Connection] = []
    connect = sqlite3.connect

    def recorded(*args: object, **kwargs: object) -> sqlite3.Connection:
        db: sqlite3.Connection = connect(*args, **kwargs)  # type: ignore[call-overload]
        if kwargs.get("check_same_thread") is False:  # the kept ones (others: `closing`)
            opened.append(db)
        return db

    monkeypatch.setattr(sqlite3, "connect", recorded)
    ws = _ws(repo, tmp_path / "cache")
    ranking = ws.ranking
    assert ranking._made is not None and ranking.history is not None
    assert ranking.rank(_all(ws), "fixture scope", []).order[0] == "b.py"
    ranking.history.settle(10)
    kinds = {db.execute("PRAGMA database_list").fetchone()[2] == "" for db in opened}
    assert kinds == {True, False}  # the commits' table in memory, the files on disk
    del ws, ranking
    gc.collect()
    for db in opened:
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            db.execute("SELECT 1")
