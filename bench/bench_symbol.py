"""Benchmark: the cost of a warm ``symbol`` read against a line window of the same lines.

Usage::

    python bench/bench_symbol.py [--files 40] [--runs 201]

Copies ``--files`` ``.py`` files of the running interpreter's standard library into a
fresh folder under ``/tmp``, picks one method or function of each (``ast``: its first
decorator line to ``end_lineno``, the span a ``symbol`` read answers with), waits until
the files' ctimes are older than the racy tick (2 s), starts a private daemon
(``readmany serve --socket``, its own XDG folders) and, on one warm connection, times
``readMany/read`` requests interleaved round by round:

* ``symbol``: ``files: [{path, symbol: "Class.method"}]``;
* ``window``: ``files: [{path, offset, limit}]`` of the same lines.

Each request names one file, cycling through them; after a warm-up round (every file
read and outlined once) the outlines are kept by content hash, so the symbol read costs
its lookup only. Prints one Markdown table (p50 and p90 of each, the p50 difference) and
writes ``bench/results/symbol-latest.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import statistics
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from bench_daemon import private_home, running
from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.racy import RACY_NS

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _method(text: str) -> tuple[str, int, int] | None:
    """The first method of a top-level class (else the first top-level function) of
    ``text``: its path and its lines as ``ast`` draws them."""
    tree = ast.parse(text)
    found: tuple[str, int, int] | None = None
    for node in tree.body:
        inner = node.body if isinstance(node, ast.ClassDef) else [node]
        for d in inner:
            if isinstance(d, _DEFS):
                start = min([d.lineno, *(x.lineno for x in d.decorator_list)])
                name = f"{node.name}.{d.name}" if d is not node else d.name
                got = (name, start, d.end_lineno or d.lineno)
                if d is not node:
                    return got
                found = found or got
    return found


def build(dest: Path, files: int) -> list[tuple[str, str, int, int]]:
    """``files`` standard-library ``.py`` files copied flat into ``dest``, each with a
    symbol: ``(file name, symbol, first line, last line)``."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    picked: list[tuple[str, str, int, int]] = []
    for src in sorted(stdlib.glob("*.py")):
        if len(picked) == files:
            break
        try:
            text = src.read_text(encoding="utf-8")
            got = _method(text)
        except (SyntaxError, UnicodeDecodeError):
            continue
        if got is None:
            continue
        (dest / src.name).write_text(text, encoding="utf-8")
        picked.append((src.name, *got))
    return picked


#: The command line's options: name -> (type, default).
OPTIONS: dict[str, tuple[type, object]] = {
    "--files": (int, 40),
    "--runs": (int, 201),
    "--results-dir": (Path, None),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for option, (kind, default) in OPTIONS.items():
        parser.add_argument(option, type=kind, default=default)
    args = parser.parse_args(argv)
    with private_home("rmsym") as home:
        tree = home / "tree"
        picked = build(tree, args.files)
        time.sleep(RACY_NS / 1e9 + 0.2)  # ctimes older than the racy tick: cache holds
        with running(home / "daemon") as daemon:
            client = daemon.connect(tree)
            try:
                times = _measure(client, picked, args.runs)
            finally:
                client.close()
    rows, payload = _report(times, args)
    print(table(rows))
    write_results("symbol", payload, args.results_dir)
    return 0


def _measure(
    client: Any, picked: list[tuple[str, str, int, int]], runs: int
) -> dict[str, list[float]]:
    """Seconds per request of each kind, interleaved round by round."""
    asks: dict[str, list[dict[str, Any]]] = {
        "symbol": [{"files": [{"path": f, "symbol": s}]} for f, s, _, _ in picked],
        "window": [
            {"files": [{"path": f, "offset": a, "limit": b - a + 1}]} for f, _, a, b in picked
        ],
    }
    for params in (*asks["symbol"], *asks["window"]):  # warm-up: read, cached, outlined
        result = client.request("readMany/read", params)
        status = result["files"][0]["status"]
        if status != "ok":
            raise RuntimeError(f"{params}: {status} {result['files'][0].get('message')}")
    times: dict[str, list[float]] = {"symbol": [], "window": []}
    for i in range(runs):
        for kind in ("symbol", "window") if i % 2 else ("window", "symbol"):
            params = asks[kind][i % len(picked)]
            t0 = time.perf_counter()
            client.request("readMany/read", params)
            times[kind].append(time.perf_counter() - t0)
    return times


def _report(
    times: dict[str, list[float]], args: argparse.Namespace
) -> tuple[list[dict[str, object]], dict[str, object]]:
    def q(values: list[float], p: float) -> float:
        return statistics.quantiles(values, n=100)[int(p) - 1] * 1000

    rows: list[dict[str, object]] = []
    for kind in ("symbol", "window"):
        v = times[kind]
        rows.append(
            {
                "request": kind,
                "p50 ms": f"{statistics.median(v) * 1000:.2f}",
                "p90 ms": f"{q(v, 90):.2f}",
                "runs": len(v),
            }
        )
    extra = (statistics.median(times["symbol"]) - statistics.median(times["window"])) * 1000
    rows.append({"request": "symbol - window", "p50 ms": f"{extra:+.2f}", "p90 ms": "", "runs": ""})
    payload: dict[str, object] = {
        "files": args.files,
        "runs": args.runs,
        "p50_ms": {k: statistics.median(v) * 1000 for k, v in times.items()},
        "p50_extra_ms": extra,
    }
    return rows, payload


if __name__ == "__main__":
    sys.exit(main())
