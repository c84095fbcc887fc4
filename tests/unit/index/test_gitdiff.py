"""What changed since a commit, as git says it (issue 26 item 3): real repositories built
here, every kind of change (committed since the base, staged, unstaged, untracked,
ignored, renamed staged and in the working tree, deleted, binary), odd names, the base
and the root git refuses; the repository's own index is never written."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from readmany_daemon.index.gitdiff import (
    FileChange,
    NotAWorkTree,
    UnknownBase,
    base_commit,
    changes_since,
)
from tests.helpers import GIT_ENV, committed_tree, git, write_tree

ENV = {**GIT_ENV}


def _git(root: Path, *args: str) -> str:
    return git(root, *args, env={**os.environ, **ENV})


TEN = "".join(f"line {i}\n" for i in range(1, 11))


def test_every_kind_of_change_against_the_base(tmp_path: Path) -> None:
    base = committed_tree(
        tmp_path,
        {
            "mod.txt": TEN,
            "staged.txt": TEN,
            "gone.txt": "x\n",
            "moved.txt": "moved content\n" * 5,
            "staged_mv.txt": "staged move\n" * 5,
            "blob.bin": b"\x00\x01" * 40,
            ".gitignore": "*.log\n",
        },
    )
    write_tree(tmp_path, {"mod.txt": TEN.replace("line 3\n", "LINE 3\n") + "line 11\n"})
    write_tree(tmp_path, {"staged.txt": TEN.replace("line 5\n", "")})
    _git(tmp_path, "add", "staged.txt")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "moved.txt").rename(tmp_path / "moved2.txt")  # not staged
    _git(tmp_path, "mv", "staged_mv.txt", "staged2.txt")
    write_tree(tmp_path, {"blob.bin": b"\x00\x02" * 40, "new.py": "x = 1\n", "debug.log": "no\n"})
    index = (tmp_path / ".git" / "index").read_bytes()

    got = changes_since(str(tmp_path), base)

    assert got.base == base
    assert got.files == {
        # binary to git: its hunks by `git diff --text` (the engine skips it as binary)
        "blob.bin": FileChange(new=False, hunks=((1, 1),), bytewise=True),
        "mod.txt": FileChange(new=False, hunks=((3, 1), (11, 1))),
        "moved2.txt": FileChange(new=False, hunks=()),
        "new.py": FileChange(new=True),
        "staged.txt": FileChange(new=False, hunks=((4, 0),)),
        "staged2.txt": FileChange(new=False, hunks=()),
    }
    assert got.deleted == ("gone.txt",)
    assert got.renamed == (("moved.txt", "moved2.txt"), ("staged_mv.txt", "staged2.txt"))
    assert (tmp_path / ".git" / "index").read_bytes() == index  # never written
    assert "debug.log" not in got.files  # ignored


def test_commits_after_the_base_count_and_hunks_are_the_new_sides(tmp_path: Path) -> None:
    base = committed_tree(tmp_path, {"a.py": TEN})
    write_tree(tmp_path, {"a.py": "top\n" + TEN})
    _git(tmp_path, "commit", "-qam", "two")
    got = changes_since(str(tmp_path), base)
    assert got.files == {"a.py": FileChange(new=False, hunks=((1, 1),))}
    assert changes_since(str(tmp_path), _git(tmp_path, "rev-parse", "HEAD").strip()).files == {}


def test_odd_names_and_a_line_that_looks_like_a_header(tmp_path: Path) -> None:
    base = committed_tree(tmp_path, {'sp ace/é "q".txt': TEN, "tab\tname.txt": TEN, "x.txt": TEN})
    write_tree(tmp_path, {'sp ace/é "q".txt': TEN + "end\n"})
    write_tree(tmp_path, {"tab\tname.txt": "line 1\n"})
    write_tree(tmp_path, {"x.txt": "++ b/fake\n@@ -1 +1 @@\n" + TEN})
    got = changes_since(str(tmp_path), base)
    assert got.files == {
        'sp ace/é "q".txt': FileChange(new=False, hunks=((11, 1),)),
        "tab\tname.txt": FileChange(new=False, hunks=((1, 0),)),
        "x.txt": FileChange(new=False, hunks=((1, 2),)),
    }


def test_a_root_below_the_top_sees_its_own_files_relative_to_it(tmp_path: Path) -> None:
    base = committed_tree(tmp_path, {"sub/a.txt": TEN, "other.txt": TEN})
    write_tree(tmp_path, {"sub/a.txt": TEN + "more\n", "other.txt": "x\n", "sub/n.txt": "n\n"})
    got = changes_since(str(tmp_path / "sub"), base)
    assert set(got.files) == {"a.txt", "n.txt"}


def test_the_base_is_a_commit_branch_or_tag(tmp_path: Path) -> None:
    base = committed_tree(tmp_path, {"a.txt": "a\n"})
    _git(tmp_path, "tag", "v1")
    for ref in ("HEAD", "main", "v1", base, base[:10]):
        assert base_commit(str(tmp_path), ref) == base
    for ref in ("nope", "HEAD~5", "--all", base[:3] + "zz"):
        with pytest.raises(UnknownBase):
            base_commit(str(tmp_path), ref)
    empty = tmp_path / "empty"
    empty.mkdir()
    _git(empty, "init", "-q")
    with pytest.raises(UnknownBase):  # no commit yet: HEAD names none
        base_commit(str(empty), "HEAD")


def test_a_folder_in_no_work_tree_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotAWorkTree):
        base_commit(str(plain), "HEAD")
    with pytest.raises(NotAWorkTree):
        changes_since(str(plain), hashlib.sha1(b"x").hexdigest())
    broken = tmp_path / "broken"
    write_tree(broken, {".git/HEAD": "not a ref\n"})  # a .git git itself refuses
    with pytest.raises(NotAWorkTree):
        base_commit(str(broken), "HEAD")


def test_a_racily_clean_file_is_changed_when_untracked_files_and_a_deletion_ask_again(
    tmp_path: Path,
) -> None:
    """A file rewritten in the tick its index was written (same size, same times: git's
    racy-timestamp case) is compared by content against the real index; the copy made
    to pair moves is written later and would trust its stale stat."""
    write_tree(tmp_path, {"a.txt": "aaaa\n", "gone.txt": "x\n"})
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "core.trustctime", "false")
    tick = os.stat(tmp_path / "a.txt").st_mtime_ns - 100 * 10**9
    os.utime(tmp_path / "a.txt", ns=(tick, tick))
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    base = _git(tmp_path, "rev-parse", "HEAD").strip()
    write_tree(tmp_path, {"a.txt": "bbbb\n", "new.txt": "n\n"})
    os.utime(tmp_path / "a.txt", ns=(tick, tick))
    os.utime(tmp_path / ".git" / "index", ns=(tick, tick))
    (tmp_path / "gone.txt").unlink()
    got = changes_since(str(tmp_path), base)
    assert got.files["a.txt"] == FileChange(new=False, hunks=((1, 1),))
    assert got.files["new.txt"] == FileChange(new=True) and got.deleted == ("gone.txt",)
