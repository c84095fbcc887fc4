"""The same request on an unchanged tree answers the same content whenever it is asked.

A cursor holds the time its page looked at the tree (``Position.since``), so it
changes from call to call. The packing is judged with a stand-in cursor
made at a fixed time; judged with the real one, the file the budget cuts (which fills
the budget to its end) was cut at another line when the cursor's count moved, and two
answers of an unchanged tree differed in content (PROTOCOL §4 "Stable order")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.engine import paging
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer, write_tree

#: Page times of one day, a prime number of nanoseconds and more apart.
TIMES = [1_780_000_000_000_000_000 + k * 2_147_483_647_019 for k in range(40)]


def _tree(root: Path) -> None:
    files = {
        f"src/m{n:02d}.py": "".join(
            f"def handler_{n}_{i}(request, value={i}):\n    return request.get('k{i}', value)\n"
            for i in range(20 + 7 * n)
        )
        for n in range(12)
    }
    write_tree(root, files)


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"focus": "handler request value", "order": "stable"},
        {"format": "json"},
    ],
    ids=["request-order", "focus-stable", "json"],
)
def test_the_content_does_not_move_with_the_page_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any]
) -> None:
    _tree(tmp_path)
    ws = Workspace.open(str(tmp_path), Settings())
    params = {"paths": ["src/**/*.py"], "maxTotalTokens": 3000, **extra}
    texts: set[str] = set()
    counts: set[int] = set()
    cuts: set[tuple[str, int | None]] = set()
    for t in TIMES:
        monkeypatch.setattr(paging, "now", lambda t=t: t)
        r = answer(ws, decode_read_params(params))
        assert r.next_cursor is not None
        assert r.next_cursor in r.llm_content
        assert r.summary.estimated_tokens <= 3000
        texts.add(r.llm_content.replace(r.next_cursor, "CURSOR"))
        counts.add(r.summary.estimated_tokens)
        cuts |= {(f.path, f.line_end) for f in r.files if f.status == "partial"}
    assert len(cuts) <= 1, cuts  # at most one file cut, at one line, whatever the time
    assert len(texts) == 1
    # The real cursor's o200k count is its stand-in's: the estimate does not move
    # either (it moved with the time, and passed the budget now and then).
    assert len(counts) == 1, counts


def test_the_real_cursor_continues(tmp_path: Path) -> None:
    """The cursor an answer carries is the real one (its page time), not the stand-in:
    the chain it starts delivers every file once."""
    _tree(tmp_path)
    ws = Workspace.open(str(tmp_path), Settings())
    params: dict[str, Any] = {"paths": ["src/**/*.py"], "maxTotalTokens": 3000}
    r = answer(ws, decode_read_params(params))
    seen = {f.path for f in r.files if f.status == "ok"}
    for _ in range(50):
        if r.next_cursor is None:
            break
        assert r.next_cursor in r.llm_content
        r = answer(ws, decode_read_params({"cursor": r.next_cursor}))
        seen |= {f.path for f in r.files if f.status == "ok"}
    assert r.next_cursor is None
    assert len(seen) == 12
