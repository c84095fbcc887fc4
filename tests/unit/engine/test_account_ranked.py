"""A ranked page's accounting (``engine.account``): the omitted matches of a broad glob
are listed while a list has room and counted at once past it; the cursor still
delivers every matched file exactly once, in rank order; a ranking that gives its
order as places among the candidates (``Ranked.places``) answers exactly as one that
gives paths only.

The ranking here is a fixed one: what is under test is what the engine does with a
``Ranked`` value."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.engine.pack import MAX_LISTED
from readmany_daemon.rank.api import Ranked
from readmany_daemon.settings import Settings
from readmany_daemon.wire.messages import to_builtins
from tests.helpers import write_tree
from tests.unit.engine.test_focus import FocusWorkspace, ask

#: Enough files that a page omits more than every list holds (200 listed, 10 named).
FILES = 320


class ShuffledRanking:
    """Ranks the candidates in a fixed shuffled order (not path order), as paths and,
    with ``places``, as 0-based places among the candidates too."""

    def __init__(self, places: bool) -> None:
        self.places = places

    def rank(self, candidates: Sequence[str], focus: str, anchors: Sequence[str]) -> Ranked:
        order = sorted(candidates, key=lambda p: (int(p[1:4]) * 37 % FILES, p))
        at = {p: n for n, p in enumerate(candidates)}
        why = {p: f'content: "{p}"' for p in candidates}
        given = [at[p] for p in order] if self.places else None
        return Ranked(tuple(order), why, ("content",), len(candidates), 0, given)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    write_tree(root, {f"f{n:03}.txt": f"file {n}\n" * (n % 5 + 1) for n in range(FILES)})
    return root


def open_ws(root: Path, places: bool) -> FocusWorkspace:
    ws = FocusWorkspace.open(str(root), Settings())
    assert isinstance(ws, FocusWorkspace)
    ws.fixed = ShuffledRanking(places)  # type: ignore[assignment]
    return ws


def best(names: Sequence[str]) -> list[str]:
    return sorted(names, key=lambda p: (int(p[1:4]) * 37 % FILES, p))


def test_a_page_lists_the_best_omitted_and_counts_the_rest(root: Path) -> None:
    ws = open_ws(root, places=True)
    got = ask(ws, paths=["*.txt"], focus="file", maxTotalFiles=40, order="rank")
    names = best([f"f{n:03}.txt" for n in range(FILES)])
    delivered = [f for f in got.files if f.status == "ok"]
    omitted = [f for f in got.files if f.status == "omitted"]
    assert [f.path for f in delivered] == names[:40]
    assert got.summary.omitted == FILES - 40  # every omitted one counted
    assert [f.path for f in omitted] == names[40 : 40 + MAX_LISTED]  # best-ranked first
    assert [f.rank for f in omitted] == list(range(41, 41 + MAX_LISTED))
    assert got.packing.omitted_paths == names[40 : 40 + MAX_LISTED]
    assert got.packing.omitted_truncated
    assert f"and {FILES - 40 - 10} more" in got.llm_content


@pytest.mark.parametrize("order", ["rank", "request-order"])
def test_cursor_pages_over_many_omitted_deliver_each_file_once(root: Path, order: str) -> None:
    ws = open_ws(root, places=True)
    params: dict[str, Any] = {"focus": "file", "maxTotalFiles": 50, "order": order}
    page = ask(ws, paths=["*.txt"], **params)
    seen: list[str] = []
    pages = 1
    while True:
        seen += [f.path for f in page.files if f.status == "ok"]
        assert page.summary.omitted == FILES - len(seen)
        if page.next_cursor is None:
            break
        page = ask(ws, cursor=page.next_cursor, **params)
        pages += 1
    assert sorted(seen) == sorted(f"f{n:03}.txt" for n in range(FILES))
    assert len(seen) == FILES and pages == 7
    if order == "rank":
        assert seen == best(seen)  # what is left, page after page, in rank order


def test_explicit_and_missing_entries_beside_many_omitted_are_each_answered(
    root: Path,
) -> None:
    ws = open_ws(root, places=True)
    params: dict[str, Any] = {"focus": "file", "maxTotalFiles": 30}
    paths = ["*.txt", "missing.txt", "f005.txt"]
    page = ask(ws, paths=paths, **params)
    first = page
    seen: list[str] = []
    while True:
        seen += [f.path for f in page.files if f.status == "ok"]
        if page.next_cursor is None:
            break
        page = ask(ws, cursor=page.next_cursor, **params)
    assert sorted(seen) == sorted(f"f{n:03}.txt" for n in range(FILES))
    assert len(seen) == FILES
    missing = [f for f in first.files if f.path == "missing.txt"]
    assert len(missing) == 1 and missing[0].status == "error"
    assert first.summary.omitted == FILES - 30


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"order": "rank"},
        {"order": "stable"},
        {"maxAnswerChars": 6000},
        {"maxTotalTokens": 1500},
    ],
)
def test_places_answer_exactly_as_paths(root: Path, extra: dict[str, Any]) -> None:
    params: dict[str, Any] = {"paths": ["*.txt"], "focus": "file", "maxTotalFiles": 40, **extra}
    with pytest.MonkeyPatch.context() as mp:
        from readmany_daemon.engine import paging

        mp.setattr(paging, "now", lambda: 1_700_000_000_000_000_000)  # the cursor's time
        by_places = ask(open_ws(root, places=True), **params)
        by_paths = ask(open_ws(root, places=False), **params)
    plain = [to_builtins(r) for r in (by_places, by_paths)]
    for r in plain:
        r.pop("clock", None)
    assert plain[0] == plain[1]
    assert by_places.summary.omitted > MAX_LISTED
