"""``packing: "outlines"`` fills its budget and covers what it can (PROTOCOL §4
"Outlines", issue 23 items 1-2), on small trees the tests build, under the MCP read
tool's budgets (``mcp.schema.tool_budgets``: 20,000 tokens, 50,000 content and answer
characters).

- A file no larger than its outline (an empty ``__init__.py``, a one-line module) comes
  as content, never as ``Outline only``.
- Content and outlines are planned against tokens, content characters and answer
  characters together: a ``maxAnswerChars`` below ``maxTotalChars`` still fills the
  page, instead of one character of one file.
- A request of at most 200 files reserves the outlines of the files a page cannot give
  whole before content: every matched file has its content or its outline, or the
  answer says how many could not be outlined.
- A file is outlined at most once in a cursor walk, and the walk takes no more calls
  than ``auto``'s (x 1.2), every page but the last at least half full.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.mcp.schema import tool_budgets
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyResult
from tests.helpers import answer, write_tree


def ask(ws: Workspace, **params: Any) -> ReadManyResult:
    """One page with the MCP tool's budgets under ``params``."""
    return answer(ws, decode_read_params({**tool_budgets(), **params}))


def walk(ws: Workspace, **params: Any) -> list[ReadManyResult]:
    """Page 1, then each ``nextCursor`` alone until none comes back."""
    pages = [ask(ws, **params)]
    while pages[-1].next_cursor:
        pages.append(answer(ws, decode_read_params({"cursor": pages[-1].next_cursor})))
        assert len(pages) < 400
    return pages


def delivered(r: ReadManyResult) -> int:
    return sum(f.status in ("ok", "partial") for f in r.files)


def function_module(n: int, functions: int = 8, lines: int = 600, width: int = 200) -> str:
    """A module of ``lines`` lines of about ``width`` characters in ``functions``
    functions (issue 23's 120 KB modules with the defaults)."""
    per = lines // functions
    out: list[str] = []
    for f in range(functions):
        out.append(f"def work_{n}_{f}(x):\n")
        for k in range(per - 2):
            pad = "y" * max(0, width - 40)
            out.append(f"    x = x + {k}  # {pad}\n")
        out.append("    return x\n")
    return "".join(out)


def sized_module(n: int, classes: int) -> str:
    """A module of ``classes`` classes of four methods (about 1.1 KB a class)."""
    out = [f'"""Module {n}."""\n\n']
    for c in range(classes):
        out.append(f"class C{n}_{c}:\n")
        for m in range(4):
            out.append(f"    def m{m}(self, x):\n")
            out.extend(f"        x = x + {k}  # some work here\n" for k in range(6))
            out.append("        return x\n\n")
    return "".join(out)


def varied_tree(root: Path, n: int) -> None:
    """``n`` modules of 1 to 40 classes (1 KB to 45 KB), an empty ``__init__.py`` per
    folder of ten."""
    files: dict[str, str] = {}
    for i in range(n):
        folder = f"pkg/d{i // 10:02}"
        files[f"{folder}/__init__.py"] = ""
        files[f"{folder}/m{i:03}.py"] = sized_module(i, 1 + (i * 7) % 40)
    write_tree(root, files)


def test_an_empty_init_comes_as_content_not_as_an_empty_outline(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            **{f"a/big{i}.py": function_module(i, width=400) for i in range(3)},
            "b/__init__.py": "",
            "c/one.py": "def f(): pass\n",
        },
    )
    ws = Workspace.open(str(tmp_path), Settings())
    r = ask(ws, paths=["**/*.py"])
    status = {f.path: (f.status, f.outline is not None) for f in r.files}
    assert "Outline only (0 lines" not in r.llm_content
    assert status["b/__init__.py"] == ("ok", False)
    assert status["c/one.py"] == ("ok", False)  # smaller than its outline would be
    assert "--- c/one.py ---\ndef f(): pass\n" in r.llm_content


def test_files_no_larger_than_their_outlines_come_as_content_past_the_stop(
    tmp_path: Path,
) -> None:
    files = {f"p/m{i:02}.py": function_module(i, lines=200) for i in range(6)}
    files.update({f"q/s{i:02}.py": f"def s{i}(): return {i}\n" for i in range(8)})
    write_tree(tmp_path, files)
    ws = Workspace.open(str(tmp_path), Settings())
    r = ask(ws, paths=["**/*.py"])
    small = [f for f in r.files if f.path.startswith("q/")]
    assert [f.status for f in small] == ["ok"] * 8
    assert not any(f.outline for f in small)


def test_sixty_big_modules_all_get_their_content_or_their_outline(tmp_path: Path) -> None:
    """60 modules of 120 KB (600 lines of ~200 characters in 8 functions) under the
    default budget (200,000 characters, 20,000 a file): content alone cuts 11 files
    and omits 49 with nothing to show."""
    write_tree(tmp_path, {f"mods/m{i:02}.py": function_module(i) for i in range(60)})
    ws = Workspace.open(str(tmp_path), Settings())
    r = answer(ws, decode_read_params({"paths": ["mods/*.py"], "packing": "outlines"}))
    assert r.summary.matched == 60
    bare = [f.path for f in r.files if f.status not in ("ok", "partial") and not f.outline]
    assert bare == [], bare
    outlined = [f for f in r.files if f.outline and f.status == "omitted"]
    assert len(outlined) + delivered(r) == 60 and len(outlined) >= 45
    for f in outlined:
        assert [s.name for s in f.outline or []][:1] == [f"work_{int(f.path[6:8])}_0"]
    assert delivered(r) >= 5  # the content fills what the outlines leave
    assert r.summary.total_chars >= 100_000


def test_the_answer_says_how_many_could_not_be_outlined(tmp_path: Path) -> None:
    write_tree(tmp_path, {f"mods/m{i:03}.py": function_module(i, 40) for i in range(150)})
    ws = Workspace.open(str(tmp_path), Settings())
    r = ask(ws, paths=["mods/*.py"], maxTotalTokens=4000, maxAnswerChars=12000)
    bare = [f.path for f in r.files if f.status not in ("ok", "partial") and not f.outline]
    assert bare
    m = re.search(r"(\d+) of them could not be outlined within the budget", r.llm_content)
    assert m and int(m[1]) == len(bare), r.llm_content[-1500:]


def test_a_file_is_outlined_at_most_once_in_a_walk(tmp_path: Path) -> None:
    files = {f"mods/m{i:02}.py": function_module(i, lines=150, width=100) for i in range(24)}
    write_tree(tmp_path, files)
    lines = files["mods/m00.py"].count("\n")
    ws = Workspace.open(str(tmp_path), Settings())
    pages = walk(ws, paths=["mods/*.py"])
    outlined = Counter(
        f.path for r in pages for f in r.files if f.status == "omitted" and f.outline
    )
    assert outlined and max(outlined.values()) == 1, outlined.most_common(3)
    # Every file's content still comes, each line exactly once.
    seen: dict[str, int] = {}
    for r in pages:
        for f in r.files:
            if f.status in ("ok", "partial"):
                start = f.line_start or 1
                assert start == seen.get(f.path, 0) + 1, (f.path, start, seen.get(f.path))
                seen[f.path] = f.line_end or lines
    assert len(seen) == 24 and set(seen.values()) == {lines}


def test_max_answer_chars_below_max_total_chars_fills_the_page(tmp_path: Path) -> None:
    """Under ``maxAnswerChars`` 50,000 with ``maxTotalChars`` 200,000 and 60,000 tokens
    (and the CLI's ``--max-answer-chars 50000`` alone), page 1 is about as full as
    ``auto``'s in request order (``auto`` itself goes smallest first over 300 files,
    not over Django's 2,819), not one character of the first file."""
    varied_tree(tmp_path, 300)
    ws = Workspace.open(str(tmp_path), Settings())
    for over in (
        {"maxTotalChars": 200_000, "maxAnswerChars": 50_000, "maxTotalTokens": 60_000},
        {"maxTotalChars": 200_000, "maxAnswerChars": 20_000},
        {"maxTotalChars": 50_000, "maxAnswerChars": 50_000},
    ):
        mine = ask(ws, paths=["**/*.py"], packing="outlines", **over)
        auto = ask(ws, paths=["**/*.py"], packing="request-order", **over)
        assert len(mine.llm_content) <= over["maxAnswerChars"]
        assert delivered(mine) >= min(0.9 * delivered(auto), delivered(auto) - 1), over
        assert len(mine.llm_content) >= 0.8 * len(auto.llm_content), over
    plain = {"paths": ["**/*.py"], "packing": "outlines", "maxAnswerChars": 50_000}
    r = answer(ws, decode_read_params(plain))  # no token budget, 200,000 chars
    assert delivered(r) >= 5 and 25_000 <= len(r.llm_content) <= 50_000


def test_a_walk_takes_about_the_calls_of_auto_and_fills_its_pages(tmp_path: Path) -> None:
    varied_tree(tmp_path, 300)
    ws = Workspace.open(str(tmp_path), Settings())
    mine = walk(ws, paths=["**/*.py"], packing="outlines")
    auto = walk(ws, paths=["**/*.py"], packing="auto")
    assert len(mine) <= 1.2 * len(auto), (len(mine), len(auto))
    for n, r in enumerate(mine[:-1], start=1):
        full = (
            len(r.llm_content) >= 25_000
            or r.summary.estimated_tokens >= 10_000
            or delivered(r) >= 20
        )
        assert full, (n, len(r.llm_content), r.summary.estimated_tokens, delivered(r))
        left = 50_000 - len(r.llm_content) > 10_000 and r.summary.estimated_tokens < 18_000
        slivers = [f.path for f in r.files if f.code == "budget" and f.status == "partial"]
        assert not (left and any(f.chars < 200 for f in r.files if f.path in slivers)), n


def test_a_tight_answer_with_long_notices_still_ends_its_walk(tmp_path: Path) -> None:
    """``maxAnswerChars`` at its floor (4,000) beside 40 missing paths, whose error lines
    take most of it: pages name fewer entries and each still gives something, so the
    walk ends with every file delivered."""
    files = {f"mods/m{i:02}.py": function_module(i, lines=80, width=60) for i in range(12)}
    write_tree(tmp_path, files)
    ws = Workspace.open(str(tmp_path), Settings())
    missing = [f"gone/missing_file_number_{k:03}.py" for k in range(40)]
    pages = walk(ws, paths=[*missing, "mods/*.py"], maxAnswerChars=4000)
    got = {f.path for r in pages for f in r.files if f.status in ("ok", "partial")}
    assert got == set(files)
    assert all(len(r.llm_content) <= 4000 for r in pages[1:])


def test_past_max_total_files_a_small_file_is_not_given_a_longer_outline(
    tmp_path: Path,
) -> None:
    """With ``maxTotalFiles`` reached, an empty ``__init__.py`` or a one-line module
    cannot come as content on this page: it stays omitted for a later page, never as a
    ``no symbols`` outline or an outline longer than the file."""
    files = {f"p/m{i:02}.py": function_module(i, lines=40) for i in range(3)}
    files.update({f"q/a{i:02}/__init__.py": "" for i in range(5)})
    files.update({f"r/s{i:02}.py": f"def s{i}(): return {i}\n" for i in range(5)})
    write_tree(tmp_path, files)
    ws = Workspace.open(str(tmp_path), Settings())
    r = ask(ws, paths=["**/*.py"], maxTotalFiles=3)
    for f in r.files:
        if f.path.startswith(("q/", "r/")):
            assert f.status == "omitted" and not f.outline, f
    assert "no symbols" not in r.llm_content
    walked = {f.path for f in r.files if f.status == "ok"}
    cursor = r.next_cursor
    while cursor:
        r = answer(ws, decode_read_params({"cursor": cursor}))
        assert "no symbols" not in r.llm_content
        walked |= {f.path for f in r.files if f.status == "ok"}
        cursor = r.next_cursor
    assert walked == set(files)


def test_a_window_cut_for_its_outline_keeps_its_lines_when_they_fit(tmp_path: Path) -> None:
    # a three-line window whose outline of the rest passes what the token budget left:
    # the cut shrinks the outline block, not the window to a one-line sliver
    head = '# mypy: allow-untyped-defs\n"""Command line options, ini-file and conftest."""\n\n'
    body = "".join(f"def option_{i}(config):\n    return {i}\n\n\n" for i in range(400))
    first = "".join(f"values_{i} = [" + ", ".join(map(str, range(300))) + "]\n" for i in range(3))
    write_tree(tmp_path, {"a.py": first, "config.py": head + body})
    ws = Workspace.open(str(tmp_path), Settings())
    paths = ["a.py", "config.py"]
    whole = ask(ws, paths=paths, perFileMaxLines=3, maxTotalTokens=100000)
    assert [(f.status, f.line_end) for f in whole.files] == [("ok", None), ("partial", 3)]
    cut = 0
    for less in (50, 100, 150, 200, 250):
        budget = whole.summary.estimated_tokens - less
        r = ask(ws, paths=paths, perFileMaxLines=3, maxTotalTokens=budget)
        got = r.files[1]
        assert r.summary.estimated_tokens <= budget
        if got.status == "partial":  # (with under 1,000 tokens left: outlined instead)
            assert (got.code, got.line_end) == ("budget", 3), less
            cut += 1
    assert cut >= 2
