"""Outlines in answers (PROTOCOL §4 "Outlines"): the cut file's outline of its unseen
lines in every format, ``packing: "outlines"`` (omitted + budget + outline, against the
character and token totals but not ``maxTotalFiles``), cursors that still deliver an
outlined file's content exactly once, and outlines cached by content."""

from __future__ import annotations

import itertools
import json
import os
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.content import outline as outline_mod
from readmany_daemon.content import tokens
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyResult
from tests.helpers import answer, write_tree
from tests.unit.engine.test_paging import follow, once

FORMATS = ("separator", "heredoc", "xml", "json")


def module(n: int, classes: int = 3, methods: int = 4) -> str:
    """A Python module of ``classes`` classes of ``methods`` methods, some lines each."""
    out = [f'"""Module {n}."""\n', "\n"]
    for c in range(classes):
        out.append(f"class C{n}_{c}:\n")
        for m in range(methods):
            out.append(f"    def m{m}(self, x):\n")
            out.extend(f"        x = x + {k}  # some work\n" for k in range(6))
            out.append("        return x\n\n")
    return "".join(out)


def ask(root: Path, ws: Workspace | None = None, **params: Any) -> ReadManyResult:
    ws = ws or Workspace.open(str(root), Settings())
    return answer(ws, decode_read_params(params))


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_cut_file_carries_the_outline_of_its_unseen_lines(tmp_path: Path, fmt: str) -> None:
    write_tree(tmp_path, {"big.py": module(0)})
    r = ask(tmp_path, paths=["big.py"], perFileMaxLines=20, format=fmt)
    (f,) = r.files
    assert (f.status, f.line_end, f.next_offset) == ("partial", 20, 21)
    assert f.outline, f
    # Exactly the symbols that overlap lines 41 and later, parents kept, in order.
    whole = outline_mod.outline(module(0), "big.py")
    want = whole.overlapping(21, whole.lines)
    assert [(s.name, s.kind, s.line_start, s.line_end, s.depth) for s in f.outline] == [
        (s.name, s.kind, s.line_start, s.line_end, s.depth) for s in want
    ]
    assert f.outline[0].name == "C0_0" and f.outline[0].line_start == 3  # its class, partly seen
    assert all(s.line_end >= 21 for s in f.outline)
    block = f"[Outline of lines 21-{whole.lines} (not shown):]\n" + outline_mod.render_outline(want)
    notice = f"[Showing lines 1-20 of {whole.lines}. Continue with offset=21.]"
    if fmt == "xml":
        (doc,) = ET.fromstring(r.llm_content).findall("document")
        shown = doc.findtext("document_content") or ""
    elif fmt == "json":
        (value,) = json.loads(r.llm_content)["results"].values()
        shown = value["content"]
    else:
        shown = r.llm_content
    assert notice + "\n" + block in shown
    assert "  method m1 L" in shown  # indented by depth
    assert f.chars == len("".join(module(0).splitlines(keepends=True)[:20]))  # not the block


def tall_class() -> str:
    """``class A`` at lines 3-261 whose ``method m1`` spans lines 4-255."""
    lines = ['"""Big."""', "", "class A:", "    def m1(self, x):"]
    lines += [f"        x = x + {k}" for k in range(250)] + ["        return x", ""]
    lines += [f"    v{k} = {k}" for k in range(5)]
    return "\n".join(lines) + "\n"


def test_the_unseen_outline_keeps_a_symbol_that_holds_the_cut(tmp_path: Path) -> None:
    """Cut at line 200 (perFileMaxLines), the unseen lines 201-261 lie inside ``m1``
    (to 255) and ``A``: both are listed, though both start in the part shown."""
    write_tree(tmp_path, {"big.py": tall_class()})
    r = ask(tmp_path, paths=["big.py"])
    (f,) = r.files
    assert (f.status, f.line_end, f.total_lines) == ("partial", 200, 261)
    got = [(s.kind, s.name, s.line_start, s.line_end, s.depth) for s in f.outline or []]
    assert got == [("class", "A", 3, 261, 0), ("method", "m1", 4, 255, 1)]
    block = "[Outline of lines 201-261 (not shown):]\nclass A L3-261\n  method m1 L4-255\n"
    assert block in r.llm_content


def test_a_cut_file_without_a_grammar_says_so(tmp_path: Path) -> None:
    write_tree(tmp_path, {"notes.xyz": "".join(f"line {i}\n" for i in range(300))})
    r = ask(tmp_path, paths=["notes.xyz"], perFileMaxLines=10)
    (f,) = r.files
    assert f.status == "partial" and f.outline is None
    assert "[Showing lines 1-10 of 300. Continue with offset=11.]\n" in r.llm_content
    assert "[No outline: no grammar for .xyz.]\n" in r.llm_content


def test_the_outline_block_does_not_shrink_to_the_content_shown(tmp_path: Path) -> None:
    """300 characters shown: the outline still takes up to 4,000 (PROTOCOL §4, the
    outline budget) and names every class that follows, to the last."""
    write_tree(tmp_path, {"big.py": module(0, classes=40)})
    r = ask(tmp_path, paths=["big.py"], perFileMaxChars=300)
    (f,) = r.files
    assert f.status == "partial" and f.outline
    block = r.llm_content.split("(not shown):]\n", 1)[1].split("\n\n[To continue", 1)[0]
    assert 300 < len(block) <= 4000
    assert "more symbols" not in block
    assert [s.name for s in f.outline] == [f"C0_{c}" for c in range(40)]
    assert f.outline[-1].line_end == outline_mod.outline(module(0, classes=40), "b.py").lines - 1


def tree(root: Path, n: int = 12) -> list[str]:
    names = [f"pkg/m{i:02}.py" for i in range(n)]
    write_tree(root, {name: module(i) for i, name in enumerate(names)})
    return names


@pytest.mark.parametrize("fmt", FORMATS)
def test_outlines_packing_gives_what_does_not_fit_as_outlines(tmp_path: Path, fmt: str) -> None:
    names = tree(tmp_path)
    size = len(module(0))
    budget = {"maxTotalChars": size * 3 + 2500, "maxTotalTokens": 20000}
    auto = ask(tmp_path, paths=["pkg/*.py"], format=fmt, **budget)
    r = ask(tmp_path, paths=["pkg/*.py"], format=fmt, packing="outlines", **budget)
    assert r.packing.strategy == "outlines"
    outlined = [f for f in r.files if f.status == "omitted" and f.outline]
    # At most 200 files: the outlines of what does not fit are reserved first, and
    # content fills the rest (one file fewer whole, cut where the outlines begin).
    assert [f.status for f in r.files[:2]] == ["ok"] * 2
    assert len(outlined) >= 5
    for f in outlined:
        assert f.code == "budget" and f.chars == 0
    seen = sum(f.status in ("ok", "partial") or bool(f.outline) for f in r.files)
    assert seen > sum(f.status in ("ok", "partial") for f in auto.files)
    assert r.summary.omitted == sum(f.status == "omitted" for f in r.files)
    assert r.next_cursor  # outlined files are not delivered
    assert tokens.count(r.llm_content) <= 20000
    text = r.llm_content
    if fmt == "xml":
        root = ET.fromstring(text)
        bodies = [d.findtext("document_outline") for d in root.findall("document")]
        assert sum(b is not None for b in bodies) == len(outlined)
    elif fmt == "json":
        results = json.loads(text)["results"]
        assert sum(v["status"] == "outline" for v in results.values()) == len(outlined)
        body = results[outlined[0].path]["outline"]
        assert body.startswith("[Outline only, not the content (")
    assert text.count("[Outline only, not the content (") == len(outlined) or fmt == "json"
    assert f"{len(outlined)} of them given as outlines above" in text
    # The outlines count against maxTotalChars: content plus outline bodies fit it.
    bodies_chars = sum(
        len(outline_mod.render_outline([]))
        + len(f"{'  ' * s.depth}{s.kind} {s.name} L{s.line_start}-{s.line_end}\n")
        for f in outlined
        for s in f.outline or []
    )
    assert r.summary.total_chars + bodies_chars <= budget["maxTotalChars"]
    assert names  # the tree


def test_outlines_do_not_count_against_max_total_files(tmp_path: Path) -> None:
    tree(tmp_path, 6)
    r = ask(tmp_path, paths=["pkg/*.py"], packing="outlines", maxTotalFiles=1)
    assert [f.status for f in r.files][:1] == ["ok"]
    assert sum(bool(f.outline) for f in r.files[1:]) == 5
    assert r.summary.read == 1


def test_outlines_stop_when_the_budget_is_gone_and_the_rest_is_omitted(tmp_path: Path) -> None:
    tree(tmp_path, 40)
    size = len(module(0))
    r = ask(tmp_path, paths=["pkg/*.py"], packing="outlines", maxTotalChars=size + 2000)
    statuses = [(f.status, bool(f.outline)) for f in r.files]
    first_plain = statuses.index(("omitted", False))
    assert all(s == ("omitted", False) for s in statuses[first_plain:])
    assert 0 < sum(o for _, o in statuses) < 40


def test_files_without_a_grammar_are_omitted_not_outlined(tmp_path: Path) -> None:
    write_tree(tmp_path, {f"d/{i}.txt": "x\n" * 500 for i in range(5)})
    r = ask(tmp_path, paths=["d/*"], packing="outlines", maxTotalChars=1500)
    assert not any(f.outline for f in r.files)
    assert "[Outline only" not in r.llm_content


@pytest.mark.parametrize("chars", [900, 2500, 6000])
def test_a_cursor_chain_still_delivers_every_outlined_file_once(tmp_path: Path, chars: int) -> None:
    names = tree(tmp_path, 15)
    pages = follow(tmp_path, {"paths": ["pkg/*.py"], "packing": "outlines", "maxTotalChars": chars})
    assert len(pages) > 1
    # every page delivers a file (a page of outlines alone did at 900 characters); a
    # page too small to cut a file to 4,000 characters and outline more gives the cut
    assert all(any(f.status in ("ok", "partial") for f in r.files) for r in pages)
    if chars > 900:
        assert any(f.outline and f.status == "omitted" for f in pages[0].files)
    # Every file's content, pieced together from its ok/partial entries, exactly once.
    got: dict[str, list[tuple[int, int]]] = {}
    for r in pages:
        assert r.packing.strategy == "outlines"
        for f in r.files:
            if f.status == "ok":  # whole, or the rest of a cut file from its offset
                got.setdefault(f.path, []).append((f.line_start or 1, f.line_end or 10**9))
            elif f.status == "partial":
                assert f.line_start is not None and f.line_end is not None
                got.setdefault(f.path, []).append((f.line_start, f.line_end))
    assert sorted(got) == names
    for spans in got.values():
        assert spans[0][0] == 1
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start == end + 1  # contiguous, nothing twice
    once([f.path for r in pages for f in r.files if f.status == "ok"])


def shape(r: ReadManyResult) -> list[tuple[str, str, Any]]:
    return [(f.path, f.status, f.outline) for f in r.files]


def test_a_warm_answer_does_not_parse_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in tree(tmp_path, 8):  # old enough for the content cache (racy timestamps)
        os.utime(tmp_path / name, (time.time() - 100, time.time() - 100))
    made: list[str] = []
    real = outline_mod._make

    def counting(lang: str, data: bytes, text: str) -> outline_mod.Outline:
        made.append(lang)
        return real(lang, data, text)

    monkeypatch.setattr(outline_mod, "_make", counting)
    cache = ContentCache(64 * 1024 * 1024)
    ws = Workspace.open(str(tmp_path), Settings(), cache=cache)
    params = {"paths": ["pkg/*.py"], "packing": "outlines", "maxTotalChars": 3000}
    first = ask(tmp_path, ws, **params)
    assert made and any(f.outline for f in first.files)
    cold = len(made)
    second = ask(tmp_path, ws, **params)
    assert len(made) == cold  # every outline came from the cache
    assert shape(second) == shape(first)
    # Kept with the content cache's entries (its derived slot), not only per workspace.
    third = ask(tmp_path, Workspace.open(str(tmp_path), Settings(), cache=cache), **params)
    assert len(made) == cold and shape(third) == shape(first)


def test_omission_counts_add_up_with_outlines(tmp_path: Path) -> None:
    """Outlined files are counted once, in the head; the names shown and "N more" are
    the others: together they are the omitted count (PROTOCOL §4)."""

    code = "".join(f"def f{n}(x):\n    return x * {n}\n\n" for n in range(60))
    write_tree(tmp_path, {f"pkg/m{i:03}.py": code for i in range(150)})
    r = ask(tmp_path, paths=["pkg/*.py"], packing="outlines", maxTotalFiles=3, maxTotalChars=20000)
    m = re.search(
        r"\[Omitted (\d+) file\(s\)[^\]]*?, (\d+) of them given as outlines above"
        r" \(structure only, not read\)(?:, (\d+) of them could not be outlined within the"
        r" budget)?: (.*?)(?:, and (\d+) more)?\.\]",
        r.llm_content,
    )
    assert m, r.llm_content[-2000:]
    total, outlined, names, more = int(m[1]), int(m[2]), m[4].split(", "), int(m[5] or 0)
    assert outlined >= 1 and total == r.summary.omitted
    assert len(names) + more + outlined == total
    # The files neither read nor outlined are counted too (none was outlined before).
    assert int(m[3] or 0) == total - outlined


def test_copies_of_a_text_share_one_outline_and_its_cut_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files of the same text (a tree's copies, each its own content cache entry) are
    outlined once and their cut block is fitted once; each answer is as alone."""
    from readmany_daemon.engine import outlines as outlines_mod

    write_tree(tmp_path, {f"copy{n}/big.py": module(0) for n in range(3)})
    for n in range(3):  # old enough for the content cache to keep them
        os.utime(tmp_path / f"copy{n}/big.py", (time.time() - 3600,) * 2)
    made: list[str] = []
    cut: list[int] = []
    real_make, real_cut = outline_mod._make, outlines_mod._cut_block
    monkeypatch.setattr(
        outline_mod, "_make", lambda lang, *a: made.append(lang) or real_make(lang, *a)
    )
    monkeypatch.setattr(
        outlines_mod, "_cut_block", lambda o, *a: cut.append(id(o)) or real_cut(o, *a)
    )
    outlines_mod._BLOCKS.clear()
    ws = Workspace.open(str(tmp_path), Settings(), cache=ContentCache(64 << 20))
    r = ask(tmp_path, ws, paths=["copy*/big.py"], perFileMaxLines=20)
    assert [f.status for f in r.files] == ["partial"] * 3
    assert (len(made), len(cut)) == (1, 1)
    alone = ask(tmp_path, paths=["copy1/big.py"], perFileMaxLines=20)
    assert alone.files[0].outline == r.files[1].outline
    section = alone.llm_content.partition("\n[To continue")[0]
    assert section.startswith("--- copy1/big.py ---\n") and section in r.llm_content
