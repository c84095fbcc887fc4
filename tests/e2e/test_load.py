"""Load: many concurrent clients against ONE real daemon while a writer changes files.

N client threads (each with its own unix-socket connection, i.e. its own server session in
the daemon) send a mix of requests for a bounded time: named reads, glob expansions with
the default budgets, line windows, ``readMany/files``, ``readMany/status``,
``readMany/changedSince`` and cursor pages. Meanwhile one writer thread creates, edits
(in place and by atomic save), deletes and renames files below ``live/``.

The check is exact because the writer publishes what it has finished (PROTOCOL §6): every
file's content is ``id=I v=V line=K …`` lines, and the writer keeps a ``Model`` with, per
path, the last *finished* version, the finished deletes (with a sequence number) and the
operation in flight. A client takes a ``Snap`` of the model just before it sends a
request; then

- no JSON-RPC error and no protocol failure (closed connection, bad frame, timeout);
- every file live in the snap that the request's pattern matches is in the answer
  (``files`` of ``readMany/read`` or ``readMany/files``), unless the writer touched it
  after the snap (a later delete may legitimately remove it);
- every included content is whole and at least as new as the snap's version (and never
  newer than what the writer has started); a torn or missing content is accepted only for a
  path the writer was changing during the request;
- a file whose delete (or rename away) finished before the snap is never listed, and a
  named read of it answers ``not-found``;
- ``changedSince`` reports every change that finished after the previous answer;
- at the end, with the writer stopped, one expansion equals the model exactly.

Paths are never reused (a deleted or renamed-away name never comes back), which is what
makes "deleted files don't appear" decidable. Cursor pages are checked for freshness,
ghosts and repeats (no file is delivered on two pages of one chain); coverage across
pages is checked by the engine's own tests (files created behind a page are named, not
delivered).

The slow test (``pytest -m slow tests/e2e/test_load.py``) runs 32 clients for
``READMANY_LOAD_SECONDS`` (default 60) and writes its figures to
``bench/results/load-latest.json``; the quick one (8 clients x 3 s) runs in the default
suite. Waits are on events and deadline-bounded; the writer paces itself with
``Event.wait``.

The model, the writer and the checks are in ``load_model.py``; the clients, the
measures and the run are here.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.client import Client, RpcError
from tests.e2e.daemon_helpers import Daemon, status_root, wait_for
from tests.e2e.load_model import (
    LIVE_DIRS,
    MAX_REPORTED,
    STATIC_FILES,
    Checker,
    Model,
    Results,
    Writer,
)
from tests.helpers import git, make_env, write_tree

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"


#: Expansion patterns and the paths they match (as the protocol's globs do).
PATTERNS: list[tuple[str, Callable[[str], bool]]] = [
    ("live/**", lambda p: p.startswith("live/")),
    ("live/**/*.txt", lambda p: p.startswith("live/") and p.endswith(".txt")),
    ("**", lambda p: True),
    *[
        (f"live/d{k}/*", lambda p, k=k: p.startswith(f"live/d{k}/") and p.count("/") == 2)
        for k in range(LIVE_DIRS)
    ],
]


class Worker:
    """One client connection sending a random mix of requests until ``deadline``."""

    KINDS = ("named", "glob", "window", "files", "status", "changed", "cursor")
    WEIGHTS = (4, 4, 3, 3, 1, 2, 1)

    def __init__(
        self,
        number: int,
        daemon: Daemon,
        root: Path,
        checker: Checker,
        deadline: float,
        abort: threading.Event,
    ) -> None:
        self.number = number
        self.daemon = daemon
        self.root = root
        self.checker = checker
        self.model = checker.model
        self.results = checker.results
        self.deadline = deadline
        self.abort = abort
        self.rng = random.Random(1000 + number)
        self.client: Client | None = None
        #: changedSince: (clock, finished ops at the send, finished and started ops when
        #: the answer came back)
        self.clock: tuple[str, int, int, int] | None = None

    def request(self, method: str, kind: str, params: dict[str, Any]) -> Any:
        assert self.client is not None
        started = time.perf_counter()
        result = self.client.request(method, params)
        self.results.timed(method, kind, time.perf_counter() - started)
        return result

    def run(self) -> None:
        try:
            self.client = self.daemon.session(self.root)
            while time.monotonic() < self.deadline and not self.abort.is_set():
                kind = self.rng.choices(self.KINDS, self.WEIGHTS)[0]
                try:
                    getattr(self, kind)()
                except RpcError as exc:
                    self.results.error(f"client {self.number} {kind}: {exc.code} {exc.message}")
        except Exception as exc:  # a protocol failure: the connection is unusable
            self.results.error(f"client {self.number}: {type(exc).__name__}: {exc}")
        finally:
            if self.client is not None:
                self.client.exit()

    # -- the requests

    def named(self) -> None:
        snap = self.model.snap()
        live = sorted(snap.state)
        names = self.rng.sample(live, min(3, len(live)))
        with self.model.lock:
            gone = list(self.model.recent_deleted)
        gone = [p for p in gone if self.model.deleted_before(p, snap)]
        if gone and self.rng.random() < 0.5:
            names.append(self.rng.choice(gone))
        names.append(self.rng.choice(sorted(self.checker.static)))
        result = self.request("readMany/read", "read-named", {"paths": names, "format": "json"})
        out = json.loads(result["llmContent"])["results"]
        for name in names:
            got = out.get(name)
            where = "named read"
            if got is None:
                self.results.violation("missing entry", f"{where}: {name}")
            elif self.model.deleted_before(name, snap):
                if got.get("code") != "not-found":
                    self.results.violation("deleted file read", f"{where}: {name}: {got}")
            elif got["status"] == "ok":
                self.checker.content(name, got["content"], snap, None, where)
            elif not self.model.touched_after(name, snap):
                self.results.violation("named file unreadable", f"{where}: {name}: {got}")

    def glob(self) -> None:
        pattern, match = self.rng.choice(PATTERNS)
        snap = self.model.snap()
        result = self.request("readMany/read", "read-glob", {"paths": [pattern], "format": "json"})
        where = f"glob {pattern}"
        listed = {f["path"] for f in result["files"] if f.get("code") != "no-match"}
        if result["packing"].get("omittedTruncated") or len(result["files"]) >= 200:
            self.results.violation("listing truncated", f"{where}: {result['summary']}")
        if result["summary"]["omitted"] and not result.get("nextCursor"):
            self.results.violation("no cursor", f"{where}: {result['summary']}")
        self.checker.listing(listed, match, snap, where)
        out = json.loads(result["llmContent"])["results"]
        for path, got in out.items():
            if got["status"] == "ok":
                self.checker.content(path, got["content"], snap, None, where)

    def window(self) -> None:
        snap = self.model.snap()
        path = self.rng.choice(sorted(snap.state))
        result = self.request(
            "readMany/read",
            "read-window",
            {"files": [{"path": path, "offset": 2, "limit": 2}], "format": "json"},
        )
        out = json.loads(result["llmContent"])["results"]
        (got,) = out.values()
        if got["status"] == "ok":
            self.checker.content(path, got["content"], snap, [2, 3], "window")
        elif not self.model.touched_after(path, snap):
            self.results.violation("window unreadable", f"{path}: {got}")

    def files(self) -> None:
        pattern, match = self.rng.choice(PATTERNS)
        snap = self.model.snap()
        result = self.request("readMany/files", "files", {"patterns": [pattern]})
        self.checker.listing({f["path"] for f in result["files"]}, match, snap, f"files {pattern}")

    def status(self) -> None:
        result = self.request("readMany/status", "status", {})
        if result.get("pid") != self.daemon.pid:
            self.results.violation("status", f"pid {result.get('pid')} != {self.daemon.pid}")
        if os.path.realpath(self.root) not in {r["root"] for r in result["roots"]}:
            self.results.violation("status", f"root missing: {result['roots']}")

    def changed(self) -> None:
        snap = self.model.snap()
        clock = self.clock[0] if self.clock else "fresh"
        result = self.request("readMany/changedSince", "changedSince", {"clock": clock})
        with self.model.lock:  # what had finished / started when the answer came back
            hi, starts_hi = self.model.seq, self.model.starts
        changed, deleted = set(result["changed"]), set(result["deleted"])
        where = f"changedSince {clock}"
        if result["isFreshInstance"]:
            with self.results.lock:
                self.results.fresh_instances += 1
            self.checker.listing(changed, lambda p: True, snap, where)
        elif self.clock is None:
            self.results.violation("changedSince", "an unknown clock was not a fresh instance")
        else:
            _, lo, prev_hi, prev_starts = self.clock
            self.results.count("changedSince deltas")
            with self.model.lock:
                window = self.model.log[prev_hi : snap.seq]
            for _, path, start in window:
                if start <= prev_starts:
                    continue  # its syscall may have run before the previous answer's clock
                if path in snap.state:
                    if path not in changed and not self.model.touched_after(path, snap):
                        self.results.violation("change not reported", f"{where}: {path}")
                elif path not in deleted and self.model.created.get(path, sys.maxsize) <= lo:
                    # (a file created after the previous clock and deleted since may be
                    # reported or not; a save's temporary file was never finished)
                    self.results.violation("delete not reported", f"{where}: {path}")
            self.checker.ghosts(changed, snap, where)
            for path in deleted & set(snap.state):
                if not self.model.touched_after(path, snap):
                    self.results.violation("live file reported deleted", f"{where}: {path}")
        self.clock = (result["clock"], snap.seq, hi, starts_hi)

    def probe(self, paths: list[str]) -> None:
        """The writer's check right after an operation: each folder it changed, as a
        glob expansion, must match the model exactly (no other writer runs meanwhile)."""
        for folder in sorted({p.rpartition("/")[0] for p in paths}):
            snap = self.model.snap()
            result = self.request(
                "readMany/read", "read-probe", {"paths": [f"{folder}/*"], "format": "json"}
            )
            where = f"probe {folder}/*"
            listed = {f["path"] for f in result["files"] if f.get("code") != "no-match"}
            self.checker.listing(listed, lambda p, f=folder: p.rpartition("/")[0] == f, snap, where)
            out = json.loads(result["llmContent"])["results"]
            for path, got in out.items():
                if got["status"] == "ok":
                    self.checker.content(path, got["content"], snap, None, where)

    def cursor(self) -> None:
        params: dict[str, Any] = {"paths": ["live/**"], "maxTotalFiles": 7, "format": "json"}
        delivered: set[str] = set()
        for page in range(3):
            snap = self.model.snap()
            result = self.request("readMany/read", "read-cursor", params)
            where = f"cursor page {page + 1}"
            out = json.loads(result["llmContent"])["results"]
            for path, got in out.items():
                if got["status"] == "ok":
                    self.checker.content(path, got["content"], snap, None, where)
            included = {f["path"] for f in result["files"] if f.get("code") != "no-match"}
            self.checker.ghosts(included, snap, where)
            # A file the budget cut goes on at the next page: it is done when it is not cut.
            ok = {
                f["path"]
                for f in result["files"]
                if f["status"] == "ok" or (f["status"] == "partial" and f.get("code") != "budget")
            }
            if ok & delivered:
                self.results.violation("cursor repeat", f"{where}: {sorted(ok & delivered)}")
            delivered |= ok
            if not result.get("nextCursor"):
                return
            params = {"cursor": result["nextCursor"]}


# ------------------------------------------------------------------------------ measuring


def proc_status(pid: int, field_name: str) -> int | None:
    """``VmRSS``/``VmHWM`` of ``pid`` in bytes, or None."""
    with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    return None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_table(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            "count": len(values),
            "p50_ms": round(percentile(values, 50) * 1000, 2),
            "p90_ms": round(percentile(values, 90) * 1000, 2),
            "p99_ms": round(percentile(values, 99) * 1000, 2),
            "max_ms": round(max(values) * 1000, 2),
        }
        for name, values in sorted(samples.items())
        if values
    }


def markdown(report: dict[str, Any]) -> str:
    mib = 1024 * 1024
    rss = report["rss"]
    lines = [
        f"### Load: {report['clients']} clients x {report['seconds']} s "
        f"({report['requests']} requests, {report['requests_per_second']} req/s, "
        f"{report['errors']} errors, {report['violations']} violations)",
        "",
        "| method / kind | requests | p50 ms | p90 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    rows = [*report["latency"].items()]
    rows += [(f"  {k}", v) for k, v in report["latency_by_kind"].items() if k.startswith("read-")]
    for name, row in rows:
        lines.append(
            f"| {name} | {row['count']} | {row['p50_ms']} | {row['p90_ms']} "
            f"| {row['p99_ms']} | {row['max_ms']} |"
        )
    lines += [
        "",
        f"Daemon RSS: start {rss['start'] / mib:.1f} MiB, end {rss['end'] / mib:.1f} MiB, "
        f"peak (VmHWM) {rss['peak'] / mib:.1f} MiB. Writer: {report['writer_ops']}.",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the test


@dataclass
class LoadRun:
    report: dict[str, Any]
    results: Results
    writer_error: BaseException | None
    daemon_errors: list[str]


def make_tree(root: Path) -> dict[str, str]:
    static = {f"src/pkg{i % 4}/m{i}.py": f"static module {i}\n" for i in range(STATIC_FILES)}
    write_tree(root, static)
    for k in range(LIVE_DIRS):
        (root / f"live/d{k}").mkdir(parents=True)
    return static


def run_load(home: Path, root: Path, clients: int, seconds: float) -> LoadRun:
    """Start a daemon, run ``clients`` workers for ``seconds`` beside the writer, stop
    everything (always) and return what was seen."""
    loadavg_before = list(os.getloadavg())
    daemon = Daemon(make_env(home))
    static = make_tree(root)
    git(root, "init", "-q", env=daemon.env)
    model = Model()
    results = Results()
    checker = Checker(model, static, results)
    stop, abort = threading.Event(), threading.Event()
    writer = Writer(root, model, stop, seed=7)
    writer.fill()
    writer.prober = Worker(-1, daemon, root, checker, 0.0, abort)
    threads: list[threading.Thread] = []
    writer_thread = threading.Thread(target=writer.run, name="load-writer", daemon=True)
    try:
        daemon.start()
        with daemon.session(root) as first:
            first.request("readMany/files", {"patterns": ["**"]})  # index the root
            wait_for(lambda: status_root(first, root)["watcher"]["state"] == "running")
            rss_start = proc_status(daemon.pid, "VmRSS") or 0
            deadline = time.monotonic() + seconds
            workers = [Worker(n, daemon, root, checker, deadline, abort) for n in range(clients)]
            threads = [threading.Thread(target=w.run, name=f"load-{w.number}") for w in workers]
            began = time.monotonic()
            writer_thread.start()
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=max(0.0, deadline - time.monotonic()) + 120)
            elapsed = time.monotonic() - began
            stop.set()
            writer_thread.join(timeout=30)
            hung = [t.name for t in threads if t.is_alive()] + (
                ["writer"] if writer_thread.is_alive() else []
            )
            if hung:
                results.error(f"threads still running after the deadline: {hung}")
            # Quiet now: one last expansion must equal the model exactly.
            snap = model.snap()
            final = first.request(
                "readMany/read",
                {"paths": ["**"], "format": "json", "maxTotalFiles": 1000},
            )
            listed = {f["path"] for f in final["files"]}
            want = set(snap.state) | set(static)
            if listed != want:
                results.violation(
                    "final listing",
                    f"missing {sorted(want - listed)[:10]}, extra {sorted(listed - want)[:10]}",
                )
            out = json.loads(final["llmContent"])["results"]
            for path, got in out.items():
                checker.content(path, got.get("content", ""), snap, None, "final")
            rss_end = proc_status(daemon.pid, "VmRSS") or 0
            watcher_end = status_root(first, root)["watcher"]
            rss_peak = proc_status(daemon.pid, "VmHWM") or 0
        daemon_log = Path(daemon.env["XDG_STATE_HOME"]) / "readmany" / "daemon.log"
        log_text = daemon_log.read_text(errors="replace") if daemon_log.exists() else ""
        daemon_errors = [
            line
            for line in [*daemon.stderr, *log_text.splitlines()]
            if "Traceback" in line or " ERROR " in line or "CRITICAL" in line
        ]
        daemon_warnings = [line for line in daemon.stderr if " WARNING " in line]
        alive = daemon.proc is not None and daemon.proc.poll() is None
        if not alive:
            results.error(f"the daemon exited: {daemon.stderr[-5:]}")
    finally:
        abort.set()
        stop.set()
        for t in threads:
            t.join(timeout=30)
        if writer_thread.is_alive():
            writer_thread.join(timeout=30)
        daemon.cleanup()
    requests = sum(len(v) for v in results.latency.values())
    report = {
        "benchmark": "load",
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "loadavg_before": loadavg_before,
            "loadavg_after": list(os.getloadavg()),
        },
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests": requests,
        "requests_per_second": round(requests / elapsed, 1),
        "errors": len(results.errors),
        "error_samples": results.errors[:MAX_REPORTED],
        "violations": sum(results.violation_count.values()),
        "violation_counts": dict(results.violation_count),
        "violation_samples": results.violations,
        "checked": dict(results.checked),
        "fresh_instances": results.fresh_instances,
        "writer_ops": dict(writer.ops),
        "live_files_end": len(model.state),
        "watcher_end": watcher_end,
        "daemon_warnings": daemon_warnings[:MAX_REPORTED],
        "rss": {"start": rss_start, "end": rss_end, "peak": rss_peak},
        "latency": latency_table(results.latency),
        "latency_by_kind": latency_table(results.by_kind),
        "note": "client-side latency (send to parsed answer) on loopback; the clients, "
        "the writer and the daemon share the machine's CPUs",
    }
    return LoadRun(report, results, writer.error, daemon_errors)


def assert_clean(run: LoadRun) -> None:
    """Fail with a readable story (plain strings only: pytest's introspection of the
    ``Results`` object, tens of thousands of latencies, would take half a minute)."""
    report = run.report
    writer_error = repr(run.writer_error) if run.writer_error is not None else ""
    errors: list[str] = list(run.results.errors)
    violations = "\n".join(run.results.violations)
    counts = str(report["violation_counts"])
    daemon_errors: list[str] = list(run.daemon_errors)
    assert not writer_error, f"the writer failed: {writer_error}"
    assert not errors, f"{len(errors)} errors: {errors[:10]}"
    assert not violations, f"{counts}:\n{violations}"
    assert not daemon_errors, f"the daemon logged errors: {daemon_errors[:10]}"
    # The run really exercised what it claims to.
    ops = sum(report["writer_ops"].values())
    assert report["requests"] > 0 and ops > 20, f"{report['requests']} requests, {ops} writes"
    kinds = report["latency_by_kind"]
    for kind in ("read-named", "read-glob", "read-window", "files", "changedSince"):
        assert kinds.get(kind, {}).get("count", 0) > 0, f"no {kind} request was made"
    checked = dict(run.results.checked)
    assert checked.get("contents", 0) > 0 and checked.get("listings", 0) > 0, str(checked)
    assert checked.get("changedSince deltas", 0) > 0, str(checked)


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    yield tmp_path / "home", tmp_path / "ws"


def test_quick_load_is_fresh_and_error_free(dirs: tuple[Path, Path]) -> None:
    """8 clients x 3 s in the default suite: the same checks as the full load test."""
    run = run_load(*dirs, clients=8, seconds=3.0)
    print("\n" + markdown(run.report))
    assert_clean(run)


LOAD_SECONDS = float(os.environ.get("READMANY_LOAD_SECONDS", "60"))


@pytest.mark.slow
@pytest.mark.timeout(LOAD_SECONDS + 240)
def test_load_32_clients(dirs: tuple[Path, Path]) -> None:
    """32 clients for ``READMANY_LOAD_SECONDS`` (default 60); figures go to
    ``bench/results/load-latest.json`` and a Markdown summary is printed."""
    run = run_load(*dirs, clients=32, seconds=LOAD_SECONDS)
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(run.report, indent=2) + "\n"
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    (RESULTS / f"load-{stamp}.json").write_text(text, encoding="utf-8")
    (RESULTS / "load-latest.json").write_text(text, encoding="utf-8")
    print("\n" + markdown(run.report))
    assert_clean(run)
