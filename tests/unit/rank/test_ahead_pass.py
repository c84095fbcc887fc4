"""The daemon's ahead pass (``rank/ahead_pass.py`` through ``rank/root.py``): once the
full-text index is built, every file's outline and tags are made in a worker process
and stored; a focused ranking that takes its tags from the store (none parsed) equals
one whose tags are made on demand; changes are made again, and with the pass done the
graph's files are pending no more."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from readmany_daemon.content.outline import Tags
from readmany_daemon.index.model import Index
from readmany_daemon.index.records import CONTENT, ENTRY
from readmany_daemon.rank import root as root_mod
from readmany_daemon.rank.fulltext import rank_path
from readmany_daemon.rank.prep import mark_of
from readmany_daemon.rank.root import RootRanking
from readmany_daemon.settings import Settings
from tests.helpers import write_tree

FOCUS = "the `ledger_total` of an invoice, and `Pangolin`"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    files = {
        f"pkg/m{i:02}.py": f"from pkg.core import ledger_total\n\n\ndef f{i}():\n"
        f"    return ledger_total({i})\n"
        for i in range(30)
    }
    files["pkg/core.py"] = "def ledger_total(x):\n    return x\n\n\nclass Pangolin:\n    pass\n"
    files["pkg/invoice.py"] = "# an invoice\nfrom pkg.core import Pangolin\nP = Pangolin()\n"
    files["README.md"] = "# Ledger\n\nInvoices.\n"
    write_tree(root, files)
    return root


@pytest.fixture()
def made() -> Iterator[list[RootRanking]]:
    out: list[RootRanking] = []
    yield out
    for r in out:
        r.close()


def _ranking(root: Path, path: str, made: list[RootRanking], **kw: bool) -> RootRanking:
    index = Index.build(str(root), Settings())
    r = RootRanking(str(root), lambda: index, path=path, **kw)
    index.add_listener(r.note_change)
    made.append(r)
    return r


def _done(r: RootRanking, files: list[str]) -> None:
    r.rank(files, FOCUS, [])  # a first focused call: the index, then the pass
    assert r.keeper is not None and r.keeper.settle(60)
    assert r.ahead is not None and r.ahead.settle(60)


def test_the_pass_stores_every_file_and_a_ranking_through_it_equals_one_on_demand(
    tree: Path, tmp_path: Path, made: list[RootRanking], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = rank_path(str(tmp_path / "cache" / f"index-{'cd' * 16}.snap"))
    first = _ranking(tree, path, made, background=True)
    files = sorted(Index.build(str(tree), Settings()).files())
    _done(first, files)
    assert first.ahead is not None
    meta = first.ahead.store.meta()
    assert meta["done"] == 1 and meta["files"] == len(files)
    # on demand: an in-process ranking of the same index file, every tag parsed
    monkeypatch.setattr(root_mod, "TAG_SECONDS", 60.0)
    on_demand = _ranking(tree, path, made)
    assert on_demand.ahead is None
    want = on_demand.rank(files, FOCUS, ["pkg/invoice.py"])
    # through the store: a daemon's ranking opened afresh, parsing nothing
    through = _ranking(tree, path, made, background=True)

    def no_parse(text: str, path: str, **_kw: object) -> Tags:
        raise AssertionError(f"{path} parsed on demand")

    monkeypatch.setattr(root_mod, "tags", no_parse)
    got = through.rank(files, FOCUS, ["pkg/invoice.py"])
    assert got.pending_files == 0
    assert list(got.order) == list(want.order)
    assert {p: got.why[p] for p in files} == {p: want.why[p] for p in files}
    assert got.signals == want.signals
    assert "defines ledger_total" in got.why["pkg/core.py"]


def test_a_change_is_made_again_and_its_old_tags_are_not_used(
    tree: Path, tmp_path: Path, made: list[RootRanking]
) -> None:
    path = rank_path(str(tmp_path / "cache" / f"index-{'ef' * 16}.snap"))
    index = Index.build(str(tree), Settings())
    r = RootRanking(str(tree), lambda: index, path=path, background=True)
    index.add_listener(r.note_change)
    made.append(r)
    files = sorted(index.files())
    _done(r, files)
    assert r.ahead is not None and r.ahead.passes == 1
    write_tree(tree, {"pkg/core.py": "def armadillo_sum(x):\n    return x\n"})
    index.apply([("pkg/core.py", ENTRY | CONTENT)])
    got = r.rank(files, "the `armadillo_sum`", [])
    assert "defines armadillo_sum" in got.why["pkg/core.py"]
    assert r.keeper is not None and r.keeper.settle(60)
    assert r.ahead.settle(60) and r.ahead.passes == 2  # the change, made ahead again
    stored = r.ahead.store.tags({"pkg/core.py": mark_of(os.lstat(tree / "pkg/core.py"))})
    assert stored["pkg/core.py"].defines == frozenset({"armadillo_sum"})


def test_closing_ends_the_worker_of_a_pass_under_way(tmp_path: Path) -> None:
    root = tmp_path / "w"
    write_tree(
        root, {f"pkg/m{i:04}.py": f"def f{i}():\n    return {i}\n" * 40 for i in range(3000)}
    )
    path = rank_path(str(tmp_path / "cache" / f"index-{'aa' * 16}.snap"))
    index = Index.build(str(root), Settings())
    r = RootRanking(str(root), lambda: index, path=path, background=True)
    try:
        r.start()
        assert r.ahead is not None and r.keeper is not None and r.keeper.settle(120)
        ahead = r.ahead
        with ahead._cv:  # the pass's own state: its worker started
            assert ahead._cv.wait_for(lambda: ahead._worker is not None, timeout=60)
            assert ahead._worker is not None
            pid = ahead._worker.pid
    finally:
        started = time.monotonic()
        r.close()
    assert time.monotonic() - started < 5  # not the rest of the pass
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
