"""Benchmark: the cost of receipts (``known``) on a warm read of 100 files.

Usage::

    python bench/bench_receipts.py [--files 100] [--runs 31] [--tree DIR]

Copies ``--files`` ``.py`` files of the running interpreter's standard library into a
fresh folder (``bench/.trees/receipts-N`` by default), waits until their ctimes are more
than the racy tick (2 s) old, opens it in-process with a content cache (warm, as the
daemon holds it) and times three requests, interleaved round by round, each naming the
files with ``preferFullRead`` and totals that hold them all:

* ``plain``: no ``known``;
* ``hold``: a receipt for every file, all true (every file comes back ``unchanged``);
* ``stale``: a receipt for every file, all false (every file is checked, and sent).

The receipts' cost is ``stale`` minus ``plain`` (the check alone, the content still
sent), per 100 known files; ``hold`` minus ``plain`` is what an answer saves when the
receipts hold. Target: the check costs ≤ 1 ms per 100 known files. Prints one Markdown
table and writes ``bench/results/receipts-latest.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import statistics
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.racy import RACY_NS
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyParams

#: The target: the receipts' check adds at most this many ms per 100 known files.
TARGET_MS_PER_100 = 1.0


def build(dest: Path, files: int) -> list[str]:
    """``files`` standard-library ``.py`` files copied flat into ``dest``; their names."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    names: list[str] = []
    for src in sorted(stdlib.glob("*.py")):
        if len(names) == files:
            break
        name = src.name
        (dest / name).write_bytes(src.read_bytes())
        names.append(name)
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--tree", type=Path, default=None)
    parser.add_argument("--results-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    dest = args.tree or REPO_ROOT / "bench" / ".trees" / f"receipts-{args.files}"
    names = build(dest, args.files)
    time.sleep(RACY_NS / 1e9 + 0.2)  # ctimes older than the racy tick: cache entries hold
    ws = Workspace.open(str(dest), Settings(), cache=ContentCache(256 << 20))
    common: dict[str, Any] = {
        "paths": names,
        "preferFullRead": True,
        "maxTotalFiles": len(names),
        "maxTotalChars": 1 << 30,
    }
    digests = {n: hashlib.sha256((dest / n).read_bytes()).hexdigest() for n in names}
    requests: dict[str, ReadManyParams] = {
        "plain": decode_read_params(common),
        "hold": decode_read_params(
            {**common, "known": [{"path": n, "sha256": d} for n, d in digests.items()]}
        ),
        "stale": decode_read_params(
            {**common, "known": [{"path": n, "sha256": "0" * 64} for n in names]}
        ),
    }
    first = {k: answer(ws, p) for k, p in requests.items()}  # warm: the cache filled
    assert first["hold"].summary.unchanged == len(names), first["hold"].summary
    assert first["stale"].summary.read == len(names) == first["plain"].summary.read
    times: dict[str, list[float]] = {k: [] for k in requests}
    order = list(requests)
    for round_ in range(args.runs):
        for k in order[round_ % 3 :] + order[: round_ % 3]:
            t0 = time.perf_counter()
            answer(ws, requests[k])
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    per100 = 100 / len(names)
    check = (med["stale"] - med["plain"]) * per100
    saved = (med["plain"] - med["hold"]) * per100
    verdict = "PASS" if check <= TARGET_MS_PER_100 else "FAIL"
    rows = [
        {"request": f"plain read of {len(names)} files (warm)", "median ms": f"{med['plain']:.2f}"},
        {
            "request": "with receipts that all hold (unchanged)",
            "median ms": f"{med['hold']:.2f}",
        },
        {
            "request": "with receipts that all fail (checked, sent)",
            "median ms": f"{med['stale']:.2f}",
        },
    ]
    print(table(rows))
    print(
        f"\nreceipt check: {check:+.3f} ms per 100 known files (target ≤ "
        f"{TARGET_MS_PER_100} ms): {verdict}; receipts that hold save {saved:.2f} ms per 100"
    )
    write_results(
        "receipts",
        {
            "tree": str(dest),
            "files": len(names),
            "runs_ms": {k: [round(s * 1000, 3) for s in v] for k, v in times.items()},
            "median_ms": med,
            "check_ms_per_100": round(check, 4),
            "saved_ms_per_100": round(saved, 4),
            "verdict": verdict,
        },
        args.results_dir,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
