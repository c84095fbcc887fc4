"""``readmany mcp``'s in-process backend (``readmany_daemon.mcp.local``), without a process."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from readmany_daemon.mcp import local
from readmany_daemon.mcp.local import RACY_NS, LocalBackend


def test_a_file_racy_at_the_baseline_is_not_changed_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written within ``RACY_NS`` of the baseline (hashed then), untouched, and asked
    about once it is no longer racy: not changed."""
    (tmp_path / "a.py").write_text("a\n")
    (tmp_path / "b.py").write_text("b\n")
    mtime = os.stat(tmp_path / "a.py").st_mtime_ns
    now = [mtime + RACY_NS // 2]
    monkeypatch.setattr(local, "time", SimpleNamespace(time_ns=lambda: now[0]))
    backend = LocalBackend()
    root = os.path.realpath(tmp_path)
    base = backend.changed_since({"clock": ""}, root)
    assert base["isFreshInstance"] and sorted(base["changed"]) == ["a.py", "b.py"]

    now[0] = mtime + 3 * RACY_NS
    (tmp_path / "b.py").write_text("B\n")  # same size, maybe the same mtime: hashed
    delta = backend.changed_since({"clock": base["clock"]}, root)
    assert (delta["isFreshInstance"], delta["changed"], delta["deleted"]) == (False, ["b.py"], [])
