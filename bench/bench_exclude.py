"""Benchmark: a request ``exclude`` list of 260 patterns over the 100,000-file tree.

Usage::

    python bench/bench_exclude.py [--tree DIR] [--files N] [--runs 5] [--patterns 260] [--quick]

Builds or reuses the tree (``bench/.trees/stdlib-100k`` by default, see ``gen_tree.py``;
``--quick`` alone uses a 300-file tree), opens it in-process with the index walked once
(warm, as the daemon holds it), and times, interleaved round by round:

* ``readMany/read`` of ``.`` (every visible file, default budgets) without and with the
  exclude list, and ``readMany/files`` of the whole root without and with it: the exclude
  list's cost is the difference of the medians (target ≤ 300 ms);
* the two matchers over that request's expansion, alone: ``GitPatterns.keep`` (one pass,
  the RE2 prefilter) and the loop it replaced, one ``GitPatterns.match`` per path (on
  today's compiled list, so faster than the code before ``keep`` was), with a check
  that both keep the same paths.

The exclude list is drawn with a fixed seed from the tree's own paths, so that it hits:
folder patterns (anchored and not), basenames, ``*.ext`` and ``prefix_*`` globs, path
globs with ``*``, ``?``, ``**`` and classes, and negations. It prints one Markdown table
and writes ``bench/results/exclude-latest.json``. Nothing is asserted: the exit status is
0 unless a measurement failed, or ``--strict`` and the target FAILs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_files import prepare_tree
from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.files import list_files
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.rules.patterns import GitPatterns
from readmany_daemon.settings import Settings
from readmany_daemon.wire.messages import FilesParams, ReadManyParams

#: The target: the exclude list adds at most this many seconds to a request.
TARGET_ADDED = 0.3


def exclude_patterns(paths: list[str], count: int, seed: int = 0) -> list[str]:
    """``count`` gitignore-syntax patterns drawn from ``paths`` (files), fixed by ``seed``."""
    rng = random.Random(seed)
    folders = sorted({p.rpartition("/")[0] for p in paths if "/" in p})
    deep = [d for d in folders if d.count("/") >= 2] or folders or ["x"]
    names = sorted({p.rpartition("/")[2] for p in paths}) or ["x"]
    stems = sorted({n.partition("_")[0] for n in names if "_" in n}) or ["x"]
    exts = sorted({n.rpartition(".")[2] for n in names if "." in n}) or ["x"]
    makers: list[Callable[[], str]] = [
        lambda: "/" + rng.choice(deep) + "/",
        lambda: rng.choice(deep).rpartition("/")[2] + "/",
        lambda: rng.choice(names),
        lambda: "*." + rng.choice(exts),
        lambda: rng.choice(stems) + "_*",
        lambda: rng.choice(folders) + "/*." + rng.choice(exts),
        lambda: "**/" + rng.choice(deep).rpartition("/")[2] + "/**/*.py",
        lambda: rng.choice(deep)[:-1] + "?/" + rng.choice(names),
        lambda: "[a-m]" + rng.choice(names)[1:],
        lambda: "!" + rng.choice(paths),
    ]
    out: list[str] = []
    while len(out) < count:
        pat = rng.choice(makers)()
        if pat not in out:
            out.append(pat)
    return out


def per_path(ex: GitPatterns, paths: list[str]) -> list[str]:
    """The matcher requests used before ``GitPatterns.keep``: one ``match`` per path."""
    return [p for p in paths if not ex.match(p)]


def median_ms(runs: list[float]) -> float:
    return statistics.median(runs) * 1000


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, help="the tree (default: the 100k tree)")
    parser.add_argument("--files", type=int, help="tree size to build (default 100,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--patterns", type=int, default=260)
    parser.add_argument("--quick", action="store_true", help="one run (300-file tree alone)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target FAILs")
    parser.add_argument("--results-dir", type=Path)
    args = parser.parse_args(argv)
    files = 300 if args.quick and args.tree is None and args.files is None else args.files
    root, _ = prepare_tree(args.tree, files, args.seed)
    runs = 1 if args.quick else args.runs

    ws = Workspace.open(str(root), Settings())
    visible = ws.index.files(Filters())
    excludes = exclude_patterns(visible, args.patterns, args.seed)
    plain_read = ReadManyParams(paths=["."])
    excl_read = ReadManyParams(paths=["."], exclude=excludes)
    plain_files = FilesParams()
    excl_files = FilesParams(exclude=excludes)
    matches = ws.expand("dir", "", Filters(), True, Counter())

    cases: dict[str, Callable[[], Any]] = {
        "read plain": lambda: answer(ws, plain_read),
        "read excl": lambda: answer(ws, excl_read),
        "files plain": lambda: list_files(ws, plain_files),
        "files excl": lambda: list_files(ws, excl_files),
        "keep": lambda: GitPatterns(excludes).keep(matches),
        "match": lambda: per_path(GitPatterns(excludes), matches),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    last: dict[str, Any] = {}
    for k, fn in cases.items():  # warm-up (the expansion, the content cache)
        if k != "match":
            fn()
    names = list(cases)
    for round_ in range(runs):
        for offset in range(len(names)):
            name = names[(round_ + offset) % len(names)]
            if name == "match" and len(times["match"]) >= 3:
                continue  # the old matcher takes seconds: three runs are enough
            seconds, last[name] = timed(cases[name])
            times[name].append(seconds)

    same = last["keep"] == last["match"]
    read_added = median_ms(times["read excl"]) - median_ms(times["read plain"])
    files_added = median_ms(times["files excl"]) - median_ms(times["files plain"])
    verdict = "PASS" if max(read_added, files_added) <= TARGET_ADDED * 1000 else "FAIL"
    rows = [
        {
            "request": f"readMany/read of . ({len(matches):,} matches)",
            "without ms": f"{median_ms(times['read plain']):.1f}",
            f"with {len(excludes)} excludes ms": f"{median_ms(times['read excl']):.1f}",
            "added ms": f"{read_added:.1f}",
            "target": f"≤ {TARGET_ADDED * 1000:.0f}",
        },
        {
            "request": f"readMany/files ({len(visible):,} files)",
            "without ms": f"{median_ms(times['files plain']):.1f}",
            f"with {len(excludes)} excludes ms": f"{median_ms(times['files excl']):.1f}",
            "added ms": f"{files_added:.1f}",
            "target": f"≤ {TARGET_ADDED * 1000:.0f}",
        },
        {
            "request": "matcher alone: GitPatterns.keep (one pass, RE2 prefilter)",
            "without ms": "-",
            f"with {len(excludes)} excludes ms": f"{median_ms(times['keep']):.1f}",
            "added ms": f"{median_ms(times['keep']):.1f}",
            "target": "-",
        },
        {
            "request": "matcher alone: a GitPatterns.match per path (the old loop)",
            "without ms": "-",
            f"with {len(excludes)} excludes ms": f"{median_ms(times['match']):.1f}",
            "added ms": f"{median_ms(times['match']):.1f}",
            "target": "-",
        },
    ]
    print(table(rows))
    kept = len(last["keep"])
    print(
        f"\nexclude list keeps {kept:,} of {len(matches):,} matches; "
        f"both matchers agree: {'yes' if same else 'NO'}"
    )
    print(f"target exclude list adds ≤ {TARGET_ADDED * 1000:.0f} ms: {verdict}")
    write_results(
        "exclude",
        {
            "tree": str(root),
            "patterns": excludes,
            "runs_ms": {k: [round(s * 1000, 3) for s in v] for k, v in times.items()},
            "read_added_ms": round(read_added, 3),
            "files_added_ms": round(files_added, 3),
            "same": same,
            "verdict": verdict,
        },
        args.results_dir,
    )
    if not same:
        return 1
    return 1 if args.strict and verdict == "FAIL" else 0


if __name__ == "__main__":
    raise SystemExit(main())
