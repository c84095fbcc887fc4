"""The watcher, end to end: real file-system operations against a running
``readmany serve --socket`` daemon, observed through its answers.

Expansions are asked with ``sync: "none"`` (straight from the index, no barrier), so a
change shows only once the watcher delivered it; every wait is ``wait_for`` with a
deadline. One daemon serves the whole module; each test has its own workspace root.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.client import Client
from tests.e2e.daemon_helpers import Daemon, listed, status_root, wait_for
from tests.helpers import git, write_tree

DEADLINE = 10.0


@pytest.fixture
def env(daemon: Daemon) -> dict[str, str]:
    return daemon.env


def open_root(daemon: Daemon, root: Path) -> Client:
    """A session on ``root`` whose index is built and watched."""
    client = daemon.session(root)
    listed(client, "**", "auto")
    wait_for(lambda: status_root(client, root)["watcher"]["state"] == "running", DEADLINE)
    listed(client, "**", "auto")  # a barrier: the watcher's first reconcile is applied
    return client


def eventually(client: Client, pattern: str, expected: list[str]) -> None:
    """Wait until the index (no barrier) lists exactly ``expected`` for ``pattern``."""
    got: list[Any] = []

    def check() -> bool:
        # a cheap count first (nothing read), the whole listing once it matches
        count = client.request(
            "readMany/read", {"paths": [pattern], "sync": "none", "maxTotalFiles": 1}
        )["summary"]["matched"]
        if count != len(expected):
            got[:] = [f"({count} matches)"]
            return False
        got[:] = listed(client, pattern)
        return got == expected

    try:
        wait_for(check, DEADLINE)
    except AssertionError:
        raise AssertionError(f"{pattern}: expected {expected}, index has {got}") from None


@pytest.fixture
def repo(repo: Path) -> Path:
    """The shared empty repository (tests/conftest.py) with a README and two sources."""
    write_tree(repo, {"README.md": "# r\n", "src/a.py": "a = 1\n", "src/pkg/b.py": "b = 2\n"})
    return repo


# ----------------------------------------------------------------------------- files


def test_files_and_folders_created_and_deleted(daemon: Daemon, repo: Path) -> None:
    with open_root(daemon, repo) as client:
        (repo / "src" / "new.py").write_text("n\n")
        eventually(client, "src/**", ["src/a.py", "src/new.py", "src/pkg/b.py"])
        # mkdir -p + write: only the first folder's creation is an event in a watched folder
        write_tree(repo, {"deep/x/y/z.py": "z\n"})
        eventually(client, "deep/**", ["deep/x/y/z.py"])
        # the new folders are watched now: a later write in the deepest is seen
        (repo / "deep" / "x" / "y" / "w.py").write_text("w\n")
        eventually(client, "deep/**", ["deep/x/y/w.py", "deep/x/y/z.py"])
        (repo / "src" / "new.py").unlink()
        shutil.rmtree(repo / "deep")
        eventually(client, "**", ["README.md", "src/a.py", "src/pkg/b.py"])


def test_atomic_save_is_seen_and_reported(daemon: Daemon, repo: Path) -> None:
    with open_root(daemon, repo) as client:
        clock = client.request("readMany/status", {})["clock"]
        tmp = repo / "src" / ".a.py.tmp"
        tmp.write_text("a = 'saved'\n")
        os.replace(tmp, repo / "src" / "a.py")
        delta = wait_for(
            lambda: (
                (d := client.request("readMany/changedSince", {"clock": clock}))["changed"] and d
            ),
            DEADLINE,
        )
        assert delta["isFreshInstance"] is False
        assert "src/a.py" in delta["changed"] and "src/.a.py.tmp" not in delta["changed"]
        answer = client.request("readMany/read", {"paths": ["src/a.py"]})
        assert "saved" in answer["llmContent"]
        eventually(client, "src/**", ["src/a.py", "src/pkg/b.py"])


def test_folders_moved_in_and_out(daemon: Daemon, repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_tree(outside, {"incoming/i.py": "", "incoming/sub/j.py": ""})
    with open_root(daemon, repo) as client:
        os.rename(outside / "incoming", repo / "incoming")
        eventually(client, "incoming/**", ["incoming/i.py", "incoming/sub/j.py"])
        # moved in folders are watched
        (repo / "incoming" / "sub" / "k.py").write_text("")
        eventually(
            client, "incoming/**", ["incoming/i.py", "incoming/sub/j.py", "incoming/sub/k.py"]
        )
        os.rename(repo / "src" / "pkg", outside / "pkg")
        eventually(client, "src/**", ["src/a.py"])
        os.rename(repo / "incoming", repo / "src" / "renamed")
        eventually(
            client,
            "src/**",
            ["src/a.py", "src/renamed/i.py", "src/renamed/sub/j.py", "src/renamed/sub/k.py"],
        )


# ----------------------------------------------------------------------------- rules


def test_ignore_file_edits_change_what_is_listed(
    daemon: Daemon, repo: Path, env: dict[str, str]
) -> None:
    write_tree(repo, {"logs/app.log": "", "logs/keep.txt": "", "src/gen/out.py": ""})
    with open_root(daemon, repo) as client:
        everything = [
            "README.md",
            "logs/app.log",
            "logs/keep.txt",
            "src/a.py",
            "src/gen/out.py",
            "src/pkg/b.py",
        ]
        eventually(client, "**", everything)
        (repo / ".gitignore").write_text("*.log\n")
        eventually(client, "**", [".gitignore", *[p for p in everything if p != "logs/app.log"]])
        (repo / "src" / ".readmanyignore").write_text("gen/\n")
        eventually(
            client,
            "**",
            [
                ".gitignore",
                "README.md",
                "logs/keep.txt",
                "src/.readmanyignore",
                "src/a.py",
                "src/pkg/b.py",
            ],
        )
        (repo / ".gitignore").unlink()
        (repo / "src" / ".readmanyignore").write_text("")
        eventually(client, "**", sorted([*everything, "src/.readmanyignore"]))
        # $GIT_DIR/info/exclude: the whole root is evaluated again
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "exclude").write_text("*.py\n")
        eventually(
            client, "**", ["README.md", "logs/app.log", "logs/keep.txt", "src/.readmanyignore"]
        )
        (repo / ".git" / "info" / "exclude").write_text("")
        eventually(client, "**", sorted([*everything, "src/.readmanyignore"]))


def test_named_reads_follow_ignore_file_edits_at_once(daemon: Daemon, repo: Path) -> None:
    """A named path's verdict (ignored_by, skipped/ignored, denied) is remembered between
    reads, but never past a change: each read right after an ignore-file write (no
    waiting) sees the write (PROTOCOL §6)."""
    write_tree(repo, {"notes/a.txt": "a\n"})
    with open_root(daemon, repo) as client:

        def read() -> dict[str, Any]:
            answer = client.request("readMany/read", {"paths": ["notes/a.txt"]})
            result: dict[str, Any] = answer["files"][0]
            return result

        for round_ in range(20):
            (repo / ".gitignore").write_text("notes/\n")
            assert read().get("ignoredBy") == ".gitignore:1", round_
            (repo / ".readmanyignore").write_text("*.txt\n")
            got = read()
            assert (got["status"], got.get("code")) == ("skipped", "ignored"), round_
            (repo / ".readmanyignore").unlink()
            (repo / ".gitignore").write_text("# nothing\n")
            got = read()
            assert got["status"] == "ok" and "ignoredBy" not in got, round_


def test_root_deleted_and_recreated_is_seen(daemon: Daemon, tmp_path: Path) -> None:
    """The workspace folder itself removed and made again (``rm -rf root; mkdir root``):
    the next answers show the new folder's files, never the old ones, and the new folder
    is watched again (a file written later is seen through the barrier)."""
    root = tmp_path / "gone"
    write_tree(root, {"one.txt": "one\n"})
    with open_root(daemon, root) as client:
        assert listed(client) == ["one.txt"]
        shutil.rmtree(root)
        write_tree(root, {"two.txt": "two\n", "sub/three.txt": "3\n"})
        assert listed(client, sync="auto") == ["sub/three.txt", "two.txt"]
        got = client.request("readMany/read", {"paths": ["**"]})
        assert "two" in got["llmContent"] and "one" not in got["llmContent"]
        (root / "sub" / "four.txt").write_text("4\n")
        assert listed(client, sync="auto") == ["sub/four.txt", "sub/three.txt", "two.txt"]
        # watched again: a new file arrives through events alone (sync "none")
        (root / "five.txt").write_text("5\n")
        eventually(client, "**", ["five.txt", "sub/four.txt", "sub/three.txt", "two.txt"])


def _made_repo(root: Path, env: dict[str, str], files: dict[str, str]) -> None:
    """``root`` made with ``files``, a new repository there tracking them all."""
    write_tree(root, files)
    git(root, "init", "-q", env=env)
    git(root, "add", "-f", *files, env=env)


@pytest.mark.parametrize("before", ["plain", "repository"])
def test_root_recreated_as_another_repository_is_read_with_its_git(
    daemon: Daemon, tmp_path: Path, env: dict[str, str], before: str
) -> None:
    """The root deleted and made again as a new repository (a fresh clone over an old
    folder or an old clone): its tracked set decides, not the one read before. ``*.bin``
    is ignored; the new repository tracks ``new.bin`` (visible), not ``old.bin``."""
    root = tmp_path / f"again-{before}"
    files = {".gitignore": "*.bin\n", "a.txt": "a\n"}
    if before == "plain":
        write_tree(root, {**files, "new.bin": ""})
        seen = [".gitignore", "a.txt"]
    else:
        _made_repo(root, env, {**files, "old.bin": ""})
        write_tree(root, {"new.bin": ""})
        seen = [".gitignore", "a.txt", "old.bin"]
    with open_root(daemon, root) as client:
        assert listed(client, sync="auto") == seen
        shutil.rmtree(root)
        _made_repo(root, env, {**files, "new.bin": ""})
        write_tree(root, {"old.bin": ""})
        assert listed(client, sync="auto") == [".gitignore", "a.txt", "new.bin"]


def test_git_index_changes_what_is_visible(daemon: Daemon, repo: Path, env: dict[str, str]) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "build/\n*.bin\n",
            "build/out/keep.txt": "",
            "build/tmp.txt": "",
            "x.bin": "",
        },
    )
    with open_root(daemon, repo) as client:
        eventually(client, "**", [".gitignore", "README.md", "src/a.py", "src/pkg/b.py"])
        git(repo, "add", "-f", "build/out/keep.txt", "x.bin", env=env)
        eventually(
            client,
            "**",
            [".gitignore", "README.md", "build/out/keep.txt", "src/a.py", "src/pkg/b.py", "x.bin"],
        )
        git(repo, "rm", "-q", "--cached", "build/out/keep.txt", env=env)
        eventually(client, "**", [".gitignore", "README.md", "src/a.py", "src/pkg/b.py", "x.bin"])


def test_checkout_touching_many_files(daemon: Daemon, tmp_path: Path, env: dict[str, str]) -> None:
    # branch two removes 1,000 files of branch one, adds 1,000 and changes 500: each
    # checkout touches 2,500 files in 27 folders
    root = tmp_path / "big"
    write_tree(root, {f"m{i % 9}/f{i}.py": f"{i}\n" for i in range(2000)})
    git(root, "init", "-q", env=env)
    git(root, "add", "-A", env=env)
    git(root, "commit", "-qm", "one", env=env)
    first = git(root, "rev-parse", "--abbrev-ref", "HEAD", env=env).strip()
    git(root, "checkout", "-qb", "two", env=env)
    git(root, "rm", "-q", *[f"m{i % 9}/f{i}.py" for i in range(0, 2000, 2)], env=env)
    write_tree(root, {f"m{i % 9}/f{i}.py": "changed\n" for i in range(1, 1000, 2)})
    write_tree(root, {f"n{i % 18}/g{i}.py": "" for i in range(1000)})
    git(root, "add", "-A", env=env)
    git(root, "commit", "-qm", "two", env=env)
    with open_root(daemon, root) as client:
        for branch in (first, "two", first):
            git(root, "checkout", "-q", branch, env=env)
            expected = sorted(git(root, "ls-files", env=env).split())
            eventually(client, "**", expected)


# ----------------------------------------------------------------------------- what raises events


def test_reads_and_hidden_folders_raise_no_batches(
    daemon: Daemon, repo: Path, env: dict[str, str]
) -> None:
    write_tree(
        repo, {"node_modules/lib/index.js": "", ".venv/pyvenv.cfg": "", ".venv/lib/m.py": ""}
    )
    with open_root(daemon, repo) as client:
        root = status_root(client, repo)
        # one watch per visible folder: the root, src, src/pkg (not node_modules, .venv, .git)
        assert root["watcher"]["watched"] == 3 and root["watcher"]["unwatched"] == 0
        batches = root["watcher"]["batches"]
        for _ in range(20):
            client.request(
                "readMany/read", {"paths": ["src/a.py", "src/**", "README.md"], "sync": "none"}
            )
        (repo / "node_modules" / "lib" / "other.js").write_text("")
        (repo / ".venv" / "lib" / "n.py").write_text("")
        # a barrier: every event raised so far has been read once it returns
        client.request("readMany/read", {"paths": ["src/**"]})
        assert status_root(client, repo)["watcher"]["batches"] == batches
        (repo / "src" / "c.py").write_text("")
        wait_for(lambda: status_root(client, repo)["watcher"]["batches"] > batches, DEADLINE)


# ----------------------------------------------------------------------------- cache warm-up


def test_small_files_are_warmed_into_the_cache(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "warm"
    write_tree(root, {f"w/f{i}.py": f"v = {i}\n" for i in range(20)})
    past = time.time() - 3600  # not racy: the cache keeps files not written just now
    for p in (root / "w").iterdir():
        os.utime(p, (past, past))
    with daemon.session(root) as client:
        client.request("readMany/files", {})  # indexed, nothing read
        wait_for(lambda: status_root(client, root).get("cacheWarmed", 0) >= 20, 30)
        answer = client.request("readMany/read", {"paths": ["w/f3.py", "w/f7.py"]})
        assert [f["source"] for f in answer["files"]] == ["cache", "cache"]
        assert "v = 3" in answer["llmContent"]
