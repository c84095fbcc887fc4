"""A window says where it is (issue 23, item 4; PROTOCOL §4): a line window given whole
that is not the whole file ends with a position notice, in every format, not counted in
``chars``; and a short first line does not keep a huge second one out of the answer."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.content.tokens import count
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import write_tree

QUERY = "".join(f"line {n}\n" for n in range(1, 2736))  # 2,735 lines


def _read(root: Path, **params: Any) -> Any:
    return answer(Workspace.open(str(root), Settings()), decode_read_params(params))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write_tree(tmp_path, {"query.py": QUERY, "small.txt": "a\nb\n"})
    return tmp_path


def test_a_window_in_the_middle_says_where_it_is_and_what_follows(tree: Path) -> None:
    r = _read(tree, files=[{"path": "query.py", "offset": 2600, "limit": 5}])
    (f,) = r.files
    assert (f.status, f.line_start, f.line_end, f.total_lines) == ("ok", 2600, 2604, 2735)
    shown = "".join(f"line {n}\n" for n in range(2600, 2605))
    assert f.chars == len(shown)  # the notice is not content
    assert r.llm_content == (
        f"--- query.py ---\n{shown}"
        "[Showing lines 2600-2604 of 2735. Continue with offset=2605.]\n\n"
        "--- End of content ---"
    )
    assert r.summary.total_chars == len(shown)


def test_a_window_reaching_the_end_says_so(tree: Path) -> None:
    r = _read(tree, files=[{"path": "query.py", "offset": 2690, "limit": 100}])
    (f,) = r.files
    assert (f.status, f.line_end) == ("ok", 2735)
    assert r.llm_content.endswith(
        "line 2735\n[Showing lines 2690-2735 of 2735.]\n\n--- End of content ---"
    )
    # No limit at all: the window from offset to the end, within perFileMaxLines.
    r = _read(tree, files=[{"path": "query.py", "offset": 2700}])
    assert r.files[0].status == "ok"
    assert "line 2735\n[Showing lines 2700-2735 of 2735.]\n" in r.llm_content


def test_a_window_that_is_the_whole_file_has_no_notice(tree: Path) -> None:
    for spec in ({"offset": 1, "limit": 2}, {"offset": 1, "limit": 50}, {"limit": 9}):
        r = _read(tree, files=[{"path": "small.txt", **spec}])
        assert r.llm_content == "--- small.txt ---\na\nb\n\n--- End of content ---"
    r = _read(tree, paths=["small.txt"])
    assert "Showing" not in r.llm_content


def test_a_window_from_a_column_names_it(tree: Path) -> None:
    r = _read(tree, files=[{"path": "query.py", "offset": 10, "column": 3, "limit": 2}])
    assert r.files[0].status == "ok"
    assert "ne 10\nline 11\n[Showing lines 10-11 of 2735, line 10 from column 3." in (r.llm_content)
    assert "Continue with offset=12.]" in r.llm_content


@pytest.mark.parametrize("fmt", ["heredoc", "xml", "json"])
def test_every_format_carries_the_notice_where_a_cut_notice_goes(tree: Path, fmt: str) -> None:
    spec = {"path": "query.py", "offset": 2600, "limit": 5}
    r = _read(tree, files=[spec], format=fmt)
    notice = "[Showing lines 2600-2604 of 2735. Continue with offset=2605.]"
    shown = "".join(f"line {n}\n" for n in range(2600, 2605))
    if fmt == "heredoc":
        assert f"\n{shown}{notice}\nPINE_1_" in r.llm_content
    elif fmt == "xml":
        doc = ET.fromstring(r.llm_content).find("document")
        assert doc is not None and doc.findtext("document_content") == shown + notice
    else:
        got = json.loads(r.llm_content)["results"]["query.py:2600-2604"]
        assert got == {"status": "ok", "content": shown + notice}
    assert r.files[0].chars == len(shown)


def test_notices_keep_the_token_and_answer_budgets(tree: Path) -> None:
    specs = [{"path": "query.py", "offset": 1 + 40 * k, "limit": 40} for k in range(60)]
    for fmt in ("separator", "heredoc", "xml", "json"):
        r = _read(tree, files=specs, format=fmt, maxTotalTokens=2000, maxAnswerChars=4500)
        assert len(r.llm_content) <= 4500
        assert count(r.llm_content) <= r.summary.estimated_tokens <= 2000
        assert r.next_cursor and "[Showing lines 1-40 of 2735." in r.llm_content


# ----------------------------------------------------------- a minified file's line 2

MINIFIED = "/*! lib v1.2.3 | MIT */\n" + "var a=function(){return 1};" * 10_000


def test_a_short_first_line_then_a_huge_second_one(tmp_path: Path) -> None:
    write_tree(tmp_path, {"lib.min.js": MINIFIED})
    r = _read(tmp_path, paths=["lib.min.js"])
    (f,) = r.files
    first = MINIFIED.index("\n") + 1
    # Line 1 and as much of line 2 as perFileMaxChars allows, cut short inside it.
    assert (f.status, f.line_start, f.line_end, f.total_lines) == ("partial", 1, 2, 2)
    assert f.chars == 20_000
    assert (f.next_offset, f.next_column) == (None, 20_000 - first + 1)
    assert MINIFIED[:20_000] + "\n[Showing lines 1-2 of 2, line 2 cut short. " in r.llm_content
    assert f'"offset": 2, "column": {20_000 - first + 1}' in r.llm_content
    # Following it goes on inside line 2, nothing lost or repeated.
    nxt = _read(tmp_path, files=[{"path": "lib.min.js", "offset": 2, "column": f.next_column}])
    assert nxt.files[0].line_start == 2
    body = nxt.llm_content.split("---\n", 1)[1]
    assert body.startswith(MINIFIED[20_000:40_000])


def test_a_per_file_token_cap_also_goes_on_into_line_two(tmp_path: Path) -> None:
    # perFileMaxTokens is a per-file cap like perFileMaxChars: the same rule holds.
    write_tree(tmp_path, {"lib.min.js": MINIFIED})
    r = _read(tmp_path, paths=["lib.min.js"], perFileMaxTokens=500)
    (f,) = r.files
    assert (f.status, f.code, f.line_end, f.next_offset) == ("partial", None, 2, None)
    first = MINIFIED.index("\n") + 1
    assert f.next_column is not None and f.chars == first + f.next_column - 1 > first
    assert f'"offset": 2, "column": {f.next_column}' in r.llm_content


def test_a_budget_cut_still_ends_at_a_line_boundary(tmp_path: Path) -> None:
    # The totals' cut resumes by cursor at a line's start: it never ends inside line 2.
    write_tree(tmp_path, {"a.txt": "a\n" * 10, "lib.min.js": MINIFIED})
    r = _read(tmp_path, paths=["a.txt", "lib.min.js"], maxTotalChars=5_000)
    f = r.files[1]
    assert (f.status, f.code, f.line_end, f.next_offset, f.next_column) == (
        "partial",
        "budget",
        1,
        2,
        None,
    )


@pytest.mark.slow
def test_the_issue_window_on_django() -> None:
    # The issue's own request, on Django 5.2's sdist: five lines of a 2,735-line file.
    from tests.sdists import django_tree

    root = django_tree()
    r = _read(root, files=[{"path": "django/db/models/query.py", "offset": 2600, "limit": 5}])
    (f,) = r.files
    assert (f.status, f.line_start, f.line_end, f.total_lines) == ("ok", 2600, 2604, 2735)
    assert r.llm_content.endswith(
        "[Showing lines 2600-2604 of 2735. Continue with offset=2605.]\n\n--- End of content ---"
    )
    end = _read(root, files=[{"path": "django/db/models/query.py", "offset": 2690}])
    assert end.files[0].status == "ok"
    assert "[Showing lines 2690-2735 of 2735.]\n" in end.llm_content
