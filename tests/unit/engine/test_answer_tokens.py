"""A cursor chain under a small ``maxTotalTokens``: every page delivers, fills most of
the budget, and the chain delivers every line of every file once, in order.

Before, a packing over the limit shrank its content budget by a doubling step and could
land on an empty page (notices and a cursor only); the page after such an empty page
restarted the file it was to resume at line 1, so a ``json`` chain never ended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer, write_tree

LIMIT = 1000


def _tree(root: Path) -> dict[str, list[str]]:
    files = {
        "a/small.py": "x = 1\n",
        "a/long.py": "".join(f"value_{i} = compute({i}, 'item number {i}')\n" for i in range(300)),
        "b/mid.py": "".join(f"def f{i}():\n    return {i}\n" for i in range(60)),
    }
    write_tree(root, files)
    return {rel: text.splitlines() for rel, text in files.items()}


@pytest.mark.parametrize("fmt", ["json", "separator", "xml", "heredoc"])
def test_a_token_budget_chain_delivers_every_line_once(tmp_path: Path, fmt: str) -> None:
    lines = _tree(tmp_path)
    ws = Workspace.open(str(tmp_path), Settings())
    params: dict[str, Any] = {"paths": ["**/*.py"], "maxTotalTokens": LIMIT, "format": fmt}
    got: dict[str, list[int]] = {rel: [] for rel in lines}
    cursor = None
    for page in range(100):
        asked = {**params, "cursor": cursor} if cursor else params
        r = answer(ws, decode_read_params(asked))
        delivered = [f for f in r.files if f.status in ("ok", "partial")]
        assert delivered, f"page {page} delivered nothing"
        assert r.summary.estimated_tokens <= LIMIT
        cursor = r.next_cursor
        if cursor is not None:  # every page but the last fills most of the budget
            assert r.summary.estimated_tokens >= LIMIT // 2, (page, r.summary.estimated_tokens)
        for f in delivered:
            start = f.line_start or 1
            end = f.line_end or len(lines[f.path])
            got[f.path].extend(range(start, end + 1))
        if cursor is None:
            break
    assert cursor is None, "the chain did not end"
    assert got == {rel: list(range(1, len(text) + 1)) for rel, text in lines.items()}
