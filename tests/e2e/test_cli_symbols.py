"""``readmany read --symbol PATH#NAME`` and ``--enclosing PATH:LINE`` through the real
CLI process, in-process and through the daemon (issue 26, item 4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import write_tree

ReadJson = Callable[..., dict[str, Any]]

APP = "import os\n\n\nclass Config:\n    def load(self):\n        return 1\n"


def test_symbol_and_enclosing_flags_split_at_the_hash_after_a_file_and_last_colon(
    tmp_path: Path, read_json: ReadJson
) -> None:
    write_tree(
        tmp_path,
        {"a#b.py": APP, "c#/d.py": APP, "doc.md": "# Top\n\n## A #2\n\ntext\n"},
    )
    got = read_json(
        tmp_path,
        "--symbol",
        "doc.md#A #2",  # a name holding "#": the first "#" is after the file
        "--symbol",
        "a#b.py#Config.load",  # a path holding "#": the first "#" after a file
        "--symbol",
        "c#/d.py#Config",
        "--symbol",
        "nothing#here#x",  # no file on either side: the first "#"
        "--enclosing",
        "a#b.py:6",
    )
    rows = [(f["path"], f["status"], f.get("symbol"), f.get("lineStart")) for f in got["files"]]
    assert rows == [
        ("doc.md", "ok", "A #2", 3),
        ("a#b.py", "ok", "Config.load", 5),
        ("c#/d.py", "ok", "Config", 4),
        ("nothing", "error", None, None),
        ("a#b.py", "ok", "Config.load", 5),
    ]


def test_list_flags_add_to_the_lists_of_params(tmp_path: Path, read_json: ReadJson) -> None:
    write_tree(tmp_path, {"a.py": APP, "b.py": APP, "c.md": "x\n", "d.md": "y\n"})
    got = read_json(
        tmp_path,
        "--params",
        '{"include": ["*.py"], "exclude": ["a.py"], "files": [{"path": "c.md"}]}',
        "--include",
        "*.md",
        "--exclude",
        "d.md",
        "--symbol",
        "a.py#Config",
    )
    assert sorted(f["path"] for f in got["files"]) == ["a.py", "b.py", "c.md"]
    assert [f.get("symbol") for f in got["files"] if f["path"] == "a.py"] == ["Config"]


def test_the_flags_work_through_the_daemon(tmp_path: Path, readmany: Callable[..., Any]) -> None:
    write_tree(tmp_path, {"src/app.py": APP})
    try:
        out = readmany(
            "read", "--root", str(tmp_path), "--symbol", "src/app.py#Config::load"
        ).stdout
    finally:
        readmany("stop", check=False)
    assert "    def load(self):\n        return 1\n[Config.load: lines 5-6 of 6.]" in out


def test_a_bad_value_is_a_usage_error_naming_the_option(
    tmp_path: Path, readmany: Callable[..., Any]
) -> None:
    write_tree(tmp_path, {"a.py": APP})
    run = readmany(
        "read", "--no-daemon", "--root", str(tmp_path), "--enclosing", "a.py", check=False
    )
    assert run.returncode == 2
    assert "--enclosing 'a.py': expected PATH:LINE" in run.stderr
