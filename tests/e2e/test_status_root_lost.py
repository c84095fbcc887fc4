"""What ``readmany status`` says about a root whose folder was deleted, and after it was
recreated (issue 22, items 1 and 6): the barrier's reason names what really did not fit,
and a watcher warning whose cause has gone is not shown. A real daemon, a real client
session, the real ``readmany status`` command; waits poll answers, never sleep."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from readmany_daemon.client import Client
from tests.e2e.daemon_helpers import Daemon, cli, fresh_daemon, wait_for
from tests.helpers import git, write_tree

daemon = fresh_daemon


def root_status(d: Daemon, root: Path) -> dict[str, Any]:
    run = cli(d.env, "status", "--json")
    assert run.returncode == 0, run.stderr
    for r in json.loads(run.stdout)["roots"]:
        if r["root"] == os.path.realpath(root):
            return dict(r)
    raise AssertionError(f"{root} is not a warm root")


def watching(d: Daemon, root: Path) -> bool:
    """Whether ``root``'s watcher runs with its watches in place (so that it sees the
    folder go)."""
    w = root_status(d, root)["watcher"]
    return bool(w["state"] == "running" and w.get("watched") and w.get("barrier") != "stat")


def read(client: Client, *paths: str) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = client.request("readMany/read", {"paths": list(paths)})["files"]
    return files


def test_barrier_reason_of_a_deleted_root_says_the_folder_is_gone(
    daemon: Daemon, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "one\n"})
    daemon.start()
    client = daemon.session(root)
    try:
        assert read(client, "a.txt")[0]["status"] == "ok"
        wait_for(lambda: watching(daemon, root), 30, every=0.05)
        shutil.rmtree(root)

        def lost() -> dict[str, Any] | None:
            read(client, "a.txt")  # each request looks at the disk again
            w: dict[str, Any] = root_status(daemon, root)["watcher"]
            return w if w.get("barrier") == "stat" else None

        watcher = wait_for(lost, 30, every=0.2)
        # The user deleted the folder: no package is to blame, and the words say so.
        assert watcher["barrierReason"] == "the workspace folder is gone", watcher
        run = cli(daemon.env, "status")
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(f"root {root}"))
        assert lines[at + 1].endswith("barrier stat (the workspace folder is gone)"), run.stdout
        assert "watchdog" not in lines[at + 1], run.stdout
        # The folder back, before any request watches it: the reason says that instead.
        root.mkdir()
        watcher = root_status(daemon, root)["watcher"]
        assert watcher["barrierReason"] == (
            "the workspace folder was replaced; it is watched again at the next request"
        ), watcher
    finally:
        client.exit()


def test_a_root_recreated_without_git_has_no_git_watch_warning(
    daemon: Daemon, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    write_tree(root, {"a.txt": "one\n"})
    git(root, "init", "-q", env=daemon.env)
    daemon.start()
    client = daemon.session(root)
    try:
        assert read(client, "a.txt")[0]["status"] == "ok"
        wait_for(lambda: watching(daemon, root), 30, every=0.05)
        shutil.rmtree(root)
        wait_for(
            lambda: (
                read(client, "a.txt")[0]["status"] != "ok"
                and root_status(daemon, root)["watcher"].get("barrier") == "stat"
            ),
            30,
            every=0.2,
        )
        write_tree(root, {"a.txt": "two\n"})  # the same folder again, no longer a repository

        def watched_again() -> dict[str, Any] | None:
            files = read(client, "a.txt")
            assert files[0]["status"] == "ok", files
            w: dict[str, Any] = root_status(daemon, root)["watcher"]
            return w if w["state"] == "running" and w.get("barrier") != "stat" else None

        watcher = wait_for(watched_again, 30, every=0.2)
        # No `.git` to watch is the present state, not a problem: nothing to warn about.
        assert not [w for w in watcher["warnings"] if ".git" in w], watcher
        (root / "b.txt").write_text("b\n")
        assert [f["status"] for f in read(client, "a.txt", "b.txt")] == ["ok", "ok"]
        run = cli(daemon.env, "status")
        assert run.returncode == 0, run.stderr
        assert ".git" not in run.stdout, run.stdout
    finally:
        client.exit()
