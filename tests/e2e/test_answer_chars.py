"""``maxAnswerChars`` end to end (PROTOCOL §3): the printed text of the real CLI and the
MCP read tool's text stay within it over many empty files, in every packing, and a wide
glob fills the page instead of giving one character of its first file."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_mcp import mcp_session, read, text
from tests.helpers import write_tree

ReadJson = Callable[..., dict[str, Any]]
Run = Callable[..., subprocess.CompletedProcess[str]]


def empties(root: Path) -> None:
    """300 folders each holding an empty ``__init__.py`` (the tester's repro)."""
    write_tree(root, {f"d{i}/__init__.py": "" for i in range(1, 301)})


@pytest.mark.parametrize("packing", ["auto", "smallest-first", "request-order", "outlines"])
def test_cli_prints_no_more_than_max_answer_chars_of_empty_files(
    tmp_path: Path, readmany: Run, packing: str
) -> None:
    empties(tmp_path)
    proc = readmany(
        "read", "--no-daemon", "--root", str(tmp_path), "**/*.py", "--packing", packing,
        "--max-answer-chars", "4000", "--max-total-files", "300",
    )  # fmt: skip
    printed = proc.stdout.removesuffix("\n")
    assert 0 < len(printed) <= 4000
    assert "[Empty file.]" in printed and "cursor=" in printed


async def test_the_mcp_read_tool_keeps_empty_files_within_max_answer_chars(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    empties(root)
    async with mcp_session(env, "--root", str(root)) as session:
        for packing in ("auto", "request-order"):
            got = await read(
                session, paths=["**/*.py"], packing=packing, maxAnswerChars=4000, maxTotalFiles=300
            )
            assert len(text(got)) <= 4000
            assert got["structuredContent"]["summary"]["read"] >= 1


@pytest.mark.slow
def test_cli_auto_on_django_fills_max_answer_chars(read_json: ReadJson) -> None:
    """``readmany read '**/*.py' --max-answer-chars 4000 --packing auto`` on Django 5.2
    gave one character of ``django/__init__.py``."""
    from tests.sdists import django_tree

    root = django_tree()
    for packing in ("auto", "request-order"):
        r = read_json(root, "**/*.py", "--packing", packing, "--max-answer-chars", "4000")
        whole = [f["path"] for f in r["files"] if f["status"] == "ok"]
        assert whole[:2] == ["django/__init__.py", "django/__main__.py"], whole
        assert 3000 <= len(r["llmContent"]) <= 4000 and r["summary"]["totalChars"] >= 1000
