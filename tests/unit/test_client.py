"""Where the shared daemon's socket lies (PROTOCOL §1): a GUI client starts its MCP server
without ``XDG_RUNTIME_DIR``, yet it must find the daemon the user's shell started, whose
``XDG_RUNTIME_DIR`` is logind's ``/run/user/<uid>`` (issue 22, item 6). ``run_user``
stands for ``/run/user`` here: the machine's own is left alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from readmany_daemon.client import default_socket_path, runtime_dir

NOBODY = 65534


@pytest.fixture
def run_user(tmp_path: Path) -> Path:
    base = tmp_path / "run-user"
    base.mkdir()
    return base


def mine(run_user: Path) -> Path:
    folder = run_user / str(os.getuid())
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o700)
    return folder


def test_xdg_runtime_dir_wins(run_user: Path, tmp_path: Path) -> None:
    mine(run_user)
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "xdg"), "TMPDIR": "/var/tmp"}
    assert runtime_dir(env, str(run_user)) == str(tmp_path / "xdg" / "readmany")


def test_without_xdg_the_users_run_folder_is_used(run_user: Path) -> None:
    folder = mine(run_user)
    assert runtime_dir({"TMPDIR": "/var/tmp"}, str(run_user)) == str(folder / "readmany")
    # The shell's value is that same folder: both find one socket.
    shell = {"XDG_RUNTIME_DIR": str(folder)}
    assert runtime_dir(shell, str(run_user)) == runtime_dir({}, str(run_user))


def test_without_a_run_folder_tmpdir_stays(run_user: Path) -> None:
    expected = f"/var/tmp/readmany-{os.getuid()}"
    assert runtime_dir({"TMPDIR": "/var/tmp"}, str(run_user)) == expected
    assert runtime_dir({}, str(run_user)) == f"/tmp/readmany-{os.getuid()}"


def test_a_run_folder_others_may_write_is_not_used(run_user: Path) -> None:
    folder = mine(run_user)
    os.chmod(folder, 0o777)
    assert runtime_dir({}, str(run_user)) == f"/tmp/readmany-{os.getuid()}"


def test_a_link_as_run_folder_is_not_used(run_user: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (run_user / str(os.getuid())).symlink_to(target)
    assert runtime_dir({}, str(run_user)) == f"/tmp/readmany-{os.getuid()}"


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")
def test_a_run_folder_of_another_user_is_not_used(run_user: Path) -> None:
    folder = mine(run_user)
    os.chown(folder, NOBODY, NOBODY)
    assert runtime_dir({}, str(run_user)) == f"/tmp/readmany-{os.getuid()}"


def test_the_default_is_the_machines_run_user() -> None:
    """Without the ``run_user`` argument the rule reads the machine's ``/run/user``."""
    uid = os.getuid()
    real = f"/run/user/{uid}"
    usable = (
        os.path.isdir(real)
        and not os.path.islink(real)
        and os.stat(real).st_uid == uid
        and not os.stat(real).st_mode & 0o022
    )
    expected = f"{real}/readmany" if usable else f"/tmp/readmany-{uid}"
    assert default_socket_path({}) == f"{expected}/daemon.sock"
