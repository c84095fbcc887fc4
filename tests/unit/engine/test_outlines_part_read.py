"""The outline of a file over ``maxFileBytes``, which is read only in part: its cut
block and its outline-only block outline the part read and say where the rest begins,
never "no symbols" over lines no one outlined (PROTOCOL §4, "The cut file")."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from readmany_daemon.content import outline as outline_module
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer, write_tree


@pytest.fixture(autouse=True)
def _parse_on_cpu_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parse time limits counted in this process's CPU time: a loaded machine (other
    suites on its two cores) must not make the 1 MiB parse "too slow" here."""
    monkeypatch.setattr(outline_module, "_clock", time.process_time)


#: 200,000 lines of 6 bytes (1.2 MB), then a function: past the part read of a file over
#: ``maxFileBytes`` (a prefix of ``READ_CHUNK_BYTES``, 1 MiB, at least).
BIG = "x = 1\n" * 200_000 + "def tail_function():\n    return 1\n"


def test_a_cut_block_outlines_the_part_read_and_names_the_rest(tmp_path: Path) -> None:
    write_tree(tmp_path, {"big.py": BIG})
    ws = Workspace.open(str(tmp_path), Settings(max_file_bytes=100_000))
    got = answer(ws, decode_read_params({"paths": ["big.py"], "perFileMaxLines": 5}))
    (entry,) = got.files
    assert entry.status == "partial" and entry.total_lines == 200_002
    assert entry.outline == []
    text = got.llm_content
    found = re.search(
        r"\[No symbols in lines 6-(\d+) \(not shown\)\.\]\n"
        r"\[No outline of lines (\d+)-200002: past maxFileBytes\.\]\n",
        text,
    )
    assert found is not None, text[-400:]
    assert int(found[2]) == int(found[1]) + 1 and 150_000 < int(found[1]) < 200_000


def test_a_whole_file_under_max_file_bytes_is_outlined_to_its_end(tmp_path: Path) -> None:
    write_tree(tmp_path, {"big.py": BIG})
    ws = Workspace.open(str(tmp_path), Settings())
    got = answer(ws, decode_read_params({"paths": ["big.py"], "perFileMaxLines": 5}))
    assert "[Outline of lines 6-200002 (not shown):]" in got.llm_content
    assert "tail_function" in got.llm_content
    assert "maxFileBytes" not in got.llm_content


def test_an_outline_only_block_says_it_covers_the_part_read(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.py": "print(1)\n", "big.py": BIG})
    ws = Workspace.open(str(tmp_path), Settings(max_file_bytes=100_000))
    params = {"paths": ["a.py", "big.py"], "packing": "outlines", "maxTotalTokens": 1000}
    text = answer(ws, decode_read_params(params)).llm_content
    assert re.search(
        r"\[Outline only \(lines 1-1\d{5} of 200,002; the rest is past maxFileBytes; "
        r"not read: budget\): no symbols\.\]",
        text,
    ), text[-600:]


def test_enclosing_past_the_part_read_reads_its_lines_from_the_file(tmp_path: Path) -> None:
    """``enclosing`` on a file over ``maxFileBytes``, at a line past the part read: the
    prefix from line 1 was windowed (lines 1-200 came back under a notice naming the
    asked lines), and a line past the end was not ``out-of-range``. The span's lines
    are now read from the file, clamped to its end."""
    write_tree(tmp_path, {"big.py": BIG})
    ws = Workspace.open(str(tmp_path), Settings(max_file_bytes=100_000))
    got = answer(ws, decode_read_params({"files": [{"path": "big.py", "enclosing": 200_001}]}))
    (entry,) = got.files
    assert (entry.status, entry.line_start, entry.line_end) == ("ok", 199_981, 200_002)
    assert "def tail_function():" in got.llm_content
    assert "lines 199981-200002, around line 200001" in got.llm_content
    past = answer(ws, decode_read_params({"files": [{"path": "big.py", "enclosing": 200_003}]}))
    assert (past.files[0].status, past.files[0].code) == ("error", "out-of-range")
