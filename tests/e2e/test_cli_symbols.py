"""``readmany read --symbol PATH#NAME`` and ``--enclosing PATH:LINE`` through the real
CLI process, in-process and through the daemon (issue 26, item 4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import write_tree

ReadJson = Callable[..., dict[str, Any]]

APP = "import os\n\n\nclass Config:\n    def load(self):\n        return 1\n"


def test_symbol_and_enclosing_flags_split_at_the_first_hash_and_last_colon(
    tmp_path: Path, read_json: ReadJson
) -> None:
    write_tree(tmp_path, {"a#b.py": APP, "doc.md": "# Top\n\n## A #2\n\ntext\n"})
    got = read_json(
        tmp_path,
        "--symbol",
        "doc.md#A #2",
        "--symbol",
        "a#b.py#Config.load",
        "--enclosing",
        "a#b.py:6",
    )
    rows = [(f["path"], f["status"], f.get("symbol"), f.get("lineStart")) for f in got["files"]]
    assert rows == [
        ("doc.md", "ok", "A #2", 3),
        ("a", "error", None, None),  # split at the first "#": path "a"
        ("a#b.py", "ok", "Config.load", 5),
    ]


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
