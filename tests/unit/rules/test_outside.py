"""Unit tests of readmany_daemon.rules.outside and ``IgnoreRules.outside_changed``: the
rule sources no watch covers (git's configuration, ``core.excludesFile``'s file,
``info/exclude``) are noticed when they change, and only a change that matters
counts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from readmany_daemon.rules.git import repo_location
from readmany_daemon.rules.ignore import IgnoreRules
from readmany_daemon.rules.outside import FileStamps, config_files
from readmany_daemon.settings import Settings
from tests.helpers import git, write_tree


def rules_for(root: Path) -> IgnoreRules:
    return IgnoreRules(os.path.realpath(root), Settings())


def test_stamps_see_creation_edit_and_removal(tmp_path: Path) -> None:
    path = tmp_path / "f"
    stamps = FileStamps([str(path)])
    assert not stamps.changed()
    path.write_text("a\n")
    assert stamps.changed()
    assert not stamps.changed()  # stamped again by the check
    path.write_text("b\n")  # the same size, within the same tick: the digest tells
    assert stamps.changed()
    path.unlink()
    assert stamps.changed()
    stamps.forget()
    path.write_text("c\n")
    assert not stamps.changed()


def test_config_files_follow_git_config_1(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loc = repo_location(os.path.realpath(repo))
    assert loc is not None
    home = os.environ["HOME"]
    files = config_files(loc)
    assert "/etc/gitconfig" not in files  # GIT_CONFIG_NOSYSTEM (the fixture's)
    assert os.path.join(home, ".gitconfig") in files
    assert os.path.join(loc.gitdir, "config") in files
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "g"))
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(tmp_path / "s"))
    files = config_files(loc)
    assert files[:2] == [str(tmp_path / "s"), str(tmp_path / "g")]
    assert os.path.join(home, ".gitconfig") not in files


def test_ignorecase_change_is_seen(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.LOG\n", "a.log": ""})
    r = rules_for(repo)
    assert r.check("a.log", False) is None
    assert not r.outside_changed()
    git(repo, "config", "core.ignorecase", "true")
    assert r.outside_changed()
    assert r.check("a.log", False) is not None
    git(repo, "config", "core.ignorecase", "false")
    assert r.outside_changed()
    assert r.check("a.log", False) is None


def test_other_config_changes_do_not_count(repo: Path) -> None:
    r = rules_for(repo)
    assert not r.outside_changed()
    git(repo, "config", "user.name", "someone else")
    assert not r.outside_changed()


def test_excludes_file_and_its_edits_are_seen(repo: Path, tmp_path: Path) -> None:
    write_tree(repo, {"a.py": "", "b.md": ""})
    x = tmp_path / "x"
    x.write_text("*.py\n")
    r = rules_for(repo)
    assert r.check("a.py", False) is None
    git(repo, "config", "core.excludesFile", str(x))
    assert r.outside_changed()
    assert r.check("a.py", False) is not None
    assert not r.outside_changed()
    x.write_text("*.md\n")
    assert r.outside_changed()
    assert r.check("a.py", False) is None and r.check("b.md", False) is not None


def test_nested_info_exclude_is_stamped(repo: Path) -> None:
    inner = repo / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    write_tree(inner, {"a.txt": ""})
    r = rules_for(repo)
    assert r.check("inner/a.txt", False) is None
    (inner / ".git" / "info" / "exclude").write_text("a.txt\n")
    assert r.outside_changed()
    assert r.check("inner/a.txt", False) is not None
