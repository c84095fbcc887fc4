"""Past commits like the task (rank/history.py): the files changed by the commits whose
messages match the focus, from a real git history, and their part in the ranking."""

from __future__ import annotations

from pathlib import Path

import pytest

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.index.records import CONTENT, ENTRY
from readmany_daemon.rank import history
from readmany_daemon.rank.history import CommitHistory, parse_log
from readmany_daemon.settings import Settings
from tests.helpers import git, write_tree

PLAIN = "def helper():\n    return 1\n"


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    write_tree(repo, files)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", message)


def _settled(h: CommitHistory, key: object, words: list[str]) -> dict[str, float]:
    h.matches(key, words)
    h.settle(60)
    got, pending = h.matches(key, words)
    assert not pending
    return got


def test_parse_log_reads_messages_and_paths_and_drops_the_paths_of_bulk_commits() -> None:
    many = b"".join(b"f%d.py\0" % i for i in range(history.MAX_CHANGED + 1))
    out = (
        b"\x1eFix the fixture scope\n\nBody line\n\x1f\nsrc/a.py\0src/b c.py\0\0"
        b"\x1eReformat everything\n\x1f\n" + many + b"\0"
        b"\x1eEmpty commit\n\x1f"
    )
    got = parse_log(out)
    assert got[0] == ("Fix the fixture scope\n\nBody line\n", ["src/a.py", "src/b c.py"])
    assert got[1] == ("Reformat everything\n", [])
    assert got[2] == ("Empty commit\n", [])


def test_files_of_the_commits_whose_messages_match_score_root_relative(repo: Path) -> None:
    _commit(repo, {"pkg/fixtures.py": PLAIN, "pkg/other.py": PLAIN}, "Initial import")
    _commit(repo, {"pkg/fixtures.py": PLAIN + "# 1\n"}, "Fix the fixture scope crash")
    _commit(repo, {"pkg/other.py": PLAIN + "# 2\n"}, "Speed up the terminal writer")
    _commit(repo, {"docs.txt": "x\n"}, "Document the fixture scope")
    h = CommitHistory(str(repo / "pkg"))
    try:
        got = _settled(h, 1, ["fixture", "scope", "crash"])
        # root-relative; the docs commit's file is outside the root: not listed
        assert set(got) == {"fixtures.py"}
        assert got["fixtures.py"] > 0
        assert _settled(h, 1, ["terminal"]).keys() == {"other.py"}
        assert h.matches(1, []) == ({}, False)
        assert h.matches(1, ["nowhere"]) == ({}, False)
    finally:
        h.close()


def test_a_commit_of_many_files_says_less_of_each(repo: Path) -> None:
    files = {f"{n}.py": PLAIN for n in "abcd"}
    _commit(repo, {**files, "e.py": PLAIN}, "Initial import")
    _commit(repo, {f"{n}.py": PLAIN + "# x\n" for n in "abcd"}, "Rename the tmpdir fixture")
    _commit(repo, {"e.py": PLAIN + "# y\n"}, "Rename the tmpdir fixture")
    h = CommitHistory(str(repo))
    try:
        got = _settled(h, 1, ["tmpdir"])
        # the same message: the one file of its commit gets sqrt(4) times as much
        assert got["e.py"] == pytest.approx(got["a.py"] * 4**history.FILES_EXPONENT)
        assert history.FILES_EXPONENT > 0
    finally:
        h.close()


def test_a_new_commit_is_searched_once_the_key_moves(repo: Path) -> None:
    _commit(repo, {"a.py": PLAIN, "b.py": PLAIN}, "Initial import")
    h = CommitHistory(str(repo))
    try:
        assert _settled(h, 1, ["parametrize"]) == {}
        _commit(repo, {"b.py": PLAIN + "# ids\n"}, "Allow callable ids in parametrize")
        assert _settled(h, 1, ["parametrize"]) == {}  # the same key: not asked again
        assert set(_settled(h, 2, ["parametrize"])) == {"b.py"}
    finally:
        h.close()


def test_outside_git_there_is_no_history(tmp_path: Path, git_env: Path) -> None:
    write_tree(tmp_path, {"a.py": PLAIN})
    h = CommitHistory(str(tmp_path))
    assert _settled(h, 1, ["helper"]) == {}


def test_a_file_a_matching_past_commit_changed_ranks_first_and_says_so(repo: Path) -> None:
    # three files alike for every other signal; the history tells them apart
    same = "def run(items):\n    return [i for i in items]\n"
    _commit(repo, {"a.py": same, "b.py": same, "c.py": same}, "Initial import")
    _commit(repo, {"b.py": same + "# ok\n"}, "Warn when a marker is applied to a fixture")
    for n in range(31):  # older than the recency signal's window
        _commit(repo, {"c.py": same + f"# {n}\n"}, f"Tidy number {n}")
    ws = Workspace.open(str(repo), Settings())
    ws.rank_file = str(repo.parent / "cache" / "index-0123456789abcdef0123456789abcdef.rank")
    ws.rank_background = True  # the daemon's way: the history is the daemon's
    ranking = ws.ranking
    try:
        assert ranking.history is not None
        focus = "marker applied to a fixture now warns"
        ranking.rank(["a.py", "b.py", "c.py"], focus, [])
        ranking.history.settle(60)
        ranking.recency.settle(60)
        got = ranking.rank(["a.py", "b.py", "c.py"], focus, [])
        assert got.order[0] == "b.py"
        assert "like past commits" in got.why["b.py"]
        assert "like past commits" not in got.why["a.py"]
        assert "recency" in got.signals
    finally:
        ranking.close()


def test_a_commit_is_seen_by_the_next_rank_though_no_listed_file_moved(repo: Path) -> None:
    same = "def run(items):\n    return [i for i in items]\n"
    _commit(repo, {"a.py": same, "b.py": same}, "Initial import")
    write_tree(repo, {"b.py": same + "# z\n"})
    ws = Workspace.open(str(repo), Settings())
    ws.rank_file = str(repo.parent / "cache" / "index-0123456789abcdef0123456789abcdef.rank")
    ws.rank_background = True
    ws.index.apply([("b.py", ENTRY | CONTENT)])  # reported as the watcher would
    ranking = ws.ranking
    focus = "teach the zeppelin parser"
    try:
        assert ranking.history is not None
        ranking.rank(["a.py", "b.py"], focus, [])
        ranking.history.settle(60)
        ranking.recency.settle(60)
        assert ranking.rank(["a.py", "b.py"], focus, []).why["b.py"] == "changed in work tree"
        clock = ws.index.clock
        git(repo, "commit", "-qam", "Teach the zeppelin parser")  # only .git/ is written
        assert ws.index.clock == clock
        for _ in range(5):  # git asked again, once per key
            got = ranking.rank(["a.py", "b.py"], focus, [])
            ranking.history.settle(60)
            ranking.recency.settle(60)
            if "like past commits" in got.why["b.py"]:
                break
        got = ranking.rank(["a.py", "b.py"], focus, [])
        assert got.why["b.py"] == "like past commits; changed 1 commit ago"
    finally:
        ranking.close()


def test_ranking_index_off_asks_no_history(repo: Path) -> None:
    _commit(repo, {"a.py": PLAIN}, "Initial import")
    off = Workspace.open(str(repo), Settings(ranking_index="off"))
    off.rank_background = True
    assert off.ranking.history is None


def test_an_in_process_answer_waits_for_the_past_commits_and_keeps_their_log(
    repo: Path, tmp_path: Path
) -> None:
    """In process a call waits for git's log (nothing is kept for a next call), so its
    complete ranking is the daemon's (PROTOCOL §4 "Stable order"); the log is kept in
    the ranking's file, and the next process takes it from there, not from git."""
    same = "def run(items):\n    return [i for i in items]\n"
    _commit(repo, {"a.py": same, "b.py": same}, "Initial import")
    _commit(repo, {"b.py": same + "# q\n"}, "Quell the quokka warning")
    rank_file = tmp_path / "cache" / "index.rank"

    def in_process() -> Workspace:
        ws = Workspace.open(str(repo), Settings())
        ws.rank_file = str(rank_file)
        return ws

    ws = in_process()
    got = ws.ranking.rank(["a.py", "b.py"], "quokka warning", [])
    assert "like past commits" in got.why["b.py"] and got.pending_files == 0, got
    ws.close_ranking()
    assert rank_file.stat().st_mode & 0o777 == 0o600
    history = CommitHistory(str(repo), store=str(rank_file))
    head = git(repo, "rev-parse", "HEAD").strip()
    kept = history._kept_log(head)
    assert kept is not None and b"Quell the quokka warning" in kept
    # the next process makes its table from the kept log: git's log is not asked
    ws = in_process()
    assert ws.ranking.history is not None
    ws.ranking.history._read_log = lambda _commit: None  # type: ignore[method-assign]
    got = ws.ranking.rank(["a.py", "b.py"], "quokka warning", [])
    assert "like past commits" in got.why["b.py"] and got.pending_files == 0, got
    ws.close_ranking()


def test_the_daemon_counts_every_file_pending_until_git_first_answers(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pendingFiles`` 0 means the ranking is complete: git's first answers (the past
    commits' table, the recency) included, in the daemon's way (``background``)."""
    from readmany_daemon.rank import recency

    same = "def run(items):\n    return [i for i in items]\n"
    _commit(repo, {"a.py": same, "b.py": same}, "Initial import")
    _commit(repo, {"b.py": same + "# q\n"}, "Quell the quokka warning")
    for n in range(31):
        _commit(repo, {"a.py": same + f"# {n}\n"}, f"Tidy number {n}")
    monkeypatch.setattr(history, "WAIT_SECONDS", 0.0)  # git's answers come after the call
    monkeypatch.setattr(recency, "WAIT_SECONDS", 0.0)
    ws = Workspace.open(str(repo), Settings())
    ws.rank_file = str(repo.parent / "cache" / "index-0123456789abcdef0123456789abcdef.rank")
    ws.rank_background = True
    ranking = ws.ranking
    try:
        got = ranking.rank(["a.py", "b.py"], "quokka warning", [])
        assert got.pending_files >= 2  # both files' recency part still to come
        for _ in range(400):
            if got.pending_files == 0:
                break
            if ranking.history is not None:
                ranking.history.settle(0.05)
            got = ranking.rank(["a.py", "b.py"], "quokka warning", [])
        assert got.pending_files == 0
        assert got.why["b.py"].startswith("like past commits")  # in once 0 is said
    finally:
        ranking.close()


def test_a_first_table_is_pending_until_made(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _commit(repo, {"a.py": PLAIN}, "Initial import")
    monkeypatch.setattr(history, "WAIT_SECONDS", 0.0)
    h = CommitHistory(str(repo))
    try:
        assert not h.pending
        assert h.matches(1, ["import"]) == ({}, True)  # the table in the making
        assert h.pending  # git is slower than this line
        h.settle(60)
        assert not h.pending
        got, pending = h.matches(1, ["import"])
        assert set(got) == {"a.py"} and not pending
    finally:
        h.close()
