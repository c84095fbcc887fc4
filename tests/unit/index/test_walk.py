"""The index walk (``index/walk.py``) with ignore files off: a tracked path that a tool
ignore file hides too (and ``.gitignore`` with it) is listed, as ``git ls-files`` lists
it and ``IgnoreRules.check`` judges it; the git-seeded cold listing (``index/gitlist.py``)
says the same. Both the walk's settled verdicts (git's tracked set already read) and its
deferred ones (``_settle``, after the walk) are pinned."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from readmany_daemon.index import gitlist
from readmany_daemon.index.model import Index
from readmany_daemon.rules.ignore import IgnoreRules
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.settings import Settings
from tests.helpers import git, write_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

OFF = Filters(respect_ignore_files=False)
#: every path of the tree below, files only
ALL = [
    ".gitignore",
    ".readmanyignore",
    "a.log",
    "b.txt",
    "d/f.txt",
    "d/u.txt",
    "keep/t.log",
    "keep/v.log",
]
#: what git lists (tracked, and untracked not ignored) and what ignore files off shows
GIT = [".gitignore", ".readmanyignore", "a.log", "b.txt", "d/f.txt", "keep/t.log"]


@pytest.fixture
def tree(repo: Path) -> Path:
    """Tracked ``a.log``, ``d/f.txt`` and ``keep/t.log``, each hidden by ``.gitignore``
    and by ``.readmanyignore`` (a file, a folder, a folder by a file pattern below it)."""
    write_tree(
        repo,
        {
            ".gitignore": "*.log\nd/\nkeep/\n",
            ".readmanyignore": "a.log\nd/\nkeep/\n",
            **{p: "" for p in ALL if not p.startswith(".")},
        },
    )
    git(repo, "add", "-f", ".gitignore", "a.log", "d/f.txt", "keep/t.log")
    return repo


@pytest.mark.parametrize("settled", [True, False], ids=["git-first", "git-after"])
def test_tracked_paths_an_ignore_file_hides_are_listed_with_ignore_files_off(
    tree: Path, monkeypatch: pytest.MonkeyPatch, settled: bool
) -> None:
    monkeypatch.setattr(IgnoreRules, "tracked_ready", lambda self, frame: settled)
    ix = Index.build(str(tree), Settings())
    out = git(tree, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    assert sorted(p for p in os.fsdecode(out).split("\0") if p) == GIT
    assert ix.files(OFF) == GIT
    assert [p for p in ALL if ix.rules.check(p, False, OFF) is None] == GIT
    assert ix.expand_dir("d", OFF, True) == ["d/f.txt"]
    # with every kind on, the ignore file still hides them; with gitignore off too, all show
    assert ix.files() == [".gitignore", ".readmanyignore", "b.txt"]
    assert ix.files(OFF._replace(respect_gitignore=False)) == ALL


def test_the_git_seeded_listing_agrees_with_ignore_files_off(tree: Path) -> None:
    job = gitlist.start(str(tree))
    assert job is not None
    assert job.files(Settings(), OFF) == GIT
    assert job.fallback is None  # the git-seeded path ran
