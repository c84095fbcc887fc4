"""Benchmark: how much of a notebook's raw JSON its cell view takes.

Usage::

    python bench/bench_notebook.py [--plots 1 6 20]
    python bench/bench_notebook.py --tree DIR     # every .ipynb under a folder of real ones

Writes the test suite's generated data-analysis notebook (``tests/notebooks.py``: base64
PNG plots, a 400-line stream, an HTML table, a coloured traceback) with each number of
plots, reads it whole in-process (``preferFullRead``) and prints the raw JSON's
characters, the view's (``llmContent``), their ratio, and whether every cell source and
the traceback are kept. Target: ≤ 10 % of the raw JSON, 100 % of sources and tracebacks.

With ``--tree`` it reads every notebook under a folder instead (e.g. a clone of a book
of notebooks with their outputs): per notebook and in all, raw JSON characters and o200k
tokens against the view's, and whether every cell's source is in the view.
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
    parser.add_argument("--tree", type=Path, help="a folder of real notebooks")
    args = parser.parse_args(argv)
    if args.tree is not None:
        return real_tree(args.tree)
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


def real_tree(folder: Path) -> int:
    """The view against the raw JSON over every notebook under ``folder``."""
    import json

    from readmany_daemon.content import tokens

    ws = Workspace.open(str(folder), Settings())
    raw_chars = view_chars = raw_tokens = view_tokens = 0
    notebooks = with_outputs = missing = 0
    for path in sorted(folder.rglob("*.ipynb")):
        rel = path.relative_to(folder).as_posix()
        raw = path.read_text(encoding="utf-8")
        cells = json.loads(raw).get("cells", [])
        params = decode_read_params({"paths": [rel], "preferFullRead": True})
        text = answer(ws, params).llm_content
        notebooks += 1
        with_outputs += any(c.get("outputs") for c in cells)
        missing += sum(
            1
            for c in cells
            if "".join(c.get("source", [])).strip()
            and "".join(c.get("source", [])).strip() not in text
        )
        raw_chars += len(raw)
        view_chars += len(text)
        raw_tokens += tokens.count(raw)
        view_tokens += tokens.count(text)
    print(
        table(
            [
                {
                    "notebooks": f"{notebooks} ({with_outputs} with outputs)",
                    "raw JSON chars": f"{raw_chars:,}",
                    "view chars": f"{view_chars:,} ({view_chars / raw_chars:.1%})",
                    "raw JSON tokens": f"{raw_tokens:,}",
                    "view tokens": f"{view_tokens:,} ({view_tokens / raw_tokens:.1%})",
                    "cell sources missing": str(missing),
                }
            ]
        )
    )
    return 0 if missing == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
