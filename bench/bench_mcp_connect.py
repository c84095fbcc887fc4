"""Benchmark: connecting to ``readmany mcp`` plus the first ``tools/list``, per MCP era
(issue 27 item 1), with the newest ``mcp`` SDK's own client.

Usage::

    python bench/bench_mcp_connect.py [--runs N] [--results-dir DIR]

Each run starts a new ``readmany mcp --no-daemon --root TREE`` process through the SDK's
``Client`` (stdio) and times from entering the client until the first ``tools/list``
returns: the connect (``auto``: the ``server/discover`` probe, landing in the 2026-07-28
era; ``legacy``: ``initialize`` and ``notifications/initialized``; ``2026-07-28``: no
handshake at all) and the listing. The modes run alternately, each round in a rotated
order, ``--runs`` rounds (default 5), after one warm-up round; the table gives medians
with min and max, and ``auto`` against ``legacy`` (target <= 1.5x). The same with the
front stage off (``READMANY_MCP_FRONT=0``: the SDK answers everything) is shown for
information. The client is imported before timing (the bench process's own start is
not the server's). Private HOME and XDG folders under a temporary directory.

Prints one Markdown table and writes ``bench/results/mcp-connect-latest.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from common import REPO_ROOT, table, write_results
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

MODES = ("auto", "legacy", "2026-07-28")


def _env(tmp: Path, front: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("READMANY_")}
    for name in ("home", "run", "cache", "state"):
        (tmp / name).mkdir(mode=0o700, exist_ok=True)
    env.update(
        HOME=str(tmp / "home"),
        XDG_RUNTIME_DIR=str(tmp / "run"),
        XDG_CACHE_HOME=str(tmp / "cache"),
        XDG_STATE_HOME=str(tmp / "state"),
        READMANY_MCP_FRONT="1" if front else "0",
        PYTHONPATH=str(REPO_ROOT),
    )
    return env


async def connect_and_list(mode: str, tree: Path, env: dict[str, str]) -> tuple[float, str]:
    """Seconds from entering the SDK's client in ``mode`` until the first ``tools/list``
    returned, and the protocol version the session landed in."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "readmany_daemon", "mcp", "--no-daemon", "--root", str(tree)],
        env=env,
        cwd=str(tree),
    )
    start = time.perf_counter()
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        listed = await client.list_tools()
        took = time.perf_counter() - start
        assert len(listed.tools) == 3, listed
        session: Any = client.session
        return took, str(session.protocol_version)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--results-dir", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rm-bench-mcp-") as tmp_name:
        tmp = Path(tmp_name)
        tree = tmp / "ws"
        tree.mkdir()
        (tree / "a.py").write_text("print('a')\n")
        cases = [(mode, front) for front in (True, False) for mode in MODES]
        times: dict[tuple[str, bool], list[float]] = {c: [] for c in cases}
        landed: dict[tuple[str, bool], str] = {}
        for round_ in range(args.runs + 1):
            shift = round_ % len(cases)
            for mode, front in cases[shift:] + cases[:shift]:
                took, version = anyio.run(connect_and_list, mode, tree, _env(tmp, front))
                landed[(mode, front)] = version
                if round_:  # round 0 warms the caches
                    times[(mode, front)].append(took)
    med = {c: statistics.median(t) for c, t in times.items()}
    rows = []
    for mode, front in cases:
        t = times[(mode, front)]
        ratio = med[(mode, front)] / med[("legacy", front)]
        target = "≤ 1.5x" if front and mode == "auto" else "for information"
        rows.append(
            {
                "client mode": mode,
                "front stage": "on" if front else "off (READMANY_MCP_FRONT=0)",
                "protocol": landed[(mode, front)],
                "connect + first tools/list": f"{med[(mode, front)] * 1000:,.1f} ms",
                "min-max": f"{min(t) * 1000:,.0f}-{max(t) * 1000:,.0f} ms",
                "vs legacy": f"{ratio:.2f}x ({target})",
                "result": "info" if target != "≤ 1.5x" else "PASS" if ratio <= 1.5 else "FAIL",
            }
        )
    print(table(rows))
    seconds = {f"{mode}/front={front}": t for (mode, front), t in times.items()}
    write_results(
        "mcp-connect",
        {"runs": args.runs, "rows": rows, "seconds": seconds},
        args.results_dir,
    )
    return 0 if all(r["result"] != "FAIL" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
