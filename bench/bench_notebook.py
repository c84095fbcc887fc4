"""Benchmark: how much of a notebook's raw JSON its cell view takes.

Usage::

    python bench/bench_notebook.py [--plots 1 6 20]

Writes the test suite's generated data-analysis notebook (``tests/notebooks.py``: base64
PNG plots, a 400-line stream, an HTML table, a coloured traceback) with each number of
plots, reads it whole in-process (``preferFullRead``) and prints the raw JSON's
characters, the view's (``llmContent``), their ratio, and whether every cell source and
the traceback are kept. Target: ≤ 10 % of the raw JSON, 100 % of sources and tracebacks.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from common import REPO_ROOT, table

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.notebooks import notebook, notebook_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plots", type=int, nargs="+", default=[1, 6, 20])
    args = parser.parse_args(argv)
    rows = []
    for plots in args.plots:
        with tempfile.TemporaryDirectory() as folder:
            raw = notebook_text(plots=plots)
            (Path(folder) / "nb.ipynb").write_text(raw)
            ws = Workspace.open(folder, Settings())
            params = decode_read_params({"paths": ["nb.ipynb"], "preferFullRead": True})
            text = answer(ws, params).llm_content
        cells = notebook(plots)["cells"]
        kept = all("".join(c["source"]) in text for c in cells)
        kept = kept and "ZeroDivisionError: division by zero" in text
        rows.append(
            {
                "plots": plots,
                "raw JSON chars": f"{len(raw):,}",
                "view chars": f"{len(text):,}",
                "ratio": f"{len(text) / len(raw):.2%}",
                "sources + traceback kept": "yes" if kept else "NO",
                "target ≤ 10 %": "PASS" if kept and len(text) <= 0.1 * len(raw) else "FAIL",
            }
        )
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
