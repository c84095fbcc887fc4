"""Benchmark: what ``focus`` adds to a warm read through the daemon (issue 25 item 6).

Usage::

    python bench/bench_focus_read.py --tree /work/trees/stdlib-100k [--runs 11] \\
        [--reuse FILE] [--glob PATTERN]

Starts a private daemon (``bench_daemon.Daemon``: its own socket, ``XDG_CACHE_HOME``,
``XDG_STATE_HOME``, ``XDG_RUNTIME_DIR``; stopped in a ``finally``), asks focused reads
until ``summary.ranking.pendingFiles`` is 0 (the root's full-text index built), waits
for the daemon's pass making outlines, tags and token counts ahead (``rank.ahead``: its
``ahead_meta`` row ``done`` in the root's index file; reported with its wall and CPU
seconds, the store's pages on disk and the daemon's RSS before and after), then
alternates, ``--runs`` times on one connection, four ``readMany/read`` requests of
``**/*.py`` (or ``--glob``) with a 20,000-token budget: without focus, with a focus of
~300 characters, with one of 2,000 (``bench_rank.FOCUS_300`` and ``_focus_2000``), and
with a ~300-character focus not asked before (``FOCUS_300`` and the name of another
module of the tree in backquotes each round, so that each of its three full-text
queries is new: the index's searches are kept while the index stays, so a focus asked
again costs less than a new one; and the rows of each word's phrase are kept too, so
that one new word costs its own rows only). Then ``--runs`` rounds of their own (their
searches would push the others' out of those the index keeps): a read without focus and
one with another ~300-character text each round (the first 300 characters of a module
docstring of the tree: most of its words not asked before, and mostly other files
ranked first). Reports each one's median milliseconds (client clock, request to parsed
answer), the focused ones' medians minus the unfocused one's, and the
median of each round's own difference (``paired``: the focused read minus the unfocused
one just before it, so that a burst of load from other processes weighs on both sides
of a difference): the issue's bounds are <= 30 ms (300 characters) and <= 100 ms
(2,000). ``--reuse FILE`` copies a full-text index built before (``bench_rank.py --keep
FILE`` on the same tree) where the daemon keeps the root's, so the build is a check of
every file. Writes ``bench/results/focus_read-latest.json``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import shutil
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench_daemon import private_home, running, vm_rss
from bench_rank import FOCUS_300, _focus_2000
from common import REPO_ROOT, table, write_results

sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.index.snapshot import snapshot_path
from readmany_daemon.rank.fulltext import rank_path
from readmany_daemon.runtime.roots import index_key
from readmany_daemon.settings import Settings

BUDGET = 20_000
#: Longest wait (seconds) for the daemon's full-text index.
BUILD_TIMEOUT = 1800.0


def _params(focus: str | None, glob: str = "**/*.py") -> dict[str, Any]:
    params: dict[str, Any] = {"paths": [glob], "maxTotalTokens": BUDGET}
    if focus is not None:
        params["focus"] = focus
    return params


def _new_words(tree: str, n: int) -> list[str]:
    """``n`` distinct module names of ``tree`` (lower-case identifiers of 5 letters or
    more, none a word of ``FOCUS_300``): one new search word per focused read."""
    seen = set(FOCUS_300.lower().split())
    out: dict[str, None] = {}
    for _, _, names in os.walk(tree):
        for name in sorted(names):
            stem = name.removesuffix(".py")
            if stem == name or stem in seen or len(stem) < 5:
                continue
            if stem.isidentifier() and stem.islower() and "_" not in stem:
                out.setdefault(stem, None)
        if len(out) >= n:
            break
    if len(out) < n:
        raise RuntimeError(f"{tree}: fewer than {n} module names")
    return list(out)[:n]


def _new_texts(tree: str, n: int, chars: int = 300) -> list[str]:
    """``n`` distinct texts of ``chars`` characters from ``tree``: the module docstrings
    (whitespace collapsed) of its ``.py`` files that are at least that long, in walk
    order."""
    out: dict[str, None] = {}
    for folder, dirs, names in os.walk(tree):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    doc = ast.get_docstring(ast.parse(f.read())) or ""
            except (OSError, SyntaxError, ValueError):
                continue
            text = " ".join(doc.split())
            if len(text) >= chars:
                out.setdefault(text[:chars], None)
            if len(out) >= n:
                return list(out)
    raise RuntimeError(f"{tree}: fewer than {n} module docstrings of {chars} characters")


def _pid(daemon: Any) -> int:
    assert daemon.proc is not None
    return int(daemon.proc.pid)


def _ahead_done(rank_file: str, t0: float) -> dict[str, Any]:
    """Wait until the daemon's pass making outlines and tags ahead is done (its
    ``ahead_meta`` row ``done`` in the root's full-text index file, ``rank.ahead``);
    what it says then, ``done_s`` (seconds since ``t0``) and ``store_bytes`` (the
    ahead tables' pages, SQLite's ``dbstat``)."""
    with contextlib.closing(sqlite3.connect(f"file:{rank_file}?mode=ro", uri=True)) as db:
        while True:
            with contextlib.suppress(sqlite3.Error):
                meta = dict(db.execute("SELECT key, value FROM ahead_meta"))
                if meta.get("done") == 1:
                    break
            if time.perf_counter() - t0 > BUILD_TIMEOUT:
                raise RuntimeError("the outlines and tags made ahead never completed")
            time.sleep(1.0)
        meta["done_s"] = time.perf_counter() - t0
        q = "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'ahead%'"
        meta["store_bytes"] = int(db.execute(q).fetchone()[0])
    return meta


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--reuse", help="a full-text index of TREE built before")
    ap.add_argument("--glob", default="**/*.py", help="the pattern read (default **/*.py)")
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args()
    tree = os.path.realpath(args.tree)
    cases = {"no focus": None, "focus ~300 chars": FOCUS_300, "focus 2,000 chars": _focus_2000()}
    fresh = iter(_new_words(tree, args.runs + 2))
    texts = iter(_new_texts(tree, args.runs + 1))
    new = "focus ~300 chars, new each read"
    other = "another ~300-char text each read"
    with private_home("rmfr") as home:
        environ = {"XDG_CACHE_HOME": str(home / "cache"), "HOME": str(home)}
        key = (tree, *index_key(Settings()))
        target = rank_path(snapshot_path(tree, key, environ))
        if args.reuse:
            os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
            shutil.copyfile(args.reuse, target)
            os.chmod(target, 0o600)
        with running(home) as daemon:
            client = daemon.connect(Path(tree))
            try:
                t0 = time.perf_counter()
                while True:
                    got = client.request("readMany/read", _params(FOCUS_300))
                    pending = got["summary"]["ranking"]["pendingFiles"]
                    if not pending:
                        break
                    if time.perf_counter() - t0 > BUILD_TIMEOUT:
                        raise RuntimeError(f"{pending} files still pending")
                    time.sleep(1.0)
                ready = time.perf_counter() - t0
                rss_ready = vm_rss(_pid(daemon))
                ahead = _ahead_done(target, t0)
                rss_ahead = vm_rss(_pid(daemon))
                times: dict[str, list[float]] = {name: [] for name in [*cases, new]}
                for _ in range(2):  # warm-up
                    for focus in cases.values():
                        client.request("readMany/read", _params(focus, args.glob))
                    client.request(
                        "readMany/read", _params(f"{FOCUS_300} `{next(fresh)}`", args.glob)
                    )
                for _ in range(args.runs):
                    round_cases = {**cases, new: f"{FOCUS_300} `{next(fresh)}`"}
                    for name, focus in round_cases.items():
                        t = time.perf_counter()
                        client.request("readMany/read", _params(focus, args.glob))
                        times[name].append(time.perf_counter() - t)
                # then rounds of their own (their searches would push the others' out
                # of those the index keeps): no focus, then another text
                beside: dict[str, list[float]] = {"no focus": [], other: []}
                client.request("readMany/read", _params(next(texts), args.glob))
                for _ in range(args.runs):
                    for name, focus in (("no focus", None), (other, next(texts))):
                        t = time.perf_counter()
                        client.request("readMany/read", _params(focus, args.glob))
                        beside[name].append(time.perf_counter() - t)
                rss_end = vm_rss(_pid(daemon))
            finally:
                client.exit()
    rows = []
    for name, ts, plain in [
        *((name, ts, times["no focus"]) for name, ts in times.items()),
        (other, beside[other], beside["no focus"]),
    ]:
        base = statistics.median(plain)
        med = statistics.median(ts)
        paired = statistics.median(t - p for t, p in zip(ts, plain, strict=True))
        focused = name != "no focus"
        rows.append(
            {
                "read": name,
                "p50 ms": round(med * 1000, 1),
                "added ms": round((med - base) * 1000, 1) if focused else "",
                "added ms (paired)": round(paired * 1000, 1) if focused else "",
            }
        )
    print(f"index ready after {ready:.1f} s; {args.runs} alternating runs")
    mib = 2**20
    print(
        f"outlines and tags made ahead: done {ahead['done_s']:.1f} s after the first read,"
        f" the pass {ahead.get('wall_s', 0):.1f} s wall, {ahead.get('cpu_s', 0):.1f} s CPU,"
        f" {ahead.get('files', 0):,} files checked, {ahead.get('made', 0):,} texts made"
        f" ({ahead.get('bytes', 0) / mib:,.1f} MB); store {ahead['store_bytes'] / mib:,.1f} MB"
        f" on disk ({ahead['store_bytes'] / max(1, ahead.get('bytes', 0)):.3f} MB per MB made)"
    )
    print(
        f"daemon RSS: index ready {rss_ready / mib:,.1f} MB, pass done {rss_ahead / mib:,.1f} MB,"
        f" after the reads {rss_end / mib:,.1f} MB"
    )
    ahead.update(rss_ready=rss_ready, rss_ahead=rss_ahead, rss_end=rss_end)
    print(table(rows))
    write_results(
        "focus_read",
        {"tree": tree, "glob": args.glob, "ready_s": ready, "ahead": ahead, "rows": rows},
        args.results_dir,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
