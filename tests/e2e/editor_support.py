"""What the editor tests (Neovim, Emacs, VS Code) share: this checkout's ``readmany``
command and the skip-or-fail rule for a missing editor."""

from __future__ import annotations

import os
import sys
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
