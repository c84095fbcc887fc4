"""Run every benchmark — files, coldlist, daemon, peers, scale, exclude, oneshot — and
rewrite the tables in bench/README.md.

Usage::

    python bench/run_all.py [--only files,coldlist,daemon,...] [--runs N] [--no-readme]
    python bench/run_all.py --quick          # smoke: tiny trees, one run, README untouched

Each benchmark runs as its own process (``bench/bench_*.py``), one after the other (never
two at once: the machine has 2 cores), with its output streamed. Its Markdown tables
(the lines starting with ``|`` of its stdout) then replace what stands between the
markers ``<!-- BEGIN run_all:NAME -->`` and ``<!-- END run_all:NAME -->`` in
``bench/README.md``, with a line saying when and how they were made; a section without
its markers is left alone (and reported). ``--quick`` never writes the README unless
``--readme PATH`` names one. The exit status is 1 when a benchmark failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
README = BENCH / "README.md"
ORDER = ("files", "coldlist", "daemon", "peers", "scale", "exclude", "oneshot")


def command(
    name: str, quick: bool, runs: int | None, tree: Path | None, results: Path | None
) -> list[str]:
    """The argv of one benchmark."""
    argv = [sys.executable, str(BENCH / f"bench_{name}.py")]
    if quick:
        scratch = str(tree and tree.parent)
        argv += {
            "files": ["--tree", str(tree), "--runs", "1", "--warmup", "0"],
            "coldlist": ["--sizes", "300", "--runs", "1", "--trees", scratch, "--copies", scratch],
            "daemon": ["--quick", "--tree", str(tree)],
            "peers": ["--quick", "--tree", str(tree)],
            "scale": ["--quick"],
            "exclude": ["--quick", "--tree", str(tree)],
            "oneshot": ["--quick", "--tree", str(tree)],
        }[name]
    elif runs:
        argv += ["--runs", str(runs)]
    if results is not None:
        argv += ["--results-dir", str(results)]
    return argv


def run(argv: list[str]) -> tuple[int, str, float]:
    """Run ``argv`` with stdout teed to ours; (status, stdout, seconds)."""
    print(f"\n$ {' '.join(argv)}", flush=True)
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=BENCH.parent)
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    return proc.wait(), "".join(lines), time.monotonic() - started


def tables(stdout: str) -> str:
    """The Markdown tables of a benchmark's output (blocks of lines starting with ``|``),
    separated by a blank line."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in stdout.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return "\n\n".join("\n".join(b) for b in blocks)


def replace_section(text: str, name: str, body: str) -> tuple[str, bool]:
    """``text`` with what stands between the ``run_all:name`` markers replaced by ``body``."""
    pattern = re.compile(
        rf"(<!-- BEGIN run_all:{re.escape(name)} -->\n)(.*?)"
        rf"(<!-- END run_all:{re.escape(name)} -->)",
        re.DOTALL,
    )
    if not pattern.search(text):
        return text, False
    return pattern.sub(
        lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(3), text, count=1
    ), True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", default=",".join(ORDER), help="which benchmarks (" + ",".join(ORDER) + ")"
    )
    parser.add_argument(
        "--runs", type=int, help="passed on as --runs (each benchmark's own default otherwise)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run on tiny trees; README untouched"
    )
    parser.add_argument(
        "--readme", type=Path, help="the README to rewrite (bench/README.md; none with --quick)"
    )
    parser.add_argument("--no-readme", action="store_true", help="don't rewrite any README")
    parser.add_argument(
        "--results-dir", type=Path, help="where the benchmarks write JSON (bench/results)"
    )
    args = parser.parse_args(argv)

    names = [n for n in (s.strip() for s in args.only.split(",")) if n]
    for name in names:
        if name not in ORDER:
            parser.error(f"unknown benchmark {name!r}")
    readme = None if args.no_readme else (args.readme or (None if args.quick else README))

    scratch: Path | None = None
    tree: Path | None = None
    if args.quick:
        sys.path.insert(0, str(BENCH))
        from gen_tree import build_tree

        scratch = Path(tempfile.mkdtemp(prefix="rmall"))
        tree = build_tree(scratch / "tree", files=300).root

    outcome: dict[str, tuple[int, str, float]] = {}
    try:
        for name in names:
            outcome[name] = run(command(name, args.quick, args.runs, tree, args.results_dir))
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    print("\nsummary:")
    for name, (code, _, seconds) in outcome.items():
        print(f"  {name}: exit {code}, {seconds:.0f} s")
    if readme is not None:
        text = readme.read_text(encoding="utf-8")
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        for name, (code, stdout, seconds) in outcome.items():
            body = tables(stdout)
            if not body:
                print(f"  {name}: no table in its output; README section kept")
                continue
            head = (
                f"_`python bench/run_all.py` ({name}), {stamp}, {seconds:.0f} s, "
                f"{os.cpu_count()} CPUs" + (f", exit {code}" if code else "") + "._\n\n"
            )
            text, found = replace_section(text, name, head + body)
            if not found:
                print(
                    f"  {name}: no <!-- BEGIN run_all:{name} --> markers in {readme}; section kept"
                )
        readme.write_text(text, encoding="utf-8")
        print(f"README: {readme}")
    return 1 if any(code != 0 for code, _, _ in outcome.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
