"""The outline of a file over ``maxFileBytes``, which is read only in part: its cut
block and its outline-only block outline the part read and say where the rest begins,
never "no symbols" over lines no one outlined (PROTOCOL §4, "The cut file")."""

from __future__ import annotations

import re
from pathlib import Path

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer, write_tree

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
