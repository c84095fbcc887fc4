"""Benchmark: what the change ledger adds to a warm read (PROTOCOL §4, "Stale files").

Usage::

    python bench/bench_ledger.py [--entries 10000] [--runs 41] [--tree DIR]

Writes ``--entries`` small files into a fresh folder (``bench/.trees/ledger-N`` by
default), gives them all to a session's ``Ledger`` (their real ``sha256``), waits until
their ctimes are more than the racy tick (2 s) old, and times a warm in-process read of
10 other files followed by the session's ``stale`` (``runtime.ledger.answer_stale``, the
notice placed), with that ledger and with none (a one-shot call), interleaved round by
round. Nothing changed, so every entry is checked by its stat. The ledger's cost is the
difference of the medians; target ≤ 5 ms. Prints one Markdown table and writes
``bench/results/ledger-latest.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import statistics
import sys
import time
from pathlib import Path

from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.racy import RACY_NS
from readmany_daemon.runtime.ledger import Ledger
from readmany_daemon.runtime.stale import answer_stale, place_notice
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params

#: The target: checking the ledger adds at most this many ms to a warm read (p50).
TARGET_MS = 5.0


def build(dest: Path, entries: int) -> list[str]:
    """``entries`` files of about 40 bytes in folders of 500 under ``dest``, and 10
    more (``read/``) for the read itself; the entries' labels."""
    shutil.rmtree(dest, ignore_errors=True)
    names: list[str] = []
    for i in range(entries):
        name = f"d{i // 500:03d}/f{i:06d}.txt"
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"entry {i}\n" * 4)
        names.append(name)
    for i in range(10):
        path = dest / "read" / f"r{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{i}():\n    return {i}\n" * 20)
    return names


#: The command line: flag → (type, default).
OPTIONS: dict[str, tuple[type, object]] = {
    "--entries": (int, 10_000),
    "--runs": (int, 41),
    "--tree": (Path, None),
    "--results-dir": (Path, None),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag, (kind, default) in OPTIONS.items():
        parser.add_argument(flag, type=kind, default=default)
    args = parser.parse_args(argv)
    dest = args.tree or REPO_ROOT / "bench" / ".trees" / f"ledger-{args.entries}"
    names = build(dest, args.entries)
    ws = Workspace.open(str(dest), Settings(), cache=ContentCache(256 << 20))
    root = ws.root
    ledger = Ledger()
    given = [(n, "ok", hashlib.sha256((dest / n).read_bytes()).hexdigest()) for n in names]
    answer_stale(ledger, given, root, False, time.time_ns())
    time.sleep(RACY_NS / 1e9 + 0.2)  # ctimes older than the racy tick: stats prove them
    answer_stale(ledger, [], root, False, time.time_ns())  # proofs taken after the tick
    assert len(ledger) == args.entries
    params = decode_read_params({"paths": ["read/*.py"]})

    def read(session: Ledger | None) -> None:
        result, parts = answer(ws, params), ["x"]
        files = ((f.path, f.status, f.sha256) for f in result.files)
        stale = answer_stale(session, files, root, False, time.time_ns())
        place_notice(parts, params.format, stale)
        assert not stale

    read(ledger)
    read(None)  # warm: the cache filled
    times: dict[str, list[float]] = {"without": [], "with": []}
    for round_ in range(args.runs):
        order = ["without", "with"] if round_ % 2 else ["with", "without"]
        for k in order:
            t0 = time.perf_counter()
            read(ledger if k == "with" else None)
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    cost = med["with"] - med["without"]
    verdict = "PASS" if cost <= TARGET_MS else "FAIL"
    rows = [
        {"request": "warm read of 10 files, no ledger", "median ms": f"{med['without']:.2f}"},
        {
            "request": f"the same with {args.entries:,} ledger entries",
            "median ms": f"{med['with']:.2f}",
        },
    ]
    print(table(rows))
    print(f"\nledger check: {cost:+.2f} ms p50 (target ≤ {TARGET_MS} ms): {verdict}")
    summary: dict[str, object] = {"tree": str(dest), "entries": args.entries}
    summary.update(median_ms=med, cost_ms=round(cost, 3), verdict=verdict)
    summary["runs_ms"] = {k: [round(s * 1000, 3) for s in v] for k, v in times.items()}
    write_results("ledger", summary, args.results_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
