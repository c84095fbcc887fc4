"""A focused read through what the daemon made ahead (``rank/ahead.py``: outlines, tags
and token counts in the root's index file) answers exactly as the same read whose
outlines, tags and counts are all made on demand: the same ``llmContent`` and the same
``files`` (ranks, ``why``, the cut file's outline), with nothing parsed or counted
whole again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.content import outline as outline_mod
from readmany_daemon.content import tokens
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.rank import root as rank_root
from readmany_daemon.settings import Settings
from readmany_daemon.wire.messages import ReadManyParams
from tests.helpers import answer, write_tree

FOCUS = "the `ledger_total` of an invoice, with its `Pangolin` rounding"


def _tree(root: Path) -> None:
    files = {
        f"pkg/m{i:02}.py": f"from pkg.core import ledger_total\n\n\ndef f{i}(x):\n"
        f"    return ledger_total(x) + {i}\n"
        for i in range(20)
    }
    files["pkg/core.py"] = (
        "".join(
            f"def ledger_total_{i:03}(x):\n    return x * {i}  # invoice rounding\n\n\n"
            for i in range(400)
        )
        + "def ledger_total(x):\n    return x\n\n\nclass Pangolin:\n    pass\n"
    )
    files["pkg/invoice.py"] = "# an invoice\nfrom pkg.core import Pangolin\nP = Pangolin()\n"
    write_tree(root, files)


def _ws(root: Path, rank_file: Path, background: bool) -> Workspace:
    ws = Workspace.open(str(root), Settings(), cache=ContentCache(1 << 26))
    ws.rank_file = str(rank_file)
    ws.rank_background = background
    return ws


def _read(ws: Workspace) -> dict[str, Any]:
    params = ReadManyParams(paths=["pkg/**/*.py"], focus=FOCUS, max_total_tokens=4000)
    got = answer(ws, params)
    assert got.summary.ranking is not None
    text = got.llm_content
    if got.next_cursor:  # the cursor holds the workspace's clock: not compared
        text = text.replace(got.next_cursor, "CURSOR")
    files = [(f.path, f.status, f.rank, f.why, f.outline, f.chars) for f in got.files]
    return {"text": text, "files": files, "pending": got.summary.ranking.pending_files}


def test_a_read_through_the_store_equals_one_made_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "w"
    _tree(root)
    rank_file = tmp_path / "cache" / f"index-{'12' * 16}.rank"
    first = _ws(root, rank_file, background=True)
    try:
        _read(first)  # the index, then the pass
        ranking = first.ranking
        assert ranking.keeper is not None and ranking.keeper.settle(60)
        assert ranking.ahead is not None and ranking.ahead.settle(60)
        assert ranking.ahead.store.meta()["done"] == 1
    finally:
        first.close_ranking()
    # on demand: in process on the same index file, every tag parsed in the call
    monkeypatch.setattr(rank_root, "TAG_SECONDS", 60.0)
    want = _read(_ws(root, rank_file, background=False))
    assert ("pkg/core.py", "partial") in {f[:2] for f in want["files"]}  # cut, outlined
    # through the store: a fresh daemon workspace, nothing parsed, no whole file counted
    through = _ws(root, rank_file, background=True)

    def no_parse(lang: str, data: bytes, text: str) -> outline_mod.Outline:
        raise AssertionError(f"a {lang} text parsed on demand")

    monkeypatch.setattr(outline_mod, "_make", no_parse)
    monkeypatch.setattr(rank_root, "tags", no_parse)
    counted: list[str] = []
    real_count = tokens.count

    def count(text: str) -> int:
        counted.append(text)
        return real_count(text)

    monkeypatch.setattr(tokens, "count", count)
    try:
        got = _read(through)
    finally:
        through.close_ranking()
    assert got == want
    assert got["pending"] == 0
    whole = {(root / f[0]).read_text() for f in got["files"] if f[1] == "ok"}
    assert len(whole) > 10 and not whole & set(counted)  # no file counted whole again
    cut = [f for f in got["files"] if f[1] == "partial"]
    assert cut and cut[0][4]  # the cut file's outline, from the store
