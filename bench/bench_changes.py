"""Benchmark: a ``changes`` read against reading the changed files whole (issue 26 item 3).

Usage::

    python bench/bench_changes.py --repo /tmp/fchanges/pytest [--glob 'src/**/*.py']
        [--commits 300]

``--repo`` is a clone this script may check out (``git checkout --detach``; nothing is
committed): e.g. ``git clone -q /work/.mirror/pytest-dev+pytest/repo /tmp/fchanges/pytest``.
The newest ``--commits`` commits (no merges) that modify a file ``--glob`` matches are
taken; for each, the work tree is put at the commit and, in process (the engine as the
daemon runs it, ``engine.answer``, on a fresh ``Workspace``), two reads are made, both
with ``lineNumbers: true`` and a budget that never binds:

* ``changes``: ``{"changes": {"base": PARENT}, "paths": [GLOB], "preferFullRead": true,
  "redactSecrets": false}``;
* ``whole``: the same files (those the changes read answered) by path, whole.

Coverage: each changed line git gives (``git diff -U0 PARENT COMMIT``, its ``+`` lines at
their new numbers) must be in the ``changes`` answer at its own number with its text
(``{n:>6}\\t{text}``). Tokens: o200k tokens of each ``llmContent``. Also reported: the
lines the widened spans hold, as a share of the modified files' lines. Prints one
Markdown table and writes ``bench/results/changes-<repo>-latest.json``. Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.content import tokens
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_NEVER = {"maxTotalFiles": 100_000, "maxTotalChars": 1_000_000_000}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        errors="surrogateescape",
    ).stdout


def commits(repo: Path, glob: str, n: int) -> list[tuple[str, str]]:
    """The newest ``n`` ``(commit, parent)`` pairs (no merges, not the root commit)
    that modify a file ``glob`` matches."""
    out: list[tuple[str, str]] = []
    log = _git(repo, "log", "--no-merges", "--format=%H %P", "--diff-filter=M", "--", glob)
    for line in log.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out.append((parts[0], parts[1]))
        if len(out) == n:
            break
    return out


def changed_lines(repo: Path, parent: str, commit: str, glob: str) -> dict[str, dict[int, str]]:
    """Each file's ``+`` lines of ``git diff -U0 -M PARENT COMMIT`` (new number → text)."""
    patch = _git(
        repo,
        "-c",
        "core.quotePath=false",
        "diff",
        "-U0",
        "-M",
        "--no-color",
        "--no-ext-diff",
        parent,
        commit,
        "--",
        glob,
    )
    out: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    at = 0
    for line in patch.split("\n"):
        if line.startswith("+++ "):
            name = line[4:].rstrip("\t")
            current = None if name == "/dev/null" else out.setdefault(name[2:], {})
        elif line.startswith("@@ "):
            m = _HUNK.match(line)
            at = int(m.group(1)) if m else 0
        elif line.startswith("+") and current is not None and not line.startswith("+++ "):
            current[at] = line[1:]
            at += 1
    return out


def _sections(text: str, paths: list[str]) -> dict[str, set[str]]:
    """The numbered lines of each file's section of a ``separator`` answer."""
    heads = {f"--- {p} ---": p for p in paths}
    out: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in text.split("\n"):
        if line in heads:
            current = out.setdefault(heads[line], set())
        elif line.startswith("--- End of content ---"):
            current = None
        elif current is not None:
            current.add(line)
    return out


def one_case(repo: Path, glob: str, commit: str, parent: str) -> dict[str, float] | None:
    """Put the work tree at ``commit`` and measure one case (None: nothing to read)."""
    _git(repo, "checkout", "-q", "--detach", "-f", commit)
    ws = Workspace.open(str(repo), Settings())
    common = {"lineNumbers": True, "redactSecrets": False, "preferFullRead": True, **_NEVER}
    t0 = time.perf_counter()
    got = answer(ws, decode_read_params({"changes": {"base": parent}, "paths": [glob], **common}))
    took = time.perf_counter() - t0
    paths = [f.path for f in got.files if f.status in ("ok", "partial")]
    if not paths:
        return None
    whole = answer(ws, decode_read_params({"paths": paths, **common}))
    want = changed_lines(repo, parent, commit, glob)
    shown = _sections(got.llm_content, paths)
    total = hit = 0
    for path, lines in want.items():
        if path not in paths:
            continue
        seen = shown.get(path, set())
        for n, text in lines.items():
            total += 1
            hit += f"{n:>6}\t{text}" in seen or f"{n:>{len(str(n))}}\t{text}" in seen
    span_lines = sum(e - s + 1 for f in got.files if f.spans for s, e in f.spans)
    modified_lines = sum(f.total_lines or 0 for f in got.files if f.spans is not None)
    a, b = tokens.count(got.llm_content), tokens.count(whole.llm_content)
    return {
        "changed_lines": total,
        "covered": hit,
        "tokens": a,
        "whole_tokens": b,
        "share": a / b if b else 0.0,
        "span_lines": span_lines,
        "modified_lines": modified_lines,
        "ms": took * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--glob", default="src/**/*.py")
    parser.add_argument("--commits", type=int, default=300)
    args = parser.parse_args()
    repo: Path = args.repo
    start = _git(repo, "rev-parse", "HEAD").strip()
    cases: list[dict[str, float]] = []
    try:
        for commit, parent in commits(repo, args.glob, args.commits):
            got = one_case(repo, args.glob, commit, parent)
            if got is not None:
                got["commit"] = commit  # type: ignore[assignment]
                cases.append(got)
    finally:
        _git(repo, "checkout", "-q", "--detach", "-f", start)
    lines = sum(c["changed_lines"] for c in cases)
    covered = sum(c["covered"] for c in cases)
    full = sum(c["covered"] == c["changed_lines"] for c in cases)
    shares = [c["share"] for c in cases]
    spans = sum(c["span_lines"] for c in cases) / max(1, sum(c["modified_lines"] for c in cases))
    rows = [
        {
            "repository": repo.name,
            "cases": len(cases),
            "changed lines shown": f"{covered / max(lines, 1):.2%} ({covered:,}/{lines:,})",
            "cases all shown": f"{full}/{len(cases)}",
            "median tokens vs whole": f"{statistics.median(shares):.1%}",
            "p90": f"{statistics.quantiles(shares, n=10)[-1]:.1%}",
            "all tokens vs whole": (
                f"{sum(c['tokens'] for c in cases) / sum(c['whole_tokens'] for c in cases):.1%}"
            ),
            "span lines": f"{spans:.1%}",
            "p50 ms": f"{statistics.median(c['ms'] for c in cases):.0f}",
        }
    ]
    print(table(rows))
    write_results(
        f"changes-{repo.name}",
        {"glob": args.glob, "commits": args.commits, "summary": rows[0], "cases": cases},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
