"""Trees thousands of folders deep (issue 22, item 5): nothing in the listing, the
index, the snapshot, the cursor or the watcher recurses per folder level.

At 2,000 levels (a path of about 4,000 bytes, within Linux's ``PATH_MAX`` of 4,096) every
file is listed, exactly as ``git ls-files`` lists it. At 3,000 levels neither git nor
readmany can open the deepest folders by path: the answer is still exit 0, without a
traceback, and names the folder it could not enter in a warning.

Each tree lives in a short folder directly in ``/tmp`` (so that 2,000 levels stay within
``PATH_MAX``) and is removed without recursion (``tests.helpers.remove_tree``), also when a
test fails; pytest's own clean-up of ``tmp_path`` uses ``shutil.rmtree``, which would fail
on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.daemon_helpers import Daemon, cli, fresh_daemon, listed, status_root, wait_for
from tests.helpers import deep_tree, git, make_env, short_tmp

daemon = fresh_daemon

#: files at a few depths of the chain (depth → name); the deepest one is added per test
_ALONG = {1: "top.txt", 7: "seven.md", 1000: "mid.txt"}


@pytest.fixture
def base() -> Iterator[Path]:
    with short_tmp() as path:
        yield path


def _run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "readmany_daemon", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=300,
        check=False,
    )


def _commit(root: Path, env: dict[str, str]) -> None:
    git(root, "init", "-q", env=env)
    git(root, "add", "-A", env=env)
    git(root, "commit", "-qm", "deep", env=env)


def _unreachable(root: Path, levels: int) -> str:
    """The shallowest folder of the chain whose absolute path does not fit ``PATH_MAX``
    (4,096 bytes with its NUL): the first one no path-based call can open."""
    rel = "d"
    while len(os.fsencode(str(root))) + 1 + len(rel) + 1 <= 4096:
        rel += "/d"
    assert rel.count("/") + 1 <= levels
    return rel


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain"])
def test_two_thousand_levels_list_as_git_does(base: Path, tmp_path: Path, in_git: bool) -> None:
    env = make_env(tmp_path / "home")
    made = deep_tree(base, 2000, {**_ALONG, 2000: "a.txt"})
    assert max(map(len, made)) > 4000  # the deepest path: about 4,000 bytes
    if in_git:
        _commit(base, env)
        assert git(base, "ls-files", "-z", env=env).split("\0")[:-1] == made
    files = _run(env, base, "files", "--no-daemon")
    assert files.returncode == 0, files.stderr[-2000:]
    assert files.stdout.decode().splitlines() == made
    assert files.stderr == b""

    read = _run(env, base, "read", "--no-daemon", "--json", "**/*.txt")
    assert read.returncode == 0, read.stderr[-2000:]
    answer = json.loads(read.stdout)
    got = [f["path"] for f in answer["files"] if f["status"] == "ok"]
    assert got == [p for p in made if p.endswith(".txt")]
    assert "a.txt\n" in answer["llmContent"]

    deepest = max(made, key=len)  # named: its ignore rules are checked folder by folder
    named = _run(env, base, "read", "--no-daemon", deepest)
    assert named.returncode == 0, named.stderr[-2000:]
    assert f"--- {deepest} ---\na.txt\n" in named.stdout.decode()


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain"])
def test_three_thousand_levels_name_the_folders_not_entered(
    base: Path, tmp_path: Path, in_git: bool
) -> None:
    env = make_env(tmp_path / "home")
    made = deep_tree(base, 3000, {**_ALONG, 3000: "a.txt"})
    if in_git:
        _commit(base, env)  # git warns that it cannot enter the deepest folders; exit 0
        assert "d/a.txt" not in git(base, "ls-files", env=env)
    far = _unreachable(base, 3000)
    reachable = [p for p in made if len(p) < len(far)]
    assert reachable and len(reachable) < len(made)

    files = _run(env, base, "files", "--no-daemon")
    assert files.returncode == 0, files.stderr[-2000:]
    assert b"Traceback" not in files.stderr
    assert files.stdout.decode().splitlines() == reachable
    assert f"readmany: warning: {far}: not listed: " in files.stderr.decode()

    read = _run(env, base, "read", "--no-daemon", "**/*.txt")
    assert read.returncode == 0, read.stderr[-2000:]
    assert b"Traceback" not in read.stderr
    out = read.stdout.decode()
    assert f"[Warning: {far}/ cannot be listed (" in out
    assert "--- d/top.txt ---" in out


def test_daemon_watches_snapshots_and_pages_a_deep_tree(base: Path, daemon: Daemon) -> None:
    """The warm path at 2,000 levels: the index, its watcher, a cursor chain across the
    deepest file, and the snapshot the next daemon starts from."""
    made = deep_tree(base, 2000, {**_ALONG, 2000: "a.txt"})
    _commit(base, daemon.env)
    root = os.path.realpath(base)
    daemon.start()
    client = daemon.session(base)
    try:
        assert listed(client) == sorted(made)
        bottom = max(made, key=len)
        fd = os.open(Path(root, bottom).parent, os.O_RDONLY | os.O_DIRECTORY)
        try:  # seen through the watcher
            out = os.open("b.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(out, b"b\n")
            os.close(out)
        finally:
            os.close(fd)
        want = sorted([*made, bottom.replace("a.txt", "b.txt")])
        wait_for(lambda: listed(client) == want)

        # a page of one file at a time: the cursor carries the deep paths
        seen: list[str] = []
        params: dict[str, object] = {"paths": ["**"], "maxTotalFiles": 1}
        while True:
            result = client.request("readMany/read", params)
            seen += [f["path"] for f in result["files"] if f["status"] == "ok"]
            cursor = result.get("nextCursor")
            if not cursor:
                break
            params = {"cursor": cursor}
        assert sorted(seen) == want
    finally:
        client.close()
    daemon.stop()
    snaps = list(Path(daemon.env["XDG_CACHE_HOME"], "readmany").glob("index-*.snap"))
    assert snaps, "no snapshot saved"

    daemon.start()  # starts warm from the snapshot
    client = daemon.session(base)
    try:
        assert listed(client) == want
    finally:
        client.close()


def test_daemon_names_what_it_cannot_enter_and_keeps_watching(base: Path, daemon: Daemon) -> None:
    """At 3,000 levels the daemon lists what it can reach, names the first folder past
    ``PATH_MAX`` in the root's warnings, and its watcher does not degrade for it (the
    folder is stat-checked at each barrier instead, like one it may not read)."""
    made = deep_tree(base, 3000, {**_ALONG, 3000: "a.txt"})
    far = _unreachable(base, 3000)
    reachable = [p for p in made if len(p) < len(far)]
    daemon.start()
    client = daemon.session(base)
    try:
        assert listed(client) == sorted(reachable)
        status = wait_for(
            lambda: (s := status_root(client, base))["watcher"]["state"] != "starting" and s
        )
        assert f"{far}: not listed: " in "\n".join(status["warnings"])
        assert not any("cannot watch" in w for w in status["watcher"]["warnings"])
        assert status["watcher"]["unwatched"] == 1
    finally:
        client.close()


def test_daemon_stays_idle_beside_a_folder_it_cannot_list(base: Path, daemon: Daemon) -> None:
    """Issue 22 item 5, follow-up: after a read of the 3,000-level tree the folder past
    ``PATH_MAX`` is not queued again and again (it cannot be listed, so it stays "stale"
    by the index's rule): the idle watcher applies no batches, and its barrier still
    answers."""
    deep_tree(base, 3000, {**_ALONG, 3000: "a.txt"})
    daemon.start()
    read = cli(daemon.env, "read", "--root", str(base), "**/*.txt")  # as a user does
    assert read.returncode == 0, read.stderr[-2000:]
    assert "--- d/top.txt ---" in read.stdout
    client = daemon.session(base)
    try:
        wait_for(lambda: status_root(client, base)["watcher"]["state"] != "starting")
        settled = cli(daemon.env, "read", "--root", str(base), "**/*.txt")  # a barrier
        assert settled.stdout == read.stdout
        before = status_root(client, base)["watcher"]["batches"]
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:  # a second of idleness: no batch at all
            assert status_root(client, base)["watcher"]["batches"] == before
        again = cli(daemon.env, "read", "--root", str(base), "**/*.txt")
        assert again.stdout == read.stdout
        assert status_root(client, base)["watcher"]["state"] == "running"
    finally:
        client.close()


def test_daemon_files_answer_names_the_folders_it_cannot_list(base: Path, daemon: Daemon) -> None:
    """``readMany/files`` through the daemon carries the ``warnings`` the in-process
    listing prints (``<folder>: not listed: <reason>``), and ``readmany files`` answered
    by the daemon writes them on stderr as ``--no-daemon`` does."""
    made = deep_tree(base, 3000, {**_ALONG, 3000: "a.txt"})
    far = _unreachable(base, 3000)
    reachable = [p for p in made if len(p) < len(far)]
    daemon.start()
    client = daemon.session(base)
    try:
        answer = client.request("readMany/files", {})
        assert [f["path"] for f in answer["files"]] == reachable
        assert answer["warnings"] == [f"{far}: not listed: File name too long"]
        some = client.request("readMany/files", {"patterns": ["d/*.txt"]})
        assert [f["path"] for f in some["files"]] == ["d/top.txt"]
        assert some["warnings"] == answer["warnings"]
    finally:
        client.close()
    files = cli(daemon.env, "files", "--root", str(base))
    assert files.returncode == 0, files.stderr[-2000:]
    assert files.stdout.splitlines() == reachable
    assert files.stderr == f"readmany: warning: {far}: not listed: File name too long\n"
