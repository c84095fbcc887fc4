"""An index of a tree 2,000 folders deep (issue 22, item 5): its queries, its changes and
its dump/restore never recurse per folder level.

Python's recursion limit is 1,000 frames, so anything that recursed once per level fails
here. The tree lives in a short folder directly in ``/tmp`` (its deepest path stays within
``PATH_MAX``) and is removed without recursion (``tests.helpers.remove_tree``)."""

from __future__ import annotations

import errno
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from readmany_daemon.index.model import Index
from readmany_daemon.index.records import ENTRY, FOLDER, TREE
from readmany_daemon.rules.kinds import ALL, Filters
from readmany_daemon.settings import Settings
from tests.helpers import deep_tree, remove_tree, short_tmp

LEVELS = 2000
NO_GITIGNORE = Filters(False, True, True)


@pytest.fixture
def base() -> Iterator[Path]:
    with short_tmp() as path:
        yield path


def _deep(base: Path) -> list[str]:
    """The chain, a file at a few depths, and a .gitignore hiding the chain from depth
    3 down (so the filters-off queries walk 1,997 pruned levels on demand)."""
    made = deep_tree(base, LEVELS, {1: "top.txt", 500: "x.log", LEVELS: "a.txt"})
    (base / ".gitignore").write_text("/d/d/d/\n")
    return sorted([*made, ".gitignore"], key=os.fsencode)


def test_queries_at_two_thousand_levels(base: Path) -> None:
    made = _deep(base)
    ix = Index.build(str(base), Settings())
    assert ix.files() == [".gitignore", "d/top.txt"]
    assert ix.files(NO_GITIGNORE) == made
    assert ix.glob("**/*.txt", NO_GITIGNORE) == [p for p in made if p.endswith(".txt")]
    hidden: Counter[str] = Counter()
    assert ix.glob("**/*.txt", ALL, hidden=hidden) == ["d/top.txt"]
    assert hidden == {"gitignore/": 1}  # one folder, not entered
    deep_dir = max(made, key=len).rpartition("/")[0]
    assert ix.expand_dir("d/d/d/d", NO_GITIGNORE, True) == [p for p in made if len(p) > 1000]
    assert ix.expand_dir(deep_dir, NO_GITIGNORE, False) == [max(made, key=len)]


def test_changes_and_restore_at_two_thousand_levels(base: Path) -> None:
    made = deep_tree(base, LEVELS, {1: "top.txt", LEVELS: "a.txt"})
    ix = Index.build(str(base), Settings())
    assert ix.files() == made
    bottom = max(made, key=len).rpartition("/")[0]
    fd = os.open(base / bottom, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(os.open("b.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    ix.apply([(bottom + "/b.txt", ENTRY)])
    want = sorted([*made, bottom + "/b.txt"], key=os.fsencode)
    assert ix.files() == want
    ix.apply([("", TREE)])  # the whole tree walked again
    assert ix.files() == want

    back, why = Index.restore(str(base), Settings(), ix.dump(), 0)
    assert back is not None, why
    assert back.files() == want

    remove_tree(base / "d" / "d")  # a subtree 1,999 levels deep goes at once
    ix.apply([("d", FOLDER)])
    assert ix.files() == ["d/top.txt"]
    assert ix.walked_dirs() == ["", "d"]


def test_a_folder_past_path_max_is_not_stale_until_walked_again(base: Path) -> None:
    """The folder whose path is too long to list (ENAMETOOLONG) does not count as stale:
    checking it cannot succeed, and each check used to re-walk it (a loop in the watcher,
    which re-checks every folder just walked). ``verify`` then changes nothing and keeps
    the clock; a rename of an ancestor walks the subtree anew under the shorter path."""
    deep_tree(base, 3000, {1: "top.txt", 3000: "a.txt"})
    ix = Index.build(str(base), Settings())
    ((far, err, reason),) = ix.unlisted_under("")
    assert (err, reason) == (errno.ENAMETOOLONG, "File name too long")
    assert not ix.is_stale(far)
    clock = ix.clock
    done = ix.verify()
    assert (done.changed, done.deleted, done.added_dirs, done.removed_dirs) == ([], [], [], [])
    assert ix.clock == clock and ix.unlisted_under("") == [(far, err, reason)]

    os.rename(base / "d", base / "e")  # the chain's path is no shorter: still one folder
    ix.apply([("d", ENTRY), ("e", ENTRY)])
    ((moved, _, _),) = ix.unlisted_under("")
    assert moved == "e" + far[1:]
    assert not ix.is_stale(moved)
