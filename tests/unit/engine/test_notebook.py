"""Notebooks as cells (PROTOCOL §4, "Notebooks"), over a real temporary tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.notebook import OUTPUT_MAX_CHARS, mask_base64, parse_cells
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams, jsonrpc_code
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


def test_raw_windows_show_placeholders_not_base64(tmp_path: Path) -> None:
    raw = notebook_text(plots=2)
    ws = ws_with(tmp_path, raw)
    lines = raw.split("\n")
    first = next(n for n, line in enumerate(lines, 1) if '"image/png": [' in line)
    spec = {"path": "nb.ipynb", "offset": first, "limit": 4}
    got = answer(ws, decode_read_params({"files": [spec]}))
    r = got.files[0]
    body = got.llm_content.split("--- nb.ipynb ---\n", 1)[1]
    shown = body.split("\n")[:4]
    assert "iVBOR" not in got.llm_content
    assert shown[0] == lines[first - 1]  # the key line as on disk
    payload = notebook(plots=2)["cells"][4]["outputs"][0]["data"]["image/png"]
    size = sum(len(json.dumps(line)) - 2 for line in payload)  # as the JSON text holds it
    assert shown[1].strip() == f'"«base64 image/png, {size:,} chars: not shown»",'
    assert shown[2].strip() == '"«base64…»",'
    assert (r.line_start, r.line_end, r.total_lines) == (first, first + 3, len(lines) - 1)
    assert r.chars == len("\n".join(shown) + "\n")  # chars count what is shown
    assert f"[Notebook images not shown: nb.ipynb lines {first + 1}-{first + 3}." in got.llm_content
    assert "never write a placeholder back" in got.llm_content
    # The whole raw file: the same line count, valid JSON, no payload left.
    spec = {"path": "nb.ipynb", "offset": 1, "limit": 100_000}
    whole = answer(ws, decode_read_params({"files": [spec], "preferFullRead": True}))
    text = whole.llm_content.split("--- nb.ipynb ---\n", 1)[1]
    text = text.split("\n[Notebook images")[0]
    assert text.count("\n") == raw.count("\n") and "iVBOR" not in text
    assert json.loads(text)["nbformat"] == 4
    assert whole.files[0].chars == len(text) < len(raw) // 3


def test_mask_base64_one_string_attachments_and_a_prefix() -> None:
    doc = notebook(plots=0)
    doc["cells"][0]["attachments"] = {"a.png": {"image/png": "iVBORw0KGgo="}}
    doc["cells"][3]["outputs"][0]["data"]["application/pdf"] = "JVBERi0xLjQ="
    doc["cells"][3]["metadata"] = {"image/png": {"width": 3}, "note": "iVBORw0KGgo="}
    text = json.dumps(doc, indent=1)
    masked = mask_base64(text)
    assert "iVBORw0KGgo=" in masked.text  # a string outside outputs/attachments stays
    assert masked.text.count("iVBORw0KGgo=") == 1 and "JVBERi0" not in masked.text
    assert '"image/png": "«base64 image/png, 12 chars: not shown»"' in masked.text
    assert '"application/pdf": "«base64 application/pdf, 12 chars: not shown»"' in masked.text
    assert masked.text.count("\n") == text.count("\n") and json.loads(masked.text)
    assert [masked.text.split("\n")[n - 1].count("«base64") for n in masked.lines] == [1, 1]
    cut = text[: text.index("JVBERi0") + 4]  # a prefix read that ends inside a payload
    assert mask_base64(cut).text.endswith('"«base64 application/pdf, 4 chars: not shown»')
    assert mask_base64("{}") == ("{}", ())


def test_cells_as_a_json_integer(tmp_path: Path) -> None:
    ws = ws_with(tmp_path, notebook_text(plots=2))
    params = decode_read_params({"files": [{"path": "nb.ipynb", "cells": 7}]})
    assert params.files[0].cells == "7"
    got = answer(ws, params)
    assert "### cell 7 · code · id=boom" in got.llm_content and "### cell 6" not in got.llm_content
    paths = decode_read_params({"paths": [{"path": "nb.ipynb", "cells": 2}]})
    assert paths.paths[0].cells == "2"  # type: ignore[union-attr]
    for bad in (0, -3, "0", "3-x", "7-3", 1.5, True, "", [4]):
        with pytest.raises(InvalidParams) as err:
            decode_read_params({"files": [{"path": "nb.ipynb", "cells": bad}]})
        assert jsonrpc_code(err.value) == -32602 and "$.files[0].cells" in str(err.value), bad


def test_each_image_attachment_names_its_cell_and_output(tmp_path: Path) -> None:
    doc = notebook(plots=2)
    doc["cells"][5]["outputs"].insert(0, {"output_type": "stream", "name": "stdout", "text": "x"})
    ws = ws_with(tmp_path, json.dumps(doc, indent=1))
    got = answer(ws, decode_read_params({"paths": ["nb.ipynb"]}))
    assert [a.path for a in got.attachments] == [
        "nb.ipynb#cell=5/output=1",
        "nb.ipynb#cell=6/output=2",  # after the cell's stream output, as its header says
    ]
    assert "### cell 6 " in got.llm_content and "#### output 2 · display_data" in got.llm_content


def test_cells_shown_report_only_their_own_redactions(tmp_path: Path) -> None:
    """A secret in cell 2 is redacted in every view; a view of other cells (``cells``,
    or the cells a budget leaves) reported it all the same, by its raw JSON line, with a
    notice about a placeholder the text did not hold."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    doc = {
        "cells": [
            {"cell_type": "markdown", "id": "a1", "metadata": {}, "source": ["# Title\n", "text"]},
            {
                "cell_type": "code",
                "id": "b2",
                "metadata": {},
                "execution_count": 1,
                "outputs": [],
                "source": [f'TOKEN = "{token}"\n', "print(len(TOKEN))"],
            },
            {
                "cell_type": "markdown",
                "id": "c3",
                "metadata": {},
                "source": ["more words " * 40],
            },
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    ws = ws_with(tmp_path, json.dumps(doc, indent=1))

    def ask(**entry: object) -> tuple[list[str], str]:
        got = answer(ws, decode_read_params({"files": [{"path": "nb.ipynb", **entry}]}))
        kinds = [r.kind for r in got.files[0].redactions or ()]
        assert token not in got.llm_content
        return kinds, got.llm_content

    kinds, text = ask()
    assert kinds == ["github-token"] and "[Secrets redacted: nb.ipynb" in text
    for cells in ("1", "3", "3-3"):
        kinds, text = ask(cells=cells)
        assert kinds == [] and "Secrets redacted" not in text, cells
    kinds, text = ask(cells="1-2")
    assert kinds == ["github-token"] and "«redacted:github-token:" in text
    # a budget that keeps cell 1 alone: the cut leaves the secret's cell out
    got = answer(ws, decode_read_params({"paths": ["nb.ipynb"], "perFileMaxChars": 150}))
    assert "### cell 2" not in got.llm_content and not got.files[0].redactions
