"""Outlines (PROTOCOL §4 "Outlines") end to end: the real CLI (``--packing outlines``, a
cut file's outline), the shared daemon (a cursor chain that still delivers every
outlined file once) and the MCP server, whose read tool defaults to ``outlines``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import Daemon
from tests.e2e.test_mcp import mcp_session, read, text
from tests.helpers import outline_coverage, write_tree

ReadJson = Callable[..., dict[str, Any]]


def module(n: int) -> str:
    out = [f'"""Module {n}."""\n']
    for c in range(3):
        out.append(f"class C{n}_{c}:\n")
        for m in range(4):
            out.append(f"    def m{m}(self, x):\n")
            out.extend(f"        x = x + {k}\n" for k in range(6))
            out.append("        return x\n\n")
    return "".join(out)


def make(root: Path, n: int = 12) -> list[str]:
    names = [f"pkg/m{i:02}.py" for i in range(n)]
    write_tree(root, {name: module(i) for i, name in enumerate(names)})
    return names


def test_cli_packing_outlines_and_the_cut_file(tmp_path: Path, read_json: ReadJson) -> None:
    make(tmp_path)
    budget = str(len(module(0)) * 2 + 1700)
    r = read_json(tmp_path, "pkg/*.py", "--packing", "outlines", "--max-total-chars", budget)
    assert r["packing"]["strategy"] == "outlines"
    outlined = [f for f in r["files"] if f["status"] == "omitted" and "outline" in f]
    assert len(outlined) >= 3 and all(f["code"] == "budget" for f in outlined)
    first = outlined[0]["outline"][0]
    n = int(outlined[0]["path"][5:7])
    assert first == {"name": f"C{n}_0", "kind": "class", "lineStart": 2, "lineEnd": 37, "depth": 0}
    assert outlined[0]["outline"][1]["kind"] == "method" and outlined[0]["outline"][1]["depth"] == 1
    assert "nextCursor" in r
    cut = read_json(tmp_path, "pkg/m00.py", "--per-file-max-lines", "20", "--format", "xml")
    (f,) = cut["files"]
    assert f["status"] == "partial" and f["outline"][0]["name"] == "C0_0"
    doc = ET.fromstring(cut["llmContent"]).find("document")
    assert doc is not None
    shown = doc.findtext("document_content") or ""
    assert "Continue with offset=21.]\n[Outline of lines 21-" in shown
    assert "\n  method m2 L" in shown


def test_daemon_cursor_chain_delivers_each_outlined_file_once(
    daemon: Daemon, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    names = make(root, 15)
    params: dict[str, Any] = {
        "paths": ["pkg/*.py"],
        "packing": "outlines",
        "maxTotalChars": 2500,
        "format": "json",
    }
    whole: dict[str, list[str]] = {}
    outlined_once = 0
    with daemon.session(root) as client:
        r: dict[str, Any] = client.request("readMany/read", params)
        pages = 1
        while True:
            doc = json.loads(r["llmContent"])["results"]
            for f in r["files"]:
                if f["status"] in ("ok", "partial"):
                    content = doc[f["path"]]["content"] if f["path"] in doc else None
                    if content is None:  # keyed by its window on later pages
                        content = next(
                            v["content"] for k, v in doc.items() if k.startswith(f["path"])
                        )
                    # the notice follows the window's last line and its newline (an
                    # empty last line is "\n" before it)
                    notice = content.find("\n[Showing lines")
                    body = content if notice < 0 else content[: notice + 1]
                    whole.setdefault(f["path"], []).append(body)
                elif "outline" in f:
                    outlined_once += 1
                    assert doc[f["path"]]["status"] == "outline"
            if "nextCursor" not in r:
                break
            r = client.request("readMany/read", {"cursor": r["nextCursor"]})
            pages += 1
            assert pages < 100
    assert outlined_once > 0 and pages > 2
    assert sorted(whole) == names
    for name, parts in whole.items():
        joined = "".join(p if p.endswith("\n") else p + "\n" for p in parts)
        assert joined == module(int(name[5:7])), name  # every line once, in order


async def test_the_mcp_read_tool_defaults_to_outlines(env: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make(root, 40)
    async with mcp_session(env, "--root", str(root)) as session:
        got = await read(session, paths=["pkg/*.py"], maxTotalChars=8000)
        said = text(got)
        assert "[Outline only, not the content (" in said
        assert "of them given as outlines above" in said
        plain = await read(session, paths=["pkg/*.py"], maxTotalChars=8000, packing="auto")
        assert "[Outline only" not in text(plain)


def varied(root: Path, n: int = 300) -> None:
    """``n`` modules of 1 to 40 classes (1 KB to 45 KB) in folders of ten, each with an
    empty ``__init__.py``."""
    files: dict[str, str] = {}
    for i in range(n):
        folder = f"pkg/d{i // 10:02}"
        files[f"{folder}/__init__.py"] = ""
        body = "".join(module(i * 100 + k) for k in range(1 + (i * 7) % 40))
        files[f"{folder}/m{i:03}.py"] = body
    write_tree(root, files)


async def test_the_mcp_read_tool_fills_max_answer_chars_below_max_total_chars(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Issue 23: ``{"maxTotalChars": 200000, "maxAnswerChars": 50000, "maxTotalTokens":
    60000}`` gave one character of the first file; now a page as full as request
    order's, within the answer's characters, whose empty ``__init__.py`` files come as
    content, never as an empty outline."""
    root = tmp_path / "ws"
    varied(root)
    budgets = {"maxTotalChars": 200_000, "maxAnswerChars": 50_000, "maxTotalTokens": 60_000}
    async with mcp_session(env, "--root", str(root)) as session:
        got = await read(session, paths=["**/*.py"], **budgets)
        plain = await read(session, paths=["**/*.py"], packing="request-order", **budgets)
    said, files = text(got), got["structuredContent"]["files"]
    shown = [f for f in files if f["status"] in ("ok", "partial")]
    theirs = [f for f in plain["structuredContent"]["files"] if f["status"] in ("ok", "partial")]
    assert 25_000 <= len(said) <= 50_000 and len(said) >= 0.8 * len(text(plain))
    assert len(shown) >= min(0.9 * len(theirs), len(theirs) - 1)
    assert "Outline only (0 lines" not in said
    assert all(
        f["status"] == "ok"
        for f in files
        if f["path"].endswith("__init__.py") and "outline" not in f and f["status"] != "omitted"
    )


def test_cli_max_answer_chars_with_outlines_fills_the_page(
    tmp_path: Path, read_json: ReadJson
) -> None:
    """``readmany read '**/*.py' --packing outlines --max-answer-chars 50000`` printed
    one character of the first file."""
    varied(tmp_path)
    r = read_json(tmp_path, "**/*.py", "--packing", "outlines", "--max-answer-chars", "50000")
    shown = [f for f in r["files"] if f["status"] in ("ok", "partial")]
    assert len(shown) >= 5 and 25_000 <= len(r["llmContent"]) <= 50_000
    assert r["summary"]["totalChars"] >= 20_000


def tall_class() -> str:
    """``class A`` at lines 3-261 whose ``method m1`` spans lines 4-255."""
    lines = ['"""Big."""', "", "class A:", "    def m1(self, x):"]
    lines += [f"        x = x + {k}" for k in range(250)] + ["        return x", ""]
    lines += [f"    v{k} = {k}" for k in range(5)]
    return "\n".join(lines) + "\n"


def test_cli_cut_inside_a_method_lists_it(tmp_path: Path, read_json: ReadJson) -> None:
    write_tree(tmp_path, {"big.py": tall_class()})
    (f,) = read_json(tmp_path, "big.py")["files"]
    assert (f["status"], f["lineEnd"]) == ("partial", 200)
    assert [(s["name"], s["lineStart"], s["lineEnd"]) for s in f["outline"]] == [
        ("A", 3, 261),
        ("m1", 4, 255),
    ]


async def test_the_mcp_cut_inside_a_method_lists_it(env: dict[str, str], tmp_path: Path) -> None:
    write_tree(tmp_path / "ws", {"big.py": tall_class()})
    async with mcp_session(env, "--root", str(tmp_path / "ws")) as session:
        said = text(await read(session, paths=["big.py"]))
        assert "(not shown):]\nclass A L3-261\n  method m1 L4-255\n" in said, said[-400:]


def _stdlib(name: str) -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["stdlib"]) / name


def test_cli_outline_of_a_big_file_reaches_its_end(tmp_path: Path, read_json: ReadJson) -> None:
    """The default read of ``typing.py`` (3,519 lines on 3.11) shows 200 lines; its
    outline covers every later top-level definition in at most 4,000 characters, folded
    runs on the wire as one entry with its ``count`` (PROTOCOL §4, the outline budget)."""
    text = _stdlib("typing.py").read_text(encoding="utf-8")
    write_tree(tmp_path, {"typing.py": text})
    r = read_json(tmp_path, "typing.py", "--format", "json")
    (f,) = r["files"]
    assert (f["status"], f["lineEnd"]) == ("partial", 200)
    cov = outline_coverage(text, f["outline"], 201)
    assert cov.missed == [] and cov.reaches_end, cov
    (value,) = json.loads(r["llmContent"])["results"].values()
    block = value["content"][value["content"].index("[Outline of lines 201-") :]
    assert len(block) <= 4000
    assert any(" … " in e["name"] and e["count"] > 1 for e in f["outline"])
    assert any(e.get("count", 1) > 1 and " … " not in e["name"] for e in f["outline"])


@pytest.mark.slow
def test_cli_outline_names_every_django_field_class(read_json: ReadJson) -> None:
    """Django 5.2's ``db/models/fields/__init__.py``: the default read names every
    field class to ``BigAutoField`` (25 of them, from ``DurationField`` on, were never
    named when the outline filled its budget in file order)."""
    from tests.sdists import django_tree

    root = django_tree()
    path = "django/db/models/fields/__init__.py"
    text = (root / path).read_text(encoding="utf-8")
    r = read_json(root, path)
    (f,) = r["files"]
    assert f["status"] == "partial"
    cov = outline_coverage(text, f["outline"], f["lineEnd"] + 1)
    assert cov.missed == [] and cov.reaches_end, cov
    named = {e["name"] for e in f["outline"] if e["depth"] == 0}
    assert {"DurationField", "UUIDField", "AutoField", "BigAutoField", "SmallAutoField"} <= named
