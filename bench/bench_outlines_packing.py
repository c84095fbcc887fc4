"""Benchmark: what ``packing: "outlines"`` tells a model within the agent tools' budgets.

Usage::

    python bench/bench_outlines_packing.py [--stdlib DIR] [--repo DIR] [--quick]
    python bench/bench_outlines_packing.py --walk [--django DIR]

Default: for each tree (the standard library's ``.py`` files, minus ``site-packages``
and tests; this repository's ``.py`` files), one broad glob is answered under the MCP and
VS Code tools' defaults (``maxTotalTokens`` 20,000, ``maxTotalChars`` 50,000, format
``separator``) with ``packing`` ``auto`` (the CLI and LSP default), ``request-order``
and ``outlines`` (the tools' default), in this process (``engine.answer``, a warm content
cache: the second of two runs is measured). Per row: files read whole, cut, given as
outlines, and the files whose structure or content the model learns (the sum); the o200k
tokens of ``llmContent``; and the answer's wall time.

``--walk``: issue 23's targets for ``outlines`` packing on Django 5.2's sdist under git
(``tests.sdists.django_tree()``, or ``--django DIR``), ``**/*.py`` with the MCP tool's
defaults (``mcp.schema.tool_budgets``: ``maxTotalTokens`` 20,000, ``maxTotalChars`` and
``maxAnswerChars`` 50,000): the whole ``nextCursor`` walk for ``outlines`` and ``auto``
(calls, and :func:`walk_violations` of the outlines walk), then page 1 of both for every
``maxTotalChars`` and ``maxAnswerChars`` pair of :data:`CHARS_GRID` x :data:`ANSWER_GRID`
(:func:`page_one_shortfall`). Prints the figures and every violation; exits 1 when a
target is missed. ``tests/unit/engine/test_outlines_packing_real.py`` (slow) runs the same
checks.

Writes ``bench/results/outlines-packing-latest.json`` (or ``outlines-walk-latest.json``).
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.content import tokens
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.mcp.schema import tool_budgets
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import decode_read_request
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyResult

BUDGETS = {"maxTotalTokens": 20000, "maxTotalChars": 50000}

#: ``maxTotalChars`` and ``maxAnswerChars`` of the page-1 grid (issue 23 item 1).
CHARS_GRID = (40_000, 50_000, 60_000, 100_000, 200_000)
ANSWER_GRID = (20_000, 50_000, 100_000)
#: The most calls a walk may take, against ``auto``'s.
WALK_RATIO = 1.2
#: A file cut by the budget to fewer characters than this is a sliver ...
SLIVER_CHARS = 200
#: ... unless at most this many characters of ``maxAnswerChars`` were left ...
SLIVER_ANSWER_LEFT = 10_000
#: ... or at most this share of ``maxTotalTokens``.
SLIVER_TOKENS_LEFT = 0.10


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


# ------------------------------------------------------------------ the cursor walk


def tool_params(packing: str, **over: Any) -> dict[str, Any]:
    """``**/*.py`` with the MCP read tool's budgets, ``packing`` and ``over`` on top."""
    return {"paths": ["**/*.py"], **tool_budgets(), "packing": packing, **over}


def walk(ws: Workspace, params: dict[str, Any], limit: int = 20_000) -> list[ReadManyResult]:
    """Page 1 of ``params``, then each ``nextCursor`` alone until none comes back (at
    most ``limit`` pages)."""
    pages = [answer(ws, decode_read_request(params))]
    while pages[-1].next_cursor and len(pages) < limit:
        pages.append(answer(ws, decode_read_request({"cursor": pages[-1].next_cursor})))
    return pages


def delivered(r: ReadManyResult) -> int:
    """Files whose content page ``r`` gives (``ok`` or ``partial``)."""
    return sum(f.status in ("ok", "partial") for f in r.files)


def walk_violations(pages: Sequence[ReadManyResult], params: dict[str, Any]) -> list[str]:
    """What the pages of one walk miss of issue 23's per-page targets: every page but
    the last uses ≥ 50 % of ``maxAnswerChars`` or of ``maxTotalTokens``, or holds
    ``maxTotalFiles`` files; no file is cut by the budget to fewer than
    :data:`SLIVER_CHARS` characters while more than :data:`SLIVER_ANSWER_LEFT`
    characters of ``maxAnswerChars`` and :data:`SLIVER_TOKENS_LEFT` of
    ``maxTotalTokens`` are left. One line per miss, naming the page (1-based)."""
    answer_max = params["maxAnswerChars"]
    tokens_max = params["maxTotalTokens"]
    files_max = params.get("maxTotalFiles", 20)
    out: list[str] = []
    for n, r in enumerate(pages, start=1):
        chars, used = len(r.llm_content), r.summary.estimated_tokens
        if n < len(pages) and not (
            chars >= answer_max / 2 or used >= tokens_max / 2 or delivered(r) >= files_max
        ):
            out.append(f"page {n}: {chars:,} answer chars, {used:,} tokens, {delivered(r)} files")
        roomy = (
            answer_max - chars > SLIVER_ANSWER_LEFT
            and tokens_max - used > SLIVER_TOKENS_LEFT * tokens_max
        )
        for f in r.files:
            if f.status == "partial" and f.code == "budget" and f.chars < SLIVER_CHARS and roomy:
                out.append(f"page {n}: {f.path} cut to {f.chars} chars with room left")
    return out


def page_one_shortfall(outlines: ReadManyResult, auto: ReadManyResult) -> str | None:
    """How page 1 of ``outlines`` falls short of ``auto``'s (fewer than 90 % of its
    files or more than one fewer, or under 80 % of its answer characters); None when it
    does not."""
    mine, theirs = delivered(outlines), delivered(auto)
    chars, their_chars = len(outlines.llm_content), len(auto.llm_content)
    if mine < 0.9 * theirs or mine < theirs - 1 or chars < 0.8 * their_chars:
        return f"{mine} files in {chars:,} chars against auto's {theirs} in {their_chars:,}"
    return None


def walk_report(root: Path) -> tuple[dict[str, Any], list[str]]:
    """The walk figures on ``root`` and every missed target."""
    ws = Workspace.open(str(root), Settings(), cache=ContentCache(1 << 30))
    misses: list[str] = []
    figures: dict[str, Any] = {}
    walks = {}
    for packing in ("auto", "outlines"):
        t0 = time.perf_counter()
        pages = walks[packing] = walk(ws, tool_params(packing))
        figures[f"{packing} calls"] = len(pages)
        figures[f"{packing} seconds"] = round(time.perf_counter() - t0, 1)
        figures[f"{packing} page 1"] = (
            f"{delivered(pages[0])} files, {len(pages[0].llm_content):,} chars"
        )
    figures["one-file pages (outlines)"] = sum(delivered(r) <= 1 for r in walks["outlines"][:-1])
    if figures["outlines calls"] > WALK_RATIO * figures["auto calls"]:
        misses.append(
            f"walk: {figures['outlines calls']} calls against auto's {figures['auto calls']}"
        )
    misses += walk_violations(walks["outlines"], tool_params("outlines"))
    for total in CHARS_GRID:
        for answer_chars in ANSWER_GRID:
            over = {"maxTotalChars": total, "maxAnswerChars": answer_chars}
            mine = answer(ws, decode_read_request(tool_params("outlines", **over)))
            theirs = answer(ws, decode_read_request(tool_params("auto", **over)))
            short = page_one_shortfall(mine, theirs)
            figures[f"page 1 at {total}/{answer_chars}"] = (
                f"{delivered(mine)} files {len(mine.llm_content):,} chars; "
                f"auto {delivered(theirs)} files {len(theirs.llm_content):,} chars"
            )
            if short is not None:
                where = f"maxTotalChars {total}, maxAnswerChars {answer_chars}"
                misses.append(f"page 1, {where}: {short}")
    return figures, misses


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    ap.add_argument("--repo", type=Path, default=REPO_ROOT)
    ap.add_argument("--quick", action="store_true", help="this repository only")
    ap.add_argument("--walk", action="store_true", help="issue 23's walk targets on Django")
    ap.add_argument("--django", type=Path, default=None, help="Django 5.2's tree")
    args = ap.parse_args()
    if args.walk:
        root = args.django
        if root is None:
            from tests.sdists import django_tree

            root = django_tree()
        figures, misses = walk_report(root)
        for name, value in figures.items():
            print(f"{name}: {value}")
        for miss in misses[:60]:
            print(f"MISSED {miss}")
        if len(misses) > 60:
            print(f"MISSED … and {len(misses) - 60} more")
        write_results("outlines-walk", {"figures": figures, "misses": misses})
        return 1 if misses else 0
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
