"""Machine-wide settings (``/proc/sys`` files such as ``fs.inotify.max_user_watches``)
changed by a test, and given back even when the test process is killed.

Only slow-tier tests use this (docs/reliability.md, "Tests that change the machine").
``changed`` takes an exclusive lock (one session at a time changes these files), saves
the original values to ``SAVED`` and starts a guard process (``GUARD``: a small
``python -c``, in its own session so a Ctrl-C or a group kill of the test run does not
reach it) that waits for end-of-file on a pipe from the test process. A normal exit
restores the values, deletes ``SAVED`` and closes the pipe: the guard finds no file and
exits. If the test process dies instead (SIGKILL, a timeout, an OOM kill), the kernel
closes the pipe: the guard restores the values from ``SAVED`` and deletes it. The guard
inherits the lock, so no other session changes the settings before it is done.
Should the guard die too, the next session's start (``restore_saved``, called by
tests/conftest.py) restores from ``SAVED`` when no live session holds the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator

__all__ = ["GUARD", "SAVED", "Changed", "changed", "restore_saved"]

SAVED = os.path.join(tempfile.gettempdir(), f"readmany-tests-machine-settings-{os.getuid()}.json")
LOCK = SAVED + ".lock"

#: The guard process: wait for EOF on stdin, then write back what ``argv[1]`` holds.
GUARD = """
import json, os, sys
sys.stdin.buffer.read()
try:
    with open(sys.argv[1]) as f:
        saved = json.load(f)
except (OSError, ValueError):
    sys.exit(0)
for path, value in saved.items():
    try:
        with open(path, "w") as f:
            f.write(str(value) + "\\n")
    except OSError as exc:
        print(f"cannot restore {path} to {value}: {exc}", file=sys.stderr)
os.unlink(sys.argv[1])
"""


def read_setting(path: str) -> int:
    with open(path) as f:
        return int(f.read())


def write_setting(path: str, value: int) -> None:
    with open(path, "w") as f:
        f.write(f"{value}\n")


def _restore_file(saved: str = SAVED) -> list[str]:
    """Write back the values ``saved`` holds and delete it; returns what was restored."""
    try:
        with open(saved) as f:
            values: dict[str, int] = json.load(f)
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        os.unlink(saved)
        return []
    done = []
    for path, value in values.items():
        with contextlib.suppress(OSError):
            write_setting(path, value)
            done.append(f"{path}={value}")
    os.unlink(saved)
    return done


def restore_saved() -> list[str]:
    """At a session's start: settings a killed session left changed (and its guard did
    not restore) are written back, unless a live session holds the lock."""
    if not os.path.exists(SAVED):
        return []
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return []  # a live session (or its guard) is changing them now
        return _restore_file()
    finally:
        os.close(fd)


class Changed:
    """The settings ``changed`` guards: ``set`` a new value, ``restore`` early."""

    def __init__(self, original: dict[str, int]) -> None:
        self.original = original

    def set(self, path: str, value: int) -> None:
        assert path in self.original, f"{path} is not guarded"
        write_setting(path, value)

    def restore(self) -> None:
        for path, value in self.original.items():
            write_setting(path, value)


@contextlib.contextmanager
def changed(paths: list[str]) -> Iterator[Changed]:
    """Guard ``paths`` (``/proc/sys`` files) while the body changes them (see the
    module docstring). Raises ``OSError`` before anything changes when one cannot be
    read or written here."""
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    guard: subprocess.Popen[bytes] | None = None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _restore_file()  # left by a killed session whose guard died too
        original = {p: read_setting(p) for p in paths}
        for path, value in original.items():
            write_setting(path, value)  # permitted? (rewrites the same value)
        tmp = SAVED + ".tmp"
        with open(tmp, "w") as f:
            json.dump(original, f)
        os.replace(tmp, SAVED)
        guard = subprocess.Popen(
            [sys.executable, "-c", GUARD, SAVED],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            pass_fds=(fd,),
            start_new_session=True,
        )
        settings = Changed(original)
        try:
            yield settings
        finally:
            settings.restore()
            os.unlink(SAVED)
    finally:
        if guard is not None:
            assert guard.stdin is not None
            guard.stdin.close()
            guard.wait(30)
        os.close(fd)
