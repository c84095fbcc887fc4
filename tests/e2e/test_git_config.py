"""Git configuration and the rule files outside the workspace, end to end (PROTOCOL §6).

A running daemon must follow a change of ``core.ignoreCase`` or ``core.excludesFile`` (in
the repository's ``.git/config``, in ``~/.gitconfig`` or in
``$XDG_CONFIG_HOME/git/config``), an edit of the file ``core.excludesFile`` names, and an
edit of ``.git/info/exclude``, as it follows an edit of a ``.gitignore``: the first
request after the change answers with the new rules. The oracle is git itself:
``git ls-files -co --exclude-standard`` under the daemon's environment, asked right after
each change; the daemon is asked at once too (no waits, ``sync: "auto"``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from readmany_daemon.client import Client
from tests.e2e.daemon_helpers import Daemon, listed, status_root, wait_for
from tests.helpers import git, write_tree

FILES = {
    ".gitignore": "Build/\n*.LOG\nSecret.txt\n",
    "build/out.py": "o\n",
    "src/app.log": "l\n",
    "src/secret.TXT": "s\n",
    "src/keep.py": "k\n",
    "src/notes.md": "n\n",
    "docs/a.txt": "a\n",
}


@pytest.fixture
def repo(daemon: Daemon, tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(root, FILES)
    git(root, "init", "-q", env=daemon.env)
    git(root, "config", "core.ignorecase", "false", env=daemon.env)
    return root


def daemon_files(client: Client) -> list[str]:
    """What ``readMany/files`` lists (default excludes off: git knows none)."""
    answer = client.request("readMany/files", {"useDefaultExcludes": False})
    return sorted(f["path"] for f in answer["files"])


def git_files(daemon: Daemon, root: Path) -> list[str]:
    """git's own listing of the visible files (tracked or untracked, not ignored)."""
    out = git(root, "ls-files", "-z", "-co", "--exclude-standard", env=daemon.env)
    return sorted(p for p in out.split("\0") if p)


def agree(client: Client, daemon: Daemon, root: Path, step: str) -> list[str]:
    """Ask git and the daemon at once; they must list the same files."""
    want = git_files(daemon, root)
    got = daemon_files(client)
    assert got == want, step
    return got


def started(daemon: Daemon, root: Path) -> Client:
    """A session on ``root`` whose index is built and whose watcher runs."""
    client = daemon.session(root)
    daemon_files(client)
    wait_for(lambda: status_root(client, root)["watcher"]["state"] == "running")
    return client


def test_ignorecase_true_false_true(daemon: Daemon, repo: Path) -> None:
    with started(daemon, repo) as client:
        sensitive = agree(client, daemon, repo, "ignorecase false")
        assert "build/out.py" in sensitive and "src/app.log" in sensitive
        git(repo, "config", "core.ignorecase", "true", env=daemon.env)
        folded = agree(client, daemon, repo, "false -> true")
        assert "build/out.py" not in folded and "src/secret.TXT" not in folded
        git(repo, "config", "core.ignorecase", "false", env=daemon.env)
        assert agree(client, daemon, repo, "true -> false") == sensitive
        git(repo, "config", "core.ignorecase", "true", env=daemon.env)
        assert agree(client, daemon, repo, "false -> true again") == folded
        git(repo, "config", "--unset", "core.ignorecase", env=daemon.env)
        assert agree(client, daemon, repo, "unset") == sensitive
        git(repo, "config", "core.ignorecase", "true", env=daemon.env)
        assert listed(client, sync="stat") == folded  # the stat route sees it too


def test_excludes_file_set_changed_edited_unset(daemon: Daemon, repo: Path, tmp_path: Path) -> None:
    first = tmp_path / "x"
    first.write_text("*.py\n")
    second = tmp_path / "y"
    second.write_text("*.md\n")
    with started(daemon, repo) as client:
        before = agree(client, daemon, repo, "no excludes file")
        git(repo, "config", "core.excludesFile", str(first), env=daemon.env)
        got = agree(client, daemon, repo, "set")
        assert "src/keep.py" not in got
        first.write_text("*.py\ndocs/\n")
        got = agree(client, daemon, repo, "its file edited")
        assert "docs/a.txt" not in got
        first.write_text("*.pz\n")  # the same size: only the content differs
        got = agree(client, daemon, repo, "its file edited, same size")
        assert "src/keep.py" in got
        git(repo, "config", "core.excludesFile", str(second), env=daemon.env)
        got = agree(client, daemon, repo, "changed to another file")
        assert "src/notes.md" not in got
        second.unlink()
        assert agree(client, daemon, repo, "its file removed") == before
        second.write_text("*.txt\n")
        got = agree(client, daemon, repo, "its file created")
        assert "docs/a.txt" not in got
        git(repo, "config", "--unset", "core.excludesFile", env=daemon.env)
        assert agree(client, daemon, repo, "unset") == before


def test_default_excludes_file_edited(daemon: Daemon, repo: Path) -> None:
    # unset, core.excludesFile is $XDG_CONFIG_HOME/git/ignore
    ignore = Path(daemon.env["XDG_CONFIG_HOME"]) / "git" / "ignore"
    with started(daemon, repo) as client:
        before = agree(client, daemon, repo, "no default excludes file")
        try:
            ignore.parent.mkdir(parents=True, exist_ok=True)
            ignore.write_text("*.md\n")
            got = agree(client, daemon, repo, "default excludes file created")
            assert "src/notes.md" not in got
        finally:
            ignore.unlink(missing_ok=True)
        assert agree(client, daemon, repo, "default excludes file removed") == before


@pytest.mark.parametrize("where", ["~/.gitconfig", "$XDG_CONFIG_HOME/git/config"])
def test_global_config(daemon: Daemon, repo: Path, tmp_path: Path, where: str) -> None:
    home, xdg = Path(daemon.env["HOME"]), Path(daemon.env["XDG_CONFIG_HOME"])
    config = home / ".gitconfig" if where.startswith("~") else xdg / "git" / "config"
    excludes = tmp_path / "global-excludes"
    excludes.write_text("*.txt\n")
    git(repo, "config", "--unset", "core.ignorecase", env=daemon.env)
    with started(daemon, repo) as client:
        before = agree(client, daemon, repo, "no global config")
        try:
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(f"[core]\n\texcludesFile = {excludes}\n")
            got = agree(client, daemon, repo, "global excludesFile set")
            assert "docs/a.txt" not in got
            config.write_text("[core]\n\tignoreCase = true\n")
            got = agree(client, daemon, repo, "global ignoreCase set")
            assert "build/out.py" not in got and "docs/a.txt" in got
        finally:
            config.unlink(missing_ok=True)
        assert agree(client, daemon, repo, "global config removed") == before


def test_info_exclude_edited(daemon: Daemon, repo: Path) -> None:
    exclude = repo / ".git" / "info" / "exclude"
    with started(daemon, repo) as client:
        before = agree(client, daemon, repo, "stock info/exclude")
        exclude.write_text("docs/\n")
        got = agree(client, daemon, repo, "info/exclude edited")
        assert "docs/a.txt" not in got
        exclude.write_text("*.md\n")  # the same size
        got = agree(client, daemon, repo, "info/exclude edited, same size")
        assert "docs/a.txt" in got and "src/notes.md" not in got
        exclude.unlink()
        assert agree(client, daemon, repo, "info/exclude removed") == before
        (repo / ".git" / "info").rmdir()
        write_tree(repo, {".git/info/exclude": "src/\n"})
        got = agree(client, daemon, repo, "info/ made again")
        assert not any(p.startswith("src/") for p in got)


def test_nested_info_exclude_edited(daemon: Daemon, repo: Path) -> None:
    # a nested repository's .git is never walked, so no watch sees its info/exclude
    inner = repo / "inner"
    write_tree(inner, {"a.txt": "a\n", "b.txt": "b\n"})
    git(inner, "init", "-q", env=daemon.env)
    exclude = inner / ".git" / "info" / "exclude"
    with started(daemon, repo) as client:
        assert {"inner/a.txt", "inner/b.txt"} <= set(daemon_files(client))
        exclude.write_text("a.txt\n")
        got = set(daemon_files(client))
        assert "inner/a.txt" not in got and "inner/b.txt" in got
        inner_git = git_files(daemon, inner)
        assert inner_git == sorted(p[len("inner/") :] for p in got if p.startswith("inner/"))
