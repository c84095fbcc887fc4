"""Counts that add up (PROTOCOL §4, issue 23 item 5): ``summary.matched`` counts files,
``summary.noMatch`` patterns that matched nothing, ``summary.hidden`` the files rules
hid among the folders entered and ``summary.hiddenFolders`` the ignored folders not
entered, per rule kind; ``packing.fullIncludedCount`` the entries given whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyResult
from tests.helpers import answer, git, write_tree


def ask(root: Path, **params: Any) -> ReadManyResult:
    return answer(Workspace.open(str(root), Settings()), decode_read_params(params))


def test_matched_counts_files_not_patterns_or_missing_paths(tmp_path: Path) -> None:
    write_tree(tmp_path, {"src/a.py": "a = 1\n"})
    r = ask(tmp_path, paths=["build/**", "missing.txt", "src/a.py"])
    s = r.summary
    assert (s.matched, s.no_match, s.errors, s.skipped, s.read) == (1, 1, 1, 0, 1)
    assert r.packing.full_included_count == 1
    assert [f.status for f in r.files] == ["skipped", "error", "ok"]  # each still answered
    assert "[Skipped" not in r.llm_content  # the pattern has its own line
    wire = msgspec.to_builtins(r)["summary"]
    assert wire["noMatch"] == 1 and wire["hiddenFolders"] == {}


def test_the_counters_add_up_to_matched(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "d/a.py": "a\n",
            "d/b.bin": b"\x00\x01" * 50,
            **{f"d/c{i}.py": "x\n" * 10 for i in range(5)},
        },
    )
    r = ask(tmp_path, paths=["d/*", "nope/*.py", "gone.py", "d/a.py"], maxTotalFiles=3)
    s = r.summary
    no_file = sum(f.code in ("not-found", "outside-workspace") for f in r.files)
    assert s.matched == 7 and s.no_match == 1 and no_file == 1
    assert s.matched == s.read + s.omitted + s.skipped + s.unchanged + s.errors - no_file


def test_full_included_count_leaves_out_files_cut_by_a_cap(tmp_path: Path) -> None:
    write_tree(tmp_path, {"long.py": "x = 1\n" * 300, "short.py": "y = 2\n"})
    r = ask(tmp_path, paths=["long.py", "short.py"])
    assert [f.status for f in r.files] == ["partial", "ok"]
    assert r.packing.full_included_count == 1


def test_hidden_files_and_ignored_folders_are_counted_apart(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    write_tree(
        tmp_path,
        {
            ".gitignore": "*.log\nout/\ncache/\n",
            "a.log": "log\n",
            "src/keep.py": "k\n",
            "out/x.log": "x\n",
            "cache/y.log": "y\n",
            "node_modules/p/z.log": "z\n",
        },
    )
    r = ask(tmp_path, paths=["**/*.log"])
    s = r.summary
    assert s.hidden == {"gitignore": 1}
    # .git/ is a folder deny rules keep out: counted, but not offered to be shown.
    assert s.hidden_folders == {"gitignore": 2, "default-exclude": 1, "deny": 1}
    assert s.matched == 0 and s.no_match == 1
    assert "1 file(s) hidden by gitignore rules; 3 ignored folder(s) not searched" in (
        r.llm_content
    )
