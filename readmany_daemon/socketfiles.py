"""The files a socket daemon keeps beside its socket (PROTOCOL §1; the rules are in
``daemon.py``'s docstring): ``daemon.sock.lock`` (one daemon per socket), the socket
itself (0600, a stale one replaced), and ``daemon.sock.running`` (an exit the daemon did
not see is reported by the next one)."""

from __future__ import annotations

import errno
import os
import stat
import time
from typing import Any

from readmany_daemon import __version__
from readmany_daemon.errors import DaemonError
from readmany_daemon.launch import POLL_SECONDS, START_TIMEOUT, probe_version, stop

__all__ = ["RUNNING_SUFFIX", "acquire_lock", "bind_unix", "mark_running"]


def _log() -> Any:
    """The daemon's logger (``logging`` costs ~6 ms to import: not on the warm path)."""
    import logging

    return logging.getLogger("readmany_daemon.daemon")


def acquire_lock(path: str) -> int | None:
    """Hold the daemon lock of socket ``path``: returns its fd, or None when a daemon of
    this version already serves there. Replaces a daemon of another version."""
    import fcntl

    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path + ".lock", flags, 0o600)
    except OSError as exc:
        raise DaemonError(f"cannot open the daemon lock {path}.lock: {exc}") from None
    deadline = time.monotonic() + START_TIMEOUT
    asked = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass  # held: a daemon runs (or is starting, or stopping)
        version = probe_version(path, timeout=1.0)
        if version == __version__:
            os.close(fd)
            return None
        if version is not None and not asked:
            _log().warning("replacing the daemon of version %s at %s", version, path)
            asked = True
            try:
                stop(path, START_TIMEOUT, reason=f"replaced by version {__version__}")
            except DaemonError as exc:
                _log().warning("%s", exc)
        if time.monotonic() >= deadline:
            os.close(fd)
            raise DaemonError(f"another daemon holds {path}.lock and does not answer")
        time.sleep(POLL_SECONDS)


def bind_unix(path: str, *, private: bool = False) -> Any:
    """A listening unix socket at ``path`` (mode 0600), replacing a stale socket file
    (and, when the folder is the ``private`` per-user runtime folder, a regular file or
    symlink left there). Call only while holding the lock."""
    import socket

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISSOCK(st.st_mode):
            _log().info("replacing the stale socket %s", path)
        elif private and (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            _log().warning("replacing %s: it was not a socket", path)
        else:
            raise DaemonError(f"{path} exists and is not a socket; refusing to replace it")
        try:
            os.unlink(path)  # stale: its daemon no longer holds the lock
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise DaemonError(f"cannot replace the stale {path}: {exc}") from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    except OSError as exc:
        sock.close()
        hint = (
            " (the path is too long for a unix socket)"
            if exc.errno in (errno.ENAMETOOLONG, errno.EINVAL) or "too long" in str(exc)
            else ""
        )
        raise DaemonError(f"cannot listen on {path}: {exc}{hint}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


#: Beside the socket while its daemon serves (``<socket>.running``): its pid, version
#: and start time as JSON; removed on every exit the daemon sees.
RUNNING_SUFFIX = ".running"


def mark_running(path: str) -> str | None:
    """Report a ``<path>.running`` left by a daemon that ended unseen (we hold the lock,
    so it is gone: SIGKILL, the OOM killer, a crash) with one WARNING line, then write
    this daemon's own. Returns the marker's path, None when it cannot be written (the
    next daemon then reports nothing)."""
    import json

    marker = path + RUNNING_SUFFIX
    try:
        with open(marker, encoding="utf-8") as f:
            left = json.load(f)
    except FileNotFoundError:
        left = None
    except (OSError, ValueError) as exc:
        left = {"unreadable": str(exc)}
    if left is not None:
        if not isinstance(left, dict):
            left = {"unreadable": repr(left)}
        started = left.get("started")
        when = (
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
            if isinstance(started, (int, float))
            else "?"
        )
        _log().warning(
            "the previous daemon (pid %s, version %s, started %s) ended without logging why: "
            "killed (SIGKILL, the OOM killer: see `journalctl -k`) or crashed",
            left.get("pid", "?"),
            left.get("version", "?"),
            when,
        )
    record = {"pid": os.getpid(), "version": __version__, "started": time.time()}
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(marker, flags, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f)
    except OSError as exc:
        _log().warning("cannot write %s (%s): an unseen exit will not be reported", marker, exc)
        return None
    return marker
