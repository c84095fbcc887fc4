"""Index snapshots on disk (``index/snapshot.py``): where they may be written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from readmany_daemon.index.model import Index
from readmany_daemon.index.snapshot import NOT_SAVING, SnapshotWarning, save
from readmany_daemon.settings import Settings


def test_a_cache_folder_inside_the_workspace_is_refused(tmp_path: Path) -> None:
    """The folder is compared by its real path, whole components only: a link from
    outside into the root is inside; a sibling whose name starts like the root is not."""
    root = tmp_path / "ws"
    (root / "cache").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (tmp_path / "link").symlink_to(root / "cache")
    (tmp_path / "ws-cache").mkdir()
    index = Index.build(os.path.realpath(root), Settings())
    dump = index.dump()
    rules_hash = index.rules.ignore_files_hash()
    for folder in (root, root / "cache", tmp_path / "link"):
        with pytest.raises(SnapshotWarning, match=NOT_SAVING.strip()):
            save(str(folder / "index.snap"), index, dump, ("key",), rules_hash)
    path = tmp_path / "ws-cache" / "index.snap"
    assert save(str(path), index, dump, ("key",), rules_hash) == path.stat().st_size > 0
