"""A root's warnings describe its present state, and plain ``readmany status`` shows them
(issue 22, item 6). A real daemon, a real client session, the real ``readmany status``
command; waits poll answers, never sleep."""

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

GONE = "is gone"
NOT_SAVING = "not saving the index snapshot"


def status_json(d: Daemon) -> dict[str, Any]:
    run = cli(d.env, "status", "--json")
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def root_warnings(d: Daemon, root: Path) -> list[str]:
    for r in status_json(d)["roots"]:
        if r["root"] == os.path.realpath(root):
            return list(r.get("warnings", []))
    raise AssertionError(f"{root} is not a warm root")


def read(client: Client, *paths: str) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = client.request("readMany/read", {"paths": list(paths)})["files"]
    return files


def test_warnings_of_a_deleted_root_go_when_it_is_recreated(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "one\n"})
    daemon.start()
    client = daemon.session(root)
    try:
        assert read(client, "a.txt")[0]["status"] == "ok"
        shutil.rmtree(root)

        def both_warnings() -> list[str] | None:
            read(client, "a.txt")  # each request looks at the disk again
            found = root_warnings(daemon, root)
            gone = any(GONE in w for w in found) and any(NOT_SAVING in w for w in found)
            return found if gone else None

        wait_for(both_warnings, 30, every=0.2)

        write_tree(root, {"a.txt": "two\n"})
        recreated = os.stat(root / "a.txt").st_mtime_ns
        files = read(client, "a.txt")
        assert files[0]["status"] == "ok", files
        # The next status no longer says the folder is gone, nor that the snapshot
        # cannot be saved: neither is true any more.
        found = root_warnings(daemon, root)
        assert not [w for w in found if GONE in w or NOT_SAVING in w], found
        # After more writes and reads, still not.
        (root / "b.txt").write_text("b\n")
        assert [f["status"] for f in read(client, "a.txt", "b.txt")] == ["ok", "ok"]
        found = root_warnings(daemon, root)
        assert not [w for w in found if GONE in w or NOT_SAVING in w], found
        # The snapshot is written again, now that the root exists.
        snap = next(
            r["snapshot"]["path"]
            for r in status_json(daemon)["roots"]
            if r["root"] == os.path.realpath(root)
        )
        wait_for(
            lambda: os.path.exists(snap) and os.stat(snap).st_mtime_ns >= recreated,
            30,
            every=0.2,
        )
    finally:
        client.exit()


def test_plain_status_shows_root_warnings(daemon: Daemon, tmp_path: Path) -> None:
    """A root inside a folder the repository ignores: its warning was shown by
    ``--json`` only."""
    repo = tmp_path / "repo"
    write_tree(repo, {".gitignore": "build/\n", "build/out/x.txt": "x\n", "src.txt": "s\n"})
    git(repo, "init", "-q", env=daemon.env)
    root = repo / "build" / "out"
    daemon.start()
    client = daemon.session(root)
    try:
        assert read(client, "x.txt")[0]["status"] == "ok"
        expected = [w for w in root_warnings(daemon, root) if "build/" in w]
        assert expected, root_warnings(daemon, root)
        run = cli(daemon.env, "status")
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(f"root {root}"))
        assert f"  warning: {expected[0]}" in lines[at + 1 :], run.stdout
    finally:
        client.exit()
