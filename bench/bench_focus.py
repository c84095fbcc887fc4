"""Benchmark: does ``focus`` fill the budget with the files a task needs (issue 25 item 6)?

Usage::

    python bench/bench_focus.py --repo CLONE --glob 'src/**/*.py' \\
        --fragments 'changelog/*' --commits 300

Cases: the most recent commits (no merges) of CLONE that add a towncrier-style changelog
fragment (a file ``--fragments`` matches) of 6 words or more and modify 1-4 files
``--glob`` matches. The task is the fragment's text (cut to 2,000 characters); the
needed files are those modified files. Each case runs in one temporary clone of CLONE
(``git clone --shared``; CLONE is never changed) moved to the commit's parent with
``git checkout``, so the history before the change is there.

Each case reads ``GLOB`` with the focus, a 20,000-token budget (o200k), whole files
(``preferFullRead``), every file matched (``maxTotalFiles`` 100000), with the root's
ranking kept as the daemon keeps it (``Workspace.rank_background``: the whole root in
the full-text index, built by a background thread; tags kept between calls), in one of
two ways:

* ``--via rank`` (default): the root's ranking (``Workspace.ranking``) once its
  ``pendingFiles`` is 0, then the packing the issue specifies: whole files in rank order
  while they fit, a file that does not fit passed over (each file costing its o200k
  tokens plus ``HEADER_TOKENS``);
* ``--via read``: the read itself, as the daemon answers it (``engine.answer`` on the
  root's ``Workspace``, the engine the daemon runs), repeated until
  ``summary.ranking.pendingFiles`` is 0: delivered = the entries with status ``ok``
  (the engine's ranked packing: at most one file cut, with its outline), the order
  for recall@5 from each entry's ``rank``.

``--settle``: once ``pendingFiles`` is 0, wait for git's answer to the recency signal
(as a daemon that answered at this commit before has it) and rank or read again until
``pendingFiles`` is 0 (recency may bring other files into the reference graph), so
that builds compared side by side rank with the same signals whatever the load.

Reported beside: path order, plain BM25 over content that this script computes
(``\\w+`` words, k1 = 1.2, b = 0.75, packed whole in score order, passing over), and the
ceiling (the needed files first). Metrics: the share of needed files delivered whole,
and recall@5 (the share of needed files among the first 5 by rank). ``--weights``
tries fusion weights (``content=1,names=.5,...``) on the signals of the same run
(``RootRanking.last_scores``) and prints the best, for choosing ``rank.root.WEIGHTS``.
Writes ``bench/results/focus-latest.json``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from common import REPO_ROOT, table, write_results
from wcmatch.glob import GLOBSTAR, globmatch

sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.content import tokens
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.rank import root as rank_root
from readmany_daemon.rules.kinds import ALL
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params

BUDGET = 20_000
#: What one delivered file costs beyond its text (its header line), o200k tokens.
HEADER_TOKENS = 12
FOCUS_CHARS = 2000
MIN_WORDS = 6
#: ``--settle``: how long (seconds) a case waits at most for git's answer to the recency
#: signal.
SETTLE_SECONDS = 30.0


def git(cwd: str | Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True
    ).stdout


def find_cases(repo: str, pattern: str, fragments: str, wanted: int) -> list[dict[str, Any]]:
    """The most recent qualifying commits, newest first."""
    out = git(repo, "log", "--no-merges", "--format=//%H %P", "--name-status", "--no-renames")
    cases: list[dict[str, Any]] = []
    for block in out.split("//")[1:]:
        lines = [line for line in block.splitlines() if line.strip()]
        head = lines[0].split()
        if len(head) < 2:
            continue
        sha, parent = head[0], head[1]
        added = [ln.split("\t", 1)[1] for ln in lines[1:] if ln.startswith("A\t")]
        modified = [ln.split("\t", 1)[1] for ln in lines[1:] if ln.startswith("M\t")]
        frags = [p for p in added if globmatch(p, fragments, flags=GLOBSTAR)]
        needed = sorted(p for p in modified if globmatch(p, pattern, flags=GLOBSTAR))
        if not frags or not 1 <= len(needed) <= 4:
            continue
        text = git(repo, "show", f"{sha}:{frags[0]}")
        if len(re.findall(r"\w+", text)) < MIN_WORDS:
            continue
        cases.append({"sha": sha, "parent": parent, "focus": text[:FOCUS_CHARS], "needed": needed})
        if len(cases) >= wanted:
            break
    return cases


def pack(order: Sequence[str], cost: Mapping[str, int], budget: int = BUDGET) -> set[str]:
    """Whole files in ``order`` while they fit; one that does not fit is passed over."""
    left = budget
    taken: set[str] = set()
    for path in order:
        c = cost[path] + HEADER_TOKENS
        if c <= left:
            taken.add(path)
            left -= c
    return taken


def bm25_order(texts: Mapping[str, str], query: str) -> list[str]:
    """Plain BM25 (k1 1.2, b 0.75) over ``\\w+`` lower-case words; ties in path order."""
    docs = {p: Counter(re.findall(r"\w+", t.lower())) for p, t in texts.items()}
    n = len(docs)
    avg = sum(sum(c.values()) for c in docs.values()) / max(1, n)
    q = set(re.findall(r"\w+", query.lower()))
    df = {w: sum(1 for c in docs.values() if w in c) for w in q}
    score: dict[str, float] = {}
    for p, c in docs.items():
        length = sum(c.values())
        s = 0.0
        for w in q:
            f = c.get(w, 0)
            if f:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / avg))
        score[p] = s
    return sorted(texts, key=lambda p: (-score[p], p))


def _workspace(work: Path, cache: Path) -> Workspace:
    """A workspace of ``work`` whose ranking is kept as the daemon keeps it (a thread
    indexing the whole root, tags kept between calls), its index file in ``cache``."""
    ws = Workspace.open(str(work), Settings())
    ws.rank_file = str(cache / f"index-{'ab' * 16}.rank")
    ws.rank_background = True
    return ws


def _complete(
    ws: Workspace, ask: Callable[[], Any], pending: Callable[[Any], int], settle: bool
) -> Any:
    """``ask()`` again until ``pending`` of its answer is 0; with the recency signal's git
    answer waited for then asked again until 0 once more (recency may graph other files:
    their tags too) when ``settle``."""
    got = None
    for settled in (False, True):
        if settled:
            if not settle:
                break
            ws.ranking.recency.settle(SETTLE_SECONDS)
            if ws.ranking.history is not None:
                ws.ranking.history.settle(SETTLE_SECONDS)
        for _ in range(1000):
            got = ask()
            if pending(got) == 0:
                break
    return got


def run_rank(
    work: Path, cache: Path, pattern: str, focus: str, settle: bool = False
) -> tuple[list[str], Any]:
    ws = _workspace(work, cache)
    candidates = ws.index.glob(pattern, ALL, True)
    got = _complete(
        ws, lambda: ws.ranking.rank(candidates, focus, []), lambda r: r.pending_files, settle
    )
    ranking = ws.ranking
    scores = (ranking.last_scores, ranking.last_sizes, ranking.last_named)
    ranking.close()
    return list(got.order), (candidates, scores)


def run_read(
    work: Path, cache: Path, pattern: str, focus: str, settle: bool = False
) -> tuple[list[str], set[str]]:
    """The focused read of ``pattern`` as the daemon answers it: (the files by ``rank``,
    those delivered whole). ``settle``: once ``pendingFiles`` is 0, wait for the
    recency signal's git answer and read again until it is 0."""
    ws = _workspace(work, cache)
    params = {
        "paths": [pattern],
        "focus": focus[:2000],
        "maxTotalTokens": BUDGET,
        "preferFullRead": True,
        "maxTotalFiles": 100000,
    }

    def pending(got: Any) -> int:
        ranking = got.summary.ranking
        return 1 if ranking is None else int(ranking.pending_files)

    got = _complete(ws, lambda: answer(ws, decode_read_params(params)), pending, settle)
    ws.ranking.close()
    ranked = sorted((f.rank, f.path) for f in got.files if f.rank is not None)
    return [p for _, p in ranked], {f.path for f in got.files if f.status == "ok"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--glob", default="src/**/*.py")
    ap.add_argument("--fragments", default="changelog/*")
    ap.add_argument("--commits", type=int, default=300)
    ap.add_argument("--via", choices=("rank", "read"), default="rank")
    ap.add_argument("--weights", action="store_true", help="search fusion weights")
    ap.add_argument(
        "--settle",
        action="store_true",
        help="wait for the recency signal's git answer before the measured ranking",
    )
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    cases = find_cases(repo, args.glob, args.fragments, args.commits)
    print(f"{len(cases)} cases", file=sys.stderr)
    methods = ("path order", "BM25", "focus", "ceiling")
    whole = Counter[str]()
    at5 = Counter[str]()
    total = 0
    kept: list[tuple[list[str], list[str], dict[str, int], Any]] = []
    seconds = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-focus-") as tmp:
        work = Path(tmp) / "work"
        cache = Path(tmp) / "cache"
        subprocess.run(["git", "clone", "-q", "--shared", repo, str(work)], check=True)
        for i, case in enumerate(cases):
            git(work, "checkout", "-q", "--detach", case["parent"])
            t0 = time.perf_counter()
            focus = case["focus"]
            order, (candidates, scores) = run_rank(work, cache, args.glob, focus, args.settle)
            read_whole: set[str] | None = None
            if args.via == "read":
                order, read_whole = run_read(work, cache, args.glob, focus, args.settle)
            seconds += time.perf_counter() - t0
            texts = {p: (work / p).read_text(errors="replace") for p in candidates}
            cost = {p: tokens.count(t) for p, t in texts.items()}
            delivered = pack(order, cost) if read_whole is None else read_whole
            needed = [p for p in case["needed"] if p in set(candidates)]
            if not needed:
                continue
            total += len(needed)
            orders: dict[str, list[str]] = {"focus": order}
            if texts:
                orders["path order"] = sorted(candidates)
                orders["BM25"] = bm25_order(texts, case["focus"])
                orders["ceiling"] = needed + [p for p in sorted(candidates) if p not in needed]
                kept.append((candidates, needed, cost, scores))
            for name, o in orders.items():
                got = delivered if name == "focus" else pack(o, cost)
                whole[name] += sum(1 for p in needed if p in got)
                at5[name] += sum(1 for p in needed if p in o[:5])
            if (i + 1) % 25 == 0:
                print(f"{i + 1}/{len(cases)}: focus {whole['focus'] / total:.3f}", file=sys.stderr)
    rows = [
        {
            "order": m,
            "delivered whole": f"{whole[m] / max(1, total):.3f}",
            "recall@5": f"{at5[m] / max(1, total):.3f}",
        }
        for m in methods
        if m in whole
    ]
    print(f"{len(cases)} cases, {total} needed files, {args.glob} of {repo}")
    print(table(rows))
    print(f"ranking: {seconds / max(1, len(cases)) * 1000:.0f} ms a case (index and tags included)")
    result: dict[str, Any] = {"cases": len(cases), "needed": total, "rows": rows}
    if args.weights and kept:
        result["weights"] = search_weights(kept)
    write_results("focus", result, args.results_dir)
    return 0


def search_weights(kept: list[tuple[list[str], list[str], dict[str, int], Any]]) -> list[Any]:
    """Delivered-whole share for each weight combination on the kept signals, best
    first (the best 8 printed)."""
    grid = {
        "content": (1.0,),
        "names": (0.4, 0.6, 0.8, 1.0),
        "references": (0.0, 0.1, 0.3),
        "recency": (0.0, 0.1, 0.2, 0.4),
        "history": (0.0, 0.2, 0.4, 0.6),
        "size": (0.0, 0.05, 0.1, 0.2),
    }
    results = []
    for combo in itertools.product(*grid.values()):
        weights = dict(zip(grid, combo, strict=True))
        hit = n = 0
        for candidates, needed, cost, (scores, sizes, named) in kept:
            order = rank_root.RootRanking.fuse(
                candidates, scores, sizes, weights, weights["size"], named
            )
            got = pack(order, cost)
            hit += sum(1 for p in needed if p in got)
            n += len(needed)
        results.append((hit / n, weights))
    results.sort(key=lambda r: -r[0])
    for share, w in results[:8]:
        print(f"{share:.3f} {w}")
    return results  # every combination (the JSON), best first


if __name__ == "__main__":
    sys.exit(main())
