"""Benchmark: what the change ledger adds to a warm read (PROTOCOL §4, "Stale files").

Usage::

    python bench/bench_ledger.py [--entries 10000] [--runs 41] [--tree DIR]

Writes ``--entries`` small files into a fresh folder (``bench/.trees/ledger-N`` by
default), opens it in a ``Service`` with its watcher (as the daemon does), gives them
all to a session's ``Ledger`` by one read (``runtime.stale.read_with_stale``, as an LSP
connection's read), waits until their ctimes are more than the racy tick (2 s) old, and
times a warm read of 10 other files, interleaved round by round:

- ``no ledger``: ``Service.read_sync`` alone (a one-shot call);
- ``fed``: ``read_with_stale`` with that ledger: the entries are checked only where the
  root's change log names them after the barrier's mark (nothing changed: none);
- ``by stat``: the same read, then a second ledger of the same entries checked without
  a mark (``answer_stale``), as an MCP session's ledger or a root with no watcher is:
  one ``stat`` per entry.

The ledger's cost is the difference of the medians; target ≤ 5 ms for ``fed``. Prints
one Markdown table and writes ``bench/results/ledger-latest.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.racy import RACY_NS
from readmany_daemon.runtime.ledger import Ledger
from readmany_daemon.runtime.requests import RequestContext
from readmany_daemon.runtime.service import Service
from readmany_daemon.runtime.stale import answer_stale, read_with_stale
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import decode_read_request

#: The target: checking the ledger adds at most this many ms to a warm read (p50).
TARGET_MS = 5.0


def build(dest: Path, entries: int) -> None:
    """``entries`` files of about 40 bytes in folders of 500 under ``dest`` (``d*/``),
    and 10 more (``read/``) for the read itself."""
    shutil.rmtree(dest, ignore_errors=True)
    for i in range(entries):
        path = dest / f"d{i // 500:03d}" / f"f{i:06d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"entry {i}\n" * 4)
    for i in range(10):
        path = dest / "read" / f"r{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{i}():\n    return {i}\n" * 20)


#: The command line: flag → (type, default).
OPTIONS: dict[str, tuple[type, object]] = {
    "--entries": (int, 10_000),
    "--runs": (int, 41),
    "--tree": (Path, None),
    "--results-dir": (Path, None),
}


def setup(argv: list[str] | None, description: str) -> tuple[argparse.Namespace, Path, str]:
    """The command line (``OPTIONS``) parsed, and the tree built: (the arguments, the
    tree's folder, its real path)."""
    parser = argparse.ArgumentParser(description=description)
    for flag, (kind, default) in OPTIONS.items():
        parser.add_argument(flag, type=kind, default=default)
    args = parser.parse_args(argv)
    dest = args.tree or REPO_ROOT / "bench" / ".trees" / f"ledger-{args.entries}"
    build(dest, args.entries)
    return args, dest, os.path.realpath(dest)


def main(argv: list[str] | None = None) -> int:
    args, dest, root = setup(argv, __doc__.split("\n\n")[0])
    # The watcher's cookie folder: a private one, removed at the end.
    cookies = tempfile.mkdtemp(prefix="readmany-bench-ledger-")
    os.environ["XDG_RUNTIME_DIR"] = cookies
    svc = Service(Settings(), watch=True, snapshots=False, warm_cache=False)
    try:
        entry = svc.acquire(root, Settings())
        svc.call(RequestContext(1), svc.index_sync, entry)
        watcher = entry.watcher
        assert watcher is not None and watcher.wait_started(30)
        while watcher.state != "running":
            time.sleep(0.01)
        fed, by_stat = Ledger(), Ledger()
        everything = {"paths": ["d*/*.txt"], "maxTotalFiles": args.entries}
        everything["maxTotalChars"] = 100 * args.entries
        req = decode_read_request(everything)
        result, _ = svc.call(RequestContext(1), read_with_stale, svc, entry, req, fed)
        files = [(f.path, f.status, f.sha256) for f in result.files]
        answer_stale(by_stat, files, root, False, time.time_ns())
        assert len(fed) == len(by_stat) == args.entries, (len(fed), len(by_stat))
        time.sleep(RACY_NS / 1e9 + 0.2)  # ctimes older than the racy tick: stats prove them
        small = decode_read_request({"paths": ["read/*.py"]})

        def read(kind: str) -> None:
            if kind == "fed":
                got, _ = svc.call(RequestContext(1), read_with_stale, svc, entry, small, fed)
                assert not got.stale
                return
            got = svc.call(RequestContext(1), svc.read_sync, entry, small)
            if kind == "by stat":
                began = time.time_ns()
                files = ((f.path, f.status, f.sha256) for f in got.files)
                assert not answer_stale(by_stat, files, root, False, began)

        kinds = ["no ledger", "fed", "by stat"]
        for k in kinds:
            read(k)  # warm: the cache filled, the stat proofs taken after the tick
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for round_ in range(args.runs):
            order = kinds[round_ % 3 :] + kinds[: round_ % 3]
            for k in order:
                t0 = time.perf_counter()
                read(k)
                times[k].append(time.perf_counter() - t0)
        assert fed.last_stat_checks == 0, fed.last_stat_checks
    finally:
        svc.close()
        shutil.rmtree(cookies, ignore_errors=True)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    cost = {k: med[k] - med["no ledger"] for k in ("fed", "by stat")}
    verdict = "PASS" if cost["fed"] <= TARGET_MS else "FAIL"
    n = f"{args.entries:,}"
    rows = [
        {"request": "warm read of 10 files, no ledger", "median ms": f"{med['no ledger']:.2f}"},
        {
            "request": f"the same, {n} entries fed by the log",
            "median ms": f"{med['fed']:.2f}",
        },
        {"request": f"the same, {n} entries checked by stat", "median ms": f"{med['by stat']:.2f}"},
    ]
    print(table(rows))
    print(f"\nledger check, fed: {cost['fed']:+.2f} ms p50 (target ≤ {TARGET_MS} ms): {verdict}")
    print(f"ledger check, by stat: {cost['by stat']:+.2f} ms p50")
    save("ledger", dest, args, times, cost, verdict)
    return 0


def save(
    name: str,
    dest: Path,
    args: argparse.Namespace,
    times: dict[str, list[float]],
    cost: dict[str, float],
    verdict: str,
) -> None:
    """Write ``bench/results/{name}-latest.json``: the tree, the entries, the medians,
    the costs (ms), the verdict and every run (``times`` in seconds)."""
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    summary: dict[str, object] = {"tree": str(dest), "entries": args.entries}
    summary.update(median_ms=med, cost_ms={k: round(v, 3) for k, v in cost.items()})
    summary.update(verdict=verdict)
    summary["runs_ms"] = {k: [round(s * 1000, 3) for s in v] for k, v in times.items()}
    write_results(name, summary, args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
