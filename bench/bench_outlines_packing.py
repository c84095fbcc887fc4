"""Benchmark: what ``packing: "outlines"`` tells a model within the agent tools' budgets.

Usage::

    python bench/bench_outlines_packing.py [--stdlib DIR] [--repo DIR] [--quick]

For each tree (the standard library's ``.py`` files, minus ``site-packages`` and tests;
this repository's ``.py`` files), one broad glob is answered under the MCP and VS Code
tools' defaults (``maxTotalTokens`` 20,000, ``maxTotalChars`` 50,000, format
``separator``) with ``packing`` ``auto`` (the CLI and LSP default), ``request-order``
and ``outlines`` (the tools' default), in this process (``engine.answer``, a warm content
cache: the second of two runs is measured). Per row: files read whole, cut, given as
outlines, and the files whose structure or content the model learns (the sum); the o200k
tokens of ``llmContent``; and the answer's wall time.

Prints one Markdown table and writes ``bench/results/outlines-packing-latest.json``.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import time
from pathlib import Path

from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.content import tokens
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params

BUDGETS = {"maxTotalTokens": 20000, "maxTotalChars": 50000}


def row(tree: str, root: Path, globs: list[str], excludes: list[str]) -> list[dict[str, object]]:
    ws = Workspace.open(str(root), Settings(), cache=ContentCache(512 << 20))
    out: list[dict[str, object]] = []
    for packing in ("auto", "request-order", "outlines"):
        params = {"paths": globs, "exclude": excludes, "packing": packing, **BUDGETS}
        answer(ws, decode_read_params(params))  # warm the caches
        t0 = time.perf_counter()
        r = answer(ws, decode_read_params(params))
        ms = (time.perf_counter() - t0) * 1000
        whole = sum(f.status == "ok" for f in r.files)
        cut = sum(f.status == "partial" for f in r.files)
        outlined = sum(f.status == "omitted" and f.outline is not None for f in r.files)
        out.append(
            {
                "tree": tree,
                "matched": f"{r.summary.matched:,}",
                "packing": packing,
                "whole": whole,
                "cut": cut,
                "outlined": outlined,
                "files known": whole + cut + outlined,
                "llmContent tokens": f"{tokens.count(r.llm_content):,}",
                "answer ms (warm)": f"{ms:.0f}",
            }
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    ap.add_argument("--repo", type=Path, default=REPO_ROOT)
    ap.add_argument("--quick", action="store_true", help="this repository only")
    args = ap.parse_args()
    rows = []
    if not args.quick:
        rows += row(
            "standard library",
            args.stdlib,
            ["**/*.py"],
            ["site-packages/**", "test/**", "**/tests/**", "idlelib/idle_test/**"],
        )
    rows += row("this repository", args.repo, ["**/*.py"], [])
    print(table(rows))
    write_results("outlines-packing", {"budgets": BUDGETS, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
