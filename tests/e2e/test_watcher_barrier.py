"""The freshness barrier with the installed watchdog, end to end (issue 22, items 1 and
3): a running ``readmany serve --socket`` daemon reports a ``quiet-queue`` barrier and no
warnings, ``readmany status`` prints it, and ``readMany/changedSince`` from a clock given
while the watcher ran answers renames (case only, a folder, an atomic save) with
``isFreshInstance: false``, the old paths deleted and the new ones changed.

Run on the oldest (watchdog 7.1.0) and the newest allowed releases. ``changedSince``
passes through the barrier itself, so nothing is waited for but the watcher's start.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.daemon_helpers import Daemon, cli, status_root
from tests.e2e.test_watcher import open_root
from tests.helpers import write_tree


def test_the_barrier_is_quiet_queue_and_status_says_so(daemon: Daemon, tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path / "ws"))
    write_tree(root, {"a.txt": "one\n"})
    with open_root(daemon, root) as client:
        for n in range(20):  # every write is seen at once
            (root / "a.txt").write_text(f"v{n}\n")
            text = client.request("readMany/read", {"paths": ["a.txt"]})["llmContent"]
            assert f"v{n}" in text
        watcher = status_root(client, root)["watcher"]
        assert watcher["state"] == "running" and watcher["warnings"] == []
        assert watcher["barrier"] == "quiet-queue" and "barrierReason" not in watcher
        shown = cli(daemon.env, "status")
        assert shown.returncode == 0, shown.stderr
        assert "watcher running, barrier quiet-queue" in shown.stdout
    assert not any("freshness barrier" in line for line in daemon.stderr)  # fits: no warning


def test_changed_since_through_renames(daemon: Daemon, tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path / "ws"))
    write_tree(root, {"Readme.md": "# r\n", "Src/x.py": "x = 1\n", "a.txt": "one\n"})
    with open_root(daemon, root) as client:
        clock = client.request("readMany/changedSince", {"clock": "none"})["clock"]
        os.rename(root / "Readme.md", root / "README.md")
        os.rename(root / "Src", root / "src")
        (root / ".a.txt.tmp").write_text("saved\n")
        os.replace(root / ".a.txt.tmp", root / "a.txt")
        delta = client.request("readMany/changedSince", {"clock": clock})
        assert delta["isFreshInstance"] is False, delta
        assert sorted(delta["deleted"]) == ["Readme.md", "Src/x.py"]
        assert sorted(delta["changed"]) == ["README.md", "a.txt", "src/x.py"]
        again = client.request("readMany/changedSince", {"clock": delta["clock"]})
        assert (again["isFreshInstance"], again["changed"], again["deleted"]) == (False, [], [])
