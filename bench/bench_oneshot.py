"""Benchmark: what users feel of readmany's speed (issue 16 items 1, 3 and 4), each
against its baseline in the same run (interleaved, medians).

Usage::

    python bench/bench_oneshot.py [--runs N] [--quick] [--results-dir DIR]

1. one-shot ``readmany read a.py b.py`` answered by a warm private daemon, as this
   venv's console script, as ``python -m readmany_daemon`` and as the console script of
   a regular ``pip install .`` (``bench_daemon.regular_install``; not with ``--quick``),
   each against ``python -c pass`` of its own interpreter (target ≤ 2x);
2. ``readmany mcp`` start: the time until the ``initialize`` answer and until the first
   ``tools/list`` answer, raw JSON-RPC over pipes, against the reference MCP filesystem
   server (``@modelcontextprotocol/server-filesystem``, pinned in ``bench/mcp_peer``,
   installed with ``npm ci``; n/a without node/npm) (target ≤ 1x);
3. a full read of the standard library's ``.py`` files (``bench_peers.stdlib_tree``:
   1,790 files, 31.5 M characters; ``preferFullRead``, totals lifted) printed by
   ``readmany read`` through the warm daemon into a pipe drained 1 MiB at a time,
   against the time the last byte of the same answer arrives at a raw socket client
   (target ≤ 2x); the same drained by ``subprocess.run(capture_output=True)`` (32 KiB
   reads behind a selector: the reader, not the writer, then sets the pace) and the
   Python client's ``Client.request`` of the plain JSON answer (decoded) are shown for
   information.

Prints one Markdown table and writes ``bench/results/oneshot-latest.json``. Nothing is
asserted: the exit status is 0 unless a measurement could not be made.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_daemon import Daemon, console_script, regular_install
from common import REPO_ROOT, Command, receive_body, run_interleaved, table, write_results

from readmany_daemon.client import connect

MCP_PEER = REPO_ROOT / "bench" / "mcp_peer"
MCP_SERVER = MCP_PEER / "node_modules" / "@modelcontextprotocol" / "server-filesystem"
HUGE = 10**15
BIG_PARAMS = {
    "paths": ["**/*.py"],
    "preferFullRead": True,
    "maxTotalChars": HUGE,
    "maxTotalFiles": 10**9,
}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def row(measure: str, ours: float, base: float, label: str, target: float) -> dict[str, Any]:
    ratio = ours / base
    return {
        "measure": measure,
        "readmany": ms(ours),
        "baseline": f"{label} {ms(base)}",
        "ratio / target": f"{ratio:.2f}x (≤ {target:g}x)",
        "result": "PASS" if ratio <= target else "FAIL",
    }


# ------------------------------------------------------------------------- 1. one-shot


def oneshot(daemon: Daemon, tree: Path, runs: int, quick: bool) -> list[dict[str, Any]]:
    env = dict(daemon.env)
    read = ("read", "--root", str(tree), "a.py", "b.py")
    script, _ = console_script()
    pairs = [
        (Command("python -c pass", (sys.executable, "-c", "pass"), env=env), None),
        (Command("readmany read (console script)", (script, *read), env=env), 0),
        (
            Command(
                "python -m readmany_daemon read",
                (sys.executable, "-m", "readmany_daemon", *read),
                env=env,
            ),
            0,
        ),
    ]
    installed = regular_install(quick)
    if installed:
        python = str(Path(installed).parent / "python")
        clean = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        base = Command("python -c pass (pip install . venv)", (python, "-c", "pass"), env=clean)
        pairs.append((base, None))
        pairs.append((Command("readmany read (pip install .)", (installed, *read), env=clean), 3))
        # pip < 25's console script: ``import re`` first, which readmany cannot avoid.
        old = "import re, sys; from readmany_daemon.cli import main; sys.exit(main())"
        pairs.append((Command("read, pip < 25 script", (python, "-c", old, *read), env=clean), 3))
    timed = run_interleaved([c for c, _ in pairs], runs=runs, warmup=2)
    rows = []
    for (command, base), (timing, stdout) in zip(pairs, timed, strict=True):
        if base is None:
            continue
        if not timing.ok or b"a.py" not in stdout:
            raise RuntimeError(f"{command.label}: exit {timing.returncode}: {timing.stderr}")
        base_timing = timed[base][0]
        made = row(
            f"one-shot {command.label}, warm daemon",
            timing.median,
            base_timing.median,
            pairs[base][0].label,
            2.0,
        )
        if "pip < 25" in command.label:
            made["ratio / target"] = made["ratio / target"].split(" ")[0] + " (for information)"
            made["result"] = "info"
        rows.append(made)
    return rows


# ------------------------------------------------------------------------ 2. mcp start


def ensure_reference() -> Path | None:
    """The reference server's entry point, ``npm ci`` in ``bench/mcp_peer`` first when
    it is missing; None without node/npm or when the install fails."""
    entry = MCP_SERVER / "dist" / "index.js"
    npm = shutil.which("npm")
    if not entry.is_file() and npm is not None:
        subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=MCP_PEER,
            capture_output=True,
            check=False,
            timeout=900,
        )
    return entry if entry.is_file() and shutil.which("node") else None


def mcp_start(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the ``initialize`` answer, seconds to the first ``tools/list``
    answer) of the stdio MCP server ``argv``, raw newline-delimited JSON-RPC."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        cwd=cwd, env=env,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        init = {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "0"}},
        }  # fmt: skip
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        proc.stdin.flush()
        if b'"result"' not in proc.stdout.readline():
            raise RuntimeError(f"{argv[0]}: no initialize answer")
        ready = time.perf_counter() - started
        for message in (
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        if b'"tools"' not in proc.stdout.readline():
            raise RuntimeError(f"{argv[0]}: no tools/list answer")
        listed = time.perf_counter() - started
    finally:
        proc.stdin.close()
        proc.wait(30)
    return ready, listed


def mcp_rows(daemon: Daemon, tree: Path, runs: int) -> list[dict[str, Any]]:
    entry = ensure_reference()
    if entry is None:
        na = "node/npm or the npm install missing"
        return [{"measure": "readmany mcp start", "readmany": na, "baseline": "-",
                 "ratio / target": "-", "result": "n/a"}]  # fmt: skip
    script, _ = console_script()
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for _ in range(runs):
        ours.append(mcp_start([script, "mcp"], tree, daemon.env))
        theirs.append(mcp_start(["node", str(entry), str(tree)], tree, daemon.env))
    out = []
    for i, what in ((0, "initialize answered"), (1, "first tools/list answered")):
        out.append(
            row(
                f"readmany mcp start → {what}",
                statistics.median(t[i] for t in ours),
                statistics.median(t[i] for t in theirs),
                "server-filesystem",
                1.0,
            )
        )
    return out


# ---------------------------------------------------------------------- 3. big answer


def last_byte(daemon: Daemon, tree: Path) -> float:
    """Seconds from sending the big read (on a framed connection, as the CLI asks) to
    the last byte of its answer on a raw socket client, nothing decoded."""
    client = connect(daemon.socket, str(tree), {"llmContentFrames": True}, timeout=120)
    if client is None:
        raise RuntimeError("the daemon does not answer")
    try:
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 7, "method": "readMany/read", "params": BIG_PARAMS}
        ).encode()
        sock, buf = client._sock, bytearray(client._buf)
        started = time.perf_counter()
        sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        for _ in range(2):  # the content frame, then the response
            while (end := buf.find(b"\r\n\r\n")) < 0:
                buf += sock.recv(1 << 16)
            head = bytes(buf[:end]).lower()
            length = int(head.split(b"content-length:")[1].split(b"\r\n")[0])
            del buf[: end + 4]
            receive_body(sock, buf, length)
        return time.perf_counter() - started
    finally:
        client.exit()


def decoded(daemon: Daemon, tree: Path) -> float:
    """Seconds for the Python client's ``request`` of the plain JSON answer (decoded)."""
    client = daemon.connect(tree)
    try:
        started = time.perf_counter()
        client.request("readMany/read", BIG_PARAMS)
        return time.perf_counter() - started
    finally:
        client.exit()


def drained(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Seconds for ``argv`` to run with its standard output read 1 MiB at a time (as
    fast as it comes) and its stderr in a file; and the bytes it printed. Raises
    ``RuntimeError`` when it fails."""
    buf = bytearray(1 << 20)
    size = 0
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        while got := proc.stdout.readinto(buf):
            size += got
        code = proc.wait()
        seconds = time.perf_counter() - started
        if code != 0:
            err.seek(0)
            raise RuntimeError(f"{argv[0]}: {err.read().decode(errors='replace')}")
    return seconds, size


def big_rows(daemon: Daemon, tree: Path, runs: int) -> list[dict[str, Any]]:
    script, _ = console_script()
    argv = [script, "read", "--root", str(tree), "--params", json.dumps(BIG_PARAMS)]
    cli_times, captured_times, raw_times, dec_times = [], [], [], []
    size = 0
    last_byte(daemon, tree)  # warm: the files cached
    for _ in range(runs):
        raw_times.append(last_byte(daemon, tree))
        seconds, size = drained(argv, daemon.env)
        cli_times.append(seconds)
        started = time.perf_counter()
        proc = subprocess.run(argv, env=daemon.env, capture_output=True, check=False)
        captured_times.append(time.perf_counter() - started)
        if proc.returncode != 0 or len(proc.stdout) != size:
            raise RuntimeError(f"readmany read: {proc.stderr.decode(errors='replace')}")
        dec_times.append(decoded(daemon, tree))
    raw = statistics.median(raw_times)
    out = [row(f"`readmany read` of a full read, {size / 1e6:.1f} MB printed",
               statistics.median(cli_times), raw, "last byte (raw socket)", 2.0)]  # fmt: skip
    for measure, times in (
        ("the same, drained by subprocess.run(capture_output=True)", captured_times),
        ("Python client: request + JSON decode (plain answer)", dec_times),
    ):
        info = row(measure, statistics.median(times), raw, "last byte (raw socket)", 2.0)
        info["ratio / target"] = info["ratio / target"].split(" ")[0] + " (for information)"
        info["result"] = "info"
        out.append(info)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, help="runs of each measure (15; 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="few runs, small big tree")
    parser.add_argument("--tree", type=Path, help="the big tree (default: the stdlib copy)")
    parser.add_argument("--results-dir", type=Path)
    args = parser.parse_args(argv)
    runs = args.runs or (3 if args.quick else 15)

    from bench_peers import stdlib_tree

    big = args.tree or stdlib_tree()
    home = Path(tempfile.mkdtemp(prefix="rmone"))
    small = home / "small"
    small.mkdir()
    (small / "a.py").write_text("print('a')\n")
    (small / "b.py").write_text("b = 2\n")
    daemon = Daemon(home / "daemon")
    rows: list[dict[str, Any]] = []
    try:
        daemon.start()
        daemon.connect(small).exit()  # ready
        rows += oneshot(daemon, small, runs, args.quick)
        rows += mcp_rows(daemon, small, max(3, runs // 3))
        rows += big_rows(daemon, big, max(3, runs // 3))
    finally:
        daemon.stop()
        shutil.rmtree(home, ignore_errors=True)
    print(table(rows))
    write_results("oneshot", {"rows": rows}, args.results_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
