"""The test session's isolation and its end-of-session leak check (issue 17).

``Guard.begin`` (called from ``tests/conftest.py`` before any test is collected):

- remembers the real ``HOME`` and ``XDG_*`` values, then points them at a private
  folder for the whole session, so that every process a test starts (and this process)
  has a private HOME and XDG folders even when the test gives it no environment of its
  own; ``npm_config_cache`` keeps naming the real npm cache (the VS Code tests install
  offline from it) unless it is set already;
- marks the session's environment with ``RMTEST_SESSION=<token>`` (inherited by every
  process started from it, also through ``tests.helpers.make_env``);
- lists the processes alive now and every entry under the real user's readmany
  runtime, state and cache folders (``real_folders``).

``Guard.leaks`` (at session end) names every readmany process of this session still
alive (after a grace period) and every entry that appeared in those real folders; the
conftest then fails the run with ``MESSAGE``. A readmany process is one whose command
line has an argument holding ``readmany_daemon`` or whose file name starts with
``readmany``; it is this session's when it was not alive at the start and carries the
session's token (or the session's folders) in its environment or command line; this
process and its parents are never counted. A new process caught inside ``exec`` (its
command line still empty) is looked at again. The machine may be shared with other
test sessions: their processes carry other tokens and are left alone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MESSAGE", "TOKEN_VAR", "Guard", "real_folders"]

#: The first words of the report that fails the run.
MESSAGE = "readmany session guard: the test run leaked"
#: The environment variable that marks the processes of one test session.
TOKEN_VAR = "RMTEST_SESSION"
#: Seconds a process of the session may take to exit after the last test (env override).
GRACE_VAR = "RMTEST_GUARD_GRACE"
#: The variables the session replaces with private folders.
ISOLATED = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
)


def real_folders(env: Mapping[str, str]) -> list[str]:
    """The readmany folders of the user whose environment is ``env``, by the package's
    documented rules (checked against the package in tests/unit/test_session_guard.py):
    runtime ``$XDG_RUNTIME_DIR/readmany`` (absolute values only) else
    ``/run/user/$UID/readmany`` (when that folder is the user's) else
    ``$TMPDIR/readmany-$UID`` (``/tmp``), state ``$XDG_STATE_HOME/readmany`` else
    ``~/.local/state/readmany``, cache ``$XDG_CACHE_HOME/readmany`` else
    ``~/.cache/readmany``."""
    home = env.get("HOME") or os.path.expanduser("~")

    def xdg(var: str, *default: str) -> str:
        value = env.get(var, "")
        return value if value and os.path.isabs(value) else os.path.join(home, *default)

    runtime = env.get("XDG_RUNTIME_DIR", "")
    user_run = f"/run/user/{os.getuid()}"
    if runtime and os.path.isabs(runtime):
        run = os.path.join(runtime, "readmany")
    elif (
        os.path.isdir(user_run)
        and not os.path.islink(user_run)
        and os.stat(user_run).st_uid == os.getuid()
        and not os.stat(user_run).st_mode & 0o022
    ):
        run = os.path.join(user_run, "readmany")
    else:
        run = os.path.join(env.get("TMPDIR", "") or "/tmp", f"readmany-{os.getuid()}")
    return [
        run,
        os.path.join(xdg("XDG_STATE_HOME", ".local", "state"), "readmany"),
        os.path.join(xdg("XDG_CACHE_HOME", ".cache"), "readmany"),
    ]


def _listing(folder: str) -> set[str]:
    """Every entry below ``folder`` (``"."`` for the folder itself), empty if missing."""
    if not os.path.lexists(folder):
        return set()
    found = {"."}
    for top, dirs, files in os.walk(folder, onerror=lambda _e: None):
        rel = os.path.relpath(top, folder)
        for name in dirs + files:
            found.add(os.path.normpath(os.path.join(rel, name)))
    return found


def _proc(pid: int, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _stat_fields(stat: bytes) -> list[bytes]:
    """The fields of a ``/proc/PID/stat`` line after the command name (state first)."""
    return stat.rpartition(b")")[2].split()


def _start_time(stat: bytes) -> bytes | None:
    """``starttime`` of a ``/proc/PID/stat`` line (None for a zombie or no line)."""
    fields = _stat_fields(stat)
    if len(fields) < 20 or fields[0] == b"Z":
        return None
    return fields[19]


_PF_KTHREAD = 0x00200000


def _is_readmany(argv: list[bytes]) -> bool:
    return any(b"readmany_daemon" in a or os.path.basename(a).startswith(b"readmany") for a in argv)


def _processes() -> dict[tuple[int, bytes], bytes]:
    """Every live process: ``(pid, starttime) -> its stat line``."""
    found: dict[tuple[int, bytes], bytes] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = _proc(int(name), "stat")
                start = _start_time(stat)
                if start is not None:
                    found[int(name), start] = stat
    return found


def _ancestors() -> set[int]:
    """This process and its parents."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        stat = _proc(pid, "stat").rpartition(b")")[2].split()
        pid = int(stat[1]) if len(stat) > 1 else 0
    return pids


@dataclass
class Guard:
    """One test session's isolation and leak check (see the module docstring)."""

    real: dict[str, str]
    home: str
    token: str
    folders: list[str]
    processes: set[tuple[int, bytes]]
    entries: dict[str, set[str]]
    marks: list[bytes] = field(default_factory=list)

    @classmethod
    def begin(cls) -> Guard:
        """Snapshot the real folders and processes, then isolate ``os.environ``."""
        real = dict(os.environ)
        folders = real_folders(real)
        home = tempfile.mkdtemp(prefix="rmh", dir="/tmp")  # short: socket paths fit
        token = uuid.uuid4().hex
        guard = cls(
            real=real,
            home=home,
            token=token,
            folders=folders,
            processes=set(_processes()),
            entries={f: _listing(f) for f in folders},
        )
        private = {
            "HOME": home,
            "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "XDG_STATE_HOME": os.path.join(home, ".state"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
            "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
            "XDG_RUNTIME_DIR": os.path.join(home, "run"),
        }
        os.makedirs(private["XDG_RUNTIME_DIR"], mode=0o700)
        real_home = real.get("HOME") or os.path.expanduser("~")
        os.environ.setdefault("npm_config_cache", os.path.join(real_home, ".npm"))
        os.environ.update(private)
        os.environ[TOKEN_VAR] = token
        guard.marks = [f"{TOKEN_VAR}={token}".encode(), os.fsencode(home)]
        return guard

    def mark(self, folder: str | Path) -> None:
        """Count processes that name ``folder`` (e.g. pytest's basetemp) as this session's."""
        self.marks.append(os.fsencode(folder))

    def _ours(self, pid: int, argv: list[bytes]) -> bool:
        blobs = [_proc(pid, "environ"), b"\0".join(argv)]
        return any(mark in blob for mark in self.marks for blob in blobs)

    def scan(self) -> tuple[list[str], bool]:
        """``(leaked processes, whether a new process could not be told yet)``: a
        process caught inside ``exec`` shows an empty command line for a moment."""
        skip = _ancestors()
        leaks: list[str] = []
        pending = False
        for (pid, start), stat in sorted(_processes().items()):
            if (pid, start) in self.processes or pid in skip:
                continue
            argv = _proc(pid, "cmdline").rstrip(b"\0").split(b"\0")
            if argv == [b""]:
                fields = _stat_fields(stat)
                kernel = len(fields) > 6 and int(fields[6]) & _PF_KTHREAD
                pending = pending or (not kernel and _start_time(_proc(pid, "stat")) == start)
                continue
            if _is_readmany(argv) and self._ours(pid, argv):
                command = b" ".join(argv).decode(errors="replace")
                leaks.append(f"process {pid} still alive: {command}")
        return leaks, pending

    def leaked_files(self) -> list[str]:
        out = []
        for folder in self.folders:
            for rel in sorted(_listing(folder) - self.entries[folder]):
                out.append(f"new in the real readmany folder: {os.path.join(folder, rel)}")
        return out

    def leaks(self, grace: float | None = None) -> list[str]:
        """What the session left behind; processes get ``grace`` s to exit first
        (default ``$RMTEST_GUARD_GRACE`` or 10)."""
        if grace is None:
            grace = float(os.environ.get(GRACE_VAR, "10"))
        deadline = time.monotonic() + grace
        procs, pending = self.scan()
        while (procs or pending) and time.monotonic() < deadline:
            time.sleep(0.1)
            procs, pending = self.scan()
        return procs + self.leaked_files()

    def end(self) -> None:
        """Give the real environment back and remove the private folder."""
        for var in (*ISOLATED, TOKEN_VAR, "npm_config_cache"):
            if var in self.real:
                os.environ[var] = self.real[var]
            else:
                os.environ.pop(var, None)
        shutil.rmtree(self.home, ignore_errors=True)

    def report(self, leaks: list[str]) -> str:
        """The message that fails the run."""
        lines = [f"{MESSAGE} {len(leaks)} thing(s) (tests/session_guard.py):"]
        lines += [f"  {leak}" for leak in leaks]
        return "\n".join(lines)
