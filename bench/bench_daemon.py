"""Benchmark: the warm daemon (``readmany serve --socket``) against its seven targets.

Usage::

    python bench/bench_daemon.py [--tree DIR] [--files N] [--runs N] [--quick] [--only NAME]

Builds or reuses the tree (``bench/.trees/stdlib-100k`` by default, see ``gen_tree.py``;
``--quick`` alone uses a 300-file tree), starts private daemons (each with its own socket
under a fresh ``/tmp`` folder and its own ``XDG_CACHE_HOME``/``XDG_STATE_HOME``/
``XDG_RUNTIME_DIR``; every one is stopped in a ``finally``) and measures:

1. ``readMany/read`` of ``**/*.py`` with default budgets on one warm connection: p50/p99
   of N requests after a warm-up (target p50 ≤ 5 ms, p99 ≤ 20 ms);
2. one-shot ``readmany read --root TREE FILE`` answered by the warm daemon, as the venv's
   console script and as ``python -m readmany_daemon``, against ``python -c pass`` (same
   interpreter, interleaved; target ≤ 2x); ``--no-daemon`` is shown for information;
3. a full-content read of every ``.py`` file (``preferFullRead``, totals lifted), time to
   the last byte of the answer on the client, against
   ``rg --files -g '*.py' | xargs cat`` in TREE with its output drained (target ≤ 1x;
   skipped as n/a when MemAvailable is under ``FULL_READ_MEMORY_FACTOR`` times the bytes
   of the ``.py`` files: the daemon holds the answer several times over);
4. write to index: a new file written in the tree, then ``readMany/files`` polled with
   its path until it is listed (target p50 ≤ 50 ms; n/a while ``readMany/status`` says the
   watcher is off, the latency is still measured: the engine may stat on request);
5. restart from the snapshot: daemon start to the first answered ``readMany/files`` with
   an empty ``XDG_CACHE_HOME`` (cold) and again after a stop with the same one (warm)
   (target warm ≤ 0.3x cold; n/a when no snapshot is written or warm is not faster);
6. index memory: the daemon's ``VmRSS`` before and after the root is indexed, divided by
   the files the index holds (target ≤ 300 bytes per file);
7. 8 processes, each with its own connection, reading one small file for ~5 s (target
   ≥ 1,000 reads/s in total).

It prints one Markdown table (measure, readmany, baseline, ratio or target, result) and
writes ``bench/results/daemon-latest.json``. Nothing is asserted: the exit status is 0
unless a measurement could not be made (1), or ``--strict`` and a target FAILs (1).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_files import prepare_tree
from common import (
    REPO_ROOT,
    Command,
    python_env,
    reap,
    receive_body,
    run_interleaved,
    table,
    tool_version,
    write_results,
)

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.client import Client, RpcError, connect

#: Preferred small file for the one-shot CLI and the concurrent clients (100k tree).
SMALL_CANDIDATES = ("copy00/json/__init__.py",)
#: Budgets lifted for the full-content read.
HUGE = 10**15
#: The full read (3) is skipped unless MemAvailable is at least this many times the bytes
#: of the ``.py`` files: the daemon peaked at 15-20 GiB for 1.07 GB of files (its answer
#: is held as one str, 4 bytes a character once a file has a non-BMP character, then
#: encoded, framed and buffered: three more copies).
FULL_READ_MEMORY_FACTOR = 20
#: Timeouts (s): daemon start, one big answer.
START_TIMEOUT = 120.0
BIG_TIMEOUT = 1800.0

PASS, FAIL, NA, ERROR = "PASS", "FAIL", "n/a", "ERROR"
HEADER = ("measure", "readmany", "baseline", "ratio / target", "result")


# ------------------------------------------------------------------------------ helpers


def ms(seconds: float) -> str:
    """``12.3 ms`` (thousands separated)."""
    return f"{seconds * 1000:,.1f} ms"


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linearly interpolated."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def vm_rss(pid: int) -> int:
    """Resident set size of ``pid`` in bytes (``VmRSS`` of ``/proc/PID/status``)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no VmRSS for pid {pid}")


def mem_available() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes, or None."""
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def vm_hwm(pid: int) -> int | None:
    """Peak resident set size of ``pid`` in bytes (``VmHWM``), or None."""
    with (
        contextlib.suppress(OSError, ValueError),
        open(f"/proc/{pid}/status", encoding="ascii") as f,
    ):
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def dir_bytes(folder: Path) -> tuple[int, int]:
    """(files, bytes) below ``folder``."""
    count = size = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(dirpath, name)).st_size
                count += 1
    return count, size


@dataclass
class Row:
    """One line of the table, plus the numbers behind it for the JSON."""

    measure: str
    readmany: str = "-"
    baseline: str = "-"
    target: str = "-"
    result: str = NA
    data: dict[str, Any] = field(default_factory=dict)

    def cells(self) -> dict[str, str]:
        return dict(
            zip(
                HEADER,
                (self.measure, self.readmany, self.baseline, self.target, self.result),
                strict=True,
            )
        )


# ------------------------------------------------------------------------------ daemons


class Daemon:
    """A private ``readmany serve --socket`` with its own XDG folders under ``home``.

    The socket is ``$XDG_RUNTIME_DIR/readmany/daemon.sock``, i.e. the CLI's default
    socket in ``env``, so a one-shot ``readmany read`` run with ``env`` asks this daemon.
    """

    def __init__(self, home: Path, cache: Path | None = None) -> None:
        self.home = home
        self.cache = cache or home / "cache"
        self.state = home / "state"
        self.runtime = home / "run"
        for folder in (self.cache, self.state, self.runtime):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.socket = str(self.runtime / "readmany" / "daemon.sock")
        self.log = self.state / "readmany" / "daemon.log"
        env = python_env()
        for name in list(env):
            if name.startswith("READMANY_"):
                del env[name]
        env.update(
            XDG_CACHE_HOME=str(self.cache),
            XDG_STATE_HOME=str(self.state),
            XDG_RUNTIME_DIR=str(self.runtime),
        )
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None

    def start(self) -> None:
        """Start the daemon (does not wait for it)."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._stderr = open(self.home / "serve.stderr", "ab")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "readmany_daemon",
                "serve",
                "--socket",
                self.socket,
                "--log-file",
                str(self.log),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._stderr,
            stderr=self._stderr,
            env=self.env,
            cwd="/",
        )

    def _died(self) -> str:
        tail = ""
        for source in (self.home / "serve.stderr", self.log):
            with contextlib.suppress(OSError):
                tail += source.read_text(errors="replace")[-2000:]
        code = self.proc.returncode if self.proc else "?"
        return f"the daemon exited with status {code}: {tail.strip()}"

    def connect(
        self, root: Path | None, timeout: float = START_TIMEOUT, poll: float = 0.005
    ) -> Client:
        """An initialized session (``root`` as its workspace folder), retrying until the
        daemon answers. Raises ``RuntimeError`` when it dies or does not answer."""
        deadline = time.monotonic() + timeout
        while True:
            client = connect(self.socket, None if root is None else str(root), timeout=10.0)
            if client is not None:
                client.settimeout(BIG_TIMEOUT)
                return client
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(self._died())
            if time.monotonic() >= deadline:
                raise RuntimeError(f"no daemon answered at {self.socket} within {timeout:g} s")
            time.sleep(poll)

    def stop(self) -> None:
        """``readMany/stopDaemon`` (SIGTERM as a fallback), then wait; kill what is left
        of the process we started."""
        try:
            if self.proc is not None and self.proc.poll() is None:
                from readmany_daemon.launch import stop

                with contextlib.suppress(Exception):
                    stop(self.socket, timeout=30.0)
                reap(self.proc)
        finally:
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None


@contextlib.contextmanager
def private_home(prefix: str = "rmb") -> Iterator[Path]:
    """A fresh 0700 folder under ``/tmp`` (short, for unix socket paths); removed after."""
    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def running(home: Path, cache: Path | None = None) -> Iterator[Daemon]:
    """A started daemon, stopped on the way out."""
    daemon = Daemon(home, cache)
    try:
        daemon.start()
        yield daemon
    finally:
        daemon.stop()


def status(client: Client) -> dict[str, Any]:
    result: dict[str, Any] = client.request("readMany/status", {})
    return result


# ---------------------------------------------------------------------------- measures


@dataclass
class Settings:
    """How much to measure (``--quick`` shrinks everything)."""

    runs: int
    requests: int
    warmup_requests: int
    max_seconds: float
    full_runs: int
    write_trials: int
    write_timeout: float
    clients: int
    client_seconds: float
    quick: bool = False


def measure_memory(daemon: Daemon, tree: Path) -> tuple[Row, Client]:
    """(6): RSS before and after the root is indexed (``readMany/rescan`` with ``root``,
    on a connection without a workspace folder), per file the index holds."""
    client = daemon.connect(None)
    pid = int(status(client)["pid"])
    time.sleep(0.2)  # let the start settle (warm-up done before the socket answers)
    before = vm_rss(pid)
    started = time.perf_counter()
    client.request("readMany/rescan", {"root": str(tree)})
    index_seconds = time.perf_counter() - started
    after = vm_rss(pid)
    roots = status(client)["roots"]
    files = next((r.get("files") for r in roots if r.get("root") == os.path.realpath(tree)), None)
    data: dict[str, Any] = {
        "pid": pid,
        "rss_before": before,
        "rss_after": after,
        "files_indexed": files,
        "index_seconds": round(index_seconds, 4),
    }
    row = Row("index memory (RSS delta / files indexed)", target="≤ 300 B/file", data=data)
    if not files:
        row.readmany, row.result = "no file count in readMany/status", ERROR
        return row, client
    per_file = (after - before) / files
    data["bytes_per_file"] = round(per_file, 1)
    row.readmany = f"{per_file:,.0f} B/file ({(after - before) / 2**20:,.1f} MiB / {files:,} files)"
    row.baseline = f"index built in {ms(index_seconds)}"
    row.result = PASS if per_file <= 300 else FAIL
    return row, client


def pick_small_file(client: Client, tree: Path) -> str:
    """``copy00/json/__init__.py`` when the tree has it, else the first listed ``.py``
    file of 1-16 KB (else the first listed file)."""
    for rel in SMALL_CANDIDATES:
        if (tree / rel).is_file():
            return rel
    listed = client.request("readMany/files", {"root": str(tree), "patterns": ["**/*.py"]})["files"]
    for entry in listed:
        if 1024 <= entry["size"] <= 16384:
            return str(entry["path"])
    if listed:
        return str(listed[0]["path"])
    listed = client.request("readMany/files", {"root": str(tree)})["files"]
    if not listed:
        raise RuntimeError(f"the daemon lists no file in {tree}")
    return str(listed[0]["path"])


def measure_latency(
    daemon: Daemon, tree: Path, cfg: Settings, max_total_tokens: int | None = None
) -> Row:
    """(1): ``readMany/read`` ``**/*.py``, default budgets, N requests on one connection
    (every answer counts its o200k tokens for ``summary.estimatedTokens``); with
    ``max_total_tokens``, the same under that token budget (1b)."""
    params: dict[str, Any] = {"paths": ["**/*.py"]}
    if max_total_tokens is not None:
        params["maxTotalTokens"] = max_total_tokens
    client = daemon.connect(tree)
    try:
        for _ in range(cfg.warmup_requests):
            client.request("readMany/read", params)
        times: list[float] = []
        deadline = time.monotonic() + cfg.max_seconds
        summary: dict[str, Any] = {}
        while len(times) < cfg.requests:
            started = time.perf_counter()
            result = client.request("readMany/read", params)
            times.append(time.perf_counter() - started)
            summary = result.get("summary", {})
            if time.monotonic() >= deadline:
                break
    finally:
        client.exit()
    p50, p99 = percentile(times, 50), percentile(times, 99)
    capped = len(times) < cfg.requests
    budgets = (
        "default budgets" if max_total_tokens is None else f"maxTotalTokens {max_total_tokens}"
    )
    row = Row(
        f"warm readMany/read `**/*.py`, {budgets}",
        readmany=f"p50 {ms(p50)}, p99 {ms(p99)} (N={len(times)}"
        + (", time-capped)" if capped else ")"),
        target="p50 ≤ 5 ms, p99 ≤ 20 ms",
        result=PASS if p50 <= 0.005 and p99 <= 0.020 else FAIL,
        data={
            "requests": len(times),
            "time_capped": capped,
            "p50_ms": round(p50 * 1000, 3),
            "p99_ms": round(p99 * 1000, 3),
            "mean_ms": round(statistics.fmean(times) * 1000, 3),
            "min_ms": round(min(times) * 1000, 3),
            "max_ms": round(max(times) * 1000, 3),
            "summary": summary,
        },
    )
    return row


def measure_write(daemon: Daemon, tree: Path, small: str, cfg: Settings) -> Row:
    """(4): time from a finished write of a new file to its first listing by
    ``readMany/files`` (polled back to back with the file's path); then, per trial, the
    file rewritten and read once by ``readMany/read`` (``sync: "auto"``): the write → read
    time, which must show the new content (a stuck barrier cookie shows here as ~2 s)."""
    client = daemon.connect(tree)
    folder = tree / os.path.dirname(small)
    written: list[Path] = []
    latencies: list[float] = []
    polls: list[float] = []
    reads: list[float] = []
    stale = 0
    misses = 0
    try:
        watcher = status(client).get("watcher", {}) or {}
        state = str(watcher.get("state", "off"))
        client.request("readMany/files", {"patterns": [small]})  # the root is indexed
        for trial in range(cfg.write_trials):
            path = folder / f"_rmbench_{os.getpid()}_{trial}.py"
            rel = path.relative_to(tree).as_posix()
            written.append(path)
            with open(path, "w", encoding="utf-8") as f:
                f.write(f"VALUE = {trial}\n")
            started = time.perf_counter()
            seen = None
            while time.perf_counter() - started < cfg.write_timeout:
                asked = time.perf_counter()
                listed = client.request("readMany/files", {"patterns": [rel]})["files"]
                polls.append(time.perf_counter() - asked)
                if any(entry["path"] == rel for entry in listed):
                    seen = time.perf_counter() - started
                    break
            if seen is None:
                misses += 1
                if not latencies and misses >= 2:
                    break  # never visible: no point waiting out every trial
            else:
                latencies.append(seen)
            with open(path, "w", encoding="utf-8") as f:
                f.write(f"VALUE = {trial} + 1\n")
            asked = time.perf_counter()
            text = client.request("readMany/read", {"paths": [rel], "format": "json"})
            reads.append(time.perf_counter() - asked)
            stale += f"VALUE = {trial} + 1" not in str(text.get("llmContent", ""))
            time.sleep(0.3)  # 20 trials span more than one 5 s cookie retry of a barrier
    finally:
        client.exit()
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
    no_watcher = state in ("off", "", "None")
    data: dict[str, Any] = {
        "watcher_state": state,
        "trials": len(written),
        "visible": len(latencies),
        "not_visible": misses,
        "timeout_s": cfg.write_timeout,
        "latencies_ms": [round(s * 1000, 3) for s in latencies],
        "poll_answer_p50_ms": round(percentile(polls, 50) * 1000, 3) if polls else None,
        "write_read_ms": [round(s * 1000, 3) for s in reads],
        "write_read_stale": stale,
    }
    row = Row(
        "write → visible in readMany/files",
        target="p50 ≤ 50 ms, none ≥ 1 s",
        data=data,
    )
    if latencies:
        p50 = percentile(latencies, 50)
        data["p50_ms"] = round(p50 * 1000, 3)
        row.readmany = (
            f"p50 {ms(p50)}, max {ms(max(latencies))} ({len(latencies)}/{len(written)} seen)"
        )
        if reads:
            row.readmany += (
                f"; write → read p50 {ms(percentile(reads, 50))}, max {ms(max(reads))}"
                + (f", {stale} stale" if stale else "")
            )
        if no_watcher:
            row.readmany += ", stat on request"
            row.result = f"{NA} (no watcher)"
        else:
            slowest = max(latencies + reads)  # a barrier stuck on a cookie: ~2 s
            ok = p50 <= 0.050 and slowest < 1.0 and not misses and not stale
            row.result = PASS if ok else FAIL
    else:
        row.readmany = f"not visible within {cfg.write_timeout:g} s ({misses} trials)"
        row.result = f"{NA} (no watcher)" if no_watcher else FAIL
    row.baseline = (
        f"watcher: {state}; one poll answers in {ms(percentile(polls, 50))}"
        if polls
        else f"watcher: {state}"
    )
    return row


def _reader(
    socket_path: str, root: str, small: str, ready: Any, go: Any, deadline_s: float, out: Any
) -> None:
    """One concurrent client (a process): its own connection, reads until the deadline."""
    count = errors = 0
    end = 0.0
    try:
        client = connect(socket_path, root, timeout=30.0)
        if client is None:
            raise RuntimeError("no daemon answered")
        client.settimeout(60.0)
        params = {"paths": [small]}
        client.request("readMany/read", params)
        ready.put(True)
        go.wait(60)
        stop_at = time.monotonic() + deadline_s
        for _ in range(10_000_000):  # bounded
            try:
                client.request("readMany/read", params)
                count += 1
            except RpcError:
                errors += 1
            if time.monotonic() >= stop_at:
                break
        end = time.monotonic()
        client.exit()
    except Exception as exc:  # reported in the JSON, not fatal to the other clients
        ready.put(False)
        out.put({"count": count, "errors": errors + 1, "end": end, "error": repr(exc)})
        return
    out.put({"count": count, "errors": errors, "end": end})


def measure_throughput(daemon: Daemon, tree: Path, small: str, cfg: Settings) -> Row:
    """(7): ``cfg.clients`` processes, one connection each, small reads for a bounded
    time; total answered reads per second."""
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [
        ctx.Process(
            target=_reader,
            args=(daemon.socket, str(tree), small, ready, go, cfg.client_seconds, out),
            daemon=True,
        )
        for _ in range(cfg.clients)
    ]
    results: list[dict[str, Any]] = []
    try:
        for p in procs:
            p.start()
        for _ in procs:
            ready.get(timeout=120)
        started = time.monotonic()
        go.set()
        for _ in procs:
            results.append(out.get(timeout=cfg.client_seconds + 120))
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join()
    total = sum(r["count"] for r in results)
    errors = sum(r["errors"] for r in results)
    elapsed = max((r["end"] for r in results), default=started) - started
    rate = total / elapsed if elapsed > 0 else 0.0
    row = Row(
        f"{cfg.clients} concurrent clients, small reads",
        readmany=f"{rate:,.0f} reads/s ({total:,} in {elapsed:.1f} s"
        + (f", {errors} errors)" if errors else ")"),
        baseline=f"`{small}`",
        target="≥ 1,000 reads/s",
        result=PASS if rate >= 1000 and not errors else FAIL,
        data={
            "clients": cfg.clients,
            "reads": total,
            "errors": errors,
            "seconds": round(elapsed, 3),
            "reads_per_s": round(rate, 1),
            "per_client": [r["count"] for r in results],
            "failures": [r["error"] for r in results if "error" in r],
        },
    )
    return row


def console_script() -> tuple[str, str]:
    """The venv's ``readmany`` console script beside ``sys.executable`` (else on PATH),
    and its shebang interpreter."""
    beside = Path(sys.executable).parent / "readmany"
    script = str(beside) if beside.is_file() else (shutil.which("readmany") or str(beside))
    shebang = ""
    with contextlib.suppress(OSError), open(script, "rb") as f:
        shebang = f.readline().decode(errors="replace").removeprefix("#!").strip()
    return script, shebang


def regular_install(quick: bool) -> str | None:
    """The ``readmany`` console script of a regular (not editable) install of this
    checkout, as the README's ``pip install .`` makes it with a current pip, in
    ``bench/.trees/install-venv`` (rebuilt each run; ``--no-deps``: the warm path imports
    only the standard library).
    An editable install's import hook alone costs ~16 ms at every interpreter start.
    None with ``quick`` or when the install fails (reported on stderr)."""
    if quick:
        return None
    venv = REPO_ROOT / "bench" / ".trees" / "install-venv"
    try:
        if not (venv / "bin" / "python").is_file():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        # This venv's pip installs there (``--python``): the console script is the
        # current pip's (since pip 25.0 it no longer imports ``re``, ~7 ms here), not
        # that of the pip bundled with this interpreter (23.2 for 3.11.7).
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
             "install", "-q", "--no-deps", "--force-reinstall", str(REPO_ROOT)],
            check=True, timeout=600, capture_output=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"bench_daemon: no regular install ({exc}); that row is skipped", file=sys.stderr)
        return None
    return str(venv / "bin" / "readmany")


def measure_oneshot(
    daemon: Daemon, tree: Path, small: str, cfg: Settings, quick: bool = False
) -> list[Row]:
    """(2): one-shot ``readmany read`` answered by the warm daemon vs ``python -c pass``,
    interleaved: the console script of a regular install (:func:`regular_install`), this
    venv's console script (editable in a checkout) and ``python -m``; plus
    ``--no-daemon`` for information."""
    script, shebang = console_script()
    env = dict(daemon.env)
    read_args = ("read", "--root", str(tree), small)
    installed = regular_install(quick)
    commands = [
        Command("python -c pass", (sys.executable, "-c", "pass"), env=env),
        *(
            [Command("readmany read (pip install .)", (installed, *read_args), env=env)]
            if installed
            else []
        ),
        Command("readmany read (console script)", (script, *read_args), env=env),
        Command(
            "python -m readmany_daemon read",
            (sys.executable, "-m", "readmany_daemon", *read_args),
            env=env,
        ),
        Command(
            "readmany read --no-daemon",
            (sys.executable, "-m", "readmany_daemon", *read_args, "--no-daemon"),
            env=env,
        ),
    ]
    # Did the daemon answer? It has the file cached (a read on the socket below), so its
    # answer says "cache"; an in-process answer (a fresh process) reads the disk.
    client = daemon.connect(tree)
    try:
        client.request("readMany/read", {"paths": [small]})
    finally:
        client.exit()
    check = subprocess.run(
        [script, *read_args, "--json"], env=env, capture_output=True, check=False, timeout=120
    )
    source = None
    with contextlib.suppress(ValueError, KeyError, IndexError):
        source = json.loads(check.stdout)["files"][0]["source"]
    timed = run_interleaved(commands, runs=cfg.runs, warmup=1)
    base = timed[0][0]
    rows = []
    for (timing, stdout), command in zip(timed[1:], commands[1:], strict=True):
        ratio = timing.median / base.median
        info = command.label.endswith("--no-daemon")
        ok = timing.ok and bool(stdout.strip())
        row = Row(
            f"one-shot {command.label}" + ("" if info else " (warm daemon)"),
            readmany=f"{ms(timing.median)} (min {ms(timing.min)}, max {ms(timing.max)})",
            baseline=f"python -c pass {ms(base.median)}",
            target=f"{ratio:.2f}x" + (" (for information)" if info else " (≤ 2x)"),
            data={"timing": timing.to_json(), "baseline": base.to_json(), "ratio": round(ratio, 3)},
        )
        if not ok:
            row.result = ERROR
            row.readmany += f"; exit {timing.returncode}: {timing.stderr}"
        elif info:
            row.result = "info"
        else:
            row.result = PASS if ratio <= 2.0 else FAIL
            row.data["daemon_answered"] = source == "cache"
            row.data["check_source"] = source
            row.data["console_script_interpreter"] = shebang
            if source != "cache":
                row.readmany += f" (answer source {source!r}: the daemon may not have answered)"
        rows.append(row)
    return rows


class _BigAnswer:
    """``readMany/read`` whose answer is received as raw bytes; the time is taken when
    its last byte has arrived (nothing is decoded before)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.sock = client._sock  # the light client has no streaming API

    def _read_exact(self, buf: bytearray, n: int) -> bytes:
        while len(buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the daemon closed the connection")
            buf += chunk
        data = bytes(buf[:n])
        del buf[:n]
        return data

    def request(self, params: dict[str, Any], msg_id: int) -> tuple[float, memoryview]:
        buf = bytearray(self.client._buf)
        self.client._buf.clear()
        started = time.perf_counter()
        self.client.send(
            {"jsonrpc": "2.0", "id": msg_id, "method": "readMany/read", "params": params}
        )
        while True:
            while (end := buf.find(b"\r\n\r\n")) < 0:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise ConnectionError("the daemon closed the connection")
                buf += chunk
            length = -1
            for line in bytes(buf[:end]).split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            del buf[: end + 4]
            if length < (1 << 20):
                message = json.loads(self._read_exact(buf, length))
                if message.get("id") == msg_id and "method" not in message:
                    return time.perf_counter() - started, memoryview(json.dumps(message).encode())
                continue  # a notification: skip it
            body = receive_body(self.sock, buf, length)
            return time.perf_counter() - started, body


def _summary_of(body: memoryview) -> dict[str, Any]:
    """``result.summary`` of a raw answer without decoding the rest (an unescaped
    ``"summary":{`` can't occur inside a JSON string), or ``{"error": …}``."""
    raw = bytes(body)
    head = raw[:300]
    if b'"error"' in head and b'"result"' not in head:
        return {"error": json.loads(raw).get("error")}
    at = raw.find(b'"summary":{')
    if at < 0:
        return {}
    value, _ = json.JSONDecoder().raw_decode(raw[at + 10 : at + 100_000].decode("utf-8", "replace"))
    return dict(value)


def time_drained(argv: list[str], cwd: Path) -> tuple[float, int, int]:
    """Wall time of ``argv`` whose stdout goes to a pipe drained here; (seconds, bytes,
    exit status)."""
    buf = bytearray(1 << 20)
    total = 0
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    while n := proc.stdout.readinto(buf):
        total += n
    code = proc.wait()
    return time.perf_counter() - started, total, code


def measure_full_read(daemon: Daemon, tree: Path, cfg: Settings) -> Row:
    """(3): every ``.py`` file in full over the socket vs ``rg --files -g '*.py' | xargs
    cat``, interleaved (one untimed round first)."""
    pipeline = ["sh", "-c", "rg --files -g '*.py' | xargs cat"]
    params = {
        "paths": ["**/*.py"],
        "preferFullRead": True,
        "maxTotalFiles": HUGE,
        "maxTotalChars": HUGE,
    }
    row = Row(
        "full read of every `.py` (budgets lifted), last byte",
        target="≤ 1x rg | xargs cat",
    )
    if shutil.which("rg") is None:
        row.baseline, row.result = "rg not installed", NA
        return row
    client = daemon.connect(tree)
    ours: list[float] = []
    theirs: list[float] = []
    sizes: dict[str, int] = {}
    summary: dict[str, Any] = {}
    big = _BigAnswer(client)
    try:
        pid = int(status(client)["pid"])
        listed = client.request("readMany/files", {"patterns": ["**/*.py"]})["files"]
        py_bytes = sum(int(entry["size"]) for entry in listed)
        available = mem_available()
        sizes.update(py_files=len(listed), py_bytes=py_bytes)
        if available is not None and available < FULL_READ_MEMORY_FACTOR * py_bytes:
            row.readmany = (
                f"skipped: {py_bytes / 2**20:,.0f} MiB of .py files needs ~"
                f"{FULL_READ_MEMORY_FACTOR * py_bytes / 2**30:,.1f} GiB free, "
                f"{available / 2**30:,.1f} GiB available"
            )
            row.result = f"{NA} (memory)"
            row.data = {**sizes, "mem_available": available}
            return row
        for round_ in range(cfg.full_runs + 1):
            for turn in range(2):
                if (round_ + turn) % 2 == 0:
                    seconds, body = big.request(params, 1000 + round_)
                    sizes["answer_bytes"] = len(body)
                    summary = _summary_of(body)
                    del body
                    if round_:
                        ours.append(seconds)
                else:
                    seconds, out_bytes, code = time_drained(pipeline, tree)
                    sizes["cat_bytes"] = out_bytes
                    if code != 0:
                        sizes["cat_status"] = code
                    if round_:
                        theirs.append(seconds)
        peak = vm_hwm(pid)
        if peak is not None:
            sizes["daemon_peak_rss"] = peak
    finally:
        client.exit()
    mine, base = statistics.median(ours), statistics.median(theirs)
    ratio = mine / base
    row.readmany = (
        f"{ms(mine)} ({summary['read']:,} files, {sizes['answer_bytes'] / 2**20:,.0f} MiB answer)"
        if isinstance(summary.get("read"), int)
        else f"{ms(mine)} ({summary})"
    )
    row.baseline = f"{ms(base)} ({sizes['cat_bytes'] / 2**20:,.0f} MiB)"
    if "daemon_peak_rss" in sizes:
        row.readmany += f", daemon peak RSS {sizes['daemon_peak_rss'] / 2**30:,.1f} GiB"
    row.target = f"{ratio:.2f}x (≤ 1x)"
    errors = "error" in summary or summary.get("omitted") or summary.get("errors")
    row.result = ERROR if "error" in summary else (PASS if ratio <= 1.0 and not errors else FAIL)
    row.data = {
        "runs": cfg.full_runs,
        "readmany_ms": [round(s * 1000, 1) for s in ours],
        "pipeline_ms": [round(s * 1000, 1) for s in theirs],
        "readmany_median_ms": round(mine * 1000, 1),
        "pipeline_median_ms": round(base * 1000, 1),
        "ratio": round(ratio, 3),
        "summary": summary,
        **sizes,
        "pipeline": pipeline[2],
    }
    return row


def measure_restart(tree: Path, small: str, cfg: Settings) -> Row:
    """(5): start → first answered ``readMany/files`` for the root, cold (empty
    ``XDG_CACHE_HOME``) and warm (stopped, started again with the same one)."""
    cold: list[float] = []
    warm: list[float] = []
    index_ms: dict[str, list[float]] = {"walk": [], "snapshot": []}
    cache_files: list[tuple[int, int]] = []

    # Timed from just before the Popen to the answer; the daemon's own figure for the
    # index (walk, or snapshot load + reconcile) is kept beside it.
    def timed_start(home: Path, cache: Path, kind: str) -> float:
        daemon = Daemon(home, cache)
        try:
            started = time.perf_counter()
            daemon.start()
            client = daemon.connect(tree, poll=0.002)
            try:
                client.request("readMany/files", {"patterns": [small]})
                seconds = time.perf_counter() - started
                for root in status(client).get("roots", []):
                    if root.get("root") == str(tree) and "indexMs" in root:
                        index_ms[kind].append(float(root["indexMs"]))
            finally:
                client.exit()
        finally:
            daemon.stop()
        return seconds

    for _ in range(cfg.runs):
        with private_home("rmbr") as home:
            cache = home / "cache"
            cache.mkdir(mode=0o700)
            cold.append(timed_start(home / "a", cache, "walk"))
            cache_files.append(dir_bytes(cache))
            warm.append(timed_start(home / "b", cache, "snapshot"))
    c, w = statistics.median(cold), statistics.median(warm)
    ratio = w / c
    files, size = cache_files[-1]
    row = Row(
        "restart from the snapshot: start → first readMany/files",
        readmany=f"warm restart {ms(w)}",
        baseline=f"cold index {ms(c)}",
        target=f"{ratio:.2f}x (≤ 0.3x)",
        data={
            "cold_ms": [round(s * 1000, 1) for s in cold],
            "warm_ms": [round(s * 1000, 1) for s in warm],
            "cold_median_ms": round(c * 1000, 1),
            "warm_median_ms": round(w * 1000, 1),
            "ratio": round(ratio, 3),
            "cache_files": files,
            "cache_bytes": size,
            "index_walk_ms": index_ms["walk"],
            "index_snapshot_ms": index_ms["snapshot"],
        },
    )
    if index_ms["walk"] and index_ms["snapshot"]:
        iw, isnap = statistics.median(index_ms["walk"]), statistics.median(index_ms["snapshot"])
        row.readmany += f"; in the daemon: index from snapshot {isnap:,.0f} ms"
        row.baseline += f"; in the daemon: walk {iw:,.0f} ms"
        row.target += f"; index alone {isnap / iw:.2f}x"
        row.data["index_ratio"] = round(isnap / iw, 3)
    if files == 0:
        row.result = f"{NA} (no snapshot in XDG_CACHE_HOME)"
    elif w >= c:
        row.result = f"{NA} (warm not faster)"
    else:
        row.result = PASS if ratio <= 0.3 else FAIL
    row.readmany += f", snapshot {size / 2**20:,.1f} MiB in {files} file(s)" if files else ""
    return row


# -------------------------------------------------------------------------------- main


def _attempt(rows: list[Row], label: str, fn: Callable[[], Row | list[Row]]) -> None:
    """Run one measure; an exception becomes an ERROR row (the others still run)."""
    try:
        got = fn()
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        rows.append(Row(label, readmany=f"{type(exc).__name__}: {exc}"[:300], result=ERROR))
        return
    rows.extend(got if isinstance(got, list) else [got])


MEASURES = ("latency", "oneshot", "full", "write", "restart", "memory", "throughput")  # (1)-(7)


def run_all(tree: Path, cfg: Settings, only: frozenset[str] = frozenset(MEASURES)) -> list[Row]:
    """The measures named in ``only`` (all by default), in an order that keeps the big
    answer (3) last on the main daemon; the memory measure (6) always runs (it indexes
    the root)."""
    rows: list[Row] = []
    order = list(MEASURES)
    by_name: dict[str, list[Row]] = {}
    with private_home() as home, running(home) as daemon:
        try:
            memory, client = measure_memory(daemon, tree)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            return [
                Row(
                    "daemon start and index",
                    readmany=f"{type(exc).__name__}: {exc}"[:300],
                    result=ERROR,
                )
            ]
        by_name["memory"] = [memory]
        try:
            small = pick_small_file(client, tree)
        finally:
            client.exit()
        for name, label, fn in (
            ("latency", "warm readMany/read", lambda: measure_latency(daemon, tree, cfg)),
            (
                "latency",
                "warm readMany/read, maxTotalTokens",
                lambda: measure_latency(daemon, tree, cfg, 20000),
            ),
            ("write", "write → visible", lambda: measure_write(daemon, tree, small, cfg)),
            (
                "throughput",
                "concurrent clients",
                lambda: measure_throughput(daemon, tree, small, cfg),
            ),
            (
                "oneshot",
                "one-shot readmany read",
                lambda: measure_oneshot(daemon, tree, small, cfg, cfg.quick),
            ),
            ("full", "full read", lambda: measure_full_read(daemon, tree, cfg)),
        ):
            if name not in only:
                continue
            got: list[Row] = []
            _attempt(got, label, fn)
            by_name.setdefault(name, []).extend(got)
            for r in got:
                print(
                    f"  {r.measure}: {r.readmany} | {r.baseline} | {r.target} | {r.result}",
                    file=sys.stderr,
                    flush=True,
                )
    got = []
    if "restart" in only:
        _attempt(got, "restart", lambda: measure_restart(tree, small, cfg))
    by_name["restart"] = got
    for r in got:
        print(
            f"  {r.measure}: {r.readmany} | {r.baseline} | {r.target} | {r.result}",
            file=sys.stderr,
            flush=True,
        )
    for name in order:
        rows.extend(by_name.get(name, []))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; see the module docstring for the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tree", type=Path, help="tree to measure (default bench/.trees/stdlib-100k)"
    )
    parser.add_argument(
        "--files", type=int, help="files in the generated tree (100000; 300 with --quick)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated tree")
    parser.add_argument(
        "--runs", type=int, help="runs of the one-shot CLI and of the restarts (10; 3 with --quick)"
    )
    parser.add_argument(
        "--requests", type=int, help="warm reads timed for (1) (200; 20 with --quick)"
    )
    parser.add_argument(
        "--max-seconds", type=float, default=300.0, help="cap on the time (1) may take (300)"
    )
    parser.add_argument(
        "--full-runs", type=int, help="timed rounds of the full read (3; 1 with --quick)"
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients for (7) (8)")
    parser.add_argument(
        "--client-seconds", type=float, help="how long (7) reads (5; 1 with --quick)"
    )
    parser.add_argument("--quick", action="store_true", help="a tiny smoke run (few repetitions)")
    parser.add_argument("--results-dir", type=Path, help="where to write JSON (bench/results)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target FAILs")
    parser.add_argument(
        "--only",
        action="append",
        choices=MEASURES,
        help="run only this measure (repeatable; memory always runs)",
    )
    args = parser.parse_args(argv)

    quick = args.quick
    files = args.files if args.files is not None else (300 if quick and args.tree is None else None)
    try:
        tree, info = prepare_tree(args.tree, files, args.seed)
    except Exception as exc:  # gen_tree.TreeError, git missing…
        print(f"bench_daemon: {exc}", file=sys.stderr)
        return 1
    cfg = Settings(
        runs=args.runs or (3 if quick else 10),
        requests=args.requests or (20 if quick else 200),
        warmup_requests=2 if quick else 5,
        max_seconds=args.max_seconds,
        full_runs=args.full_runs or (1 if quick else 3),
        write_trials=3 if quick else 20,
        write_timeout=0.5 if quick else 2.0,
        clients=args.clients,
        client_seconds=args.client_seconds or (1.0 if quick else 5.0),
        quick=quick,
    )
    tree = tree.resolve()
    print(f"tree: {info.summary() if info else tree}", file=sys.stderr, flush=True)
    started = time.monotonic()
    rows = run_all(tree, cfg, frozenset(args.only or MEASURES))
    elapsed = time.monotonic() - started

    print(table([r.cells() for r in rows]))
    print()
    print(
        f"tree {tree} ({info.files_on_disk:,} files on disk, {info.files_visible:,} visible to git)"
        if info
        else f"tree {tree}"
    )
    print(
        f"python {sys.executable} ({sys.version.split()[0]}), "
        f"rg: {tool_version(['rg', '--version'])}, took {elapsed:.0f} s"
    )
    payload = {
        "tree": info.to_json() if info else {"root": str(tree)},
        "settings": cfg.__dict__,
        "rg": tool_version(["rg", "--version"]),
        "seconds": round(elapsed, 1),
        "rows": [{**r.cells(), "data": r.data} for r in rows],
    }
    path = write_results("daemon", payload, args.results_dir)
    print(f"results: {path}")
    if any(r.result == ERROR for r in rows):
        return 1
    if args.strict and any(r.result == FAIL for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    with contextlib.suppress(AttributeError):
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    raise SystemExit(main())
