"""Shared test helpers: an isolated git environment and small tree builders."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest


@pytest.fixture()
def git_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Isolate git from the user's configuration: no system config, ``HOME`` is a fresh
    folder (so no global excludes file), no ``XDG_CONFIG_HOME``, a committer identity.
    Returns the ``HOME`` folder."""
    home = tmp_path / "_home"
    home.mkdir()
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(home))
    for var in (
        "XDG_CONFIG_HOME",
        "GIT_CONFIG_GLOBAL",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
    ):
        monkeypatch.delenv(var, raising=False)
    for var, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }.items():
        monkeypatch.setenv(var, value)
    return home


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` (fsmonitor off) and return its stdout; raises on failure."""
    return subprocess.run(
        ["git", "-c", "core.fsmonitor=false", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Create ``files`` (relative POSIX path -> content) under ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
