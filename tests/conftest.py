"""Session-wide isolation and leak check, and the fixtures every test folder shares.

Plain helpers (``git``, ``write_tree``, ``make_env``) are in ``tests/helpers.py``.

The session (issue 17, tests/session_guard.py): before any test is collected, ``HOME``
and the ``XDG_*`` folders point at a private folder for the whole run, so every process
a test starts has private ones; settings a killed earlier run left changed on the
machine are restored (tests/machine_settings.py). At the end the run FAILS when a
readmany process it started is still alive or a file appeared in the real user's
readmany runtime, state or cache folders.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import GIT_ENV, git
from tests.machine_settings import restore_saved
from tests.session_guard import Guard

_GUARD: Guard | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _GUARD
    if _GUARD is None:
        _GUARD = Guard.begin()
        restored = restore_saved()
        if restored:
            print(f"restored machine settings a killed test run left: {restored}", file=sys.stderr)


def pytest_sessionstart(session: pytest.Session) -> None:
    if _GUARD is not None:
        basetemp = session.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
        _GUARD.mark(basetemp)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _GUARD is None:
        return
    leaks = _GUARD.leaks()
    if not leaks:
        return
    message = _GUARD.report(leaks)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("=", "readmany session guard", red=True)
        reporter.write_line(message, red=True)
    else:
        print(message, file=sys.stderr)
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    global _GUARD
    if _GUARD is not None:
        _GUARD.end()
        _GUARD = None


@pytest.fixture()
def git_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Isolate git (and this process) from any user configuration: no system config,
    ``HOME`` a fresh folder (so no global config or excludes file), no
    ``XDG_CONFIG_HOME`` nor git location variables, ``GIT_ENV``'s committer identity.
    Returns the ``HOME`` folder."""
    home = tmp_path / "_home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in (
        "XDG_CONFIG_HOME",
        "GIT_CONFIG_GLOBAL",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
    ):
        monkeypatch.delenv(var, raising=False)
    for var, value in GIT_ENV.items():
        monkeypatch.setenv(var, value)
    return home


@pytest.fixture()
def repo(git_env: Path, tmp_path: Path) -> Path:
    """An empty git repository ``tmp_path/repo`` (``git init``) under ``git_env``."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    return root
