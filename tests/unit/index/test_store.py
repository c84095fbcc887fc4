"""Unit tests of ``FolderRecords``, the index's record store, and of the parts that
share it: each part is built on a store of its own, without an ``Index``."""

from __future__ import annotations

import os
from pathlib import Path

from readmany_daemon.index.changes import IndexChanges
from readmany_daemon.index.dump import IndexSnapshots
from readmany_daemon.index.records import ALL_MASK, ENTRY, Applied
from readmany_daemon.index.store import FolderRecords
from readmany_daemon.index.walk import IndexWalk
from readmany_daemon.rules.ignore import IgnoreRules
from readmany_daemon.settings import Settings
from tests.helpers import write_tree


def parts(root: Path) -> tuple[FolderRecords, IndexWalk]:
    """An empty store and a walker over it for ``root``."""
    real = os.path.realpath(root)
    store = FolderRecords()
    return store, IndexWalk(real, IgnoreRules(real, Settings()), store)


def walked(root: Path) -> tuple[FolderRecords, IndexWalk]:
    """``parts`` with the root walked into the store."""
    store, walker = parts(root)
    walker.walk_into_records("", walker.rules.root_frame(ALL_MASK), 0, 0, None)
    store.count_files()
    return store, walker


def test_publish_bumps_the_clock_only_for_a_change_and_tells_the_listeners() -> None:
    store = FolderRecords()
    files: list[tuple[int, str, bool]] = []
    dirs: list[tuple[list[str], list[str]]] = []
    store.add_listener(lambda gen, rel, deleted: files.append((gen, rel, deleted)))
    store.add_dir_listener(lambda added, removed: dirs.append((added, removed)))
    assert store.publish(False, [], [], [], []) == Applied(0, [], [], [], [])
    assert store.clock == 0 and not files and not dirs
    got = store.publish(False, ["a.txt"], ["b.txt"], ["d"], ["e"])
    assert got == Applied(1, ["a.txt"], ["b.txt"], ["d"], ["e"])
    assert files == [(1, "a.txt", False), (1, "b.txt", True)]
    assert dirs == [(["d"], ["e"])]
    assert store.publish(True, [], [], [], []).generation == 2  # a record changed


def test_warnings_are_kept_once() -> None:
    store = FolderRecords()
    store.warn_once("x")
    store.warn_once("x")
    assert store.warnings == ["x"]


def test_the_walker_fills_the_store_it_is_given(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.txt": "", "d/b.txt": "", "node_modules/m.js": ""})
    store, _ = walked(tmp_path)
    assert sorted(store.dirs) == ["", "d"]
    assert store.dirs[""].entries == ("a.txt", "d/")
    assert store.nfiles == 2 and store.clock == 0


def test_the_change_applier_publishes_to_the_store(tmp_path: Path) -> None:
    write_tree(tmp_path, {"d/b.txt": ""})
    store, walker = walked(tmp_path)
    seen: list[str] = []
    store.add_listener(lambda gen, rel, deleted: seen.append(rel))
    (tmp_path / "d" / "c.txt").write_text("")
    applied = IndexChanges(store, walker).apply([("d/c.txt", ENTRY)])
    assert applied.changed == ["d/c.txt"] and seen == ["d/c.txt"]
    assert store.clock == 1 and store.nfiles == 2


def test_dump_and_restore_go_through_stores(tmp_path: Path) -> None:
    write_tree(tmp_path, {"d/b.txt": "", "e/f/g.txt": ""})
    store, walker = walked(tmp_path)
    dump = IndexSnapshots(store, IndexChanges(store, walker)).dump()
    again, walker2 = parts(tmp_path)
    snaps = IndexSnapshots(again, IndexChanges(again, walker2))
    assert snaps.restore(dump, 0) == ""
    assert {k: r.entries for k, r in again.dirs.items()} == {
        k: r.entries for k, r in store.dirs.items()
    }
    assert again.nfiles == 2
