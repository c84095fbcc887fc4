"""``focus`` in the engine (PROTOCOL §3 ``focus``, §4 "Focus"): the anchors first, then
the files in the order a root's ranking gives them; ranked packing passes a file that
does not fit and cuts at most the best-ranked one passed over; ``rank``/``why`` on
every entry listed, the omitted line in rank order, ``summary.ranking``; ``order``
lays the delivered files out; cursor pages deliver each matched file once.

The ranking here is a fixed one (the order a test names): what is under test is what
the engine does with a ``Ranked`` value."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams
from readmany_daemon.rank.api import Ranked
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyResult
from tests.helpers import answer, write_tree


class FixedRanking:
    """Ranks the candidates in the order of ``best`` (those it does not name last, in
    path order); remembers each call."""

    def __init__(self, best: Sequence[str]) -> None:
        self.best = list(best)
        self.calls: list[tuple[list[str], str, list[str]]] = []

    def rank(self, candidates: Sequence[str], focus: str, anchors: Sequence[str]) -> Ranked:
        self.calls.append((list(candidates), focus, list(anchors)))
        place = {p: n for n, p in enumerate(self.best)}
        order = sorted(candidates, key=lambda p: (place.get(p, len(place)), p))
        why = {p: f'content: "{p}"' for p in candidates}
        return Ranked(tuple(order), why, ("content", "names"), len(candidates), 0)


class FocusWorkspace(Workspace):
    """A workspace whose ranking is ``fixed``."""

    fixed: FixedRanking

    @property
    def ranking(self) -> FixedRanking:  # type: ignore[override]
        return self.fixed


def open_ws(root: Path, best: Sequence[str]) -> FocusWorkspace:
    ws = FocusWorkspace.open(str(root), Settings())
    assert isinstance(ws, FocusWorkspace)
    ws.fixed = FixedRanking(best)
    return ws


def ask(ws: Workspace, **params: Any) -> ReadManyResult:
    return answer(ws, decode_read_params(params))


def shown(result: ReadManyResult) -> list[str]:
    return [f.path for f in result.files if f.status in ("ok", "partial")]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    write_tree(
        root,
        {
            "src/a.py": "a = 1\n" * 10,  # 60 chars
            "src/b.py": "b = 2\n" * 10,
            "src/big.py": "".join(f"def f{n}():\n" + "    x = 1\n" * 60 for n in range(5)),
            "src/c.py": "c = 3\n" * 10,
            "src/d.py": "d = 4\n" * 10,
            "README.md": "# readme\n",
        },
    )
    return root


def test_focus_fills_in_rank_order_and_lays_out_in_request_order(tree: Path) -> None:
    ws = open_ws(tree, ["src/d.py", "src/b.py"])
    got = ask(ws, paths=["src/*.py"], focus="d and b", maxTotalFiles=2, preferFullRead=True)
    assert shown(got) == ["src/b.py", "src/d.py"]  # the two best, in request order
    assert [f.path for f in got.files] == [
        "src/b.py",
        "src/d.py",
        "src/a.py",
        "src/big.py",
        "src/c.py",
    ]
    assert [f.rank for f in got.files] == [2, 1, 3, 4, 5]
    assert got.files[1].why == 'content: "src/d.py"'
    assert got.packing.strategy == "rank"
    ranking = got.summary.ranking
    assert not isinstance(ranking, type(None))
    assert ranking.signals == ["content", "names"]  # type: ignore[union-attr]
    # order "rank": most relevant first.
    ranked = ask(
        ws, paths=["src/*.py"], focus="d and b", maxTotalFiles=2, order="rank", preferFullRead=True
    )
    assert shown(ranked) == ["src/d.py", "src/b.py"]
    assert ws.fixed.calls[0][1] == "d and b"


def test_focus_never_adds_a_file_and_anchors_come_first_and_seed(tree: Path) -> None:
    ws = open_ws(tree, ["src/d.py", "src/c.py", "README.md"])
    got = ask(
        ws,
        paths=["src/a.py", "src/*.py"],
        focus="readme",
        maxTotalFiles=2,
        preferFullRead=True,
    )
    assert "README.md" not in [f.path for f in got.files]  # not matched: never added
    assert shown(got) == ["src/a.py", "src/d.py"]  # the anchor, then the best-ranked
    anchor = got.files[0]
    assert (anchor.rank, anchor.why) == (1, "named in the request")
    candidates, _, anchors = ws.fixed.calls[-1]
    assert anchors == ["src/a.py"]
    assert sorted(candidates) == ["src/a.py", "src/b.py", "src/big.py", "src/c.py", "src/d.py"]


def test_an_anchor_that_does_not_fit_whole_gets_the_budget_before_ranked_files(
    tree: Path,
) -> None:
    """An anchor bigger than the budget is cut to the budget, not passed over for the
    ranked files (which would take it all: 4 files of 60 characters, 240 allowed)."""
    ws = open_ws(tree, ["src/d.py", "src/c.py", "src/b.py", "src/a.py"])
    got = ask(ws, paths=["src/big.py", "src/*.py"], focus="big", maxTotalChars=240)
    assert shown(got) == ["src/big.py"]
    big = got.files[0]
    assert (big.status, big.code, big.rank) == ("partial", "budget", 1)
    assert big.chars is not None and 200 <= big.chars <= 240
    assert [f.path for f in got.files if f.status == "omitted"] == [
        "src/d.py",
        "src/c.py",
        "src/b.py",
        "src/a.py",
    ]
    # an anchor that fits leaves the rest of the budget to the ranked files
    small = ask(ws, paths=["src/a.py", "src/*.py"], focus="a", maxTotalChars=240)
    assert shown(small) == ["src/a.py", "src/b.py", "src/c.py", "src/d.py"]


def test_a_path_named_after_a_glob_that_matched_it_is_an_anchor(tree: Path) -> None:
    ws = open_ws(tree, ["src/d.py", "src/c.py", "README.md"])
    got = ask(ws, paths=["src/*.py", "src/a.py"], focus="readme", maxTotalFiles=2)
    assert shown(got) == ["src/a.py", "src/d.py"]
    assert (got.files[0].rank, got.files[0].why) == (1, "named in the request")
    _, _, anchors = ws.fixed.calls[-1]
    assert anchors == ["src/a.py"]


def test_two_windows_of_one_file_are_both_anchors(tree: Path) -> None:
    ws = open_ws(tree, ["src/d.py"])
    got = ask(
        ws,
        files=[{"path": "src/a.py", "limit": 2}, {"path": "src/a.py", "offset": 5, "limit": 1}],
        include=["src/*.py"],
        focus="d",
        maxTotalFiles=3,
    )
    first = [(f.path, f.line_start, f.rank, f.why) for f in got.files[:3]]
    assert first == [
        ("src/a.py", 1, 1, "named in the request"),
        ("src/a.py", 5, 2, "named in the request"),
        ("src/d.py", None, 3, 'content: "src/d.py"'),  # whole: no window
    ]
    assert ws.fixed.calls[-1][2] == ["src/a.py"]


def test_a_big_file_is_passed_over_smaller_ones_get_in_and_it_is_cut_last(tree: Path) -> None:
    ws = open_ws(tree, ["src/big.py", "src/a.py", "src/b.py"])
    got = ask(ws, paths=["src/*.py"], focus="f", maxTotalChars=1000, preferFullRead=True)
    by_path = {f.path: f for f in got.files}
    assert by_path["src/a.py"].status == "ok"
    assert by_path["src/b.py"].status == "ok"
    assert by_path["src/c.py"].status == "ok"
    assert by_path["src/d.py"].status == "ok"
    big = by_path["src/big.py"]
    assert big.status == "partial"  # the best-ranked file passed over: cut, not dropped
    assert 700 < big.chars <= 1000 - 4 * 60  # what is left, cut at a line end
    assert big.outline  # its cut block outlines what it does not show
    assert got.summary.truncated == 1 and got.summary.omitted == 0
    assert got.packing.partial_included_path == "src/big.py"


def test_the_omitted_line_names_ten_in_rank_order_with_why(tmp_path: Path) -> None:
    root = tmp_path / "w"
    names = [f"f{n:02}.txt" for n in range(15)]
    write_tree(root, {n: "x" * 100 + "\n" for n in names})
    best = list(reversed(names))
    ws = open_ws(root, best)
    got = ask(ws, paths=["*.txt"], focus="x", maxTotalFiles=2, preferFullRead=True)
    omitted = [f for f in got.files if f.status == "omitted"]
    assert [f.path for f in omitted] == best[2:]  # best-ranked omitted first
    assert [f.rank for f in omitted] == list(range(3, 16))
    assert got.packing.omitted_paths == best[2:]  # the MCP structured content's list
    line = next(x for x in got.llm_content.splitlines() if x.startswith("[Omitted"))
    named = ", ".join(f'{p} (content: "{p}")' for p in best[2:12])
    assert line == (
        f"[Omitted 13 file(s) to stay within the budget, best-ranked first: {named}, and 3 more.]"
    )


def test_cursor_pages_deliver_every_matched_file_once_in_rank_order(tmp_path: Path) -> None:
    root = tmp_path / "w"
    names = [f"m{n:02}.txt" for n in range(23)]
    write_tree(root, {n: f"{n}\n" * (n.count("1") + 1) for n in names})
    best = sorted(names, key=lambda n: (n[-5], n))  # not path order
    ws = open_ws(root, best)
    seen: list[str] = []
    params: dict[str, Any] = {"paths": ["*.txt"], "focus": "m", "maxTotalFiles": 4}
    page = ask(ws, **params, order="rank")
    pages = 1
    while True:
        seen += shown(page)
        assert all(f.rank is not None for f in page.files)
        if page.next_cursor is None:
            break
        page = ask(ws, cursor=page.next_cursor, focus="m", order="rank")
        pages += 1
    assert sorted(seen) == sorted(names) and len(seen) == len(names)
    assert seen == best  # what is left, page after page, in rank order
    assert pages == 6


def test_a_cursor_needs_the_same_focus_beside_it(tree: Path) -> None:
    ws = open_ws(tree, [])
    first = ask(ws, paths=["src/*.py"], focus="the secret plan", maxTotalFiles=1)
    assert first.next_cursor is not None
    from readmany_daemon.wire.cursor import decode_cursor

    carried = decode_cursor(first.next_cursor).params or {}
    assert "focus" not in carried and "the secret plan" not in repr(carried)
    assert ask(ws, cursor=first.next_cursor, focus="the secret plan").files
    for other in ({"focus": "another plan"}, {}):
        with pytest.raises(InvalidParams) as err:
            ask(ws, cursor=first.next_cursor, **other)
        assert err.value.field == "$.cursor"
    plain = ask(ws, paths=["src/*.py"], maxTotalFiles=1)
    assert plain.next_cursor is not None
    with pytest.raises(InvalidParams) as err:
        ask(ws, cursor=plain.next_cursor, focus="x")
    assert err.value.field == "$.cursor"


def test_focus_length_and_order_rank_validation(tree: Path) -> None:
    for bad in ("", "x" * 2001):
        with pytest.raises(InvalidParams) as err:
            decode_read_params({"paths": ["a"], "focus": bad})
        assert err.value.field == "$.focus"
    assert decode_read_params({"paths": ["a"], "focus": "x" * 2000}).focus == "x" * 2000
    assert decode_read_params({"paths": ["a"], "focus": None}).focus is None
    ws = open_ws(tree, [])
    with pytest.raises(InvalidParams) as err:
        ask(ws, paths=["src/*.py"], order="rank")
    assert err.value.field == "$.order"


def test_smallest_first_is_ignored_and_outlines_give_the_next_ranked(tree: Path) -> None:
    ws = open_ws(tree, ["src/big.py", "src/c.py"])
    got = ask(ws, paths=["src/*.py"], focus="f", packing="smallest-first", maxTotalChars=200)
    assert got.packing.strategy == "rank"
    cut = {f.path: f.status for f in got.files}
    assert cut["src/big.py"] == "partial"  # the best-ranked, cut: smallest first would not
    ws.fixed.best = ["src/c.py", "src/big.py", "src/a.py"]
    outlined = ask(
        ws,
        paths=["src/*.py"],
        focus="f",
        packing="outlines",
        maxTotalChars=1500,
        preferFullRead=True,
        order="rank",
    )
    assert outlined.packing.strategy == "outlines"
    assert [(f.path, f.status) for f in outlined.files][:2] == [
        ("src/c.py", "ok"),
        ("src/big.py", "omitted"),
    ]
    assert outlined.files[1].outline  # the next-ranked file that did not fit, outlined


def test_stable_order_with_focus_lays_out_what_focus_chose(tree: Path) -> None:
    ws = open_ws(tree, ["src/d.py", "src/a.py"])
    ws.order_file = str(tree.parent / "cache" / "x.order")
    got = ask(
        ws, paths=["src/*.py"], focus="d", maxTotalFiles=2, order="stable", preferFullRead=True
    )
    assert sorted(shown(got)) == ["src/a.py", "src/d.py"]
    again = ask(
        ws, paths=["src/*.py"], focus="d", maxTotalFiles=2, order="stable", preferFullRead=True
    )
    content = got.llm_content.partition("[Omitted")[0]
    assert content and again.llm_content.startswith(content)  # volatile notices after


@pytest.mark.parametrize("packing", ["outlines", "auto"])
def test_a_focused_walk_under_a_char_budget_delivers_each_file_once(
    tmp_path: Path, packing: str
) -> None:
    """Pages of a focused walk (the tools' ``outlines`` packing too) deliver every matched
    file's content exactly once, whatever was cut or outlined on the way."""
    root = tmp_path / "w"
    files = {
        f"p{n:02}.py": "".join(f"def g{k}():\n    return {k}\n" for k in range(n * 7 % 40 + 1))
        for n in range(18)
    }
    write_tree(root, files)
    best = sorted(files, key=lambda p: (len(files[p]) % 7, p))
    ws = open_ws(root, best)
    params: dict[str, Any] = {"focus": "g", "packing": packing, "maxTotalChars": 1200}
    page = ask(ws, paths=["*.py"], **params)
    whole: dict[str, int] = {}
    for _ in range(60):
        for f in page.files:
            if f.status == "ok" or (f.status == "partial" and f.next_offset is None):
                whole[f.path] = whole.get(f.path, 0) + 1
            elif f.status == "partial":  # the rest comes on a later page
                whole.setdefault(f.path, 0)
        if page.next_cursor is None:
            break
        page = ask(ws, cursor=page.next_cursor, **params)
    assert page.next_cursor is None
    assert sorted(whole) == sorted(files)
    assert all(n <= 1 for n in whole.values()), whole


def test_the_rest_of_a_cut_file_gets_the_next_page_first(tmp_path: Path) -> None:
    """The best-ranked file cut at the end of a page resumes first on the next one,
    before the ranked files, as large as the page holds (not in what they leave)."""
    root = tmp_path / "w"
    files = {"big.txt": "".join(f"line {k:04}\n" for k in range(1, 301))}  # 3,000 chars
    files |= {f"s{n:02}.txt": f"small {n:02} " * 22 + "\n" for n in range(60)}  # 199 each
    write_tree(root, files)
    best = ["big.txt", *sorted(p for p in files if p != "big.txt")]
    ws = open_ws(root, best)
    params: dict[str, Any] = {"focus": "small", "maxTotalChars": 900}
    page = ask(ws, paths=["*.txt"], **params)
    cut = next(f for f in page.files if f.path == "big.txt")
    assert cut.status == "partial" and cut.next_offset is not None  # the rest comes later
    start = cut.next_offset
    page = ask(ws, cursor=page.next_cursor, **params)
    rest = next(f for f in page.files if f.path == "big.txt")
    assert rest.line_start == start
    # the whole page's budget (900 characters: 90 lines of 10), not a sliver
    assert rest.line_end is not None and rest.line_end - rest.line_start + 1 >= 80
    assert rest.rank == 1


def test_a_resumed_file_moved_first_reads_as_the_plain_list() -> None:
    from readmany_daemon.engine.focus import _Front

    rest = [7, 3, 9, 4, 1]
    for at, first in enumerate(rest):
        plain = [first, *(i for i in rest if i != first)]
        front = _Front(first, rest, at)
        assert list(front) == plain and len(front) == len(plain)
        assert [front[k] for k in range(-len(plain), len(plain))] == plain + plain
        assert front[1:4] == plain[1:4]
        with pytest.raises(IndexError):
            front[len(plain)]
        with pytest.raises(IndexError):
            front[-len(plain) - 1]
