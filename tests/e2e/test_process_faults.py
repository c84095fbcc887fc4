"""Process faults of the shared daemon, end to end (real processes, no mocks):

- SIGKILL in the middle of a big read: the CLI and a raw socket client both get an
  outcome (the CLI answers in its own process, the raw client sees the end of the
  stream), never a hang; the next CLI call starts a new daemon that answers from the
  snapshot.
- A client that hangs up in the middle of a large answer: the daemon stays up, serves
  the next client, and holds no connection (nor socket descriptor) for the dead one.
- Daemons racing for one socket path (over a stale socket file), and one-shot CLI calls
  racing to auto-start one: exactly one daemon serves, the others exit 0.
- Leftovers at the socket path: a regular file or a symlink in the private runtime
  folder is replaced; at an explicit path elsewhere a non-socket is refused, untouched.

Waits are deadline-bounded polls of process state or answers (``wait_for``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from readmany_daemon.client import Client, ConnectionClosed
from tests.e2e.daemon_helpers import (
    PY,
    Daemon,
    cli,
    daemon_pids,
    fresh_daemon,
    status_root,
    wait_for,
)
from tests.e2e.test_snapshot import saved_snapshot
from tests.helpers import git, lsp_frames, write_tree

daemon = fresh_daemon  # the fixture (tests/e2e/daemon_helpers.py)

# ----------------------------------------------------------------------------- helpers


def socket_fds(pid: int) -> int:
    """How many sockets process ``pid`` holds open."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass  # closed while listed
    return count


def autostart_env(daemon: Daemon) -> dict[str, str]:
    env = dict(daemon.env)
    env.pop("READMANY_NO_DAEMON")
    return env


BIG = {
    "paths": ["big/**"],
    "preferFullRead": True,
    "maxTotalFiles": 10_000,
    "maxTotalChars": 10**9,
    "lineNumbers": True,
}


# ------------------------------------------------------------------------------- tests


def test_kill9_mid_request_cli_and_raw_client_then_cli_restarts_from_snapshot(
    daemon: Daemon, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    line = "y" * 79 + "\n"
    write_tree(
        root,
        {"src/a.py": "a = 1\n", **{f"big/f{i:03}.txt": line * 800 for i in range(300)}},
    )
    git(root, "init", "-q", env=daemon.env)
    daemon.start()
    saved_snapshot(daemon, root)

    raw = daemon.session(root)
    probe = daemon.session(root)
    inflight = lambda: probe.request("readMany/status", {})["engine"]["inflight"]  # noqa: E731
    wait_for(lambda: inflight() == 0, 30)  # the sessions' own start-up work is done
    cli_run = subprocess.Popen(
        [*PY, "read", "--json", "--root", str(root), "--params", json.dumps(BIG)],
        env=daemon.env,  # READMANY_NO_DAEMON=1: this one never starts a daemon
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    try:
        wait_for(lambda: inflight() >= 1, 30)  # the CLI's big read is running
        raw.send({"jsonrpc": "2.0", "id": 7, "method": "readMany/read", "params": BIG})
        old_pid = daemon.pid
        daemon.kill9()
        probe.close()
        # the raw client: the end of the stream, not a hang and not a partial answer
        raw.settimeout(10)
        with pytest.raises(ConnectionClosed):
            raw.receive()
        raw.close()
        # the CLI: a complete answer from its own process, with a warning, within a deadline
        out, err = cli_run.communicate(timeout=60)
    finally:
        if cli_run.poll() is None:
            cli_run.kill()
            cli_run.wait(10)
    assert cli_run.returncode == 0, err
    assert "went away" in err
    answer = json.loads(out)
    assert answer["summary"]["read"] == 300 and answer["summary"]["errors"] == 0
    assert not daemon_pids(daemon.socket)
    assert os.path.exists(daemon.socket)  # the dead daemon's socket file stays behind

    # The next CLI call (auto-start on) answers in process and starts a new daemon...
    env = autostart_env(daemon)
    first = cli(env, "read", "--root", str(root), "src/a.py")
    assert first.returncode == 0 and "a = 1" in first.stdout, first.stderr
    pid = wait_for(lambda: (r := cli(env, "status", "--json")).returncode == 0 and r.stdout, 30)
    new_pid = json.loads(pid)["pid"]
    assert new_pid != old_pid and daemon_pids(daemon.socket) == [new_pid]
    # ...which serves the call after it, from the snapshot of the killed one.
    second = cli(env, "read", "--json", "--root", str(root), "src/a.py")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["files"][0]["status"] == "ok"
    assert "went away" not in second.stderr
    with Client.connect_unix(daemon.socket, timeout=10) as c:
        c.initialize(str(root))
        item = status_root(c, root)
        assert item["snapshot"]["loaded"] is True, item
        assert item["files"] == 301


def test_client_hanging_up_mid_answer_leaks_nothing(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    line = "z" * 99 + "\n"
    # ~10 MB of answer: more than the socket buffers hold (4 MiB asked for the send side)
    write_tree(root, {"a.txt": "alpha\n", **{f"big/f{i:02}.txt": line * 2500 for i in range(40)}})
    daemon.start()
    with daemon.session(root) as observer:
        observer.request("readMany/read", {"paths": ["a.txt"]})
        baseline_fds = socket_fds(daemon.pid)

        def hang_up_after(payload: bytes | None, read_bytes: int) -> None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(daemon.socket)
            if payload is None:  # half a header, then gone
                s.sendall(b'Content-Length: 50\r\n\r\n{"jsonrpc":')
            else:
                s.sendall(payload)
            got = b""
            while len(got) < read_bytes:
                chunk = s.recv(read_bytes - len(got))
                assert chunk, "the daemon closed the connection first"
                got += chunk
            s.close()  # megabytes of answer still to come

        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "capabilities": {}, "rootUri": root.as_uri()},
        }
        big = {"jsonrpc": "2.0", "id": 2, "method": "readMany/read", "params": BIG}
        for _ in range(3):
            # initialize answer, then the big one: read until into the second answer
            hang_up_after(
                lsp_frames(init, {"jsonrpc": "2.0", "method": "initialized", "params": {}}, big), 1
            )
            hang_up_after(lsp_frames(init, big), 20)
        hang_up_after(lsp_frames(init), 0)  # gone before the big request
        hang_up_after(None, 0)  # gone in the middle of a message

        def settled() -> bool:
            status = observer.request("readMany/status", {})
            return (
                status["connections"] == 1
                and status["engine"]["inflight"] == 0
                and status_root(observer, root)["connections"] == 1
                and socket_fds(daemon.pid) == baseline_fds
            )

        wait_for(settled, 30)
        answer = observer.request("readMany/read", {"paths": ["a.txt", "big/f00.txt"]})
        assert [f["status"] for f in answer["files"]] == ["ok", "partial"]
        assert "alpha" in answer["llmContent"]
    # and a new client is served as well
    with daemon.session(root) as other:
        assert other.request("readMany/status", {})["connections"] == 1
        assert "alpha" in other.request("readMany/read", {"paths": ["a.txt"]})["llmContent"]
    assert daemon.proc is not None and daemon.proc.poll() is None
    assert "Traceback" not in "".join(daemon.stderr)


def test_daemons_racing_over_a_stale_socket_one_serves(daemon: Daemon, tmp_path: Path) -> None:
    os.makedirs(os.path.dirname(daemon.socket), mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(daemon.socket)  # a socket file nobody listens on
    stale.close()
    logs = [tmp_path / f"d{i}.err" for i in range(4)]
    procs = []
    for log in logs:
        with log.open("w") as err:
            procs.append(
                subprocess.Popen(
                    [*PY, "serve", "--socket", daemon.socket],
                    env=daemon.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    cwd="/",
                )
            )
    try:
        wait_for(lambda: sum(p.poll() is not None for p in procs) == 3, 40)
        running = [p for p in procs if p.poll() is None]
        assert len(running) == 1
        assert [p.returncode for p in procs if p is not running[0]] == [0, 0, 0]
        texts = [log.read_text() for log in logs]
        winner = procs.index(running[0])
        wait_for(lambda: "serving on" in logs[winner].read_text(), 20)
        for i, text in enumerate(texts):
            if i != winner:
                assert "already serves" in text and "serving on" not in text, text
        assert stat.S_ISSOCK(os.stat(daemon.socket).st_mode)
        with Client.connect_unix(daemon.socket, timeout=10) as c:
            c.initialize(None)
            assert c.request("readMany/status", {})["pid"] == running[0].pid
        assert daemon_pids(daemon.socket) == [running[0].pid]
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)


def test_cli_calls_racing_start_exactly_one_daemon(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "alpha\n", "b/c.txt": "gamma\n"})
    env = autostart_env(daemon)
    runs = [
        subprocess.Popen(
            [*PY, "read", "--root", str(root), "a.txt", "b"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/",
        )
        for _ in range(4)
    ]
    outs = [r.communicate(timeout=60) for r in runs]
    assert [r.returncode for r in runs] == [0, 0, 0, 0], [e for _, e in outs]
    assert len({o for o, _ in outs}) == 1 and "alpha" in outs[0][0] and "gamma" in outs[0][0]
    # every daemon they spawned exists by now; the losers of the race exit
    pids = wait_for(lambda: (p := daemon_pids(daemon.socket)) and len(p) == 1 and p, 40)
    status = wait_for(lambda: (r := cli(env, "status", "--json")).returncode == 0 and r.stdout, 20)
    assert json.loads(status)["pid"] == pids[0]
    again = cli(env, "read", "--root", str(root), "a.txt", "b")
    assert again.returncode == 0 and again.stdout == outs[0][0]
    assert daemon_pids(daemon.socket) == pids


def test_leftovers_at_the_socket_path(daemon: Daemon, tmp_path: Path) -> None:
    folder = os.path.dirname(daemon.socket)
    os.makedirs(folder, mode=0o700)
    env = autostart_env(daemon)
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "alpha\n"})

    # A regular file in the private runtime folder: the auto-started daemon replaces it.
    Path(daemon.socket).write_text("junk\n")
    assert cli(env, "status").returncode == 3
    assert cli(env, "read", "--root", str(root), "a.txt").returncode == 0
    wait_for(lambda: cli(env, "status").returncode == 0, 30)
    assert stat.S_ISSOCK(os.lstat(daemon.socket).st_mode)
    assert cli(env, "stop").returncode == 0
    wait_for(lambda: not daemon_pids(daemon.socket), 15)

    # A symlink there (to a file elsewhere): the link is replaced, its target untouched.
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    os.symlink(target, daemon.socket)
    daemon.start()
    assert stat.S_ISSOCK(os.lstat(daemon.socket).st_mode)
    assert target.read_text() == "keep me\n"
    with daemon.session(root) as c:
        assert "alpha" in c.request("readMany/read", {"paths": ["a.txt"]})["llmContent"]
    daemon.stop()

    # At an explicit path outside the runtime folder, a non-socket is refused, untouched.
    mine = tmp_path / "not-a-socket"
    mine.write_text("data\n")
    refused = cli(daemon.env, "serve", "--socket", str(mine), timeout=30)
    assert refused.returncode == 1 and "not a socket" in refused.stderr
    assert mine.read_text() == "data\n"
