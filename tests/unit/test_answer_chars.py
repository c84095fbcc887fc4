"""``maxAnswerChars``: the whole ``llmContent`` within a number of characters, framing,
notices and cursor included (what a client that moves long text to a file counts), in
every format; ``maxTotalChars`` keeps counting content only."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import decode_read_request
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import to_builtins
from tests.helpers import write_tree

FORMATS = ["separator", "heredoc", "xml", "json"]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    files: dict[str, str] = {}
    for i in range(400):
        # Long names: the framing and the notices weigh as much as the content.
        name = f"pkg/sub_{i % 7}/a_rather_long_module_name_number_{i:04d}.py"
        files[name] = "".join(f"value_{i}_{n} = {n} * {i}\n" for n in range(5 + i % 60))
    write_tree(tmp_path, files)
    return Workspace.open(str(tmp_path), Settings())


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_whole_text_fits_and_still_parses(ws: Workspace, fmt: str) -> None:
    limit = 6000
    params = decode_read_params(
        {"paths": ["pkg/**/*.py"], "maxTotalChars": limit, "maxAnswerChars": limit, "format": fmt}
    )
    r = answer(ws, params)
    assert len(r.llm_content) <= limit
    assert r.summary.read >= 1 and r.next_cursor  # content, and the way to the rest
    if fmt == "xml":
        ET.fromstring(r.llm_content)
    if fmt == "json":
        json.loads(r.llm_content)
    # maxTotalChars alone counts content only: the same budget's text is longer.
    plain = answer(
        ws, decode_read_params({"paths": ["pkg/**/*.py"], "maxTotalChars": limit, "format": fmt})
    )
    assert len(plain.llm_content) > limit


def test_every_page_of_a_cursor_chain_fits_and_each_file_comes_once(ws: Workspace) -> None:
    limit = 5000
    raw: dict[str, object] = {"paths": ["pkg/**/*.py"], "maxAnswerChars": limit}
    seen: list[str] = []
    for _ in range(400):
        r = answer(ws, decode_read_request(raw))
        assert len(r.llm_content) <= limit
        for f in to_builtins(r.files):
            if f["status"] in ("ok", "partial") and f.get("lineStart", 1) == 1:
                seen.append(f["path"])
        if not r.next_cursor:
            break
        raw = {"cursor": r.next_cursor}
    assert sorted(seen) == sorted(set(seen))
    assert len(seen) == 400


def test_below_the_minimum_is_invalid_params_naming_the_field() -> None:
    with pytest.raises(InvalidParams) as e:
        decode_read_params({"paths": ["a"], "maxAnswerChars": 3999})
    assert "maxAnswerChars" in str(e.value)
    assert decode_read_params({"paths": ["a"], "max_answer_chars": 4000}).max_answer_chars == 4000
