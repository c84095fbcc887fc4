"""Benchmark: the cold ``readmany files`` on trees git does not track, against ripgrep.

Usage::

    python bench/bench_coldlist.py [--sizes 100000,2400] [--runs 11] [--warmup 1]

Per size, the generated corpus (``gen_tree.py``: ``bench/.trees/stdlib-100k``,
``stdlib-2400``…) is copied without its ``.git`` folder to ``NAME-nogit`` in ``--copies``
(``$TMPDIR/readmany-bench-nogit``: outside this repository, whose work tree would be
found above a copy in ``bench/.trees``; hard links where the disk allows; reused while
the source tree's commit is the same), so neither readmany nor rg finds a repository.
Then, interleaved round by round in a rotating order (medians of ``--runs``):

* ``readmany files --no-daemon`` — the cold one-shot listing, interpreter start and
  imports included, as ``python -m readmany_daemon`` (bytecode compiled first);
* ``rg --files --hidden -g '!.git'`` — the target baseline (issue 16 item 2: readmany
  ≤ 1.0x rg at both sizes);
* ``python -c pass`` — the interpreter's own start with this environment's ``site``, the
  floor under any Python command;
* with ``--compare-src DIR``, the same readmany command run from the checkout at ``DIR``
  (a before/after in the same run).

A second table times, in this process, a plain ``os.scandir`` walk of the 100k copy with
one thread and with two (a work queue of folders): it shows why readmany's walk stays on
one thread. ``os.scandir`` releases the GIL around every ``readdir`` entry, not once per
folder, so two threads listing at once hand the GIL to each other per entry.

Results go to ``bench/results/coldlist-*.json``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import queue
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import TREES_DIR, Command, python_env, run_interleaved, table, write_results
from gen_tree import build_tree

#: issue 16 item 2: readmany's median at most this many times rg's
TARGET_RATIO = 1.0
#: where the copies without ``.git`` go: outside this repository's work tree
COPIES_DIR = Path(tempfile.gettempdir()) / "readmany-bench-nogit"
#: how each command appears in the table
SHOWN = {"readmany": "readmany files --no-daemon", "rg": "rg --files --hidden -g '!.git'"}
#: in-process scandir walks per thread count, after one untimed walk
WALK_ROUNDS = 5


def tree_name(files: int) -> str:
    """``stdlib-100k`` for 100,000 files, ``stdlib-2400`` for 2,400 (bench_files' names)."""
    return f"stdlib-{files // 1000}k" if files % 1000 == 0 else f"stdlib-{files}"


def in_work_tree(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` holding a ``.git`` entry, or None."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def no_git_copy(files: int, trees: Path = TREES_DIR, copies: Path = COPIES_DIR) -> Path:
    """The generated tree of ``files`` files (built in ``trees``) without ``.git``, at
    ``copies/NAME-nogit``: made (hard links, else copies) unless one made from the same
    commit is there. Its marker ``copies/NAME-nogit.json`` lies outside the tree, so no
    lister sees it. Raises ``ValueError`` when ``copies`` lies in a git work tree (both
    readmany and rg would find that repository)."""
    copies.mkdir(parents=True, exist_ok=True)
    above = in_work_tree(copies.resolve())
    if above is not None:
        raise ValueError(f"{copies} lies in the git work tree {above}: choose --copies elsewhere")
    info = build_tree(trees / tree_name(files), files=files)
    dest = copies / f"{tree_name(files)}-nogit"
    marker = copies / f"{dest.name}.json"
    want = {"source": str(info.root), "commit": info.commit}
    try:
        if json.loads(marker.read_text(encoding="utf-8")) == want and dest.is_dir():
            return dest
    except (OSError, ValueError):
        pass
    if dest.exists():
        shutil.rmtree(dest)
    partial = copies / f".{dest.name}.partial"
    if partial.exists():
        shutil.rmtree(partial)

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(
        info.root,
        partial,
        symlinks=True,
        ignore=lambda d, names: [".git"] if Path(d) == info.root else [],
        copy_function=link_or_copy,
    )
    partial.rename(dest)
    marker.write_text(json.dumps(want) + "\n", encoding="utf-8")
    return dest


def commands(tree: Path, compare: Path | None = None) -> list[Command]:
    """readmany, rg and the interpreter floor for ``tree`` (rg only when on PATH); with
    ``compare``, also the readmany of that checkout (its package compiled first)."""
    out: list[Command] = []
    if compare is not None:
        compileall.compile_dir(str(compare / "readmany_daemon"), quiet=1)
        env = dict(os.environ, PYTHONPATH=str(compare))
        argv = (sys.executable, "-m", "readmany_daemon", "files", "--no-daemon", "--root")
        out.append(Command("compare", (*argv, str(tree)), tree, env))
    out += [
        Command(
            "readmany",
            (sys.executable, "-m", "readmany_daemon", "files", "--no-daemon", "--root", str(tree)),
            tree,
            python_env(),
        ),
        Command("python -c pass", (sys.executable, "-c", "pass"), tree, python_env()),
    ]
    rg = shutil.which("rg")
    if rg:
        out.append(Command("rg", (rg, "--files", "--hidden", "-g", "!.git"), tree))
    return out


def scandir_walk(root: str, threads: int) -> int:
    """Files below ``root`` (symlinks and specials counted as files), listed with
    ``os.scandir`` on ``threads`` threads (0: this one, depth first)."""
    if threads == 0:
        n = 0
        stack = [root]
        while stack:
            d = stack.pop()
            with os.scandir(d) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    else:
                        n += 1
        return n
    todo: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    done: queue.SimpleQueue[tuple[int, list[str]]] = queue.SimpleQueue()

    def worker() -> None:
        while (d := todo.get()) is not None:
            files = 0
            dirs: list[str] = []
            with os.scandir(d) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        dirs.append(e.path)
                    else:
                        files += 1
            done.put((files, dirs))

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    todo.put(root)
    pending, n = 1, 0
    while pending:
        files, dirs = done.get()
        pending -= 1
        n += files
        for d in dirs:
            todo.put(d)
        pending += len(dirs)
    for _ in pool:
        todo.put(None)
    for t in pool:
        t.join()
    return n


def walk_rows(tree: Path) -> list[dict[str, object]]:
    """Median wall and CPU ms of ``scandir_walk`` with 1 and 2 threads, interleaved."""
    counts = (0, 2)
    wall: dict[int, list[float]] = {k: [] for k in counts}
    cpu: dict[int, list[float]] = {k: [] for k in counts}
    files = {k: scandir_walk(str(tree), k) for k in counts}
    for r in range(WALK_ROUNDS):
        for k in counts if r % 2 == 0 else counts[::-1]:
            c0, t0 = time.process_time(), time.perf_counter()
            scandir_walk(str(tree), k)
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    one = statistics.median(wall[0])
    return [
        {
            "os.scandir walk": "1 thread" if k == 0 else f"{k} threads (work queue)",
            "median ms": statistics.median(wall[k]) * 1000,
            "CPU ms": statistics.median(cpu[k]) * 1000,
            "ratio to 1 thread": f"{statistics.median(wall[k]) / one:.2f}x",
            "files": files[k],
        }
        for k in counts
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 0 unless a tree can't be made (or ``--strict`` and FAIL)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,2400", help="files per tree, comma-separated")
    parser.add_argument("--runs", type=int, default=11, help="timed runs per command")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs per command first")
    parser.add_argument("--trees", type=Path, default=TREES_DIR, help="where trees are built")
    parser.add_argument(
        "--copies", type=Path, default=COPIES_DIR, help="where the copies without .git go"
    )
    parser.add_argument(
        "--compare-src", type=Path, help="another checkout whose readmany is timed too (before)"
    )
    parser.add_argument("--results-dir", type=Path, help="where to write JSON (bench/results)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target FAILs")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    rows: list[dict[str, object]] = []
    verdicts: list[dict[str, object]] = []
    timings: list[dict[str, object]] = []
    largest: Path | None = None
    for files in sizes:
        try:
            tree = no_git_copy(files, args.trees, args.copies)
        except ValueError as exc:
            print(f"bench_coldlist: {exc}", file=sys.stderr)
            return 2
        if largest is None or files == max(sizes):
            largest = tree
        cmds = commands(tree, args.compare_src)
        results = run_interleaved(cmds, runs=args.runs, warmup=args.warmup)
        by = {t.label: (t, out) for t, out in results}
        rg = by.get("rg", (None, b""))[0]
        for t, out in results:
            ratio = f"{t.median / rg.median:.2f}x" if rg is not None and rg.median else "-"
            rows.append(
                {
                    "tree (no git)": f"{files:,} files",
                    "command": SHOWN.get(t.label, t.label)
                    if t.label != "compare"
                    else f"readmany files --no-daemon ({args.compare_src.name})",
                    "median ms": t.median * 1000,
                    "min ms": t.min * 1000,
                    "ratio to rg": ratio,
                    "paths": out.count(b"\n") if t.label != "python -c pass" else "-",
                }
            )
            timings.append(t.to_json() | {"tree": str(tree), "files": files})
        mine = by["readmany"][0]
        if rg is None or not rg.median:
            status, ratio_v = "SKIP", None
        else:
            ratio_v = mine.median / rg.median
            status = "PASS" if mine.ok and ratio_v <= TARGET_RATIO else "FAIL"
        verdicts.append(
            {
                "target": f"readmany files ≤ {TARGET_RATIO}x rg, {files:,} files, no git",
                "ratio": f"{ratio_v:.2f}x" if ratio_v is not None else "-",
                "result": status,
            }
        )

    print(f"\n{args.runs} runs each after {args.warmup} warm-up, interleaved; wall time:\n")
    print(table(rows))
    print()
    print(table(verdicts))
    walks: list[dict[str, object]] = []
    if largest is not None:
        walks = walk_rows(largest)
        print(f"\nin-process os.scandir walk of {largest.name}, {WALK_ROUNDS} rounds:\n")
        print(table(walks))
    path = write_results(
        "coldlist",
        {"timings": timings, "targets": verdicts, "walks": walks, "runs": args.runs},
        args.results_dir,
    )
    print(f"\nresults: {path}")
    failed = any(v["result"] == "FAIL" for v in verdicts)
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
