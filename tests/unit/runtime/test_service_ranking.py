"""The daemon's rankings (``runtime/roots.py``, ``engine/workspace.py``): one per warm
root, its full-text index beside the snapshot in the cache folder and built in the
background (``rankingIndex: "always"`` when the root's index opens, ``"on-demand"`` on
the first focused call), told of every change the index takes in, closed with the
root."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from readmany_daemon.index.records import CONTENT, ENTRY
from readmany_daemon.rank.root import RootRanking
from readmany_daemon.runtime.requests import RequestContext
from readmany_daemon.runtime.roots import RootEntry
from readmany_daemon.runtime.service import Service
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import decode_read_request
from tests.helpers import write_tree


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(root, {"a.py": "def alpha(): ...\n", "src/b.py": "# the pangolin\n"})
    return Path(os.path.realpath(root))


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    return tmp_path / "xdg-cache" / "readmany"


def _service(mode: str) -> Iterator[Service]:
    svc = Service(Settings(ranking_index=mode), watch=False, snapshots=True, warm_cache=False)  # type: ignore[arg-type]
    try:
        yield svc
    finally:
        svc.close()


def _open(svc: Service, tree: Path) -> tuple[RootEntry, RootRanking]:
    entry = svc.acquire(str(tree), svc.settings)
    svc.call(RequestContext(1), svc.read_sync, entry, decode_read_request({"paths": ["a.py"]}))
    return entry, entry.ws.ranking


def test_always_builds_in_the_background_when_the_root_opens(tree: Path, cache: Path) -> None:
    for svc in _service("always"):
        entry, ranking = _open(svc, tree)
        assert ranking.background and ranking.keeper is not None
        assert ranking.keeper.started  # without any focused call
        ranking.keeper.wait(30)
        assert ranking.keeper.indexed == 2
        rank_files = [n for n in os.listdir(cache) if n.endswith(".rank")]
        assert len(rank_files) == 1
        assert entry.snapshot_path is not None
        assert rank_files[0][: -len(".rank")] == os.path.basename(entry.snapshot_path)[:-5]


def test_on_demand_waits_for_the_first_focused_call_and_follows_the_index(
    tree: Path, cache: Path
) -> None:
    for svc in _service("on-demand"):
        entry, ranking = _open(svc, tree)
        assert ranking.keeper is not None and not ranking.keeper.started
        files = entry.ws.index.files()
        for _ in range(300):
            if ranking.rank(files, "pangolin", []).pending_files == 0:
                break
        assert ranking.rank(files, "pangolin", []).order[0] == "src/b.py"
        write_tree(tree, {"a.py": "# pangolin pangolin pangolin\n", "src/b.py": "# gone\n"})
        # what the watcher does with the two modify events
        entry.ws.index.apply([(p, ENTRY | CONTENT) for p in ("a.py", "src/b.py")])
        got = ranking.rank(files, "pangolin", [])
        assert got.order[0] == "a.py"
        assert got.why["a.py"].startswith('content: "pangolin"')
    assert ranking.keeper._thread is not None and not ranking.keeper._thread.is_alive()
