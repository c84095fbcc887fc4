"""Why the daemon went away (issue 22, item 6): every exit the daemon sees logs one
WARNING line naming its cause; one it cannot see (SIGKILL, the OOM killer) is reported
by the next daemon at start, from the marker the previous one left beside its socket.
Real ``readmany serve --socket`` processes, their log on stderr at the default level."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from readmany_daemon import __version__
from readmany_daemon.client import RpcError
from tests.e2e.daemon_helpers import Daemon, cli, daemon_pids, fresh_daemon, wait_for

daemon = fresh_daemon

EXIT = "WARNING readmany_daemon.daemon: daemon exiting"


def warnings(d: Daemon) -> list[str]:
    return [line.rstrip("\n") for line in d.stderr if " WARNING " in line]


def exit_lines(d: Daemon) -> list[str]:
    return [line for line in warnings(d) if EXIT in line]


def ended(d: Daemon) -> None:
    assert d.proc is not None
    d.proc.wait(30)
    # The pump thread has copied every line once stderr closed.
    wait_for(lambda: d.lines.empty() or None in list(d.lines.queue), 10)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_is_named(daemon: Daemon, sig: signal.Signals) -> None:
    daemon.start()
    daemon.proc.send_signal(sig)  # type: ignore[union-attr]
    ended(daemon)
    lines = exit_lines(daemon)
    assert len(lines) == 1, daemon.stderr
    assert lines[0].endswith(f"daemon exiting (pid {daemon.pid}): signal {sig.name}")
    assert not os.path.exists(daemon.socket + ".running")


def test_readmany_stop_is_named(daemon: Daemon) -> None:
    daemon.start()
    run = cli(daemon.env, "stop")
    assert run.returncode == 0, run.stderr
    ended(daemon)
    lines = exit_lines(daemon)
    assert len(lines) == 1, daemon.stderr
    assert lines[0].endswith("): readmany stop")


@contextlib.contextmanager
def stopped_with_sigstop(daemon: Daemon) -> Iterator[None]:
    """``daemon`` started, then stopped with SIGSTOP: it holds its socket and answers
    nothing; ``readmany stop`` must end it (SIGCONT afterwards whatever happens)."""
    daemon.start()
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGSTOP)
    try:
        yield
        run = cli(daemon.env, "stop")
        assert run.returncode == 0, run.stderr
        assert f"stopped the daemon (pid {daemon.pid})" in run.stderr
    finally:
        daemon.proc.send_signal(signal.SIGCONT)
    ended(daemon)


def test_a_daemon_that_does_not_answer_is_named_and_stopped(daemon: Daemon) -> None:
    # status says so (not "no daemon runs"), and stop ends it (SIGTERM, then SIGCONT so
    # that it handles it)
    with stopped_with_sigstop(daemon):
        run = cli(daemon.env, "status")
        assert run.returncode == 1, run.stderr
        assert f"(pid {daemon.pid}) does not answer; `readmany stop` stops it" in run.stderr
    assert cli(daemon.env, "status").returncode == 3
    lines = exit_lines(daemon)
    assert len(lines) == 1 and lines[0].endswith("signal SIGTERM"), daemon.stderr


def test_stop_ends_a_daemon_that_does_not_answer_while_a_replacement_starts(
    daemon: Daemon, tmp_path: Path
) -> None:
    # a read beside the stopped daemon answers in process and spawns a replacement,
    # which cannot listen while the stopped one holds the socket: stop waits for it,
    # then stops the one that holds the socket
    (tmp_path / "a.txt").write_text("a\n")
    with stopped_with_sigstop(daemon):
        starts = {**daemon.env, "READMANY_NO_DAEMON": "0"}  # the read spawns one
        run = cli(starts, "read", "--root", str(tmp_path), "a.txt")
        assert run.returncode == 0 and "a\n" in run.stdout, run.stderr
        assert os.path.exists(daemon.socket + ".starting")


def test_idle_timeout_is_named(daemon: Daemon) -> None:
    daemon.env["READMANY_IDLE_TIMEOUT_SECONDS"] = "0.2"
    daemon.start()
    ended(daemon)
    lines = exit_lines(daemon)
    assert len(lines) == 1, daemon.stderr
    assert "idle timeout" in lines[0]


OLD = "0.0.0-old"
#: A daemon that reports another version: the package with ``__version__`` changed
#: before the serving modules bind it.
OLD_DAEMON = (
    "import sys, readmany_daemon; readmany_daemon.__version__ = sys.argv[1]\n"
    "from readmany_daemon.cli import main\n"
    "raise SystemExit(main(['serve', '--socket', sys.argv[2]]))\n"
)


def test_replacement_by_another_version_is_named(daemon: Daemon) -> None:
    old = subprocess.Popen(
        [sys.executable, "-c", OLD_DAEMON, OLD, daemon.socket],
        env=daemon.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    stderr = old.stderr
    assert stderr is not None
    old_lines: list[str] = []

    def pump_lines() -> None:
        with stderr:
            old_lines.extend(stderr)

    pump = threading.Thread(target=pump_lines, daemon=True)
    pump.start()
    try:
        wait_for(lambda: any("serving on" in line for line in old_lines), 30)
        daemon.start()  # takes the socket of the daemon of another version
        old.wait(30)
        pump.join(10)
    finally:
        if old.poll() is None:
            old.kill()
            old.wait(10)
    lines = [line for line in old_lines if EXIT in line]
    assert len(lines) == 1, old_lines
    assert lines[0].rstrip().endswith(f"replaced by version {__version__}")
    # A clean exit: the new daemon reports nothing unseen.
    assert not any("ended without logging why" in line for line in daemon.stderr)


def test_sigkill_is_reported_by_the_next_daemon(daemon: Daemon) -> None:
    daemon.start()
    first = daemon.pid
    assert os.path.exists(daemon.socket + ".running")
    daemon.kill9()
    assert exit_lines(daemon) == []
    daemon.stderr.clear()
    daemon.start()
    reports = [line for line in warnings(daemon) if "ended without logging why" in line]
    assert len(reports) == 1, daemon.stderr
    assert f"previous daemon (pid {first}, version {__version__}" in reports[0]
    assert "SIGKILL" in reports[0] and "OOM" in reports[0]
    # The next clean start after this one reports nothing.
    daemon.stop()
    daemon.stderr.clear()
    daemon.start()
    assert not any("ended without logging why" in line for line in daemon.stderr)


#: A daemon whose service fails as it starts: a fatal error.
FAILING_DAEMON = (
    "import sys\n"
    "from readmany_daemon.runtime import service\n"
    "class Broken(service.Service):\n"
    "    def __init__(self, *a, **k):\n"
    "        raise RuntimeError('disk on fire')\n"
    "service.Service = Broken\n"
    "from readmany_daemon.cli import main\n"
    "raise SystemExit(main(['serve', '--socket', sys.argv[1]]))\n"
)


def test_a_fatal_error_is_named(daemon: Daemon) -> None:
    run = subprocess.run(
        [sys.executable, "-c", FAILING_DAEMON, daemon.socket],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if EXIT in line]
    assert len(lines) == 1, run.stderr
    assert lines[0].endswith("fatal error: RuntimeError: disk on fire")
    assert not os.path.exists(daemon.socket + ".running")


def test_a_bad_stop_reason_is_refused_and_the_daemon_stays(daemon: Daemon) -> None:
    daemon.start()
    client = daemon.session(None)
    try:
        with pytest.raises(RpcError) as err:
            client.request("readMany/stopDaemon", {"reason": 5})
        assert err.value.code == -32602 and "$.reason" in err.value.message
        assert client.request("readMany/status")["pid"] == daemon.pid
    finally:
        client.exit()
    assert daemon.proc is not None and daemon.proc.poll() is None
    assert exit_lines(daemon) == []


def test_readmany_stop_right_after_the_first_read_stops_the_daemon_it_started(
    daemon: Daemon, tmp_path: Path
) -> None:
    # The first read answers in process and starts the daemon in the background; a stop
    # at once used to find no socket yet and say "no daemon runs", leaving it running.
    env = {k: v for k, v in daemon.env.items() if k != "READMANY_NO_DAEMON"}
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("alpha\n")
    first = cli(env, "read", str(tree / "a.txt"))
    assert first.returncode == 0, first.stderr
    stopped = cli(env, "stop")
    assert stopped.returncode == 0, stopped.stderr
    said = stopped.stdout + stopped.stderr
    assert "stopped the daemon (pid" in said, said
    assert daemon_pids(daemon.socket) == []  # stop waits until it is gone
    assert not os.path.exists(daemon.socket + ".starting")
