"""Without ``focus``, and with ``order`` absent or ``"request-order"``, an answer is
the one the engine gives with its ranking path switched off (PROTOCOL §3 ``focus``):
the same ``llmContent`` bytes and ``files``, and no ``rank``, ``why`` or
``summary.ranking``. A property over random requests on a small real tree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readmany_daemon.engine import answer as engine_answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyResult, to_builtins
from tests.helpers import answer, write_tree

TREE = {
    "src/a.py": "def a():\n    return 1\n" * 20,
    "src/b.py": "b = 2\n" * 300,
    "src/pkg/c.py": "class C:\n    def m(self):\n        pass\n" * 30,
    "src/pkg/d.txt": "plain text\n" * 50,
    "docs/readme.md": "# Title\n\nSome words.\n" * 40,
    "empty.py": "",
    "data.json": '{"k": 1}\n',
}
ENTRIES = ["src/a.py", "src/**/*.py", "src", "docs/*.md", "missing.py", "*.json", "empty.py"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("focusoff") / "w"
    write_tree(root, TREE)
    yield root


def _off(*_: Any, **__: Any) -> NoReturn:
    raise AssertionError("the ranking path was taken without focus")


requests = st.fixed_dictionaries(
    {"paths": st.lists(st.sampled_from(ENTRIES), min_size=1, max_size=4, unique=True)},
    optional={
        "maxTotalFiles": st.integers(1, 6),
        "maxTotalChars": st.integers(50, 5000),
        "maxTotalTokens": st.integers(1000, 4000),
        "packing": st.sampled_from(["auto", "request-order", "smallest-first", "outlines"]),
        "format": st.sampled_from(["separator", "heredoc", "xml", "json"]),
        "lineNumbers": st.booleans(),
        "preferFullRead": st.booleans(),
        "stopOnError": st.booleans(),
    },
)


def _plain(result: ReadManyResult) -> dict[str, Any]:
    """The answer without its ``clock`` (the workspace instance's)."""
    out: dict[str, Any] = to_builtins(result)
    out.pop("clock")
    return out


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(params=requests, order=st.sampled_from([{}, {"order": None}, {"order": "request-order"}]))
def test_without_focus_the_answer_is_the_one_without_the_ranking_path(
    tree: Path, params: dict[str, Any], order: dict[str, Any]
) -> None:
    ws = Workspace.open(str(tree), Settings())
    asked = {**params, **order}
    with pytest.MonkeyPatch.context() as mp:
        # A cursor holds the time its page looked at the tree, and a token budget counts
        # the cursor's tokens: the same time for both answers.
        mp.setattr(engine_answer.paging, "now", lambda: 1_700_000_000_000_000_000)
        # ``order`` absent here, whatever the other says: the default said aloud is the
        # default, cursor included
        on = answer(ws, decode_read_params({**params, "focus": None}))
        for name in ("ranked_positions", "plan_ranked", "layout"):
            mp.setattr(engine_answer.focus, name, _off)
        mp.setattr(engine_answer.order, "stable", _off)
        off = answer(ws, decode_read_params(asked))
    assert _plain(on) == _plain(off)
    wire = msgspec.json.encode(to_builtins(on))
    for member in (b'"rank"', b'"why"', b'"ranking"'):
        assert member not in wire
