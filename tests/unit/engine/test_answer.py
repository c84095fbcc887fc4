"""The engine (resolve → load → budget → pack → render) on real trees, in-process."""

from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer, write_tree

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def tree(root: Path, files: dict[str, str | bytes]) -> Workspace:
    write_tree(root, files)
    return Workspace.open(str(root), Settings())


def ask(ws: Workspace, **params: Any) -> Any:
    return answer(ws, decode_read_params(params))


def statuses(result: Any) -> list[tuple[str, str, str | None]]:
    return [(f.path, f.status, f.code) for f in result.files]


def test_output_keeps_request_order_and_dedups(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"b.py": "b\n", "a.py": "a\n", "d/c.py": "c\n"})
    r = ask(ws, paths=["b.py", "*.py", "d/"], include=["a.py"])
    assert [f.path for f in r.files] == ["b.py", "a.py", "d/c.py"]


def test_window_replaces_line_cap_and_is_ok_when_whole(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"f.txt": "".join(f"{i}\n" for i in range(1, 501))})
    r = ask(ws, files=[{"path": "f.txt", "offset": 40, "limit": 300}])
    f = r.files[0]
    assert (f.status, f.line_start, f.line_end, f.total_lines) == ("ok", 40, 339, 500)
    assert f.next_offset is None
    assert r.llm_content.startswith("--- f.txt ---\n40\n41\n")


def test_offset_past_end_is_an_error_not_an_exception(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"f.txt": "a\nb\n"})
    r = ask(ws, files=[{"path": "f.txt", "offset": 10}])
    assert r.files[0].status == "error" and "past the end" in (r.files[0].message or "")


def test_per_file_char_cap(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"f.txt": "x" * 99 + "\n" + "y" * 99 + "\n"})
    r = ask(ws, paths=["f.txt"], perFileMaxChars=150)
    f = r.files[0]
    assert (f.status, f.line_end, f.next_offset) == ("partial", 1, 2)
    assert "Continue with offset=2." in r.llm_content


def test_prefer_full_read_lifts_per_file_caps_not_totals(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"a.txt": "a\n" * 1000, "b.txt": "b\n" * 1000})
    r = ask(ws, paths=["a.txt", "b.txt"], preferFullRead=True, maxTotalChars=3000)
    assert statuses(r) == [("a.txt", "ok", None), ("b.txt", "partial", "budget")]
    assert r.summary.total_chars <= 3000
    assert r.packing.partial_included_path == "b.txt"


def test_auto_packing_switches_only_for_more_whole_files(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"big.txt": "x" * 900 + "\n", "s1.txt": "1\n", "s2.txt": "2\n"})
    r = ask(ws, paths=["big.txt", "s1.txt", "s2.txt"], maxTotalChars=500)
    assert r.packing.strategy == "smallest-first" and r.packing.switched_for_coverage
    assert [f.status for f in r.files] == ["partial", "ok", "ok"]  # still request order
    r = ask(ws, paths=["s1.txt", "s2.txt", "big.txt"], maxTotalChars=500)
    assert r.packing.strategy == "request-order" and not r.packing.switched_for_coverage


def test_auto_packing_keeps_request_order_over_a_broad_expansion(tmp_path: Path) -> None:
    """Over more than 1,000 files auto does not sort by size (a stat each), even where
    smallest-first would include more whole files; asked for, smallest-first still does."""
    from readmany_daemon.engine.pack import AUTO_SMALLEST_FIRST_MAX

    n = AUTO_SMALLEST_FIRST_MAX + 1
    files = {"a_big.txt": "x" * 900 + "\n"} | {f"b{i:04}.txt": "1\n" for i in range(n - 1)}
    ws = tree(tmp_path, files)
    r = ask(ws, paths=["*.txt"], maxTotalChars=500)
    assert r.summary.matched == n
    assert r.packing.strategy == "request-order" and not r.packing.switched_for_coverage
    assert r.files[0].status == "partial" and r.next_cursor
    r = ask(ws, paths=["*.txt"], maxTotalChars=500, packing="smallest-first")
    assert r.packing.strategy == "smallest-first" and r.summary.read == 20
    del files["b0000.txt"]
    (tmp_path / "b0000.txt").unlink()
    ws = tree(tmp_path, files)
    r = ask(ws, paths=["*.txt"], maxTotalChars=500)
    assert r.packing.strategy == "smallest-first" and r.packing.switched_for_coverage


def test_max_total_files_and_at_most_one_partial(tmp_path: Path) -> None:
    ws = tree(tmp_path, {f"f{i}.txt": "z" * 100 + "\n" for i in range(10)})
    r = ask(ws, paths=["*.txt"], maxTotalFiles=3, maxTotalChars=250)
    assert sum(f.status == "partial" for f in r.files) <= 1
    assert sum(f.status in ("ok", "partial") for f in r.files) <= 3
    assert r.summary.omitted == 10 - r.summary.read
    assert r.next_cursor


def test_cursor_walks_every_file_exactly_once(tmp_path: Path) -> None:
    files = {f"src/m{i:03}.py": f"v = {i}\n" * (i % 7 + 1) for i in range(95)}
    ws = tree(tmp_path, files)
    seen: list[str] = []
    r = ask(ws, paths=["src/**/*.py"], maxTotalFiles=20)
    pages = 1
    while True:
        seen += [f.path for f in r.files if f.status == "ok"]
        if not r.next_cursor:
            break
        r = ask(ws, cursor=r.next_cursor)
        pages += 1
    assert sorted(seen) == sorted(files) and len(seen) == len(set(seen))
    assert pages == 5


def test_cursor_resumes_a_budget_cut_file(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"a.txt": "".join(f"a{i}\n" for i in range(100)), "b.txt": "b\n"})
    r = ask(ws, paths=["a.txt", "b.txt"], maxTotalChars=50, packing="request-order")
    assert statuses(r)[0] == ("a.txt", "partial", "budget")
    nxt = r.files[0].next_offset
    r2 = ask(ws, cursor=r.next_cursor)
    assert r2.files[0].path == "a.txt" and r2.files[0].line_start == nxt


def test_cursor_with_another_request_is_invalid_params(tmp_path: Path) -> None:
    ws = tree(tmp_path, {f"f{i}.txt": "x\n" for i in range(5)})
    r = ask(ws, paths=["*.txt"], maxTotalFiles=2)
    assert r.next_cursor
    same = ask(ws, paths=["*.txt"], maxTotalFiles=2, cursor=r.next_cursor)
    assert [f.path for f in same.files if f.status == "ok"] == ["f2.txt", "f3.txt"]
    with pytest.raises(InvalidParams) as info:
        ask(ws, paths=["other/*.md"], cursor=r.next_cursor)
    assert info.value.field == "$.cursor"


def test_bad_cursor_is_invalid_params(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"a.txt": "a"})
    with pytest.raises(InvalidParams) as info:
        ask(ws, cursor="not-a-cursor")
    assert info.value.field == "$.cursor"


def test_stop_on_error(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"a.txt": "a\n", "c.txt": "c\n"})
    r = ask(ws, paths=["a.txt", "missing.txt", "c.txt"], stopOnError=True)
    assert statuses(r) == [
        ("a.txt", "ok", None),
        ("missing.txt", "error", "not-found"),
        ("c.txt", "omitted", "stopped"),
    ]


def test_images_attach_only_when_named(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"img/a.png": PNG, "img/b.txt": "b\n"})
    r = ask(ws, paths=["img/a.png"])
    assert r.attachments and base64.b64decode(r.attachments[0].data) == PNG
    assert r.files[0].mime_type == "image/png"
    assert "--- img/a.png ---\n[image/png attached: 40 bytes]\n" in r.llm_content
    r = ask(ws, paths=["img/"])
    assert not r.attachments and ("img/a.png", "skipped", "binary") in statuses(r)
    r = ask(ws, paths=["img/*.png"])
    assert len(r.attachments) == 1


def test_binary_skipped(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"bin.dat": b"\x00\x01\x02\xff" * 100, "t.txt": "t\n"})
    r = ask(ws, paths=["*"])
    assert ("bin.dat", "skipped", "binary") in statuses(r)
    assert "bin.dat (binary)" in r.llm_content


def test_explicit_gitignored_path_is_read_with_ignored_by(tmp_path: Path) -> None:
    ws = tree(tmp_path, {".gitignore": "*.log\n", "a.log": "log\n"})
    r = ask(ws, paths=["a.log"])
    assert r.files[0].status == "ok" and r.files[0].ignored_by == ".gitignore:1"
    r = ask(ws, paths=["*.log"])
    assert r.files[0].code == "no-match"
    assert "respectGitIgnore" in r.llm_content and r.summary.hidden == {"gitignore": 1}


@pytest.mark.parametrize("limit", [{}, {"maxAnswerChars": 4000}, {"maxTotalTokens": 1000}])
def test_thousands_of_patterns_that_match_nothing_stay_within_the_budget(
    tmp_path: Path, limit: dict[str, int]
) -> None:
    """Each pattern that matched nothing had its own line, outside every budget: 3,000
    of them made 157,912 characters (44,000 tokens) under maxAnswerChars 4,000. The
    first three keep their line, the others are named in one, within a few hundred
    characters; every one keeps its entry in ``files``."""
    ws = tree(tmp_path, {"a.py": "a = 1\n", ".gitignore": "*.log\n", "x.log": "x\n"})
    patterns = ["*.log", *(f"src/*.nomatch{n}" for n in range(3000))]
    r = ask(ws, paths=[*patterns, "a.py"], **limit)
    assert r.summary.no_match == 3001 and r.summary.read == 1
    assert [f.code for f in r.files].count("no-match") == 3001
    text = r.llm_content
    assert len(text) < 2000, len(text)
    assert "*.log matched no visible file; 1 file(s) hidden by gitignore" in text
    assert "[2998 more pattern(s) matched no visible file: src/*.nomatch2, " in text
    assert "more (each a skipped entry, code no-match, in files).]" in text


def test_tool_ignore_file_hides_even_named(tmp_path: Path) -> None:
    ws = tree(tmp_path, {".readmanyignore": "secret/\n", "secret/s.txt": "S\n"})
    r = ask(ws, paths=["secret/s.txt"])
    assert statuses(r) == [("secret/s.txt", "skipped", "ignored")]
    r = ask(ws, paths=["secret/s.txt"], fileFilteringOptions={"respectIgnoreFiles": False})
    assert r.files[0].status == "ok"


def test_deny_rules_cannot_be_lifted(tmp_path: Path) -> None:
    ws = tree(tmp_path, {".env": "TOKEN=x\n", "key.pem": "k", ".env.example": "EX=1\n"})
    off = {
        "useDefaultExcludes": False,
        "fileFilteringOptions": {"respectGitIgnore": False, "respectIgnoreFiles": False},
    }
    r = ask(ws, paths=[".env", "key.pem", ".env.example"], **off)
    assert [f.code for f in r.files] == ["denied", "denied", None]
    assert "TOKEN" not in r.llm_content
    r = ask(ws, paths=["*"], **off)
    assert {f.path for f in r.files} == {".env.example"}


def test_exclude_and_no_recursive(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"a.py": "", "t/test_a.py": "", "t/deep/x.py": ""})
    r = ask(ws, paths=["**/*.py"], exclude=["t/deep/"])
    assert [f.path for f in r.files] == ["a.py", "t/test_a.py"]
    r = ask(ws, paths=["t/"], recursive=False)
    assert [f.path for f in r.files] == ["t/test_a.py"]
    r = ask(ws, paths=["**/*.py"], exclude=["*.py", "!t/test_a.py"])
    assert [f.path for f in r.files] == ["t/test_a.py"]


@pytest.mark.parametrize("fmt", ["separator", "heredoc", "xml", "json"])
def test_every_format_names_omitted_files(tmp_path: Path, fmt: str) -> None:
    ws = tree(tmp_path, {f"f{i}.txt": f"{i}\n" for i in range(5)})
    r = ask(ws, paths=["*.txt"], maxTotalFiles=2, format=fmt)
    for i in (2, 3, 4):
        assert f"f{i}.txt" in r.llm_content
    assert r.next_cursor and r.next_cursor in r.llm_content
    if fmt == "json":
        doc = json.loads(r.llm_content)
        assert doc["results"]["f0.txt"] == {"status": "ok", "content": "0\n"}
        assert doc["results"]["f4.txt"]["code"] == "budget"


def test_json_keys_by_requested_path_and_window(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"src/a.ts": "a\nb\nc\n"})
    r = ask(
        ws,
        paths=[str(tmp_path / "src/a.ts")],
        files=[{"path": "src/a.ts", "offset": 2, "limit": 1}],
        format="json",
    )
    doc = json.loads(r.llm_content)
    assert doc["results"] == {
        str(tmp_path / "src/a.ts"): {"status": "ok", "content": "a\nb\nc\n"},
        # A window given whole ends with its position notice (not counted in chars).
        "src/a.ts:2-2": {
            "status": "ok",
            "content": "b\n[Showing lines 2-2 of 3. Continue with offset=3.]",
        },
    }


def test_line_numbers(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"a.txt": "x\ny\n"})
    r = ask(ws, files=[{"path": "a.txt", "offset": 2}], lineNumbers=True)
    assert "--- a.txt ---\n     2\ty\n" in r.llm_content


def test_absolute_paths_label(tmp_path: Path) -> None:
    ws = tree(tmp_path, {"a.txt": "x\n"})
    r = ask(ws, paths=["a.txt"], absolutePaths=True)
    assert r.files[0].path == str(tmp_path.resolve() / "a.txt")


def test_fifo_and_folder_named(tmp_path: Path) -> None:
    import os

    ws = tree(tmp_path, {"a.txt": "x\n"})
    os.mkfifo(tmp_path / "pipe")
    r = ask(ws, paths=["pipe"])
    assert statuses(r) == [("pipe", "error", "not-a-file")]


def test_every_entry_on_the_wire_has_source_and_chars(tmp_path: Path) -> None:
    """PROTOCOL §4 has ``source`` and ``chars`` in every FileResult, also for entries
    that were not read (errors, omitted, skipped) and for empty files."""
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    ws = Workspace.open(str(tmp_path), Settings())
    params = decode_read_params(
        {"paths": ["empty.txt", "missing.txt", "*.txt", "nothing/*.md"], "maxTotalFiles": 2}
    )
    wire = json.loads(msgspec.json.encode(answer(ws, params)))
    statuses = {f["status"] for f in wire["files"]}
    assert {"ok", "error", "omitted", "skipped"} <= statuses, wire["files"]
    for entry in wire["files"]:
        assert entry["source"] in ("overlay", "cache", "disk"), entry
        assert isinstance(entry["chars"], int), entry
    assert next(f for f in wire["files"] if f["path"] == "empty.txt")["chars"] == 0


def test_attachments_is_on_the_wire_even_when_empty(tmp_path: Path) -> None:
    """PROTOCOL §4: ``attachments`` is always present, possibly empty."""
    ws = tree(tmp_path, {"a.txt": "a\n", "img/a.png": PNG})
    for params in ({"paths": ["a.txt"]}, {"paths": ["missing.txt"]}, {"paths": ["img/a.png"]}):
        wire = json.loads(msgspec.json.encode(answer(ws, decode_read_params(params))))
        assert isinstance(wire.get("attachments"), list), (params, sorted(wire))
        assert len(wire["attachments"]) == (params["paths"] == ["img/a.png"])


_NAMED_LINE = re.compile(r"^\[(Omitted|Skipped) (\d+) file\(s\)[^:\]]*(?:: (.*))?\.\]$")


def _named_and_more(line: str) -> tuple[int, int, list[str]]:
    """(the count a notice line states, the names it shows, the "N more" counts it
    gives)."""
    m = _NAMED_LINE.match(line)
    assert m, line
    parts = m.group(3).split(", ") if m.group(3) else []
    more = [p for p in parts if re.fullmatch(r"and \d+ more", p)]
    names = [p for p in parts if p not in more]
    assert all(" more" not in p for p in names), line
    return int(m.group(2)), len(names), more


def _notices(r: Any, fmt: str) -> list[str]:
    if fmt == "json":
        lines: list[str] = json.loads(r.llm_content)["notices"]
        return lines
    if fmt == "xml":
        return [n.text or "" for n in ET.fromstring(r.llm_content).iter("notice")]
    return list(r.llm_content.split("\n"))


@pytest.mark.parametrize("fmt", ["separator", "heredoc", "xml", "json"])
@pytest.mark.parametrize("images_first", [False, True])
def test_omission_counts_add_up_over_a_large_expansion(
    tmp_path: Path, fmt: str, images_first: bool
) -> None:
    """Past the entries listed in ``files`` (200) and the names shown (50), one "and N
    more" covers every other omitted or skipped file: names + N = the count stated, the
    count of ``summary``."""
    files: dict[str, str | bytes] = {f"t/f{i:04}.txt": "x\n" for i in range(1200)}
    files.update({f"img/p{i:03}.png": PNG for i in range(260)})
    ws = tree(tmp_path, files)
    patterns = ["img/*", "t/*.txt"] if images_first else ["t/*.txt", "img/*"]
    r = ask(ws, paths=patterns, format=fmt)
    lines = _notices(r, fmt)
    omitted = next(x for x in lines if x.startswith("[Omitted"))
    total, names, more = _named_and_more(omitted)
    assert total == r.summary.omitted == 1180 + (0 if images_first else 260)
    assert names == 50 and more == [f"and {total - 50} more"], omitted
    assert omitted.count(" more") == 1
    skipped = [x for x in lines if x.startswith("[Skipped")]
    if images_first:
        total, names, more = _named_and_more(skipped[0])
        assert total == r.summary.skipped == 260
        assert names == 0 and more == [], skipped  # the 50 names went to omitted files
    else:
        assert skipped == [] and r.summary.skipped == 0


def test_offset_past_the_end_is_out_of_range(tmp_path: Path) -> None:
    """An offset past the end of a file that exists: ``error`` / ``out-of-range``, not
    ``not-found`` (the file is there)."""
    ws = tree(tmp_path, {"f.txt": "a\nb\n", "g.txt": "a\nb", "empty.txt": ""})
    r = ask(
        ws,
        files=[
            {"path": "f.txt", "offset": 3},
            {"path": "g.txt", "offset": 9, "limit": 2},
            {"path": "empty.txt", "offset": 2},
            {"path": "f.txt", "offset": 2},
            {"path": "empty.txt", "offset": 1},
        ],
    )
    assert statuses(r) == [
        ("f.txt", "error", "out-of-range"),
        ("g.txt", "error", "out-of-range"),
        ("empty.txt", "error", "out-of-range"),
        ("f.txt", "ok", None),
        ("empty.txt", "ok", None),
    ]
    assert "offset 3 is past the end of f.txt (2 lines)" in (r.files[0].message or "")


def test_line_numbers_never_take_content_past_max_total_chars(tmp_path: Path) -> None:
    """A cut file shows at least one character after its number: where fewer characters
    are left than that takes, it is omitted instead of cut (maxTotalChars holds)."""
    ws = tree(tmp_path, {f"f{i}.py": "".join(f"x{n} = {n}\n" for n in range(40)) for i in range(7)})
    for limit in (1, 7, 8, 50, 104):
        r = ask(ws, paths=["*.py"], lineNumbers=True, maxTotalChars=limit, perFileMaxTokens=10)
        assert r.summary.total_chars <= limit, (limit, r.summary)
    r = ask(ws, paths=["*.py"], lineNumbers=True, maxTotalChars=1)
    assert r.summary.read == 0 and r.next_cursor
    assert ask(ws, paths=["*.py"], lineNumbers=True, maxTotalChars=8).files[0].chars == 8
