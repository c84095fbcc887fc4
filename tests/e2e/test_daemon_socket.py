"""The shared daemon: ``serve --socket``, ``serve --tcp``, ``lsp``, ``status``, ``stop``
and the one-shot CLI talking to it, each run as real processes.

Every daemon runs under a private ``XDG_RUNTIME_DIR`` (short, so the socket path fits
``sun_path``) and is stopped by a fixture finalizer. Waits are on events: a line on the
daemon's stderr, a process exit, an answer; where only polling can tell (a detached
daemon's socket appearing), ``wait_for(condition, timeout)`` polls every 20 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.io_ import run_async

from readmany_daemon.client import Client, ConnectionClosed, RpcError
from tests.e2e.test_server_stdio import make_client
from tests.helpers import lsp_frames, write_tree

PY = [sys.executable, "-m", "readmany_daemon"]


def wait_for(condition: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Poll ``condition`` every 20 ms until it returns something true; that value, or
    None after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


class Proc:
    """A started ``readmany`` process whose stderr lines can be waited for."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*PY, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.lines.put(line)
        self.lines.put(None)

    def wait_line(self, needle: str, timeout: float = 20.0) -> str:
        """The first stderr line containing ``needle`` (raises if the process ends or
        ``timeout`` passes first)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"no {needle!r} on stderr within {timeout} s; saw {self.seen}"
                ) from None
            if line is None:
                raise AssertionError(
                    f"process ended (exit {self.proc.wait()}) before {needle!r}; saw {self.seen}"
                )
            self.seen.append(line)
            if needle in line:
                return line

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A short private runtime folder (``/tmp/rm…``): sun_path holds 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="rm", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def denv(env: dict[str, str], runtime: Path, tmp_path: Path) -> dict[str, str]:
    """The process environment: private runtime and state folders; auto-start off
    unless a test turns it on."""
    e = dict(
        env,
        XDG_RUNTIME_DIR=str(runtime),
        XDG_STATE_HOME=str(tmp_path / "state"),
        READMANY_NO_DAEMON="1",
    )
    for k in ("READMANY_TOKEN", "READMANY_IDLE_TIMEOUT_SECONDS", "TMPDIR"):
        e.pop(k, None)
    return e


@pytest.fixture
def sock(runtime: Path) -> Path:
    return runtime / "readmany" / "daemon.sock"


def cli(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PY, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def daemons(denv: dict[str, str], sock: Path) -> Iterator[Callable[..., Proc]]:
    """``daemons(*args, env=...)`` starts ``readmany serve ARGS``; every process started
    here, and any daemon left at the default socket, is stopped afterwards."""
    started: list[Proc] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Proc:
        p = Proc(["serve", *args], env or denv)
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()
    # Daemons started detached (auto-start, the lsp bridge) are stopped through the socket.
    if sock.exists():
        result = cli(denv, "status", "--json")
        cli(denv, "stop")
        if result.returncode == 0:
            pid = json.loads(result.stdout)["pid"]
            if not wait_for(lambda: not _alive(pid), 10):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write_tree(
        root,
        {
            "a.txt": "disk a\n",
            "b.md": "# b\n",
            "src/m.py": "print('m')\n",
            "src/n.py": "x = 1\n" * 300,
        },
    )
    return root


def session(path: Path, root: Path | None = None, options: dict[str, Any] | None = None) -> Client:
    client = Client.connect_unix(str(path))
    client.initialize(str(root) if root else None, options)
    return client


# ------------------------------------------------------------------------------ tests


def test_socket_serves_and_cli_answers_through_it(
    daemons: Any, denv: dict[str, str], sock: Path, ws: Path
) -> None:
    d = daemons("--socket")
    d.wait_line("serving on")
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600 and stat.S_ISSOCK(sock.stat().st_mode)

    status = cli(denv, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["pid"] == d.proc.pid

    args = ["read", "--json", "a.txt", "src", "b.md", "--per-file-max-lines", "10"]
    via_daemon = cli(denv, *args, cwd=ws)
    in_process = cli(denv, *args, "--no-daemon", cwd=ws)
    assert via_daemon.returncode == in_process.returncode == 0, (
        via_daemon.stderr + in_process.stderr
    )
    warm, cold = json.loads(via_daemon.stdout), json.loads(in_process.stdout)
    for r in (warm, cold):
        r.pop("clock")
        for f in r["files"]:
            f.pop("source", None)
    assert warm == cold
    # The daemon answered it: the root is warm there now.
    roots = json.loads(cli(denv, "status", "--json").stdout)["roots"]
    assert [r["root"] for r in roots] == [os.path.realpath(ws)]

    plain = cli(denv, "read", "a.txt", "src/m.py", cwd=ws)
    assert plain.stdout == cli(denv, "read", "--no-daemon", "a.txt", "src/m.py", cwd=ws).stdout
    files = cli(denv, "files", "--root", str(ws))
    assert (
        files.stdout
        == cli(denv, "files", "--no-daemon", "--root", str(ws)).stdout
        == "a.txt\nb.md\nsrc/m.py\nsrc/n.py\n"
    )

    bad = cli(denv, "read", "a.txt", "--per-file-max-lines", "0", cwd=ws)
    assert bad.returncode == 2 and "perFileMaxLines" in bad.stderr


def test_a_cursor_crosses_daemon_restarts_and_in_process_answers(
    daemons: Any, denv: dict[str, str], tmp_path: Path
) -> None:
    """A cursor is self-contained: a page from the daemon goes on in-process, a page
    from the process goes on through the daemon, and through a restarted daemon."""
    root = tmp_path / "tree"
    files = {f"src/m{i:02}.py": f"v = {i}\n" for i in range(60)}  # nine pages of 7
    write_tree(root, files)

    def page(*args: str) -> dict[str, Any]:
        proc = cli(denv, "read", "--json", "--max-total-files", "7", *args, cwd=root)
        assert proc.returncode == 0, proc.stderr
        result: dict[str, Any] = json.loads(proc.stdout)
        return result

    d = daemons("--socket")
    d.wait_line("serving on")
    got: list[str] = []
    r = page("src/*.py")  # through the daemon
    where = ["--no-daemon", "", "restart", "--no-daemon", "", "", "restart", ""]
    for how in where:
        got += [f["path"] for f in r["files"] if f["status"] == "ok"]
        if how == "restart":
            d.stop()
            d = daemons("--socket")
            d.wait_line("serving on")
        r = page("--cursor", r["nextCursor"], *([how] if how == "--no-daemon" else []))
    got += [f["path"] for f in r["files"] if f["status"] == "ok"]
    assert "nextCursor" not in r
    assert got == sorted(files)
    # Under another root, the daemon refuses it naming the cursor.
    other = tmp_path / "other"
    write_tree(other, files)
    first = page("src/*.py")
    bad = cli(denv, "read", "--json", "--cursor", first["nextCursor"], cwd=other)
    assert bad.returncode == 2 and "cursor" in bad.stderr


def test_large_answer_is_sent_in_chunks_and_in_order(
    daemons: Any, denv: dict[str, str], sock: Path, tmp_path: Path
) -> None:
    """An answer over 1 MiB characters (encoded and written chunk by chunk) equals the
    in-process one, and a request sent right behind it is answered after it, whole."""
    root = tmp_path / "big"
    line = 'caf\u00e9 "q" \\ \t \U0001f600 \u2028 end\n'
    write_tree(root, {f"d{i}/f{i}.txt": line * (40_000 // len(line)) for i in range(40)})
    write_tree(root, {"small.txt": "small\n"})
    d = daemons("--socket")
    d.wait_line("serving on")
    args = ["read", "--json", "**/*.txt", "--prefer-full-read"]
    args += ["--max-total-files", "1000", "--max-total-chars", "100000000"]
    via_daemon = cli(denv, *args, cwd=root)
    in_process = cli(denv, *args, "--no-daemon", cwd=root)
    assert via_daemon.returncode == in_process.returncode == 0, via_daemon.stderr
    warm, cold = json.loads(via_daemon.stdout), json.loads(in_process.stdout)
    assert len(warm["llmContent"]) > 1 << 20
    for r in (warm, cold):
        r.pop("clock")
        for f in r["files"]:
            f.pop("source", None)
    assert warm == cold

    client = Client.connect_unix(str(sock), timeout=10.0)
    client.settimeout(60.0)
    try:
        client.initialize(str(root))
        big = {"paths": ["**/*.txt"], "preferFullRead": True, "maxTotalFiles": 1000}
        big["maxTotalChars"] = 10**8
        client.send({"jsonrpc": "2.0", "id": 101, "method": "readMany/read", "params": big})
        # Once the big answer has begun to arrive (and, unread, fills the socket), a
        # second answer must queue behind it rather than land inside it.
        assert client._sock.recv(1, socket.MSG_PEEK)
        small = {"paths": ["small.txt"]}
        client.send({"jsonrpc": "2.0", "id": 102, "method": "readMany/read", "params": small})
        first, second = client.receive(), client.receive()
        assert (first["id"], second["id"]) == (101, 102)
        assert first["result"]["llmContent"] == cold["llmContent"]
        assert (
            second["result"]["llmContent"] == "--- small.txt ---\nsmall\n\n--- End of content ---"
        )
    finally:
        client.close()


async def test_clients_at_once_share_overlays_and_exit_closes_one(
    daemons: Any, sock: Path, ws: Path
) -> None:
    d = daemons("--socket")
    d.wait_line("serving on")

    # The editor: a real LSP client (VS Code's capabilities) over the socket.
    editor = make_client()
    reader, writer = await asyncio.open_unix_connection(str(sock))
    editor.protocol.set_writer(writer)  # type: ignore[arg-type]
    editor._async_tasks.append(
        asyncio.create_task(
            run_async(
                stop_event=editor._stop_event,
                reader=reader,
                protocol=editor.protocol,
                error_handler=editor.report_server_error,
            )
        )
    )
    from pytest_lsp import client_capabilities

    await editor.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(ws.as_uri(), "proj")],
        )
    )
    uri = (ws / "a.txt").as_uri()
    editor.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri, "plaintext", 1, "unsaved buffer\n")
        )
    )
    # The editor's own read is ordered after its didOpen on its connection.
    mine = await editor.protocol.send_request_async("readMany/read", {"paths": ["a.txt"]})
    assert mine["files"][0]["source"] == "overlay"

    def agent_reads(n: int) -> list[dict[str, Any]]:
        with session(sock, ws) as agent:
            return [
                agent.request("readMany/read", {"paths": ["a.txt", "src/m.py"]}) for _ in range(n)
            ]

    # Four agents at once, each on its own connection, all see the person's buffer.
    results = await asyncio.gather(*(asyncio.to_thread(agent_reads, 3) for _ in range(4)))
    for answers in results:
        for answer in answers:
            assert answer["files"][0]["source"] == "overlay"
            assert "unsaved buffer" in answer["llmContent"] and "disk a" not in answer["llmContent"]

    # A connection with shareOverlays off keeps its buffers to itself.
    private = await asyncio.to_thread(session, sock, ws, {"shareOverlays": False})
    private.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": (ws / "b.md").as_uri(),
                "languageId": "markdown",
                "version": 1,
                "text": "private\n",
            }
        },
    )
    own = await asyncio.to_thread(private.request, "readMany/read", {"paths": ["b.md"]})
    assert own["files"][0]["source"] == "overlay"
    with session(sock, ws) as agent:
        other = await asyncio.to_thread(agent.request, "readMany/read", {"paths": ["b.md"]})
        assert other["files"][0].get("source") != "overlay" and "# b" in other["llmContent"]
        assert (await asyncio.to_thread(agent.request, "readMany/status"))["connections"] == 3

    # exit closes only that connection: the editor still answers, the count drops.
    await asyncio.to_thread(private.exit)
    status = await editor.protocol.send_request_async("readMany/status", {})
    assert status["connections"] == 1 and status["overlays"] == 1

    editor.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
    with session(sock, ws) as agent:
        answer = await asyncio.to_thread(agent.request, "readMany/read", {"paths": ["a.txt"]})
        assert "disk a" in answer["llmContent"]
    await editor.shutdown_async(None)
    editor.exit(None)
    await asyncio.wait_for(asyncio.gather(*editor._async_tasks), 10)  # the daemon closed it
    await editor.stop()
    assert d.proc.poll() is None  # the daemon goes on


def test_second_start_exits_0_and_stale_socket_is_replaced(
    daemons: Any, denv: dict[str, str], sock: Path
) -> None:
    first = daemons("--socket")
    first.wait_line("serving on")
    second = daemons("--socket")
    second.wait_line("already serves")
    assert second.proc.wait(20) == 0
    assert first.proc.poll() is None

    first.proc.kill()  # a crash: the socket file stays behind
    first.proc.wait(10)
    assert sock.exists()
    assert cli(denv, "status").returncode == 3

    third = daemons("--socket")
    third.wait_line("serving on")
    status = cli(denv, "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == third.proc.pid


def test_status_3_without_daemon_and_stop(daemons: Any, denv: dict[str, str], sock: Path) -> None:
    none = cli(denv, "status")
    assert none.returncode == 3 and "no daemon" in none.stderr
    assert cli(denv, "stop").returncode == 0

    d = daemons("--socket")
    d.wait_line("serving on")
    stopped = cli(denv, "stop")
    assert stopped.returncode == 0 and str(d.proc.pid) in stopped.stderr
    assert d.proc.wait(10) == 0
    assert not sock.exists()
    assert cli(denv, "status").returncode == 3


def test_explicit_socket_path(daemons: Any, denv: dict[str, str], runtime: Path, ws: Path) -> None:
    path = runtime / "custom.sock"
    d = daemons("--socket", str(path))
    d.wait_line(f"serving on {path}")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with session(path, ws) as c:
        assert c.request("readMany/read", {"paths": ["a.txt"]})["files"][0]["status"] == "ok"
    assert cli(denv, "status", "--socket", str(path)).returncode == 0
    assert cli(denv, "stop", "--socket", str(path)).returncode == 0
    assert d.proc.wait(10) == 0


def test_idle_timeout(daemons: Any, denv: dict[str, str], sock: Path, ws: Path) -> None:
    d = daemons("--socket", env=dict(denv, READMANY_IDLE_TIMEOUT_SECONDS="0.5"))
    d.wait_line("serving on")
    with session(sock, ws) as c:
        c.request("readMany/read", {"paths": ["a.txt"]})
        # Connected, it outlives its idle timeout (uptime is the daemon's own clock).
        assert wait_for(lambda: c.request("readMany/status")["uptime"] > 1.5, 10)
        assert d.proc.poll() is None
    # Alone, it exits on its own about half a second later.
    assert d.proc.wait(15) == 0
    assert not sock.exists()


def test_one_shot_cli_autostarts_the_daemon(
    daemons: Any, denv: dict[str, str], sock: Path, ws: Path
) -> None:
    env = dict(denv)
    env.pop("READMANY_NO_DAEMON")
    # --no-daemon never starts one (nothing answers for a while after it).
    assert cli(env, "read", "--no-daemon", "a.txt", cwd=ws).returncode == 0
    assert wait_for(lambda: cli(env, "status").returncode == 0, 0.5) is None
    # Without a daemon, the answer comes from this process and one is started.
    first = cli(env, "read", "a.txt", cwd=ws)
    assert first.returncode == 0 and "disk a" in first.stdout
    status = wait_for(
        lambda: (r := cli(env, "status", "--json")).returncode == 0 and json.loads(r.stdout), 20
    )
    assert status, "no daemon was started"
    log = Path(denv["XDG_STATE_HOME"]) / "readmany" / "daemon.log"
    assert log.exists()
    # The next call is answered by it; the root stays warm between one-shot calls.
    again = cli(env, "read", "a.txt", cwd=ws)
    assert again.stdout == first.stdout
    roots = json.loads(cli(env, "status", "--json").stdout)["roots"]
    assert [r["root"] for r in roots] == [os.path.realpath(ws)] and roots[0]["connections"] == 0
    assert "disk a" not in log.read_text()  # never file contents in the log


def test_daemon_of_another_version_is_replaced(
    daemons: Any, denv: dict[str, str], sock: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old"
    old.mkdir()
    (old / "sitecustomize.py").write_text(
        "import readmany_daemon\nreadmany_daemon.__version__ = '0.0.1-old'\n"
    )
    pythonpath = os.pathsep.join(p for p in (str(old), denv.get("PYTHONPATH", "")) if p)
    stale = daemons("--socket", env=dict(denv, PYTHONPATH=pythonpath))
    stale.wait_line("serving on")
    assert json.loads(cli(denv, "status", "--json").stdout)["version"] == "0.0.1-old"

    fresh = daemons("--socket")
    fresh.wait_line("serving on")
    assert stale.proc.wait(15) == 0
    status = json.loads(cli(denv, "status", "--json").stdout)
    assert status["pid"] == fresh.proc.pid and status["version"] != "0.0.1-old"


def test_tcp_requires_the_token_and_loopback(daemons: Any, denv: dict[str, str], ws: Path) -> None:
    refused = cli(denv, "serve", "--tcp", "0.0.0.0:0")
    assert refused.returncode == 2 and "loopback" in refused.stderr
    assert cli(denv, "serve", "--tcp", "127.0.0.1:0").returncode == 2  # no READMANY_TOKEN

    d = daemons("--tcp", "127.0.0.1:0", env=dict(denv, READMANY_TOKEN="s3cret"))
    line = d.wait_line("serving on tcp")
    port = int(line.split("tcp ", 1)[1].split()[0].rsplit(":", 1)[1])

    for options in (None, {"authToken": "wrong"}):
        c = Client.connect_tcp("127.0.0.1", port)
        with pytest.raises(RpcError) as info:
            c.initialize(str(ws), options)
        assert "authToken" in info.value.message
        with pytest.raises(ConnectionClosed):
            c.request("readMany/status")
        c.close()

    c = Client.connect_tcp("127.0.0.1", port)
    c.initialize(str(ws), {"authToken": "s3cret"})
    assert c.request("readMany/read", {"paths": ["a.txt"]})["files"][0]["status"] == "ok"
    c.exit()


async def test_lsp_bridge_starts_the_daemon(
    daemons: Any, denv: dict[str, str], sock: Path, ws: Path
) -> None:
    from pytest_lsp import ClientServerConfig, client_capabilities

    config = ClientServerConfig(
        server_command=[*PY, "lsp"], client_factory=make_client, server_env=denv
    )
    client = await config.start()
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("neovim"),
                workspace_folders=[types.WorkspaceFolder(ws.as_uri(), "proj")],
            )
        )
        answer = await client.protocol.send_request_async("readMany/read", {"paths": ["src/m.py"]})
        assert answer["files"][0]["status"] == "ok"
        await client.shutdown_session()
        assert client._server is not None and client._server.returncode == 0
    finally:
        await client.stop()
    # The daemon it started goes on for the next editor.
    assert json.loads(cli(denv, "status", "--json").stdout)["roots"][0]["root"] == os.path.realpath(
        ws
    )


@pytest.mark.parametrize("ending", ["shutdown-exit", "exit", "end-of-input"])
def test_lsp_bridge_exits_as_lsp_says(
    daemons: Any, denv: dict[str, str], ws: Path, ending: str
) -> None:
    """``readmany lsp`` exits 0 after ``shutdown`` + ``exit`` and 1 without ``shutdown``
    (LSP §"exit"), as ``serve --stdio`` does; it exited 0 whatever came. A big
    ``didOpen`` before it is passed over, not parsed."""
    big = "x = 1\n" * 20_000
    head = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": ws.as_uri(), "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": (ws / "shutdown.py").as_uri(), "languageId": "python", "version": 1,
            "text": big}}},
        {"jsonrpc": "2.0", "id": 2, "method": "readMany/read", "params": {"paths": ["a.txt"]}},
    ]  # fmt: skip
    tail = {
        "shutdown-exit": [
            {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        ],
        "exit": [{"jsonrpc": "2.0", "method": "exit"}],
        "end-of-input": [],
    }[ending]
    env = {k: v for k, v in denv.items() if k != "READMANY_NO_DAEMON"}
    run = subprocess.run(
        [*PY, "lsp"], input=lsp_frames(*head, *tail), env=env, capture_output=True, timeout=60
    )
    assert run.returncode == (0 if ending == "shutdown-exit" else 1), run.stderr
    assert b'"id":2' in run.stdout.replace(b" ", b""), run.stdout[-400:]
    cli(env, "stop")


@pytest.mark.slow
def test_memory_flat_over_100k_requests(daemons: Any, sock: Path, ws: Path) -> None:
    """100,000 requests and notifications over one connection, in batches of 1,000:
    the daemon's RSS after them stays within a few MB of its RSS after the first batch."""
    d = daemons("--socket")
    d.wait_line("serving on")

    def rss() -> int:
        for line in Path(f"/proc/{d.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    uri = (ws / "a.txt").as_uri()
    with session(sock, ws) as c:
        c.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "plaintext", "version": 1, "text": "v1\n"}},
        )
        baseline = 0
        sent = 0
        for batch in range(100):
            for _ in range(500):
                c.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": uri, "version": sent + 2},
                        "contentChanges": [{"text": f"v{sent}\n"}],
                    },
                )
                sent += 1
            answers = [
                c.request("readMany/read", {"paths": ["a.txt", "src/m.py"]}) for _ in range(500)
            ]
            sent += 500
            assert answers[-1]["files"][0]["source"] == "overlay"
            if batch == 4:
                baseline = rss()
        assert sent == 100_000
        grown = rss() - baseline
        assert grown < 8 * 1024, f"RSS grew by {grown} kB over {sent} messages"
