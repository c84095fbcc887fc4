"""Index snapshots, end to end: a daemon killed with SIGKILL in the middle of a request,
restarted from its snapshot and reconciled with what changed while it was dead; corrupt
and foreign snapshots; nothing written into the workspace.

Each test runs real ``readmany serve --socket`` processes with a private
``XDG_CACHE_HOME``; waits are deadline-bounded polls (``wait_for``).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from readmany_daemon.client import ConnectionClosed
from tests.e2e.daemon_helpers import Daemon, listed, status_root, wait_for
from tests.helpers import git, make_env, write_tree


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(make_env(tmp_path / "home"))
    yield d
    d.cleanup()


def tree_of(root: Path) -> dict[str, int]:
    """Every path below ``root`` but ``.git/`` internals, with its size."""
    out: dict[str, int] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (folder == str(root) and d == ".git")]
        for name in files:
            p = os.path.join(folder, name)
            out[os.path.relpath(p, root)] = os.lstat(p).st_size
    return out


def saved_snapshot(daemon: Daemon, root: Path) -> Path:
    """Wait until the daemon wrote ``root``'s snapshot; its path."""
    with daemon.session(root) as client:
        item = wait_for(
            lambda: (r := status_root(client, root)).get("snapshot", {}).get("saved") and r, 20
        )
    path = Path(item["snapshot"]["path"])
    assert path.is_file()
    return path


def test_kill_during_a_request_then_restart_from_the_snapshot(
    daemon: Daemon, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    line = "x" * 79 + "\n"
    write_tree(
        root,
        {
            ".gitignore": "*.log\n",
            "src/a.py": "a = 'before'\n",
            "src/b.py": "b = 1\n",
            "src/hide.py": "h = 1\n",
            **{f"big/f{i:03}.txt": line * 800 for i in range(300)},  # ~19 MB to answer
        },
    )
    git(root, "init", "-q", env=daemon.env)
    before = tree_of(root)
    daemon.start()
    with daemon.session(root) as client:
        assert listed(client, "src/**", "auto") == ["src/a.py", "src/b.py", "src/hide.py"]
        clock = client.request("readMany/status", {})["clock"]
    snap = saved_snapshot(daemon, root)
    assert stat.S_IMODE(snap.stat().st_mode) == 0o600
    assert not str(snap).startswith(str(root))

    # A slow request in flight, then SIGKILL: its client gets an error, not an answer.
    slow = daemon.session(root)
    slow.send(
        {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "readMany/read",
            "params": {
                "paths": ["big/**"],
                "preferFullRead": True,
                "maxTotalFiles": 10_000,
                "maxTotalChars": 10**9,
                "lineNumbers": True,
            },
        }
    )
    with daemon.session(root) as watcher:
        wait_for(lambda: watcher.request("readMany/status", {})["engine"]["inflight"] >= 1, 20)
        daemon.kill9()
    with pytest.raises(ConnectionClosed):
        slow.receive()
    slow.close()

    # While no daemon runs: a file added, one removed, one rewritten, a new folder, an
    # ignore rule that now hides a file.
    write_tree(root, {"src/new.py": "n = 1\n", "pkg/x.py": "x = 1\n", "src/a.py": "a = 'after'\n"})
    (root / "src" / "b.py").unlink()
    (root / ".gitignore").write_text("*.log\nhide.py\n")

    daemon.start()
    with daemon.session(root) as client:
        assert listed(client, "src/**", "auto") == ["src/a.py", "src/new.py"]
        item = status_root(client, root)
        assert item["snapshot"]["loaded"] is True, item
        assert listed(client, "pkg/**", "auto") == ["pkg/x.py"]
        answer = client.request("readMany/read", {"paths": ["src/a.py"]})
        assert "after" in answer["llmContent"]
        # once the watcher runs, the index itself holds the reconciled state
        wait_for(lambda: status_root(client, root)["watcher"]["state"] == "running", 20)
        assert listed(client, "src/**", "none") == ["src/a.py", "src/new.py"]
        # a clock of the killed daemon is another instance's
        delta = client.request("readMany/changedSince", {"clock": clock})
        assert delta["isFreshInstance"] is True
    after = tree_of(root)
    changed = {"src/new.py", "pkg/x.py", "src/a.py", ".gitignore"}
    assert {k: v for k, v in after.items() if k not in changed} == {
        k: v for k, v in before.items() if k not in changed | {"src/b.py"}
    }


def test_corrupt_snapshot_is_discarded_with_a_warning(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "a\n", "d/b.txt": "b\n"})
    daemon.start()
    snap = saved_snapshot(daemon, root)
    daemon.stop()
    snap.write_bytes(b"\x93not a snapshot" + os.urandom(64))
    daemon.start()
    with daemon.session(root) as client:
        assert listed(client, "**", "auto") == ["a.txt", "d/b.txt"]
        item = status_root(client, root)
        assert item["snapshot"]["loaded"] is False
        assert any("corrupt index snapshot" in w for w in item.get("warnings", [])), item
    daemon.stop()  # a good one is written again, at the latest on the way out
    daemon.start()
    with daemon.session(root) as client:
        assert listed(client, "**", "auto") == ["a.txt", "d/b.txt"]
        assert status_root(client, root)["snapshot"]["loaded"] is True


def test_snapshot_of_a_replaced_folder_is_not_used(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"old.txt": ""})
    daemon.start()
    saved_snapshot(daemon, root)
    daemon.stop()
    root.rename(tmp_path / "ws.old")  # kept, so its inode cannot be reused at once
    write_tree(root, {"new.txt": ""})  # same path, another folder (st_ino differs)
    daemon.start()
    with daemon.session(root) as client:
        assert listed(client, "**", "auto") == ["new.txt"]
        item = status_root(client, root)
        assert item["snapshot"]["loaded"] is False
        assert any("another folder" in w for w in item.get("warnings", [])), item


def test_stop_saves_the_latest_state(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": ""})
    daemon.start()
    saved_snapshot(daemon, root)
    with daemon.session(root) as client:
        write_tree(root, {"later.txt": ""})
        assert listed(client, "**", "auto") == ["a.txt", "later.txt"]
    daemon.stop()  # SIGTERM: the changed index is saved on the way out
    log = json.dumps(daemon.stderr)
    assert "Traceback" not in log
    daemon.start()
    with daemon.session(root) as client:
        # answered from the snapshot alone, before any reconcile could add it
        assert listed(client, "**", "none") == ["a.txt", "later.txt"]
        assert status_root(client, root)["snapshot"]["loaded"] is True
