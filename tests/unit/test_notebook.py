"""Notebooks as cells (PROTOCOL §4, "Notebooks"), over a real temporary tree."""

from __future__ import annotations

from pathlib import Path

from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.notebook import OUTPUT_MAX_CHARS, parse_cells
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.notebooks import TRACEBACK, notebook, notebook_text


def ws_with(tmp_path: Path, text: str) -> Workspace:
    (tmp_path / "nb.ipynb").write_text(text)
    return Workspace.open(str(tmp_path), Settings())


def test_plots_notebook_keeps_every_source_and_traceback_in_a_tenth(tmp_path: Path) -> None:
    raw = notebook_text(plots=6)
    ws = ws_with(tmp_path, raw)
    got = answer(ws, decode_read_params({"paths": ["nb.ipynb"]}))
    text = got.llm_content
    assert got.files[0].status == "ok"
    for cell in notebook()["cells"]:
        assert "".join(cell["source"]) in text  # 100 % of sources
    assert "ZeroDivisionError: division by zero" in text
    assert "Traceback (most recent call last)" in text and "\x1b" not in text
    assert "----> 3 print(total / count)" in text
    assert len(text) <= 0.10 * len(raw), (len(text), len(raw))
    assert "iVBOR" not in text  # no base64 (a PNG's start) in llmContent
    assert len(got.attachments) == 6 and got.attachments[0].mime_type == "image/png"


def test_outputs_are_trimmed_with_a_note(tmp_path: Path) -> None:
    ws = ws_with(tmp_path, notebook_text(plots=1))
    text = answer(ws, decode_read_params({"paths": ["nb.ipynb"]})).llm_content
    stream = "".join(f"row {n}: ok\n" for n in range(400))
    cut = len(stream) - OUTPUT_MAX_CHARS
    assert stream[:OUTPUT_MAX_CHARS] in text and stream not in text
    assert f"[output trimmed: {cut:,} of {len(stream):,} characters cut]" in text
    assert "<table>" not in text  # text/plain stands for the HTML table


def test_images_by_a_glob_are_placeholders(tmp_path: Path) -> None:
    ws = ws_with(tmp_path, notebook_text(plots=2))
    got = answer(ws, decode_read_params({"paths": ["*.ipynb"]}))
    assert got.attachments == []
    assert got.llm_content.count("[image/png: ") == 2 and "not attached" in got.llm_content


def test_cells_ranges_and_raw_windows(tmp_path: Path) -> None:
    ws = ws_with(tmp_path, notebook_text(plots=2))
    one = answer(ws, decode_read_params({"files": [{"path": "nb.ipynb", "cells": "7"}]}))
    assert "### cell 7 · code · id=boom" in one.llm_content
    assert "### cell 6" not in one.llm_content and "### cell 8" not in one.llm_content
    past = answer(ws, decode_read_params({"files": [{"path": "nb.ipynb", "cells": "9-10"}]}))
    assert (past.files[0].status, past.files[0].code) == ("error", "out-of-range")
    raw = answer(ws, decode_read_params({"files": [{"path": "nb.ipynb", "offset": 1, "limit": 3}]}))
    assert raw.llm_content.startswith('--- nb.ipynb ---\n{\n "cells": [\n')


def test_a_cut_notebook_continues_by_cells(tmp_path: Path) -> None:
    ws = ws_with(tmp_path, notebook_text(plots=2))
    got = answer(ws, decode_read_params({"paths": ["nb.ipynb"], "perFileMaxChars": 600}))
    r = got.files[0]
    assert r.status == "partial" and r.chars <= 600
    assert 'Continue with cells="' in got.llm_content
    budget = answer(ws, decode_read_params({"paths": ["nb.ipynb"], "maxTotalChars": 700}))
    assert budget.files[0].status == "partial" and budget.files[0].code == "budget"
    assert budget.summary.total_chars <= 700


def test_parse_cells() -> None:
    assert parse_cells("4") == (4, 4) and parse_cells("3-7") == (3, 7)
    assert any("\x1b[" in line for line in TRACEBACK)  # the fixture's traceback is coloured
