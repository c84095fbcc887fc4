"""Security of the shared daemon's sockets, end to end (real processes):

- The socket refuses other users: folder 0700, socket 0600, and the peer's uid checked
  on accept (``SO_PEERCRED``), proven by connecting as ``nobody`` with the modes
  loosened on purpose (root passes any mode check, so only the peer check stops it).
- No TCP listener unless ``--tcp``; with it, loopback only and nothing answered before
  the token.
- Clients refuse a socket another user serves.

The engine's side (confinement, deny rules, read-only) is in ``test_security.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.client import Client, RpcError
from tests.e2e.daemon_helpers import (
    PY,
    Daemon,
    cli,
    fresh_daemon,
    wait_for,
)
from tests.helpers import make_env, write_tree

daemon = fresh_daemon  # the fixture (tests/e2e/daemon_helpers.py)

NOBODY = 65534


# -------------------------------------------------------------------- other users

_PEER = r"""
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(15)
out = {"uid": os.getuid(), "got": ""}
try:
    s.connect(sys.argv[1])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "capabilities": {}}}).encode()
    s.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    data = b""
    while b"serverInfo" not in data:
        chunk = s.recv(65536)
        if not chunk:
            out["end"] = "eof"
            break
        data += chunk
    else:
        out["end"] = "answered"
    out["got"] = data.decode("utf-8", "replace")
except PermissionError:
    out["end"] = "permission-denied"
except (ConnectionResetError, BrokenPipeError):  # closed before or while we sent
    out["end"] = "reset"
except socket.timeout:
    out["end"] = "timeout"
print(json.dumps(out))
"""


def _python_for(uid: int) -> str | None:
    """A Python interpreter user ``uid`` can run (ours may live below /root)."""
    for exe in (sys.executable, "/usr/bin/python3", shutil.which("python3") or ""):
        if not exe:
            continue
        try:
            ok = subprocess.run(
                [exe, "-c", "pass"], user=uid, group=uid, extra_groups=[], timeout=30,
                capture_output=True, cwd="/",
            ).returncode == 0  # fmt: skip
        except OSError:
            ok = False
        if ok:
            return exe
    return None


def _peer(exe: str, path: str, uid: int | None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if uid is not None:
        kwargs = {"user": uid, "group": uid, "extra_groups": []}
    proc = subprocess.run(
        [exe, "-I", "-c", _PEER, path], capture_output=True, text=True, timeout=30, cwd="/",
        **kwargs,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another uid")
def test_socket_refuses_other_users(daemon: Daemon, tmp_path: Path) -> None:
    exe = _python_for(NOBODY)
    if exe is None:
        pytest.skip("no Python interpreter the nobody user can run")
    daemon.start()
    folder = os.path.dirname(daemon.socket)
    runtime = os.path.dirname(folder)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(daemon.socket).st_mode) == 0o600
    assert os.stat(folder).st_uid == os.geteuid() == os.lstat(daemon.socket).st_uid

    # With the modes as they are, nobody cannot even reach the socket.
    assert _peer(exe, daemon.socket, NOBODY)["end"] == "permission-denied"

    # Loosened on purpose: the kernel lets nobody connect, the daemon's peer check
    # closes the connection without a byte of answer.
    runtime_mode = stat.S_IMODE(os.stat(runtime).st_mode)
    try:
        os.chmod(runtime, 0o711)
        os.chmod(folder, 0o777)
        os.chmod(daemon.socket, 0o666)
        refused = _peer(exe, daemon.socket, NOBODY)
        assert refused["uid"] == NOBODY
        assert refused["end"] in ("eof", "reset") and refused["got"] == "", refused
        # the same client as this user is answered (the check tells users apart)
        same = _peer(exe, daemon.socket, None)
        assert same["end"] == "answered" and '"serverInfo"' in same["got"], same
    finally:
        os.chmod(daemon.socket, 0o600)
        os.chmod(folder, 0o700)
        os.chmod(runtime, runtime_mode)
    wait_for(lambda: any("refused a connection from uid 65534" in ln for ln in daemon.stderr))
    with daemon.session(None) as c:
        assert c.request("readMany/status", {})["connections"] == 1
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(daemon.socket).st_mode) == 0o600


# ----------------------------------------------------------------------------- TCP


def _listening_inodes() -> dict[int, str]:
    """inode → local address of every TCP socket in LISTEN state (/proc/net/tcp{,6})."""
    out: dict[int, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                out[int(fields[9])] = fields[1]
    return out


def _socket_inodes(pid: int) -> set[int]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            found.add(int(link[8:-1]))
    return found


def _tcp_listeners(pid: int) -> list[str]:
    listening = _listening_inodes()
    return [listening[i] for i in _socket_inodes(pid) if i in listening]


def test_no_tcp_listener_unless_asked_and_tcp_is_loopback_with_token(
    daemon: Daemon, tmp_path: Path
) -> None:
    daemon.start()
    with daemon.session(tmp_path) as c:
        c.request("readMany/status", {})
    assert _socket_inodes(daemon.pid)  # it has sockets (the unix listener)...
    assert _tcp_listeners(daemon.pid) == []  # ...but no TCP listener
    daemon.stop()

    for host in ("[::]", "192.168.1.10", "example.com"):  # 0.0.0.0: test_daemon_socket
        refused = cli(dict(daemon.env, READMANY_TOKEN="t"), "serve", "--tcp", f"{host}:0")
        assert refused.returncode == 2 and "loopback" in refused.stderr, (host, refused.stderr)

    err = tmp_path / "tcp.err"
    token = uuid.uuid4().hex
    with err.open("w") as f:
        proc = subprocess.Popen(
            [*PY, "serve", "--tcp", "127.0.0.1:0"],
            env=dict(daemon.env, READMANY_TOKEN=token),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=f,
            cwd="/",
        )
    try:
        line = wait_for(
            lambda: (
                proc.poll() is None
                and next(
                    (ln for ln in err.read_text().splitlines() if "serving on tcp" in ln), None
                )
            ),
            30,
        )
        port = int(line.split("tcp ", 1)[1].split()[0].rsplit(":", 1)[1])
        listeners = _tcp_listeners(proc.pid)
        assert listeners == [f"0100007F:{port:04X}"]  # 127.0.0.1 only

        # Nothing is answered before initialize with the token; stopDaemon neither.
        c = Client.connect_tcp("127.0.0.1", port)
        c.settimeout(15)
        for method, params in (
            ("readMany/read", {"paths": ["a.txt"]}),
            ("readMany/files", {}),
            ("readMany/status", {}),
            ("readMany/stopDaemon", {}),
        ):
            with pytest.raises(RpcError) as info:
                c.request(method, params)
            assert info.value.code == -32002, (method, info.value.message)
        with pytest.raises(RpcError):
            c.initialize(str(tmp_path), {"authToken": token[:-1]})
        c.close()
        assert proc.poll() is None
        good = Client.connect_tcp("127.0.0.1", port)
        good.settimeout(15)
        good.initialize(str(tmp_path), {"authToken": token})
        assert good.request("readMany/status", {})["pid"] == proc.pid
        good.exit()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert token not in err.read_text()


_FAKE_SERVER = r"""
import json, os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {
        "capabilities": {}, "serverInfo": {"name": "readmany", "version": "0.1.0"}}}).encode()
    try:
        c.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        c.recv(65536)
    except OSError:
        pass
    c.close()
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to serve as another uid")
def test_clients_refuse_a_socket_served_by_another_user(tmp_path: Path) -> None:
    """The fallback socket path lies in /tmp, where anyone can be first: the client
    checks the serving process's uid (SO_PEERCRED) and never talks to another user's
    server; the CLI then answers in its own process."""
    exe = _python_for(NOBODY)
    if exe is None:
        pytest.skip("no Python interpreter the nobody user can run")
    import tempfile

    tmpdir = Path(tempfile.mkdtemp(prefix="rmsec", dir="/tmp"))  # reachable by nobody
    os.chmod(tmpdir, 0o755)
    folder = tmpdir / f"readmany-{os.getuid()}"  # the fallback runtime folder
    folder.mkdir(mode=0o777)
    os.chmod(folder, 0o777)
    path = str(folder / "daemon.sock")
    fake = subprocess.Popen(
        [exe, "-I", "-c", _FAKE_SERVER, path], user=NOBODY, group=NOBODY, extra_groups=[],
        stdout=subprocess.PIPE, text=True, cwd="/",
    )  # fmt: skip
    try:
        assert fake.stdout is not None and fake.stdout.readline().strip() == "ready"
        with pytest.raises(PermissionError, match="not by this user"):
            Client.connect_unix(path, timeout=5)
        env = make_env(tmp_path / "home")
        env.pop("XDG_RUNTIME_DIR", None)
        env["TMPDIR"] = str(tmpdir)
        root = tmp_path / "ws"
        write_tree(root, {"a.txt": "mine\n"})
        run = cli(env, "read", "--root", str(root), "a.txt", "--json")
        assert run.returncode == 0, run.stderr
        answer = json.loads(run.stdout)
        assert "mine" in answer["llmContent"], answer  # answered here, from the disk
        assert answer["files"][0].get("source", "disk") == "disk"
    finally:
        fake.kill()
        fake.wait(10)
        if fake.stdout is not None:
            fake.stdout.close()
        shutil.rmtree(tmpdir, ignore_errors=True)
