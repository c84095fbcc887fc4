"""Benchmark: the read that finds a dead watcher thread (issue 22 item 2), against a read
after a write with a live watcher, in the same run.

Usage::

    python bench/bench_restart.py [--files 3000] [--trials 7]

Builds (or reuses) a ``gen_tree.py`` tree under ``bench/.trees/restart-<files>``, opens
it in an in-process ``Service`` with its watcher (as the daemon does), and per trial,
interleaved:

- **live**: write a new file, then ``readMany/read`` it (``sync: "auto"``): the barrier
  finds the kernel queue quiet or waits for one cookie;
- **dead reader**: make watchdog's inotify reader thread raise at its next look at the
  fd (as watchdog 7.1.1 did against the old override), wait until it has ended, write a
  new file, then read it: that read's barrier finds the thread gone, restarts the watcher
  (new inotify instance, every walked folder watched again, the root rescanned) and
  answers. Before issue 22 this read waited ``COOKIE_TIMEOUT`` (2 s) for a cookie and
  fell back to stat checks.

Each read must return the new file's content (else the run fails). ``MAX_RESTARTS`` is
raised for the run so every trial restarts. Prints one Markdown table (median, min, max
in ms; cookie round trips started by the dead-reader reads, which must be 0) and writes
``bench/results/restart-latest.json``. Nothing is asserted but correctness.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from common import REPO_ROOT, table, write_results
from gen_tree import build_tree

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.runtime import watcher as watcher_mod
from readmany_daemon.runtime.requests import RequestContext
from readmany_daemon.runtime.service import Service
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import decode_read_request


def _wait(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("bench_restart: timed out waiting for the watcher")
        time.sleep(0.002)


def _read(svc: Service, entry: Any, rel: str) -> str:
    req = decode_read_request({"paths": [rel], "format": "json"})
    return str(svc.call(RequestContext(1), svc.read_sync, entry, req).llm_content)


def _kill_reader(watcher: Any) -> None:
    fd = watcher._fd

    def broken(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("bench: reader ended")

    fd._check_inotify_fd = broken
    wake = Path(watcher._cookie_dir, "wake")
    wake.write_text("")
    _wait(lambda: not fd.is_alive())
    wake.unlink()


def run(files: int, trials: int) -> dict[str, Any]:
    """Measure ``trials`` pairs on a tree of ``files`` files; returns the results."""
    tree = build_tree(REPO_ROOT / "bench" / ".trees" / f"restart-{files}", files=files)
    root = Path(os.path.realpath(tree.root))
    watcher_mod.MAX_RESTARTS = trials + 1
    with tempfile.TemporaryDirectory(prefix="rmb-restart-") as runtime:
        os.environ["XDG_RUNTIME_DIR"] = runtime
        svc = Service(Settings(), watch=True, snapshots=False, warm_cache=False)
        try:
            entry = svc.acquire(str(root), Settings())
            svc.call(RequestContext(1), svc.index_sync, entry)
            watcher = entry.watcher
            assert watcher is not None and watcher.wait_started(60)
            _wait(lambda: watcher.state == "running")
            live: list[float] = []
            dead: list[float] = []
            trips = 0
            for n in range(trials):
                for kind in ("live", "dead"):
                    rel = f"bench-restart-{kind}-{n}.txt"
                    if kind == "dead":
                        _kill_reader(watcher)
                    before = watcher.cookie_round_trips
                    (root / rel).write_text(f"{kind} {n}\n")
                    started = time.perf_counter()
                    text = _read(svc, entry, rel)
                    took = (time.perf_counter() - started) * 1000
                    if f"{kind} {n}" not in text:
                        raise SystemExit(f"bench_restart: {rel} not read fresh")
                    (live if kind == "live" else dead).append(took)
                    if kind == "dead":
                        trips += watcher.cookie_round_trips - before
                    os.unlink(root / rel)
            walked = len(entry.ws.index.walked_dirs())
            shape = watcher_mod.barrier_shape()
        finally:
            svc.close()
    return {
        "files": files,
        "folders": walked,
        "trials": trials,
        "watchdog": version("watchdog"),
        "barrier": shape.barrier,
        "live_ms": live,
        "dead_ms": dead,
        "cookie_round_trips_after_death": trips,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--trials", type=int, default=7)
    args = parser.parse_args(argv)
    got = run(args.files, args.trials)
    rows = [
        {
            "read after a write": label,
            "median ms": statistics.median(got[key]),
            "min ms": min(got[key]),
            "max ms": max(got[key]),
        }
        for label, key in (("live watcher", "live_ms"), ("dead reader: restart", "dead_ms"))
    ]
    print(
        f"watchdog {got['watchdog']} (barrier {got['barrier']}), {got['files']} files in "
        f"{got['folders']} folders, {got['trials']} trials; cookie round trips started by "
        f"the reads after a death: {got['cookie_round_trips_after_death']}"
    )
    print(table(rows))
    write_results("restart", got)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
