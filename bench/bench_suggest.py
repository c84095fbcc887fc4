"""Benchmark: "did you mean" over 100,000 paths, rapidfuzz against difflib.

Usage::

    python bench/bench_suggest.py [--paths 100000] [--queries 40] [--runs 5]

The paths are the running interpreter's standard library names laid out as
``gen_tree.py`` lays them out (``copy00/`` … ``copyNN/``), nothing written to disk. The
queries are drawn with a fixed seed: half one letter off (a letter of the file name
dropped), half one folder off (a folder renamed or dropped). Times, interleaved round by
round, ``engine.suggest.closest`` (what a ``not-found`` answer runs) per query, and
``difflib.get_close_matches`` for one query (it takes seconds). Also counts how often
the path the query was made from is among the suggestions (the same file in another
``copyNN/`` counts: it is exactly as close). Prints one Markdown table and
writes ``bench/results/suggest-latest.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import difflib
import os
import random
import statistics
import sys
import sysconfig
import time
from pathlib import Path

from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.engine.suggest import closest

#: The target (issue 14 item 5): one query over 100,000 paths in about this many ms.
TARGET_MS = 20.0


def stdlib_names() -> list[str]:
    """The standard library's files (relative, sorted), as ``gen_tree.py`` copies them."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("site-packages", "__pycache__")]
        for name in files:
            out.append(str((Path(folder) / name).relative_to(root)))
    return sorted(out)


def make_paths(count: int) -> list[str]:
    names = stdlib_names()
    return sorted(f"copy{i // len(names):02d}/{names[i % len(names)]}" for i in range(count))


def make_queries(paths: list[str], count: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """``(kind, query, the path it was made from)``, ``count`` of them."""
    rng = random.Random(seed)
    out: list[tuple[str, str, str]] = []
    while len(out) < count:
        path = rng.choice(paths)
        parts = path.split("/")
        if len(out) % 2 == 0:
            name = parts[-1]
            k = rng.randrange(len(name))
            out.append(("one letter off", "/".join([*parts[:-1], name[:k] + name[k + 1 :]]), path))
        elif len(parts) > 2:
            j = rng.randrange(1, len(parts) - 1)
            changed = parts[:j] + (["misc"] if rng.random() < 0.5 else []) + parts[j + 1 :]
            out.append(("one folder off", "/".join(changed), path))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--paths", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    paths = make_paths(args.paths)
    queries = make_queries(paths, args.queries)
    times: list[float] = []
    found: dict[str, list[int]] = {}
    for _ in range(args.runs):
        for kind, query, want in queries:
            t = time.perf_counter()
            got = closest(query, paths)
            times.append((time.perf_counter() - t) * 1000)
            hit = found.setdefault(kind, [0, 0])
            hit[0] += any(g.split("/", 1)[1] == want.split("/", 1)[1] for g in got)
            hit[1] += 1
    t = time.perf_counter()
    difflib.get_close_matches(queries[0][1], paths, n=3)
    difflib_ms = (time.perf_counter() - t) * 1000
    med = statistics.median(times)
    rows = [
        {
            "matcher": f"engine.suggest.closest (rapidfuzz), {len(paths):,} paths",
            "median ms": med,
            "min ms": min(times),
            "max ms": max(times),
            "found": ", ".join(f"{k} {h}/{n}" for k, (h, n) in found.items()),
            "target": f"≤ {TARGET_MS:.0f} ms: {'PASS' if med <= TARGET_MS else 'FAIL'}",
        },
        {
            "matcher": "difflib.get_close_matches, one query",
            "median ms": difflib_ms,
            "min ms": difflib_ms,
            "max ms": difflib_ms,
            "found": "-",
            "target": "-",
        },
    ]
    print(table(rows))
    write_results(
        "suggest",
        {"rows": rows, "paths": len(paths), "queries": len(queries), "runs": args.runs},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
