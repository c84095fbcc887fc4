"""Framing that cannot be misread (issue 22, item 5; PROTOCOL §4, §5): an empty file
is told apart from a file of one blank line, and a name cannot forge a header."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.render import djb2_hex6
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import write_tree


def _read(root: Path, **params: Any) -> Any:
    ws = Workspace.open(str(root), Settings())
    return answer(ws, decode_read_params(params))


# ------------------------------------------------------------- empty vs one blank line


def test_separator_says_a_file_is_empty(tmp_path: Path) -> None:
    write_tree(tmp_path, {"empty.txt": "", "blank.txt": "\n"})
    r = _read(tmp_path, paths=["empty.txt", "blank.txt"])
    assert r.llm_content == (
        "--- empty.txt ---\n[Empty file.]\n\n--- blank.txt ---\n\n\n--- End of content ---"
    )
    empty, blank = r.files
    assert (empty.status, empty.chars, blank.chars) == ("ok", 0, 1)
    assert r.summary.total_chars == 1  # the notice is not content


def test_heredoc_of_an_empty_file_has_no_body_line(tmp_path: Path) -> None:
    write_tree(tmp_path, {"empty.txt": "", "blank.txt": "\n"})
    r = _read(tmp_path, paths=["empty.txt", "blank.txt"], format="heredoc")
    h1, h2 = djb2_hex6("empty.txt"), djb2_hex6("blank.txt")
    assert r.llm_content == (
        f"@empty.txt\n<<'PINE_1_{h1}'\nPINE_1_{h1}\n\n@blank.txt\n<<'MANGO_2_{h2}'\n\nMANGO_2_{h2}"
    )
    assert [f.chars for f in r.files] == [0, 1]


def test_xml_and_json_of_an_empty_file_are_as_before(tmp_path: Path) -> None:
    write_tree(tmp_path, {"empty.txt": "", "blank.txt": "\n"})
    xml = _read(tmp_path, paths=["empty.txt", "blank.txt"], format="xml").llm_content
    docs = ET.fromstring(xml).findall("document")
    assert [d.findtext("document_content") for d in docs] == ["", "\n"]
    assert "Empty file" not in xml
    js = json.loads(_read(tmp_path, paths=["empty.txt", "blank.txt"], format="json").llm_content)
    assert js["results"]["empty.txt"] == {"status": "ok", "content": ""}
    assert js["results"]["blank.txt"] == {"status": "ok", "content": "\n"}


@pytest.mark.parametrize("fmt", ["separator", "heredoc"])
def test_empty_files_keep_token_counts_an_upper_bound(tmp_path: Path, fmt: str) -> None:
    from readmany_daemon.content.tokens import count

    write_tree(tmp_path, {f"e{i}.txt": "" for i in range(30)})
    r = _read(tmp_path, paths=["*.txt"], format=fmt, maxTotalTokens=1000)
    assert r.summary.estimated_tokens >= count(r.llm_content)
    assert r.summary.estimated_tokens <= 1000
