# ruff: noqa: E501  (notebook fixture data: cells written as Jupyter writes them)
"""A realistic Jupyter notebook for tests: plots as base64 PNGs, streams, rich outputs
and an error with a coloured traceback (nbformat 4.5, as Jupyter writes it)."""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib
from typing import Any


def png(width: int, height: int, seed: int) -> bytes:
    """A valid PNG of noisy pixels (compresses poorly, like a real plot's antialiasing)."""
    rng = random.Random(seed)
    rows = b"".join(
        b"\x00" + bytes(rng.randrange(256) for _ in range(width * 3)) for _ in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[7], line 3\x1b[0m\n\x1b[1;32m      1\x1b[0m rates \x1b[38;5;241m=\x1b[39m load()\n"
    "\x1b[0;32m----> 3\x1b[0m \x1b[38;5;28mprint\x1b[39m(total \x1b[38;5;241m/\x1b[39m count)",
    "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
]


def notebook(plots: int = 6, seed: int = 0) -> dict[str, Any]:
    """A data-analysis notebook: markdown, code, streams (one long), tables as
    ``text/html`` + ``text/plain``, ``plots`` PNG figures, and one error."""
    cells: list[dict[str, Any]] = [
        {"cell_type": "markdown", "id": "intro", "metadata": {},
         "source": _lines("# Sales analysis\n\nLoad the data, plot it, fit a model.")},
        {"cell_type": "code", "id": "imports", "execution_count": 1, "metadata": {},
         "outputs": [],
         "source": _lines("import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt")},
        {"cell_type": "code", "id": "load", "execution_count": 2, "metadata": {},
         "outputs": [{"output_type": "stream", "name": "stdout",
                      "text": [f"row {n}: ok\n" for n in range(400)]}],
         "source": _lines("df = pd.read_csv('sales.csv')\nfor n in range(len(df)):\n    print(f'row {n}: ok')")},
        {"cell_type": "code", "id": "table", "execution_count": 3, "metadata": {},
         "outputs": [{"output_type": "execute_result", "execution_count": 3, "metadata": {},
                      "data": {"text/plain": _lines("   a  b\n0  1  2\n1  3  4"),
                               "text/html": _lines("<table>" + "<tr><td>1</td></tr>" * 200 + "</table>")}}],
         "source": _lines("df.head()")},
    ]  # fmt: skip
    for k in range(plots):
        data = base64.b64encode(png(160, 120, seed * 100 + k)).decode()
        b64 = [data[i : i + 76] + "\n" for i in range(0, len(data), 76)]
        cells.append(
            {"cell_type": "code", "id": f"plot{k}", "execution_count": 4 + k, "metadata": {},
             "outputs": [
                 {"output_type": "display_data", "metadata": {},
                  "data": {"image/png": b64, "text/plain": ["<Figure size 640x480 with 1 Axes>"]}}],
             "source": _lines(f"fig, ax = plt.subplots()\nax.plot(df['x'], df['y{k}'])\nplt.show()")}
        )  # fmt: skip
    cells.append(
        {"cell_type": "code", "id": "boom", "execution_count": 4 + plots, "metadata": {},
         "outputs": [{"output_type": "error", "ename": "ZeroDivisionError",
                      "evalue": "division by zero", "traceback": TRACEBACK}],
         "source": _lines("rates = load()\ncount = 0\nprint(total / count)")}
    )  # fmt: skip
    cells.append(
        {"cell_type": "markdown", "id": "end", "metadata": {}, "source": ["Done."]}
    )  # fmt: skip
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                    "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip


def notebook_text(plots: int = 6, seed: int = 0) -> str:
    """:func:`notebook` as Jupyter writes it (indent 1, a trailing newline)."""
    return json.dumps(notebook(plots, seed), indent=1) + "\n"
