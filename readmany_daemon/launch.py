"""Reaching the shared per-user daemon from outside: where its log lives, whether it
answers and with which version, how it is started in the background and stopped.

The rules are PROTOCOL §1's (see ``daemon.py`` for the serving side). Auto-start:
``spawn`` starts ``python -m readmany_daemon serve --socket PATH`` detached (new
session, stdio on /dev/null, cwd ``/``), logging to ``$XDG_STATE_HOME/readmany/daemon.log``
(never file contents). Importing this module is cheap (no asyncio, pygls, watchdog):
the CLI's warm path and ``readmany stop`` use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time
from collections.abc import Callable

from readmany_daemon import __version__
from readmany_daemon.client import (
    Client,
    RpcError,
    connect,
    default_socket_path,
    peer_credentials,
)
from readmany_daemon.errors import DaemonError

__all__ = [
    "POLL_SECONDS",
    "STARTING_SUFFIX",
    "START_TIMEOUT",
    "clear_starting",
    "default_log_path",
    "ensure_private_dir",
    "ensure_running",
    "probe_version",
    "spawn",
    "stop",
    "wait_for",
]


#: How long a start waits for a daemon being replaced or still starting up (s).
START_TIMEOUT = 10.0
POLL_SECONDS = 0.02

#: Beside the socket from ``spawn`` until the daemon it started serves or exits
#: (``<socket>.starting``, the child's pid): ``stop`` then waits for a daemon that is
#: still starting instead of saying none runs.
STARTING_SUFFIX = ".starting"

# ------------------------------------------------------------------------------- paths


def default_log_path(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """``$XDG_STATE_HOME/readmany/daemon.log`` (``~/.local/state`` by default, XDG Base
    Directory spec)."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME", "")
    if not (state and os.path.isabs(state)):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "readmany", "daemon.log")


def ensure_private_dir(path: str) -> None:
    """Create folder ``path`` mode 0700 if missing; refuse one that is a symlink or
    belongs to someone else; tighten a group/world-accessible one we own."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise DaemonError(f"cannot create {path}: {exc}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise DaemonError(f"{path} is not a folder owned by this user; refusing to use it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


# --------------------------------------------------------------------------- discovery


def probe_version(path: str, timeout: float = 2.0) -> str | None:
    """The version of the daemon answering at ``path``, or None."""
    client = connect(path, timeout=timeout)
    if client is None:
        return None
    version = client.server_version or "?"
    client.exit()
    return version


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll ``condition`` every 20 ms until it holds (True) or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)


def _answers(path: str) -> bool:
    try:
        Client.connect_unix(path, timeout=1.0).close()
    except OSError:
        return False
    return True


def stop(path: str, timeout: float = START_TIMEOUT, reason: str | None = None) -> int | None:
    """Stop the daemon at ``path``: ``readMany/stopDaemon`` (with ``reason``, which the
    daemon's exit line names: ``"readmany stop"``, ``"replaced by version X"``), falling
    back to SIGTERM on the pid from ``readMany/status``. A daemon ``spawn`` started that
    does not listen yet (its ``<socket>.starting`` names a live pid) is waited for first.
    Returns its pid once it is gone, None when no daemon answered. Raises
    ``DaemonError`` when it does not go within ``timeout``."""
    client = connect(path)
    if client is None:
        starting = _starting_pid(path)
        if starting is None:
            return _stop_silent(path, timeout)
        # a daemon ``spawn`` started is not listening yet: wait for it, then stop it (it
        # may never listen: one that holds the socket without answering is stopped)
        wait_for(lambda: _answers(path) or not _pid_alive(starting), timeout)
        client = connect(path)
        if client is None:
            return _stop_silent(path, timeout)
    pid: int | None = None
    try:
        try:
            params = {"reason": reason} if reason else None
            pid = int(client.request("readMany/stopDaemon", params)["pid"])
        except RpcError:
            pid = int(client.request("readMany/status")["pid"])
            import signal

            os.kill(pid, signal.SIGTERM)
    except (OSError, KeyError, TypeError, ValueError):
        pass  # it went away while answering: checked below
    finally:
        client.close()
    if not wait_for(lambda: not _answers(path) and not _pid_alive(pid), timeout):
        raise DaemonError(f"the daemon at {path} (pid {pid}) did not stop within {timeout:g} s")
    return pid if pid is not None else -1


def silent_pid(path: str) -> int | None:
    """The pid of a process of this user that listens at unix socket ``path`` but did
    not answer (``connect`` gave None: stopped with SIGSTOP, stuck); None when nothing
    listens there, or the system cannot tell who does (``SO_PEERCRED``: the listener's
    credentials, taken at its ``listen``)."""
    import socket

    family = getattr(socket, "AF_UNIX", None)
    if family is None:
        return None
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        try:
            sock.connect(path)
        except OSError:
            return None
        creds = peer_credentials(sock)
    if creds is None or creds[0] != os.geteuid() or creds[1] is None or creds[1] <= 0:
        return None
    return creds[1]


def _stop_silent(path: str, timeout: float) -> int | None:
    """Stop the process that listens at ``path`` without answering (:func:`silent_pid`):
    SIGTERM then SIGCONT (a stopped process handles the first once it runs: the usual
    way, as init systems stop a service), SIGKILL when it is still there after
    ``timeout`` s. Its pid once gone; None when none listens. Raises ``DaemonError``
    when it outlives SIGKILL."""
    import signal

    pid = silent_pid(path)
    if pid is None:
        return None
    for sig in (signal.SIGTERM, signal.SIGCONT):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    if not wait_for(lambda: not _pid_alive(pid), timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if not wait_for(lambda: not _pid_alive(pid), timeout):
            raise DaemonError(f"the daemon at {path} (pid {pid}) did not stop")
    return pid


def _pid_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours (tests) counts as gone.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b")")[-1].split()[0] != b"Z"
    except OSError:
        return True


def spawn(path: str | None = None, environ: dict[str, str] | None = None) -> None:
    """Start ``readmany serve --socket PATH`` detached (new session, stdio on /dev/null,
    cwd ``/``) logging to ``default_log_path``; does not wait. A second daemon racing
    for the same socket finds the first through the lock and exits 0."""
    import subprocess

    env = dict(os.environ if environ is None else environ)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "readmany_daemon", "serve", "--socket"]
    if path:
        cmd.append(path)
    cmd += ["--log-file", default_log_path(env)]
    child = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd="/",
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    _mark_starting(path or default_socket_path(env), child.pid)


def _mark_starting(path: str, pid: int) -> None:
    """Write ``<path>.starting`` (0600) naming the daemon ``pid`` that ``spawn`` just
    started; best effort (the folder is made 0700 as the daemon would make it)."""
    folder = os.path.dirname(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        if not os.path.isdir(folder):
            ensure_private_dir(folder)
        fd = os.open(path + STARTING_SUFFIX, flags, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(str(pid))
    except (OSError, DaemonError):
        pass  # ``stop`` then cannot tell a starting daemon from none


def _starting_pid(path: str) -> int | None:
    """The live pid ``<path>.starting`` names, else None."""
    try:
        with open(path + STARTING_SUFFIX, encoding="ascii") as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def clear_starting(path: str) -> None:
    """Remove ``<path>.starting`` when it names this process (the daemon serves or exits;
    a marker of another ``spawn`` is left to its own daemon)."""
    marker = path + STARTING_SUFFIX
    try:
        with open(marker, encoding="ascii") as f:
            mine = f.read().strip() == str(os.getpid())
        if mine:
            os.unlink(marker)
    except OSError:
        pass


def ensure_running(path: str, timeout: float = START_TIMEOUT) -> None:
    """Make sure a daemon of this version answers at ``path``: start one when none
    does, replace one of another version. Raises ``DaemonError`` on timeout."""
    version = probe_version(path)
    if version == __version__:
        return
    if version is not None:
        stop(path, timeout, reason=f"replaced by version {__version__}")
    spawn(path)
    if not wait_for(lambda: probe_version(path, timeout=1.0) == __version__, timeout):
        raise DaemonError(
            f"the daemon did not start at {path} within {timeout:g} s (see {default_log_path()})"
        )
