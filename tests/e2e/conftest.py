"""Helpers for end-to-end tests that run the real ``readmany`` process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import Daemon
from tests.helpers import make_env


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A private daemon (its own HOME and runtime folder) shared by one test module; a
    module that needs another kind defines its own ``daemon``."""
    d = Daemon(make_env(tmp_path_factory.mktemp("home"))).start()
    yield d
    d.cleanup()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A process environment with its own HOME (no user git config, no global excludes)."""
    home = tmp_path / "_home"
    return make_env(home, runtime=home / "run")


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
