"""Helpers for end-to-end tests that run the real ``readmany`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A process environment with its own HOME (no user git config, no global excludes)."""
    home = tmp_path / "_home"
    home.mkdir(exist_ok=True)
    runtime = home / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    e = dict(
        os.environ,
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_RUNTIME_DIR=str(runtime),
        READMANY_NO_DAEMON="1",
        **GIT_ENV,
    )
    e.pop("READMANY_DENY_PATTERNS", None)
    return e


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data, encoding="utf-8")


def git(root: Path, *args: str, env: dict[str, str]) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def readmany(env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m readmany_daemon ARGS`` as a new process; returns the finished run."""

    def run(
        *args: str, cwd: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "readmany_daemon", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
        return proc

    return run


@pytest.fixture
def read_json(
    readmany: Callable[..., subprocess.CompletedProcess[str]],
) -> Callable[..., dict[str, Any]]:
    """``readmany read --json --no-daemon --root ROOT ARGS`` → the parsed ReadManyResult."""

    def run(root: Path, *args: str) -> dict[str, Any]:
        proc = readmany("read", "--json", "--no-daemon", "--root", str(root), *args)
        result: dict[str, Any] = json.loads(proc.stdout)
        return result

    return run
