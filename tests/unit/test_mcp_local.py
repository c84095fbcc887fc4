"""``readmany mcp``'s in-process backend (``readmany_daemon.mcp.local``), without a process:
a thin wrapper over a watcher-less ``Service`` (its freshness is tested in
``test_service.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from readmany_daemon.mcp.local import LocalBackend


def test_answers_through_a_service_without_watcher_or_snapshots(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\n")
    old = 1_000_000_000
    os.utime(tmp_path / "a.py", (old, old))
    backend = LocalBackend()
    service = backend.service
    assert (service.watch, service.snapshots, service.warm_cache) == (False, False, False)
    root = os.path.realpath(tmp_path)
    base = backend.call("readMany/changedSince", {"clock": ""}, root)
    assert base["isFreshInstance"] and base["changed"] == ["a.py"]
    assert "a\n" in backend.call("readMany/read", {"paths": ["a.py"]}, root)["llmContent"]

    (tmp_path / "a.py").write_text("A\n")  # in place, same size: no folder mtime moves
    os.utime(tmp_path / "a.py", (old + 1, old + 1))
    assert "A\n" in backend.call("readMany/read", {"paths": ["a.py"]}, root)["llmContent"]
    delta = backend.call("readMany/changedSince", {"clock": base["clock"]}, root)
    assert (delta["isFreshInstance"], delta["changed"], delta["deleted"]) == (False, ["a.py"], [])
    files = backend.call("readMany/files", {}, root)["files"]
    assert [f["path"] for f in files] == ["a.py"]
    assert [e.ws.root for e in service.roots()] == [root]

    backend.clear()
    assert service.roots() == []
    service.close()
