"""The installs users make: ``readmany --version``, and ``pipx install .`` and
``uv tool install .`` from a clone, each giving a ``readmany`` that answers.

The install tests are slow: they put pipx and uv (from PyPI) into a scratch venv, then
install from a copy of this checkout's tracked files (what a clone holds) into private
folders, fetching the dependencies from PyPI. Without PyPI they skip (fail under CI).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from readmany_daemon import __version__
from tests.e2e.editor_support import REPO, missing

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_version_prints_the_package_version(env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "readmany_daemon", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"readmany {VERSION}\n"
    assert __version__ == VERSION


def _clone(dest: Path) -> Path:
    """This checkout's tracked files (as they are now) copied to ``dest``: a clone."""
    files = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = REPO / os.fsdecode(name)
        if source.is_file():
            target = dest / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    return dest


@pytest.fixture(scope="module")
def installers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch venv with pipx and uv from PyPI; returns its ``bin``."""
    root = tmp_path_factory.mktemp("installers")
    venv.EnvBuilder(with_pip=True).create(root)
    proc = subprocess.run(
        [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "pipx", "uv"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        missing(f"pipx and uv could not be installed from PyPI: {proc.stderr[-2000:]}")
    return root / "bin"


def _answers(readmany: Path, clone: Path, env: dict[str, str]) -> None:
    """The installed ``readmany`` prints its version and reads a file of the clone."""
    version = subprocess.run(
        [str(readmany), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert version.stdout == f"readmany {VERSION}\n", version.stderr
    read = subprocess.run(
        [str(readmany), "read", "pyproject.toml"],
        cwd=clone,
        env=dict(env, READMANY_NO_DAEMON="1"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert read.returncode == 0, read.stderr
    assert re.search(r'^name = "readmany-daemon"$', read.stdout, re.M), read.stdout[:2000]


def _install(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Run the install command ``args`` in ``cwd`` (the clone), as a user types it."""
    what = " ".join([Path(args[0]).name, *args[1:]])
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{what} exited {proc.returncode}:\n{proc.stderr[-4000:]}"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_pipx_install_from_a_clone(installers: Path, env: dict[str, str], tmp_path: Path) -> None:
    clone = _clone(tmp_path / "clone")
    e = dict(env, PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"))
    _install([str(installers / "pipx"), "install", "."], clone, e)
    _answers(tmp_path / "bin" / "readmany", clone, e)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_uv_tool_install_from_a_clone(
    installers: Path, env: dict[str, str], tmp_path: Path
) -> None:
    clone = _clone(tmp_path / "clone")
    e = dict(
        env,
        UV_TOOL_DIR=str(tmp_path / "tools"),
        UV_TOOL_BIN_DIR=str(tmp_path / "bin"),
        UV_CACHE_DIR=str(tmp_path / "cache"),
        UV_PYTHON_DOWNLOADS="never",
        # The system's certificates (as pip uses), also behind a proxy that signs TLS.
        UV_NATIVE_TLS="1",
    )
    _install([str(installers / "uv"), "tool", "install", "."], clone, e)
    _answers(tmp_path / "bin" / "readmany", clone, e)
