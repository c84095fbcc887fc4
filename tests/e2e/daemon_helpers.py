"""Helpers for end-to-end tests of the warm daemon's watcher, barrier and snapshots.

A ``Daemon`` is a real ``readmany serve --socket PATH`` process with its own HOME and
XDG folders (so its snapshots, logs and cookies stay private); sessions are the CLI's
small synchronous client. Waits are deadline-bounded polls of answers (``wait_for``),
never bare sleeps.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from readmany_daemon.client import Client
from tests.helpers import make_env

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float = 15.0, every: float = 0.01) -> T:
    """Poll ``condition`` until it returns something true and return that; raise
    ``AssertionError`` (with the last value) when ``timeout`` s pass first."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout} s (last: {value!r})")
        time.sleep(every)


class Daemon:
    """``readmany serve --socket`` under ``env``; ``start`` waits for its ready line.
    ``prefix``: a command the daemon runs under (e.g. ``setpriv`` dropping privileges)."""

    def __init__(self, env: dict[str, str], prefix: list[str] | None = None) -> None:
        self.env = env
        self.prefix = list(prefix or [])
        self.socket = os.path.join(env["XDG_RUNTIME_DIR"], "readmany", "daemon.sock")
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []

    def start(self, timeout: float = 30.0) -> Daemon:
        self.lines = queue.Queue()
        self.proc = subprocess.Popen(
            [
                *self.prefix,
                sys.executable,
                "-m",
                "readmany_daemon",
                "serve",
                "--socket",
                self.socket,
            ],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/",
        )
        threading.Thread(target=self._pump, args=(self.proc, self.lines), daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"daemon not ready within {timeout} s: {self.stderr}"
                ) from None
            if line is None:
                raise AssertionError(f"daemon exited before it was ready: {self.stderr}")
            if "serving on" in line:
                return self

    def _pump(self, proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        """Copy ``proc``'s stderr lines to ``lines`` (this start's queue) and ``stderr``."""
        assert proc.stderr is not None
        with proc.stderr:
            for line in proc.stderr:
                self.stderr.append(line)
                lines.put(line)
        lines.put(None)

    def session(self, root: Path | None, options: dict[str, Any] | None = None) -> Client:
        client = Client.connect_unix(self.socket, timeout=10.0)
        client.settimeout(60.0)
        client.initialize(str(root) if root is not None else None, options)
        return client

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM (the daemon saves its snapshots and exits), SIGKILL if it hangs."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.env["XDG_RUNTIME_DIR"], ignore_errors=True)


def listed(client: Client, pattern: str = "**", sync: str = "none") -> list[str]:
    """Paths an expansion of ``pattern`` matches, as ``readMany/read`` answers it with
    ``sync`` (``none``: straight from the index, i.e. what the watcher delivered). Every
    match is included (one character each), so ``files`` lists them all."""
    result = client.request(
        "readMany/read",
        {
            "paths": [pattern],
            "sync": sync,
            "maxTotalFiles": 1_000_000,
            "maxTotalChars": 1_000_000_000,
            "perFileMaxChars": 1,
        },
    )
    return sorted(f["path"] for f in result["files"] if f["status"] != "skipped")


def status_root(client: Client, root: Path) -> dict[str, Any]:
    real = os.path.realpath(root)
    for item in client.request("readMany/status", {})["roots"]:
        if item["root"] == real:
            return dict(item)
    raise AssertionError(f"{real} is not a root of the daemon")


# ------------------------------------------------------------ processes of the daemon

PY = [sys.executable, "-m", "readmany_daemon"]


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def daemon_pids(sock: str) -> list[int]:
    """Live (not zombie) ``readmany serve --socket`` processes whose command line names
    ``sock``: each test has its own runtime folder, so these are the test's own."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ours = b"readmany_daemon" in argv and b"serve" in argv and os.fsencode(sock) in argv
        if ours and _state(int(name)) not in (None, "Z"):
            pids.append(int(name))
    return sorted(pids)


def kill_daemons(sock: str) -> None:
    """SIGKILL every daemon started (directly or detached) for ``sock``."""
    for pid in daemon_pids(sock):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not daemon_pids(sock), 10)


def cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PY, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd="/"
    )


@pytest.fixture(name="daemon")
def fresh_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A ``Daemon`` (not started) in a private HOME under ``tmp_path``; afterwards it is
    stopped, every daemon started for its socket is killed, and its folders removed.
    Modules use it as ``daemon = fresh_daemon``."""
    d = Daemon(make_env(tmp_path / "home"))
    try:
        yield d
    finally:
        d.stop()
        kill_daemons(d.socket)
        d.cleanup()
