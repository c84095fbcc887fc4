"""Benchmark: how the daemon's index grows — index time, memory, warm latency at 10k-1M paths.

Usage::

    python bench/bench_scale.py [--sizes 10000,100000,1000000] [--runs 5] [--quick] [--keep]

Trees: ``bench/.trees/scale-{10k,100k,1m}-empty`` built by ``gen_tree.build_tree(...,
empty=True)`` (the same layout as the 100k corpus — copies of the standard library's
paths, node_modules/.venv/build ignored bulk, nested .gitignore files — with empty files:
the index holds paths and stat data, so contents don't matter, and 1M real files would
take ~21 GB). Before building, the free disk is checked (``df``; a tree is built only if
its estimate leaves the folder's disk ≥ 10 GB free and the trees of this run stay under
``--max-disk-gb``, 10). Trees built here are deleted at the end unless ``--keep``
(``stdlib-100k`` is never touched).

Per size and run, interleaved round by round in a rotated order over the sizes, a fresh
private daemon (``readmany serve --socket``, own XDG folders so no snapshot is reused):

* index time: ``readMany/rescan {root}`` on a connection without a workspace folder,
  from request to answer;
* index memory: the daemon's ``VmRSS`` (``/proc/PID/status``) after minus before that
  rescan, divided by the files the index holds (``readMany/status``);
* warm latency: then, on a connection with the root, ``--requests`` (50) reads of
  ``**/*.py`` with default budgets and of one named file (at least 3, then fewer if
  ``--max-seconds`` (15 s) runs out); the per-run p50 of each.

Each figure is the median over ``--runs`` (5) runs. It prints a Markdown table, the growth
per file from one size to the next, and writes ``bench/results/scale-latest.json`` and a
PNG plot (``bench/plots/scale.png``, matplotlib; committed beside the README table) of
bytes per file, index µs per file and warm latency against the number of paths.

``--quick``: 300 and 1,000 paths in a temporary folder, 1 run, a few requests.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_peers import private_daemon, use_readmany_src, vm_status
from common import RESULTS_DIR, TREES_DIR, table, write_results
from gen_tree import build_tree, read_marker

#: Disk estimate per empty file built by gen_tree (inode, directory entry, git index and
#: objects), measured on the 100k empty tree and rounded up.
BYTES_PER_EMPTY_FILE = 4096
MIN_FREE_AFTER = 10 * 2**30
#: Warm requests per run and kind: at least this many, then until --requests or
#: --max-seconds (a 1M-path glob answer takes seconds).
MIN_REQUESTS = 3


def _ms(seconds: list[float], digits: int) -> float | None:
    """The median of ``seconds`` in milliseconds, rounded; None when there is none."""
    return round(statistics.median(seconds) * 1000, digits) if seconds else None


def size_name(files: int) -> str:
    if files % 1_000_000 == 0:
        return f"{files // 1_000_000}m"
    if files % 1000 == 0:
        return f"{files // 1000}k"
    return str(files)


@dataclass
class SizeResult:
    """All runs at one size."""

    files: int
    tree: str
    built_seconds: float = 0.0
    reused: bool = False
    indexed: list[int] = field(default_factory=list)
    index_s: list[float] = field(default_factory=list)
    rss_before: list[int] = field(default_factory=list)
    rss_delta: list[int] = field(default_factory=list)
    glob_p50: list[float] = field(default_factory=list)
    named_p50: list[float] = field(default_factory=list)
    glob_n: list[int] = field(default_factory=list)
    named_n: list[int] = field(default_factory=list)
    watcher: str = ""
    errors: list[str] = field(default_factory=list)

    @staticmethod
    def _med(values: list[float] | list[int]) -> float | None:
        return statistics.median(values) if values else None

    @property
    def files_indexed(self) -> int | None:
        return self.indexed[-1] if self.indexed else None

    @property
    def bytes_per_file(self) -> float | None:
        delta, n = self._med(self.rss_delta), self.files_indexed
        return None if delta is None or not n else delta / n

    @property
    def index_us_per_file(self) -> float | None:
        t, n = self._med(self.index_s), self.files_indexed
        return None if t is None or not n else t / n * 1e6

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "tree": self.tree,
            "built_seconds": round(self.built_seconds, 1),
            "reused": self.reused,
            "files_indexed": self.files_indexed,
            "index_ms": [round(s * 1000, 1) for s in self.index_s],
            "index_median_ms": _ms(self.index_s, 1),
            "rss_before": self.rss_before,
            "rss_delta": self.rss_delta,
            "rss_delta_median": self._med(self.rss_delta),
            "bytes_per_file": None
            if self.bytes_per_file is None
            else round(self.bytes_per_file, 1),
            "index_us_per_file": None
            if self.index_us_per_file is None
            else round(self.index_us_per_file, 2),
            "glob_p50_ms": [round(s * 1000, 3) for s in self.glob_p50],
            "named_p50_ms": [round(s * 1000, 3) for s in self.named_p50],
            "glob_requests": self.glob_n,
            "named_requests": self.named_n,
            "glob_median_p50_ms": _ms(self.glob_p50, 3),
            "named_median_p50_ms": _ms(self.named_p50, 3),
            "watcher": self.watcher,
            "errors": self.errors,
        }


def check_disk(folder: Path, sizes: list[int], max_disk_gb: float) -> list[str]:
    """Problems with building trees of ``sizes`` in ``folder`` (empty list: go ahead)."""
    folder.mkdir(parents=True, exist_ok=True)
    usage = shutil.disk_usage(folder)
    need = 0
    for files in sizes:
        dest = folder / f"scale-{size_name(files)}-empty"
        info = read_marker(dest)
        if info is None or info.files != files or not info.empty:
            need += files * BYTES_PER_EMPTY_FILE
    problems = []
    if need > max_disk_gb * 2**30:
        problems.append(f"trees need ~{need / 2**30:.1f} GB, over --max-disk-gb {max_disk_gb:g}")
    if usage.free - need < MIN_FREE_AFTER:
        problems.append(
            f"{usage.free / 2**30:.1f} GB free, ~{need / 2**30:.1f} GB needed, 10 GB must stay free"
        )
    return problems


def one_run(res: SizeResult, root: Path, named: str, requests: int, max_seconds: float) -> None:
    """A fresh daemon: index (time, RSS delta), then warm latencies."""
    with private_daemon("rms") as daemon:
        client = daemon.connect(None)
        try:
            time.sleep(0.2)
            before = vm_status(daemon.pid)
            started = time.perf_counter()
            client.request("readMany/rescan", {"root": str(root)})
            index_s = time.perf_counter() - started
            after = vm_status(daemon.pid)
            status = client.request("readMany/status", {})
        finally:
            client.exit()
        roots = status.get("roots") or []
        files = next((r.get("files") for r in roots if r.get("root") == str(root)), None)
        if files is None and roots:
            files = roots[0].get("files")
        watcher = status.get("watcher")
        res.watcher = str(watcher.get("state") if isinstance(watcher, dict) else watcher)
        res.index_s.append(index_s)
        res.rss_before.append(before)
        res.rss_delta.append(after - before)
        if isinstance(files, int):
            res.indexed.append(files)
        client = daemon.connect(root)
        try:
            kinds = (
                ({"paths": ["**/*.py"]}, res.glob_p50, res.glob_n),
                ({"paths": [named]}, res.named_p50, res.named_n),
            )
            for params, out, counts in kinds:
                client.request("readMany/read", params)  # warm-up
                times: list[float] = []
                deadline = time.monotonic() + max_seconds
                while len(times) < requests:
                    t0 = time.perf_counter()
                    client.request("readMany/read", params)
                    times.append(time.perf_counter() - t0)
                    if len(times) >= MIN_REQUESTS and time.monotonic() > deadline:
                        break
                out.append(statistics.median(times))
                counts.append(len(times))
        finally:
            client.exit()


def rows(results: list[SizeResult]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    prev: SizeResult | None = None
    for r in results:
        growth = "-"
        if prev is not None and prev.bytes_per_file and r.bytes_per_file:
            growth = f"{r.bytes_per_file / prev.bytes_per_file:.2f}x"
        idx = r._med(r.index_s)
        glob_ = r._med(r.glob_p50)
        named = r._med(r.named_p50)
        delta = r._med(r.rss_delta)
        out.append(
            {
                "paths (tree)": f"{r.files:,}",
                "files indexed": "-" if r.files_indexed is None else f"{r.files_indexed:,}",
                "index ms": "-" if idx is None else f"{idx * 1000:,.0f}",
                "index µs/file": "-"
                if r.index_us_per_file is None
                else f"{r.index_us_per_file:.2f}",
                "RSS delta MiB": "-" if delta is None else f"{delta / 2**20:,.1f}",
                "bytes/file": "-" if r.bytes_per_file is None else f"{r.bytes_per_file:,.0f}",
                "bytes/file vs previous": growth,
                "warm `**/*.py` p50 ms": "-" if glob_ is None else f"{glob_ * 1000:,.2f}",
                "warm named file p50 ms": "-" if named is None else f"{named * 1000:,.2f}",
                "runs": len(r.index_s),
            }
        )
        prev = r
    return out


#: "Flat": bytes per file at the largest size at most this many times the size before.
FLAT_MAX = 1.2


def flatness(results: list[SizeResult]) -> dict[str, Any] | None:
    """The target "index memory per file flat" between the two largest sizes measured
    (100k → 1M by default): PASS when the larger's bytes/file ≤ 1.2x the smaller's."""
    done = [r for r in results if r.bytes_per_file]
    if len(done) < 2:
        return None
    small, large = done[-2], done[-1]
    ratio = large.bytes_per_file / small.bytes_per_file  # type: ignore[operator]
    return {
        "target": f"index memory per file flat from {small.files:,} to {large.files:,} paths "
        f"(≤ {FLAT_MAX}x)",
        "ratio": round(ratio, 3),
        "result": "PASS" if ratio <= FLAT_MAX else "FAIL",
    }


#: issue 16 item 5: the index's bytes per file at 1M paths at most this
BYTES_PER_FILE_MAX = 300
CAP_PATHS = 1_000_000


def per_file_cap(results: list[SizeResult]) -> dict[str, Any] | None:
    """The target "index ≤ 300 B per file at 1M paths", on the run of 1,000,000 paths or
    more (None when there is none)."""
    done = [r for r in results if r.bytes_per_file and r.files >= CAP_PATHS]
    if not done:
        return None
    got = done[-1].bytes_per_file
    assert got is not None
    return {
        "target": f"index bytes per file at {done[-1].files:,} paths ≤ {BYTES_PER_FILE_MAX}",
        "ratio": f"{got:.0f} B",
        "result": "PASS" if got <= BYTES_PER_FILE_MAX else "FAIL",
    }


def plot(results: list[SizeResult], path: Path) -> Path | None:
    """A PNG: bytes/file, index µs/file and warm p50 against paths (log x)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot: matplotlib not installed (pip install matplotlib)", file=sys.stderr)
        return None
    done = [r for r in results if r.files_indexed]
    if not done:
        return None
    xs = [r.files_indexed for r in done]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    panels = (
        ("index memory per file (B)", [r.bytes_per_file for r in done]),
        ("index time per file (µs)", [r.index_us_per_file for r in done]),
    )
    for ax, (title, ys) in zip(axes[:2], panels, strict=True):
        ax.plot(xs, ys, marker="o")
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.set_xlabel("files indexed")
        for x, y in zip(xs, ys, strict=True):
            if y is not None:
                ax.annotate(
                    f"{y:,.1f}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center"
                )
    ax = axes[2]
    ax.plot(
        xs,
        [_ms(r.glob_p50, 3) for r in done],
        marker="o",
        label="`**/*.py`, default budgets",
    )
    ax.plot(xs, [_ms(r.named_p50, 3) for r in done], marker="s", label="one named file")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title("warm read latency p50 (ms)")
    ax.set_xlabel("files indexed")
    ax.legend(fontsize=8)
    fig.suptitle("readmany daemon: growth with the number of paths (medians of runs)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="paths per tree")
    parser.add_argument("--runs", type=int, help="fresh daemons per size (5; 1 with --quick)")
    parser.add_argument(
        "--requests", type=int, help="warm requests per run and kind (50; 5 with --quick)"
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=15.0,
        help="time cap per run and kind of warm request, after 3 (15 s)",
    )
    parser.add_argument(
        "--max-disk-gb", type=float, default=10.0, help="cap on the trees built (10)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the trees built here")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 300 and 1,000 paths, 1 run"
    )
    parser.add_argument(
        "--readmany-src", type=Path, help="folder holding the readmany_daemon to measure"
    )
    parser.add_argument(
        "--results-dir", type=Path, help="where to write JSON and PNG (bench/results, bench/plots)"
    )
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    if args.readmany_src is not None:
        use_readmany_src(args.readmany_src)

    sizes = [300, 1000] if args.quick else [int(s) for s in args.sizes.split(",") if s]
    runs = args.runs or (1 if args.quick else 5)
    requests = args.requests or (5 if args.quick else 50)
    scratch = Path(tempfile.mkdtemp(prefix="rmsq")) if args.quick else None
    folder = scratch or TREES_DIR
    problems = check_disk(folder, sizes, args.max_disk_gb)
    if problems:
        print("bench_scale: " + "; ".join(problems), file=sys.stderr)
        return 1

    results: list[SizeResult] = []
    built: list[Path] = []
    try:
        for files in sizes:
            dest = folder / f"scale-{size_name(files)}-empty"
            started = time.perf_counter()
            info = build_tree(dest, files=files, seed=0, empty=True)
            res = SizeResult(files, str(info.root), time.perf_counter() - started, info.reused)
            if not info.reused:
                built.append(info.root)
            print(
                f"tree {size_name(files)}: {info.root} "
                + ("(reused)" if info.reused else f"(built in {res.built_seconds:.0f} s)"),
                file=sys.stderr,
                flush=True,
            )
            results.append(res)
        named = "copy00/json/__init__.py"
        for round_ in range(runs):
            for offset in range(len(results)):
                res = results[(round_ + offset) % len(results)]
                root = Path(res.tree).resolve()
                try:
                    one_run(
                        res,
                        root,
                        named if (root / named).exists() else "README.md",
                        requests,
                        args.max_seconds,
                    )
                except Exception as exc:
                    res.errors.append(f"{type(exc).__name__}: {exc}"[:300])
                print(
                    f"  run {round_ + 1}/{runs} {size_name(res.files)}: "
                    f"index {res.index_s[-1] if res.index_s else float('nan'):.2f} s, "
                    f"RSS +{(res.rss_delta[-1] if res.rss_delta else 0) / 2**20:.0f} MiB"
                    + (f" ERROR {res.errors[-1]}" if res.errors else ""),
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if not args.keep:
            for root in built:
                shutil.rmtree(root, ignore_errors=True)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    text = table(rows(results))
    print(text)
    verdict = flatness(results)
    cap = per_file_cap(results)
    targets = [{**verdict, "ratio": f"{verdict['ratio']:.2f}x"}] if verdict is not None else []
    targets += [cap] if cap is not None else []
    if targets:
        text += "\n\n" + table(targets)
        print("\n" + table(targets))
    # The committed plot is the full run's; a smoke run's goes with the results.
    if args.results_dir or args.quick:
        png_path = (args.results_dir or RESULTS_DIR) / "scale-latest.png"
    else:
        png_path = Path(__file__).resolve().parent / "plots" / "scale.png"
    png_path.parent.mkdir(parents=True, exist_ok=True)
    png = plot(results, png_path)
    if png is not None:
        print(f"plot: {png}")
    if args.markdown is not None:
        args.markdown.write_text(text + "\n")
    path = write_results(
        "scale",
        {
            "runs": runs,
            "requests": requests,
            "sizes": [r.to_json() for r in results],
            "flat": verdict,
            "per_file_cap": cap,
            "plot": str(png) if png else None,
            "kept": args.keep,
        },
        args.results_dir,
    )
    print(f"results: {path}")
    return 1 if any(r.errors and not r.index_s for r in results) else 0


if __name__ == "__main__":
    with contextlib.suppress(AttributeError):
        import signal

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    raise SystemExit(main())
