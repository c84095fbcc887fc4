"""Freshness (PROTOCOL §6), end to end: every answer reflects every write that finished
before the request, for named paths and for glob expansions, whether or not the watcher
has delivered its event yet.

Each cycle makes one change on disk and immediately asks the running daemon about it:
a new file must be in the expansion of a glob with its content, a new folder tree too, a
replaced file (atomic save) must show its new content, an overwrite of the same size
too, a deleted file must be gone. 1,000 cycles through the cookie barrier (``sync:
"auto"``), 200 through stat checks (``sync: "stat"``), 200 in a root without ``.git``.
No sleeps: the request is sent the moment the write returns.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.client import Client
from tests.e2e.daemon_helpers import Daemon, status_root, wait_for
from tests.helpers import git, write_tree


def read(client: Client, paths: list[str], sync: str) -> dict[str, Any]:
    result: dict[str, Any] = client.request(
        "readMany/read", {"paths": paths, "sync": sync, "format": "json"}
    )
    return result


def contents(result: dict[str, Any]) -> dict[str, str]:
    """``{path: content}`` of the files an answer included."""
    import json

    out = json.loads(result["llmContent"])["results"]
    return {k: v["content"] for k, v in out.items() if v["status"] == "ok"}


def run_cycles(client: Client, root: Path, cycles: int, sync: str) -> None:
    """``cycles`` write-then-read rounds; any miss fails with the cycle's story."""
    made: list[str] = []
    for i in range(cycles):
        kind = i % 5
        if kind == 0:  # a new file: in the glob's expansion, with its content
            rel = f"src/f{i}.py"
            (root / rel).write_text(f"value {i}\n")
            made.append(rel)
            got = contents(read(client, [f"src/f{i}.*"], sync))
            assert got == {rel: f"value {i}\n"}, (i, "new file", got)
        elif kind == 1:  # mkdir -p + write: the new tree in a recursive expansion
            rel = f"tree{i}/a/b/leaf.txt"
            write_tree(root, {rel: f"leaf {i}\n"})
            got = contents(read(client, [f"tree{i}/**"], sync))
            assert got == {rel: f"leaf {i}\n"}, (i, "new tree", got)
        elif kind == 2:  # atomic save onto an existing file
            rel = made[-1]
            tmp = root / "src" / f".tmp{i}"
            tmp.write_text(f"saved {i}\n")
            os.replace(tmp, root / rel)
            got = contents(read(client, ["src/*.py"], sync))
            assert got.get(rel) == f"saved {i}\n", (i, "atomic save", rel, got.get(rel))
            assert f"src/.tmp{i}" not in got
        elif kind == 3:  # overwrite in place, same size: only the content differs
            rel = made[-1]
            (root / rel).write_text(f"SAVED {i}\n"[: len(f"saved {i - 1}\n")])
            want = (root / rel).read_text()
            got = contents(read(client, [rel], sync))
            assert got == {rel: want}, (i, "overwrite", got)
        else:  # delete: gone from the expansion
            rel = made.pop(0) if len(made) > 1 else made[-1]
            (root / rel).unlink()
            if rel in made:
                made.remove(rel)
            answer = read(client, ["src/*.py"], sync)
            listed = {f["path"] for f in answer["files"]}
            assert rel not in listed, (i, "delete", rel)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(root, {"src/base.py": "base\n", "README.md": "r\n"})
    return root


def test_thousand_cycles_through_the_cookie_barrier(daemon: Daemon, repo: Path) -> None:
    git(repo, "init", "-q", env=daemon.env)
    with daemon.session(repo) as client:
        read(client, ["src/*.py"], "auto")
        wait_for(lambda: status_root(client, repo)["watcher"]["state"] == "running")
        run_cycles(client, repo, 1000, "auto")
        state = status_root(client, repo)["watcher"]
        assert state["state"] == "running" and not state["warnings"]


def test_cycles_through_stat_checks(daemon: Daemon, repo: Path) -> None:
    git(repo, "init", "-q", env=daemon.env)
    with daemon.session(repo) as client:
        run_cycles(client, repo, 200, "stat")


def test_cycles_in_a_root_without_git(daemon: Daemon, repo: Path) -> None:
    with daemon.session(repo) as client:
        run_cycles(client, repo, 200, "auto")


def test_cycles_while_the_watcher_is_still_starting(daemon: Daemon, tmp_path: Path) -> None:
    # The first requests race the watcher's start (its watches, its first reconcile):
    # they are answered through stat checks meanwhile, and must be fresh all the same.
    root = tmp_path / "fresh"
    write_tree(root, {f"pkg{i}/m{j}.py": "" for i in range(40) for j in range(5)})
    write_tree(root, {"src/base.py": "base\n"})
    with daemon.session(root) as client:
        run_cycles(client, root, 50, "auto")
