"""Benchmark: the ranking's full-text index at scale (issue 25 items 2 and 6).

Usage::

    python bench/bench_rank.py --tree /work/trees/stdlib-100k [--limit N] [--tantivy]

On the tree (bench/gen_tree.py; 100,000 files), in one process:

* **build**: the root's full-text index built the daemon's way (``RootRanking`` with a
  background thread, ``rankingIndex: "always"``): every visible file read, decoded,
  redacted, identifiers split, written to SQLite FTS5; a big build prepares the texts in
  a worker process while the thread writes. Reports seconds, MB of text a second (text
  = the bytes of the files indexed), CPU seconds per wall second of this process and
  the worker (at most 2 cores), and the index file's size on disk per MB of text;
* **memory**: what the ranking holds in the daemon once built: ``VmRSS`` after the
  build minus before (as bench/README's other memory figures), bytes per file;
* **rank**: ``Ranking.rank`` of ``**/*.py`` with a focus of ~300 and of 2,000
  characters (median of ``--runs``, warm), the cost a focused read adds; **query**: the
  full-text search alone (the ~300-character focus's words, best 2,000 files);
* **update**: one file changed, reported by the index's listener, until the next
  ``rank`` sees it (median).

``--tantivy`` builds the same texts (same preprocessing) into a tantivy index as well
(``pip install tantivy``; not a dependency of readmany) and reports the same build,
size, query and update figures: how FTS5 was chosen. ``--limit`` indexes only the first
N files (path order) for both; ``--no-worker`` builds in the thread alone (one core:
what the worker process adds); ``--reuse FILE`` starts from a copy of an index built
before (the build columns then time the check of every file); ``--keep FILE`` copies
the built index there for later ``--reuse``. Writes
``bench/results/rank-latest.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import REPO_ROOT, table, write_results

sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.engine.redact import redact, redacted_text
from readmany_daemon.index.model import Index
from readmany_daemon.index.records import CONTENT, ENTRY
from readmany_daemon.rank.keeper import read_text
from readmany_daemon.rank.root import RootRanking
from readmany_daemon.rank.words import focus_words, index_text
from readmany_daemon.rules.kinds import ALL
from readmany_daemon.settings import Settings

FOCUS_300 = (
    "Fix the parser so that parse_known_args keeps unknown options in order when a "
    "subparser defines the same flag; getFixtureValue should report the scope of the "
    "request. The ThreadPoolExecutor shutdown must wait for pending futures and the "
    "logging handler flushes its stream."
)


def _focus_2000() -> str:
    words = (FOCUS_300 + " ") * 7
    return words[:2000]


def _rss() -> int:
    """This process's ``VmRSS`` (bytes), as bench/README's other memory figures."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _cpu() -> float:
    """CPU seconds of this process and of its ended children (the index's worker
    process, reaped when the build ends)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _du(path: str) -> int:
    """Bytes on disk of ``path`` and its SQLite side files (or a folder's files)."""
    if os.path.isdir(path):
        return sum(f.stat().st_blocks * 512 for f in Path(path).rglob("*") if f.is_file())
    return sum(
        os.stat(p).st_blocks * 512
        for p in (path, path + "-wal", path + "-shm")
        if os.path.exists(p)
    )


def _build_row(
    engine: str, files: int, text_bytes: int, wall: float, cpu: float, disk: int
) -> dict[str, Any]:
    return {
        "engine": engine,
        "files": files,
        "text MB": round(text_bytes / 1e6, 1),
        "build s": round(wall, 1),
        "MB/s": round(text_bytes / 1e6 / wall, 1),
        "cores": round(cpu / wall, 2),
        "disk MB per MB": round(disk / text_bytes, 2),
    }


def _median_ms(fn: Any, runs: int) -> float:
    """Median milliseconds of ``runs`` calls of ``fn`` after one warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(statistics.median(times) * 1000, 1)


def bench_fts5(
    tree: str,
    files: list[str],
    cache: str,
    runs: int,
    reuse: str | None = None,
    keep: str | None = None,
    worker: bool = True,
) -> dict[str, Any]:
    index = Index.build(tree, Settings())
    path = os.path.join(cache, f"index-{'cd' * 16}.rank")
    if reuse:  # an index built before: the "build" is the check of every file's mark
        shutil.copyfile(reuse, path)
    base = _rss()
    ranking = RootRanking(
        tree,
        lambda: index,
        path=path,
        mode="always",
        background=True,
        redact=redacted_text,
    )
    index.add_listener(ranking.note_change)
    keeper = ranking.keeper
    assert keeper is not None
    if not worker:
        keeper.pool_min_files = 0
    cpu0, t0 = _cpu(), time.perf_counter()
    keeper.start(files, True)
    while keeper.pending_count():
        keeper.wait(1.0)
    wall = time.perf_counter() - t0
    keeper.settle(60)  # the worker ends with the build: reaped, its CPU counted
    cpu = _cpu() - cpu0
    held = _rss() - base
    text_bytes = sum(os.lstat(os.path.join(tree, f)).st_size for f in files)
    engine = "SQLite FTS5" + (" (reused: build = check)" if reuse else "")
    engine += "" if worker else " (no worker)"
    out = _build_row(engine, len(files), text_bytes, wall, cpu, _du(path))
    out["memory B/file"] = round(held / len(files))
    words = focus_words(FOCUS_300)
    out["query ms"] = _median_ms(lambda: keeper.fulltext.search(words, 2000), runs)
    candidates = index.glob("**/*.py", ALL, True)
    for name, focus in (("rank 300 ms", FOCUS_300), ("rank 2000 ms", _focus_2000())):
        out[name] = _median_ms(lambda f=focus: ranking.rank(candidates, f, []), runs)
    inside = set(candidates)
    target = next(f for f in files[len(files) // 2 :] if f in inside)
    full = os.path.join(tree, target)
    original = Path(full).read_bytes()
    times = []
    try:
        for i in range(runs):
            Path(full).write_bytes(original + f"\n# zyxwvut{i}\n".encode())
            t = time.perf_counter()
            index.apply([(target, ENTRY | CONTENT)])
            got = ranking.rank(candidates, f"zyxwvut{i}", [])
            times.append(time.perf_counter() - t)
            assert got.order[0] == target, got.order[:3]
    finally:
        Path(full).write_bytes(original)
    out["update ms"] = round(statistics.median(times) * 1000, 1)
    out["candidates"] = len(candidates)
    ranking.close()
    if keep:  # for later runs' --reuse
        shutil.copyfile(path, keep)
    return out


def bench_tantivy(tree: str, files: list[str], cache: str, runs: int) -> dict[str, Any]:
    import tantivy

    folder = os.path.join(cache, "tantivy")
    os.makedirs(folder)
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("path", stored=True, tokenizer_name="raw")
    builder.add_text_field("body", stored=False)
    schema = builder.build()
    ix = tantivy.Index(schema, path=folder)
    cpu0, t0 = time.process_time(), time.perf_counter()
    writer = ix.writer(heap_size=128_000_000, num_threads=2)
    text_bytes = 0
    for rel in files:
        text_bytes += os.lstat(os.path.join(tree, rel)).st_size
        text = read_text(tree, rel)
        if text is None:
            continue
        writer.add_document(tantivy.Document(path=rel, body=index_text(redact(text).text)))
    writer.commit()
    writer.wait_merging_threads()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    ix.reload()
    out = _build_row("tantivy", len(files), text_bytes, wall, cpu, _du(folder))
    query = ix.parse_query(" OR ".join(focus_words(FOCUS_300)), ["body"])

    def search() -> None:
        searcher = ix.searcher()
        for _, address in searcher.search(query, 2000).hits:
            searcher.doc(address)["path"][0]

    out["query ms"] = _median_ms(search, runs)
    target = next(f for f in files[len(files) // 2 :] if f.endswith(".py"))
    times = []
    writer = ix.writer(heap_size=50_000_000, num_threads=1)
    for i in range(runs):
        t = time.perf_counter()
        writer.delete_documents("path", target)
        writer.add_document(tantivy.Document(path=target, body=f"zyxwvut{i}"))
        writer.commit()
        ix.reload()
        ix.searcher().search(ix.parse_query(f"zyxwvut{i}", ["body"]), 5)
        times.append(time.perf_counter() - t)
    out["update ms"] = round(statistics.median(times) * 1000, 1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--tantivy", action="store_true")
    ap.add_argument("--reuse", help="start from this index file (a copy of a built one)")
    ap.add_argument("--keep", help="copy the built index to this file (for --reuse)")
    ap.add_argument("--no-worker", action="store_true", help="build in the thread alone (one core)")
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args()
    tree = os.path.realpath(args.tree)
    files = Index.build(tree, Settings()).files()
    if args.limit:
        files = files[: args.limit]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-rank-") as cache:
        rows.append(
            bench_fts5(tree, files, cache, args.runs, args.reuse, args.keep, not args.no_worker)
        )
        print(table(rows), flush=True)
        if args.tantivy:
            rows.append(bench_tantivy(tree, files, cache, args.runs))
    print(table(rows))
    write_results("rank", {"tree": tree, "rows": rows}, args.results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
