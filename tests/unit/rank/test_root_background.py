"""The full-text index in the daemon's way (``rank/keeper.py`` through ``rank/root.py``):
built in a background thread, a focused call never waiting more than 100 ms for it,
kept current by the index's change listener, dropped by the cache sweep with the
snapshot; ``rankingIndex`` ``on-demand``, ``always`` and ``off``."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from readmany_daemon.index import cachegc
from readmany_daemon.index.model import Index
from readmany_daemon.index.records import CONTENT, ENTRY
from readmany_daemon.rank.fulltext import rank_path
from readmany_daemon.rank.root import RootRanking
from readmany_daemon.settings import Settings
from tests.helpers import write_tree

HASH = "fe" * 16


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    files = {f"pkg/m{i:03}.py": f"def f{i}():\n    return {i}\n" for i in range(60)}
    files["pkg/target.py"] = "# the pangolin module\n"
    write_tree(root, files)
    return root


@pytest.fixture()
def made(tmp_path: Path) -> Iterator[list[RootRanking]]:
    out: list[RootRanking] = []
    yield out
    for r in out:
        r.close()


def _ranking(
    root: Path, cache: Path, made: list[RootRanking], mode: str = "on-demand"
) -> tuple[RootRanking, Index]:
    index = Index.build(str(root), Settings())
    r = RootRanking(
        str(root),
        lambda: index,
        path=rank_path(str(cache / f"index-{HASH}.snap")),
        mode=mode,
        background=True,
    )
    index.add_listener(r.note_change)
    made.append(r)
    return r, index


def _settle(r: RootRanking, candidates: list[str], focus: str) -> tuple[str, ...]:
    """Rank until the index is complete (each call waits at most 100 ms)."""
    for _ in range(200):
        got = r.rank(candidates, focus, [])
        if got.pending_files == 0:
            return got.order
    raise AssertionError("the index never completed")


def test_a_call_waits_at_most_100_ms_and_says_what_is_pending(
    tree: Path, tmp_path: Path, made: list[RootRanking]
) -> None:
    r, index = _ranking(tree, tmp_path / "cache", made)
    files = index.files()
    assert r.keeper is not None and not r.keeper.started  # on-demand: nothing yet
    # another process holds the index file: nothing can be written meanwhile
    blocker = sqlite3.connect(r.keeper.fulltext.path or "", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        got = r.rank(files, "pangolin", [])
        assert got.pending_files == len(files)
        assert got.indexed_files == 0
        assert got.signals[0] == "names"  # no content yet: none indexed
        assert sorted(got.order) == sorted(files)
        # the paths rank at once, before the index holds a file: a first focused call in
        # the daemon is no path order
        named = r.rank(files, "the target module", [])
        assert named.order[0] == "pkg/target.py"
        assert named.why["pkg/target.py"] == "path: target"
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert _settle(r, files, "pangolin")[0] == "pkg/target.py"
    assert r.rank(files, "pangolin", []).indexed_files == len(files)


def test_a_change_the_index_reports_is_seen_by_the_next_call(
    tree: Path, tmp_path: Path, made: list[RootRanking]
) -> None:
    r, index = _ranking(tree, tmp_path / "cache", made)
    files = index.files()
    _settle(r, files, "pangolin")
    write_tree(tree, {"pkg/m007.py": "# pangolin pangolin pangolin\n"})
    index.apply([("pkg/m007.py", ENTRY | CONTENT)])
    assert r.rank(files, "pangolin", []).order[0] == "pkg/m007.py"
    os.unlink(tree / "pkg/m007.py")
    index.apply([("pkg/m007.py", ENTRY | CONTENT)])
    _settle(r, index.files(), "pangolin")
    with contextlib.closing(sqlite3.connect(r.keeper.fulltext.path or "")) as db:  # type: ignore[union-attr]
        paths = {p for (p,) in db.execute("SELECT path FROM files")}
    assert "pkg/m007.py" not in paths and "pkg/target.py" in paths


def test_always_builds_at_start_and_off_has_no_index(
    tree: Path, tmp_path: Path, made: list[RootRanking]
) -> None:
    r, index = _ranking(tree, tmp_path / "a", made, mode="always")
    r.start()  # what the runtime does when it opens the root
    assert r.keeper is not None
    r.keeper.wait(30)
    assert r.keeper.pending_count() == 0 and r.keeper.indexed == len(index.files())
    off, index = _ranking(tree, tmp_path / "b", made, mode="off")
    got = off.rank(index.files(), "pangolin", [])
    assert off.keeper is None
    assert "content" not in got.signals
    assert (got.indexed_files, got.pending_files) == (0, 0)
    assert not (tmp_path / "b").exists()


def test_the_cache_sweep_drops_the_index_with_the_snapshot(
    tree: Path, tmp_path: Path, made: list[RootRanking]
) -> None:
    cache = tmp_path / "cache"
    r, index = _ranking(tree, cache, made)
    _settle(r, index.files(), "pangolin")
    snap = cache / f"index-{HASH}.snap"
    snap.write_bytes(b"x")
    gone = tmp_path / "gone"
    gone.mkdir()
    cachegc.record_use(str(snap), str(gone))
    r.close()
    assert any(n.endswith(".rank") for n in os.listdir(cache))
    gone.rmdir()
    assert [d.reason for d in cachegc.sweep(str(cache))] == ["root gone"]
    assert os.listdir(cache) == []
