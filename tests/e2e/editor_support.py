"""What the editor tests (Neovim, Emacs, VS Code) share: this checkout's ``readmany``
command and the skip-or-fail rule for a missing editor."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def readmany_cmd() -> list[str]:
    """This checkout's ``readmany``: the venv's console script, else ``python -m``."""
    script = BIN / "readmany"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "readmany_daemon"]


def ci_is_set() -> bool:
    """Whether ``CI`` is set to a true value (``1``, ``true``, ``yes``…; empty, ``0``,
    ``false`` and ``no`` count as unset)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


def missing(what: str) -> None:
    """Skip, or fail under CI (a CI run must not pass by skipping the editor tests)."""
    if ci_is_set():
        pytest.fail(f"{what} (CI is set, so this is a failure, not a skip)")
    pytest.skip(what)


def editor_env(env: dict[str, str], prefix: str, drop: tuple[str, ...]) -> Iterator[dict[str, str]]:
    """``env`` (private HOME and XDG folders, READMANY_NO_DAEMON=1) with a short private
    XDG_RUNTIME_DIR (``/tmp/{prefix}…``: the daemon socket must fit ``sun_path``), this
    checkout's ``readmany`` first on PATH, and the variables in ``drop`` (the editor's
    own, which would reach the user's editor) removed. The body of a fixture."""
    runtime = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    e = dict(env, XDG_RUNTIME_DIR=str(runtime), READMANY_NO_DAEMON="1")
    e["PATH"] = os.pathsep.join([str(BIN), e.get("PATH", "")])
    for k in ("READMANY_TOKEN", "READMANY_IDLE_TIMEOUT_SECONDS", *drop):
        e.pop(k, None)
    yield e
    shutil.rmtree(runtime, ignore_errors=True)
