"""How many packings an answer under ``maxTotalTokens`` takes (``answer.answer_parts``).

Each packing plans, accounts and renders the whole answer (a cut file's cuts and its
outline block included), so a warm focused read costs about as many times that work as
it packs. The first packing spends the whole budget on content and goes over by what
its notices take (the omitted line naming ten files with ``why``, the cursor); the
next one leaves that out, and an eighth more, because the notices change with the
packing (other files omitted and named, another file cut). Before, it left out just
what the first went over by, so the second went over again by a few tokens most of the
time and a third packing was made."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from readmany_daemon.content import tokens
from readmany_daemon.engine import answer as answer_module
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import write_tree

WORDS = [
    "fixture",
    "scope",
    "request",
    "teardown",
    "capture",
    "parser",
    "plugin",
    "marker",
    "session",
    "config",
]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Packings made (``answer.account`` calls: one per packing)."""
    calls: list[int] = []
    account = answer_module.account

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return account(*args, **kwargs)

    monkeypatch.setattr(answer_module, "account", counting)
    return calls


def _tree(root: Path) -> None:
    rng = random.Random(5)
    files = {}
    for n in range(80):
        lines = []
        for i in range(rng.randrange(10, 160)):
            name = "_".join(rng.sample(WORDS, 2))
            lines.append(f"def {name}_{n}_{i}(value):\n    return value.{rng.choice(WORDS)}()\n")
        files[f"pkg/sub{n % 7}/mod_{'_'.join(rng.sample(WORDS, 2))}_{n}.py"] = "".join(lines)
    write_tree(root, files)


@pytest.mark.parametrize("fmt", ["separator", "heredoc", "xml", "json"])
def test_a_focused_read_over_budget_is_packed_twice_at_most(
    tmp_path: Path, counted: list[int], fmt: str
) -> None:
    """Twice (at 20,000 tokens: the ranked read an agent asks); thrice in ``json``,
    whose first packing lists every omitted file (the next one names ten:
    ``Notices.room``), then leaves out what the notices take."""
    _tree(tmp_path)
    ws = Workspace.open(str(tmp_path), Settings())
    limit = 20000
    warm = decode_read_params({"paths": ["**/*.py"], "focus": "warm"})
    while answer_module.answer(ws, warm).summary.ranking.pending_files:  # type: ignore[union-attr]
        pass  # in process, the index grows 100 ms a call: rank on the whole of it
    for words in (WORDS[:3], WORDS[3:6], WORDS[6:], WORDS[1::2]):
        counted.clear()
        params = {
            "paths": ["**/*.py"],
            "maxTotalTokens": limit,
            "focus": " ".join(words),
            "format": fmt,
        }
        r = answer_module.answer(ws, decode_read_params(params))
        assert r.summary.omitted > 0 and r.next_cursor is not None  # notices to fit
        assert len(counted) <= (3 if fmt == "json" else 2), (words, len(counted))
        assert tokens.count(r.llm_content) <= r.summary.estimated_tokens <= limit
        # and still full: within 1/32 of the budget (the bisecting gap)
        assert r.summary.estimated_tokens >= limit - limit // 32
