"""Benchmark: list a workspace's visible files — ``readmany files`` against rg, fd and git.

Usage::

    python bench/bench_files.py [--tree DIR] [--files N] [--seed S] [--runs 5] [--warmup 1]

Builds or reuses the tree (``bench/.trees/stdlib-100k`` by default, see ``gen_tree.py``),
then times, interleaved round by round in a rotating order:

* ``readmany files --no-daemon`` — a cold one-shot walk with ignore rules (interpreter
  start and imports included), as ``python -m readmany_daemon``;
* ``rg --files --hidden -g '!.git'`` — the target baseline;
* ``fdfind --type f --hidden --exclude .git`` and
  ``git ls-files -z --cached --others --exclude-standard`` — extra baselines.

Every command's stdout goes to a pipe that is drained. It prints a Markdown table (median,
min, max in ms, ratio of medians to rg, paths listed), checks the target
"readmany ≤ 1.5x rg" (PASS/FAIL; exit status 0 either way unless ``--strict``), and
compares path SETS with git's: readmany's list with ``--no-default-excludes`` (and rg's
and fd's) against ``git ls-files --cached --others --exclude-standard``, counting paths
only one side lists; paths only git lists that readmany's deny rules (``.env``,
``*.pem``…) match are counted apart as expected. Results go to ``bench/results/``.

``--tree DIR`` may name any existing folder (a real repository, say); it is rebuilt only
if it is a generated tree and ``--files`` asks for another size.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from common import (
    TREES_DIR,
    Command,
    Timing,
    python_env,
    run_interleaved,
    table,
    time_once,
    tool_version,
    write_results,
)
from gen_tree import TreeError, TreeInfo, build_tree, read_marker

#: The target: readmany's median at most this many times rg's.
TARGET_RATIO = 1.5
GIT_ORACLE = ("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")


@dataclass(frozen=True)
class SetDiff:
    """How one lister's paths differ from git's; ``denied`` is the part of ``only_git``
    that readmany's deny rules explain."""

    label: str
    paths: int
    only_here: tuple[str, ...]
    only_git: tuple[str, ...]
    denied: tuple[str, ...] = ()

    @property
    def differences(self) -> int:
        """Paths only one side lists."""
        return len(self.only_here) + len(self.only_git)

    @property
    def unexpected(self) -> int:
        """Differences not explained by the deny rules."""
        return self.differences - len(self.denied)

    def unexpected_only_git(self) -> list[str]:
        """Paths only git lists that the deny rules don't explain."""
        denied = set(self.denied)
        return [p for p in self.only_git if p not in denied]

    def to_json(self) -> dict[str, object]:
        """JSON-ready builtins, with up to 20 examples per side."""
        return {
            "label": self.label,
            "paths": self.paths,
            "differences": self.differences,
            "denied": len(self.denied),
            "unexpected": self.unexpected,
            "only_here": list(self.only_here[:20]),
            "only_git_unexpected": self.unexpected_only_git()[:20],
            "only_git_denied": list(self.denied[:20]),
        }


def default_tree(files: int) -> Path:
    """``bench/.trees/stdlib-100k`` for 100,000 files, ``stdlib-300`` for 300."""
    size = f"{files // 1000}k" if files % 1000 == 0 else str(files)
    return TREES_DIR / f"stdlib-{size}"


def prepare_tree(tree: Path | None, files: int | None, seed: int) -> tuple[Path, TreeInfo | None]:
    """The tree to measure, and its ``TreeInfo`` when it is a generated tree.

    A non-empty folder named by ``--tree`` without ``--files`` is used as it is (any
    repository will do); otherwise the tree is built, or reused if it was built with the
    same parameters (``build_tree`` refuses to replace a folder it didn't make).
    """
    if tree is not None and files is None and tree.is_dir() and any(tree.iterdir()):
        return tree.absolute(), read_marker(tree.absolute())
    size = 100_000 if files is None else files
    dest = default_tree(size) if tree is None else tree
    info = build_tree(dest, files=size, seed=seed)
    return info.root, info


def split_paths(output: bytes, sep: bytes, root: Path) -> set[str]:
    """Listed paths as POSIX strings relative to ``root`` (``./`` and absolute normalised)."""
    if sep == b"\0" and b"\0" not in output and output.strip():
        sep = b"\n"  # a lister that ignored -0
    root_text = root.as_posix().rstrip("/") + "/"
    out: set[str] = set()
    for raw in output.split(sep):
        path = raw.decode("utf-8", errors="surrogateescape").rstrip("\r" if sep == b"\n" else "")
        if path.startswith(root_text):
            path = path[len(root_text) :]
        while path.startswith("./"):
            path = path[2:]
        if path:
            out.add(path)
    return out


def readmany_probe(tree: Path) -> str | None:
    """None if ``python -m readmany_daemon files`` runs here, else why not (one line)."""
    sample = time_once(
        Command(
            "probe",
            (sys.executable, "-m", "readmany_daemon", "files", "--help"),
            tree,
            python_env(),
        )
    )
    if sample.returncode == 0:
        return None
    return sample.stderr or f"exit status {sample.returncode}"


def deny_matcher() -> tuple[str, Callable[[str], bool]] | None:
    """readmany's default deny patterns (as text) and a matcher for them, if importable."""
    code = (
        "import json; from readmany_daemon.settings import DEFAULT_DENY_PATTERNS as p; "
        "print(json.dumps(list(p)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=python_env(), check=False
    )
    if proc.returncode != 0:
        return None
    try:
        import pathspec
    except ImportError:
        return None
    patterns: list[str] = json.loads(proc.stdout)
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    return ", ".join(patterns), spec.match_file


def compare(
    label: str, listed: set[str], oracle: set[str], denied_by: Callable[[str], bool] | None
) -> SetDiff:
    """``listed`` against git's ``oracle``; paths only git lists that ``denied_by``
    matches are counted as expected."""
    only_here = tuple(sorted(listed - oracle))
    only_git = tuple(sorted(oracle - listed))
    denied = tuple(p for p in only_git if denied_by(p)) if denied_by is not None else ()
    return SetDiff(label, len(listed), only_here, only_git, denied)


def build_commands(tree: Path, readmany: bool) -> tuple[list[Command], list[str]]:
    """The commands to time (those available) and a note for each missing one."""
    commands: list[Command] = []
    missing: list[str] = []
    if readmany:
        commands.append(
            Command(
                "readmany",
                (
                    sys.executable,
                    "-m",
                    "readmany_daemon",
                    "files",
                    "--no-daemon",
                    "--root",
                    str(tree),
                ),
                tree,
                python_env(),
            )
        )
    rg = shutil.which("rg")
    if rg:
        commands.append(Command("rg", (rg, "--files", "--hidden", "-g", "!.git"), tree))
    else:
        missing.append("rg")
    fd = shutil.which("fdfind") or shutil.which("fd")
    if fd:
        commands.append(Command("fd", (fd, "--type", "f", "--hidden", "--exclude", ".git"), tree))
    else:
        missing.append("fd")
    if shutil.which("git"):
        commands.append(Command("git", GIT_ORACLE, tree, sep=b"\0"))
    else:
        missing.append("git")
    return commands, missing


def display(command: Command) -> str:
    """How a command appears in the table."""
    if command.label == "readmany":
        return "readmany files --no-daemon"
    name = Path(command.argv[0]).name
    return " ".join([name, *command.display().split(" ")[1:]])


def results_rows(
    commands: Sequence[Command],
    results: Sequence[tuple[Timing, bytes]],
    unavailable: dict[str, str],
) -> list[dict[str, object]]:
    """Table rows: one per timed command, then one per command that couldn't run."""
    by_label = {c.label: t for c, (t, _) in zip(commands, results, strict=True)}
    rg = by_label.get("rg")
    rows: list[dict[str, object]] = []
    for command, (timing, out) in zip(commands, results, strict=True):
        name = display(command)
        if not timing.ok:
            name += f" (exit {timing.returncode})"
        ratio = "-"
        if timing.ok and rg is not None and rg.ok and rg.median > 0:
            ratio = f"{timing.median / rg.median:.2f}x"
        rows.append(
            {
                "command": name,
                "median ms": timing.median * 1000,
                "min ms": timing.min * 1000,
                "max ms": timing.max * 1000,
                "ratio to rg": ratio,
                "paths": out.count(command.sep) if out else 0,
            }
        )
    for label in unavailable:
        name = "readmany files --no-daemon" if label == "readmany" else label
        rows.append(
            {
                "command": f"{name} (not available)",
                "median ms": "-",
                "min ms": "-",
                "max ms": "-",
                "ratio to rg": "-",
                "paths": "-",
            }
        )
    return rows


def verdict(by_label: dict[str, Timing]) -> tuple[str, float | None, str]:
    """PASS / FAIL / SKIP for "readmany ≤ 1.5x rg", the ratio of medians, and a note.

    SKIP when readmany or rg wasn't measured; FAIL when readmany ran but failed.
    """
    readmany, rg = by_label.get("readmany"), by_label.get("rg")
    if readmany is None or rg is None or not rg.ok or rg.median <= 0:
        return "SKIP", None, "readmany or rg not measured"
    if not readmany.ok:
        return "FAIL", None, f"readmany exited with status {readmany.returncode}"
    ratio = readmany.median / rg.median
    return ("PASS" if ratio <= TARGET_RATIO else "FAIL"), ratio, f"{ratio:.2f}x"


def readmany_listing(tree: Path) -> set[str] | None:
    """readmany's list with ``--no-default-excludes``, or None (after saying why)."""
    argv = (
        *(sys.executable, "-m", "readmany_daemon", "files", "--no-daemon"),
        *("--no-default-excludes", "-0", "--root", str(tree)),
    )
    sample = time_once(Command("readmany-set", argv, tree, python_env()))
    if sample.returncode != 0:
        print(f"readmany files --no-default-excludes failed: {sample.stderr}")
        return None
    return split_paths(sample.stdout, b"\0", tree)


def report_sets(
    tree: Path,
    commands: Sequence[Command],
    results: Sequence[tuple[Timing, bytes]],
    readmany: bool,
) -> list[SetDiff]:
    """Compare each lister's paths with git's and print the table; return the diffs."""
    timed = {c.label: (c, t, out) for c, (t, out) in zip(commands, results, strict=True)}
    if "git" not in timed or not timed["git"][1].ok:
        print("\nsets: not compared (git ls-files not measured)")
        return []
    oracle = split_paths(timed["git"][2], b"\0", tree)
    diffs: list[SetDiff] = []
    deny = deny_matcher() if readmany else None
    listed = readmany_listing(tree) if readmany else None
    if listed is not None:
        label = "readmany files --no-default-excludes"
        diffs.append(compare(label, listed, oracle, deny[1] if deny else None))
    for name in ("rg", "fd"):
        if name in timed and timed[name][1].ok:
            command, _, out = timed[name]
            diffs.append(
                compare(display(command), split_paths(out, command.sep, tree), oracle, None)
            )
    print(
        f"\nsets vs `git ls-files --cached --others --exclude-standard` ({len(oracle):,} paths):\n"
    )
    rows: list[dict[str, object]] = [
        {
            "lister": d.label,
            "paths": d.paths,
            "only in lister": len(d.only_here),
            "only in git": len(d.only_git),
            "denied (expected)": len(d.denied),
            "differences": d.differences,
        }
        for d in diffs
    ]
    print(table(rows))
    for d in diffs:
        if d.unexpected:
            only_git = d.unexpected_only_git()
            examples = [f"+{p}" for p in d.only_here[:5]] + [f"-{p}" for p in only_git[:5]]
            more = " …" if d.unexpected > len(examples) else ""
            print(f"\n{d.label}, unexpected: {', '.join(examples)}{more}")
    if deny is not None and listed is not None:
        print(f"\n(denied: only in git and matched by readmany's deny rules: {deny[0]})")
    if listed is not None:
        first = diffs[0]
        print(
            f"\nreadmany set differences: {first.differences} "
            f"({first.unexpected} unexpected, {len(first.denied)} denied by deny rules)"
        )
    else:
        why = "readmany failed" if readmany else "readmany not available"
        print(f"\nreadmany set differences: not measured ({why})")
    return diffs


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 0 unless the tree can't be made (or ``--strict`` and FAIL)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, help="tree to measure (default bench/.trees/…)")
    parser.add_argument("--files", type=int, help="files in the generated tree (100000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated tree")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs per command first")
    parser.add_argument("--results-dir", type=Path, help="where to write JSON (bench/results)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target FAILs")
    args = parser.parse_args(argv)

    try:
        tree, info = prepare_tree(args.tree, args.files, args.seed)
    except (TreeError, ValueError, OSError) as exc:
        print(f"bench_files: {exc}", file=sys.stderr)
        return 2
    print(f"tree {info.summary()}" if info else f"tree {tree} (not generated: used as it is)")

    why_not = readmany_probe(tree)
    unavailable: dict[str, str] = {}
    if why_not is not None:
        unavailable["readmany"] = why_not
        print(f"readmany: not available ({why_not})")
    commands, missing = build_commands(tree, readmany=why_not is None)
    for name in missing:
        unavailable[name] = "not on PATH"
    results = run_interleaved(commands, runs=args.runs, warmup=args.warmup)
    by_label = {t.label: t for t, _ in results}

    print(f"\n{args.runs} runs each after {args.warmup} warm-up, interleaved; wall time:\n")
    print(table(results_rows(commands, results, unavailable)))
    for timing, _ in results:
        if not timing.ok:
            print(f"\n{timing.label} failed (exit {timing.returncode}): {timing.stderr}")
    status, ratio, note = verdict(by_label)
    print(f"\ntarget readmany ≤ {TARGET_RATIO}x rg: {status} ({note})")

    diffs = report_sets(tree, commands, results, readmany=why_not is None)

    payload = {
        "tree": info.to_json() if info else {"root": str(tree)},
        "runs": args.runs,
        "warmup": args.warmup,
        "timings": [
            t.to_json() | {"paths": out.count(c.sep)}
            for c, (t, out) in zip(commands, results, strict=True)
        ],
        "unavailable": unavailable,
        "target": {"ratio_max": TARGET_RATIO, "status": status, "ratio": ratio, "note": note},
        "sets": [d.to_json() for d in diffs],
        "versions": {
            "rg": tool_version(["rg", "--version"]),
            "fd": tool_version([shutil.which("fdfind") or "fd", "--version"]),
            "git": tool_version(["git", "--version"]),
        },
    }
    path = write_results("files", payload, args.results_dir)
    print(f"\nresults: {path}")
    return 1 if args.strict and status == "FAIL" else 0


if __name__ == "__main__":
    raise SystemExit(main())
