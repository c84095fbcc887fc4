"""Cursors on a tree that moves between pages: every file exactly once, later pages in
request order, created files ahead delivered and behind named, bound to root and
request, at most 1,000 characters (PROTOCOL §4, "nextCursor")."""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams, jsonrpc_code
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import MAX_CURSOR_CHARS, decode_cursor
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyResult
from tests.helpers import answer, write_tree

Delivered = ("ok", "partial", "skipped")


def ask(root: Path, **params: Any) -> ReadManyResult:
    """One page, answered as the one-shot CLI answers it: a new workspace each time."""
    return answer(Workspace.open(str(root), Settings()), decode_read_params(params))


def follow(
    root: Path,
    first: dict[str, Any],
    between: Callable[[int], None] = lambda page: None,
    **later: Any,
) -> list[ReadManyResult]:
    """Page 1 for ``first``, then the cursor (with ``later`` beside it) until none comes
    back; ``between(n)`` runs after page ``n``."""
    pages = [ask(root, **first)]
    while pages[-1].next_cursor:
        assert len(pages[-1].next_cursor) <= MAX_CURSOR_CHARS
        between(len(pages))
        pages.append(ask(root, cursor=pages[-1].next_cursor, **later))
        assert len(pages) < 500
    return pages


def delivered(pages: list[ReadManyResult]) -> list[str]:
    """Paths delivered across the chain (a budget-cut file counts at its first page)."""
    out: list[str] = []
    for r in pages:
        for f in r.files:
            if f.status in Delivered and not (out and out[-1] == f.path):
                out.append(f.path)
    return out


def once(paths: list[str]) -> None:
    repeated = [p for p, n in Counter(paths).items() if n > 1]
    assert not repeated, f"delivered twice: {repeated}"


def py_tree(root: Path, n: int = 30) -> list[str]:
    names = [f"src/m{i:02}.py" for i in range(n)]
    write_tree(root, {name: f"v = {i}\n" for i, name in enumerate(names)})
    settle()
    return names


def settle() -> None:
    """Let the file-time clock tick past the files just written: an edit or a delete
    after page 1 is then told apart from files made in the same tick as the page."""
    time.sleep(0.05)


def test_files_created_ahead_are_delivered_in_order_and_none_repeats(tmp_path: Path) -> None:
    """The issue's reproduction: two files created after page 1, one sorting among the
    files page 1 gave, one ahead."""
    names = py_tree(tmp_path)

    def create(page: int) -> None:
        if page == 1:
            write_tree(tmp_path, {"src/m05a.py": "x = 1\n", "src/m25a.py": "x = 1\n"})

    pages = follow(tmp_path, {"paths": ["src/**/*.py"]}, create)
    got = delivered(pages)
    once(got)
    assert sorted(got) == sorted([*names, "src/m25a.py"])
    later = [p for r in pages[1:] for p in delivered([r])]
    assert later == sorted(later)  # request order
    assert pages[1].created_paths == ["src/m05a.py"]
    assert 'paths: ["src/m05a.py"]' in pages[1].llm_content
    assert all(not r.created_paths for r in pages[2:])


def test_deleted_files_are_not_delivered_and_nothing_is_lost(tmp_path: Path) -> None:
    names = py_tree(tmp_path, 45)

    def delete(page: int) -> None:
        if page == 1:
            for name in ("src/m00.py", "src/m01.py", "src/m30.py"):
                os.remove(tmp_path / name)

    pages = follow(tmp_path, {"paths": ["src/*.py"], "maxTotalFiles": 10}, delete)
    got = delivered(pages)
    once(got)
    assert "src/m30.py" not in got
    assert sorted(got) == sorted(n for n in names if n != "src/m30.py")
    assert not any(r.created_paths for r in pages)


def test_a_rename_is_a_delete_and_a_create(tmp_path: Path) -> None:
    names = py_tree(tmp_path)

    def rename(page: int) -> None:
        if page == 1:
            os.rename(tmp_path / "src/m27.py", tmp_path / "src/m03b.py")  # ahead → behind
            os.rename(tmp_path / "src/m02.py", tmp_path / "src/m29b.py")  # behind → ahead

    pages = follow(tmp_path, {"paths": ["src/*.py"]}, rename)
    got = delivered(pages)
    once(got)
    assert "src/m27.py" not in got and "src/m29b.py" in got and "src/m03b.py" not in got
    assert set(names) - set(got) == {"src/m27.py"}
    assert "src/m03b.py" in pages[1].created_paths


def test_a_folder_moved_in_behind_is_named_with_its_files(tmp_path: Path) -> None:
    """Files moved in with their folder keep their own times: the folder's tells."""
    names = [f"src/pkg/m{i:02}.py" for i in range(30)]
    write_tree(tmp_path, {name: "".join(f"v{n} = {n}\n" for n in range(25)) for name in names})
    write_tree(tmp_path, {"src/pkg/zz_sub/one.py": "q = 1\n", "src/pkg/zz_sub/two.py": "q = 2\n"})
    write_tree(tmp_path, {"stash/aaa_dir/three.py": "q = 3\n"})
    settle()

    def move(page: int) -> None:
        if page == 1:
            os.rename(tmp_path / "src/pkg/zz_sub", tmp_path / "src/pkg/aa_sub")  # ahead → behind
            os.rename(tmp_path / "stash/aaa_dir", tmp_path / "src/pkg/aaa_dir")  # from outside

    pages = follow(tmp_path, {"paths": ["src/**/*.py"]}, move)
    got = delivered(pages)
    once(got)
    named = [p for r in pages for p in (r.created_paths or [])]
    moved = {"src/pkg/aa_sub/one.py", "src/pkg/aa_sub/two.py", "src/pkg/aaa_dir/three.py"}
    assert moved <= set(got) | set(named), (got, named)
    assert set(names) <= set(got)


def test_an_edited_file_behind_is_not_named_as_created(tmp_path: Path) -> None:
    py_tree(tmp_path)

    def edit(page: int) -> None:
        if page == 1:
            (tmp_path / "src/m03.py").write_text("v = 'edited'\n")
            write_tree(tmp_path, {"src/m04a.py": "new\n"})

    pages = follow(tmp_path, {"paths": ["src/*.py"]}, edit)
    assert pages[1].created_paths == ["src/m04a.py"]


def test_later_pages_go_in_request_order_after_a_smallest_first_page(tmp_path: Path) -> None:
    sizes = {f"d/f{i:02}.txt": "x" * (1 + (i * 37) % 23) + "\n" for i in range(40)}
    write_tree(tmp_path, sizes)
    write_tree(tmp_path, {"named.txt": "n\n", "z.md": "z\n"})
    settle()

    def churn(page: int) -> None:
        if page == 1:
            os.remove(tmp_path / "d/f39.txt")
            # d/f0.txt sorts before d/f00.txt, which page 1 gave (the smallest).
            write_tree(tmp_path, {"d/f39z.txt": "late\n", "d/f0.txt": "early\n"})

    first = {
        "paths": ["named.txt", "d/"],
        "include": ["*.md"],
        "maxTotalFiles": 7,
        "packing": "smallest-first",
    }
    pages = follow(tmp_path, first, churn)
    assert pages[0].packing.strategy == "smallest-first"
    got = delivered(pages)
    once(got)
    expected = {*sizes, "named.txt", "z.md", "d/f39z.txt"} - {"d/f39.txt"}
    assert set(got) == expected
    order = ["named.txt", *sorted(expected - {"named.txt", "z.md"}), "z.md"]
    for r in pages[1:]:
        assert r.packing.strategy == "request-order"
        paths = delivered([r])
        assert paths == sorted(paths, key=order.index)
    assert [p for r in pages for p in r.created_paths] == ["d/f0.txt"]


def test_a_budget_cut_file_resumes_by_key_after_files_before_it_changed(tmp_path: Path) -> None:
    b = "".join(f"b{i}\n" for i in range(100))
    write_tree(tmp_path, {"a.txt": "a\n", "b.txt": b, "c.txt": "c\n"})
    settle()
    r = ask(tmp_path, paths=["*.txt"], maxTotalChars=60, packing="request-order")
    assert [(f.path, f.status) for f in r.files][:2] == [("a.txt", "ok"), ("b.txt", "partial")]
    nxt = r.files[1].next_offset
    os.remove(tmp_path / "a.txt")
    write_tree(tmp_path, {"0.txt": "zero\n"})
    assert r.next_cursor
    r2 = ask(tmp_path, cursor=r.next_cursor)
    assert r2.files[0].path == "b.txt" and r2.files[0].line_start == nxt
    assert r2.created_paths == ["0.txt"]
    rest = [r2]
    while rest[-1].next_cursor:
        rest.append(ask(tmp_path, cursor=rest[-1].next_cursor))
    got = delivered(rest)
    assert got == ["b.txt", "c.txt"]


@pytest.mark.parametrize("edit", ["insert above", "delete above", "same size"])
def test_a_cut_file_changed_between_pages_is_read_again_from_its_start(
    tmp_path: Path, edit: str
) -> None:
    # going on by line number in a changed file repeats or skips lines: the next page
    # reads it again from its start and says why (an unchanged one goes on: above)
    b = "".join(f"b{i:02}\n" for i in range(100))
    write_tree(tmp_path, {"a.txt": "a\n", "b.txt": b, "c.txt": "c\n"})
    settle()
    r = ask(tmp_path, paths=["*.txt"], maxTotalChars=60, packing="request-order")
    cut = r.files[1]
    assert (cut.path, cut.status) == ("b.txt", "partial") and cut.next_offset
    changed = {
        "insert above": "new0\nnew1\n" + b,
        "delete above": b.split("\n", 3)[3],
        "same size": b.replace("b01", "B01"),
    }[edit]
    write_tree(tmp_path, {"b.txt": changed})
    assert r.next_cursor
    r2 = ask(tmp_path, cursor=r.next_cursor)
    assert (r2.files[0].path, r2.files[0].line_start) == ("b.txt", 1)
    assert (
        f"[b.txt changed after the page before cut it: read again from its start, not from"
        f" line {cut.next_offset}.]" in r2.llm_content
    )
    pages = [r2]
    while pages[-1].next_cursor:
        pages.append(ask(tmp_path, cursor=pages[-1].next_cursor))
    assert delivered(pages) == ["b.txt", "c.txt"]
    shown = "".join(
        line + "\n"
        for p in pages
        for line in p.llm_content.splitlines()
        if line.startswith(("b", "B", "new"))
    )
    assert shown == changed  # the whole new text, each line once


def test_cursor_under_another_root_is_invalid_params_naming_cursor(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    py_tree(one)
    py_tree(two)
    r = ask(one, paths=["src/*.py"])
    assert r.next_cursor
    with pytest.raises(InvalidParams) as info:
        ask(two, cursor=r.next_cursor)
    assert info.value.field == "$.cursor" and jsonrpc_code(info.value) == -32602
    assert "another root" in str(info.value)


@pytest.mark.parametrize(
    "other",
    [
        {"paths": ["src/*.txt"]},
        {"paths": ["src/*.py"], "files": [{"path": "src/m01.py", "offset": 2}]},
        {"include": ["**/*.py"]},
    ],
)
def test_cursor_beside_another_request_is_invalid_params_naming_cursor(
    tmp_path: Path, other: dict[str, Any]
) -> None:
    py_tree(tmp_path)
    r = ask(tmp_path, paths=["src/*.py"])
    assert r.next_cursor
    with pytest.raises(InvalidParams) as info:
        ask(tmp_path, cursor=r.next_cursor, **other)
    assert info.value.field == "$.cursor" and jsonrpc_code(info.value) == -32602


@pytest.fixture(scope="module")
def huge_glob_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """50,000 files with long names; every 97th is tiny, the rest 300 bytes, so that a
    smallest-first page 1 takes tiny ones from all over the order."""
    root = tmp_path_factory.mktemp("huge_glob")
    folder = root / "generated" / "a_rather_long_folder_name_for_the_test"
    folder.mkdir(parents=True)
    stem = "component_with_a_long_descriptive_name_"
    for i in range(50_000):
        (folder / f"{stem}{i:05}.txt").write_bytes(b"x\n" if i % 97 == 0 else b"y" * 300)
    return root


def test_a_huge_glob_keeps_the_cursor_under_1000_characters(huge_glob_tree: Path) -> None:
    """50,000 matches with long names; smallest first packs hundreds of tiny files
    scattered over the order on page 1, then the pages go on in request order."""
    tmp_path = huge_glob_tree
    params = {
        "paths": ["generated/**/*.txt"],
        "maxTotalFiles": 400,
        "maxTotalChars": 100_000,
        "packing": "smallest-first",
    }
    r = ask(tmp_path, **params)
    assert r.summary.matched == 50_000
    assert r.next_cursor and len(r.next_cursor) <= MAX_CURSOR_CHARS
    first = [f.path for f in r.files if f.status in Delivered]
    assert first  # something was delivered, and the cursor still fits
    seen = set(first)
    for _ in range(3):
        assert r.next_cursor
        cut = {f.path for f in r.files if f.status == "partial"}  # its rest comes next
        r = ask(tmp_path, cursor=r.next_cursor)
        assert r.next_cursor is None or len(r.next_cursor) <= MAX_CURSOR_CHARS
        page = [f.path for f in r.files if f.status in Delivered]
        assert page and page == sorted(page) and not (seen - cut) & set(page)
        seen.update(page)


def test_a_cursor_near_its_limit_still_carries_a_small_request(huge_glob_tree: Path) -> None:
    """The files left for later so that the cursor fits are chosen on a trial position;
    the position after the drop differs a little (its fingerprint moves), so a cursor
    that lands just over 1000 characters drops more files, never the request: a
    cursor sent alone always continues a request this small. The sweep of page sizes
    crosses the edge (at 382, 413 and 433 files before the fix)."""
    ws = Workspace.open(str(huge_glob_tree), Settings())
    for n in range(380, 440):
        params = {
            "paths": ["generated/**/*.txt"],
            "maxTotalFiles": n,
            "maxTotalChars": 100_000,
            "packing": "smallest-first",
        }
        r = answer(ws, decode_read_params(params))
        assert r.next_cursor and len(r.next_cursor) <= MAX_CURSOR_CHARS
        assert decode_cursor(r.next_cursor).params is not None, n


def _lines_delivered(pages: list[ReadManyResult]) -> dict[str, list[tuple[int, int]]]:
    """Per path, the line ranges (1-based, inclusive; a whole file's ends at 0) each
    page delivered of it."""
    out: dict[str, list[tuple[int, int]]] = {}
    for r in pages:
        for f in r.files:
            if f.status in ("ok", "partial"):
                out.setdefault(f.path, []).append((f.line_start or 1, f.line_end or 0))
    return out


@pytest.mark.parametrize("packing", ["auto", "smallest-first", "request-order"])
def test_a_file_cut_beyond_the_prefix_resumes_before_another_is_cut(
    tmp_path: Path, packing: str
) -> None:
    """A smallest-first page cuts ``b.py`` (after ``a.py`` in request order, too big for
    a page); the next page, in request order, cut ``a.py`` and the cursor kept that cut
    only, so ``b.py`` came again whole, its first part twice. The rest of the file a
    cursor resumes now comes first on the next page, whatever the packing."""
    write_tree(
        tmp_path,
        {
            "a.py": "".join(
                f"def alpha_{i}(value):\n    return value * {i} + len(str(value))\n"
                for i in range(250)
            ),
            "b.py": "".join(
                f"BETA_{i} = 'some moderately long constant string number {i}'\n" for i in range(60)
            ),
            **{f"t{i}.py": f"x{i} = {i}\n" for i in range(4)},
        },
    )
    pages = follow(tmp_path, {"paths": ["*.py"], "maxTotalTokens": 1000, "packing": packing})
    got = _lines_delivered(pages)
    assert set(got) == {"a.py", "b.py", "t0.py", "t1.py", "t2.py", "t3.py"}
    for path, ranges in got.items():
        total = len((tmp_path / path).read_text().splitlines())
        covered = [(a, b or total) for a, b in sorted(ranges)]
        assert covered[0][0] == 1 and covered[-1][1] == total, (path, covered)
        for (_, end), (start, _) in itertools.pairwise(covered):
            assert start == end + 1, f"{path}: lines delivered twice or skipped: {covered}"


def test_a_chain_whose_keys_pass_the_cursor_limit_still_ends(tmp_path: Path) -> None:
    """Pages in an order far from path order (here a fixed ranking of 150 files with
    40-letter names) deliver files beyond the prefix, whose keys the cursor holds. Once
    those passed 1,000 characters, a page left out every file it delivered beyond the
    prefix to keep the cursor short, made the same cursor again, and the chain never
    ended. A page now keeps at least its first file: every file comes once, and the
    chain ends."""
    import random
    import string

    from tests.unit.engine.test_focus import open_ws

    rng = random.Random(5)
    names = sorted(
        "".join(rng.choice(string.ascii_lowercase) for _ in range(40)) + ".py" for _ in range(150)
    )
    write_tree(tmp_path, {n: f"def f():\n    return {i}\n" * 3 for i, n in enumerate(names)})
    best = names[:]
    rng.shuffle(best)
    ws = open_ws(tmp_path, best)
    params: dict[str, Any] = {"paths": ["*.py"], "focus": "anything", "maxTotalTokens": 1000}
    r = answer(ws, decode_read_params(params))
    pages = [r]
    while r.next_cursor:
        assert len(pages) < 200, "the chain does not end"
        r = answer(ws, decode_read_params({**params, "cursor": r.next_cursor}))
        pages.append(r)
    got = delivered(pages)
    once(got)
    assert sorted(got) == names


@pytest.mark.parametrize("packing", ["auto", "outlines"])
def test_a_crowded_cursor_keeps_its_request_and_its_limit(tmp_path: Path, packing: str) -> None:
    """The cursor alone (beside the same focus) continues a ranked chain to its end:
    once the keys of files delivered beyond the request-order prefix take half of the
    cursor, pages fill in request order, so the keys stop growing. Before, they kept
    growing past 900 characters, the cursor left its request out (and then passed
    1,000 characters), and a client that sent the cursor alone was refused."""
    import random
    import string

    from tests.unit.engine.test_focus import open_ws

    rng = random.Random(7)
    names = sorted(
        "src/" + "".join(rng.choice(string.ascii_lowercase) for _ in range(30)) + ".py"
        for _ in range(150)
    )
    write_tree(tmp_path, {n: f"def f():\n    return {i}\n" * 3 for i, n in enumerate(names)})
    best = names[:]
    rng.shuffle(best)
    ws = open_ws(tmp_path, best)
    focus = "anything"
    params: dict[str, Any] = {
        "paths": ["src/*.py"],
        "focus": focus,
        "maxTotalTokens": 1000,
        "packing": packing,
    }
    r = answer(ws, decode_read_params(params))
    pages = [r]
    while r.next_cursor:
        assert len(pages) < 200, "the chain does not end"
        assert len(r.next_cursor) <= 1000
        r = answer(ws, decode_read_params({"cursor": r.next_cursor, "focus": focus}))
        pages.append(r)
    got = delivered(pages)
    once(got)
    assert sorted(got) == names
    ranked = [f for p in pages for f in p.files if f.status == "ok"]
    assert all(f.rank is not None and f.why for f in ranked)


@pytest.mark.parametrize("packing", ["auto", "request-order", "outlines"])
def test_a_line_cut_by_the_budget_goes_on_at_its_column(tmp_path: Path, packing: str) -> None:
    """A first line longer than what a page holds is cut inside the line; the cursor
    went on at the next line, and the rest of that line was never delivered. The next
    page now goes on in that line where the page before stopped: the pieces follow one
    another and add up to the file, every character once."""
    body = "x" * 7000 + "\nsecond line\n" + "".join(f"line {n}\n" for n in range(200))
    write_tree(tmp_path, {"a.py": "print(1)\n", "b.txt": body})
    ws = Workspace.open(str(tmp_path), Settings())
    raw: dict[str, Any] = {
        "paths": ["a.py", "b.txt"],
        "maxTotalChars": 3000,
        "packing": packing,
        "preferFullRead": True,
    }
    pieces = []
    for _ in range(50):
        r = answer(ws, decode_read_params(raw))
        pieces += [f for f in r.files if f.path == "b.txt" and f.status in ("ok", "partial")]
        if not r.next_cursor:
            break
        raw = {"cursor": r.next_cursor}
    else:
        raise AssertionError("the chain never ended")
    assert sum(f.chars for f in pieces) == len(body)
    assert pieces[-1].status == "ok" and pieces[-1].line_end == 202
    for before, after in itertools.pairwise(pieces):
        assert after.line_start == (before.line_end if before.next_column else before.next_offset)


def test_a_page_after_a_cursor_that_gives_nothing_ends_the_chain(tmp_path: Path) -> None:
    """Files whose names alone take nearly all of maxTotalTokens can never be given:
    every page gave nothing and the same cursor again, for ever. A page after a cursor
    that gives nothing now ends the chain, naming the next file and what it needs."""
    part = "한국어디렉터리이름" * 9  # 81 characters, 243 bytes: a name's limit is 255
    deep = "/".join([part] * 13)  # ~1,070 characters, over 900 o200k tokens
    names = [f"src/{deep}/{n}.py" for n in range(2)]
    write_tree(tmp_path, {name: "x = 1\n" for name in names})
    ws = Workspace.open(str(tmp_path), Settings())
    raw: dict[str, Any] = {"paths": ["src/**/*.py"], "maxTotalTokens": 1000}
    pages = []
    for _ in range(5):
        r = answer(ws, decode_read_params(raw))
        pages.append(r)
        assert r.summary.estimated_tokens <= 1000
        if not r.next_cursor:
            break
        raw = {"cursor": r.next_cursor}
    assert not pages[-1].next_cursor and len(pages) == 2
    assert "[Nothing more fits the budget: src/" in pages[-1].llm_content
    assert "The 2 file(s) left need a larger budget; no cursor follows.]" in pages[-1].llm_content
