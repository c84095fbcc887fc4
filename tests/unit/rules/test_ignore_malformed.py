"""Malformed ignore files: binary, non-UTF-8, huge, invalid patterns.

The contract (PROTOCOL §3 and ``ignore.PatternList.from_bytes``): nothing raises; the
lines that parse still apply exactly as git applies them (git is the oracle here:
``git ls-files --others --exclude-standard``); the lines that can never match, and NUL
bytes, are reported as ``file:line: reason`` warnings, at most
``MAX_WARNINGS_PER_FILE`` per file plus one line counting the rest; ``readMany/status``
shows them under the root's ``warnings``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from readmany_daemon.engine.files import list_files
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.rules.ignore import MAX_WARNINGS_PER_FILE, IgnoreRules
from readmany_daemon.rules.kinds import Verdict
from readmany_daemon.runtime.requests import RequestContext
from readmany_daemon.runtime.service import Service
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_files_params
from tests.helpers import write_tree


def listing(root: Path) -> tuple[set[bytes], list[str]]:
    """What ``readmany files`` lists (file names as bytes), and the rules' warnings."""
    ws = Workspace.open(os.path.realpath(root), Settings())
    files = {os.fsencode(f.path) for f in list_files(ws, decode_files_params({})).files}
    return files, list(ws.index.rules.warnings)


def visible(root: Path) -> set[bytes]:
    return listing(root)[0]


def git_visible(root: Path) -> set[bytes]:
    """git's answer: untracked, not ignored files (the oracle)."""
    out = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "ls-files", "-z", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout
    return {p for p in out.split(b"\0") if p}


def make_files(root: Path, names: list[bytes]) -> None:
    for name in names:
        path = os.path.join(os.fsencode(root), name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"x\n")


BINARY = (
    b"\xef\xbb\xbfgood.txt\r\n"  # BOM and CRLF: stripped, the pattern applies
    b"\x00\x00\x00junk\n"  # 2: a NUL ends the pattern (empty): reported
    b"half\x00.tmp\n"  # 3: cut at the NUL: "half" applies
    b"\xff\xfe\xfd\n"  # 4: invalid UTF-8: a byte pattern (matches no file here)
    b"lat\xe9.bin\n"  # 5: a non-UTF-8 name, matched byte for byte
    b"*.log\n"  # 6
)
FILES = [b"good.txt", b"half", b"half.tmp", b"lat\xe9.bin", b"a.log", b"keep.txt", b"junk"]


def test_binary_gitignore_good_lines_apply_as_in_git(repo: Path) -> None:
    write_tree(repo, {".gitignore": BINARY})
    make_files(repo, FILES)
    files, warnings = listing(repo)
    assert files == git_visible(repo)
    assert files == {b".gitignore", b"half.tmp", b"keep.txt", b"junk"}
    assert ".gitignore:2: binary content (NUL byte); pattern cut there" in warnings
    assert ".gitignore:3: binary content (NUL byte); pattern cut there" in warnings
    assert all(w.startswith(".gitignore:") for w in warnings), warnings


def test_binary_readmanyignore_good_lines_apply(repo: Path) -> None:
    write_tree(repo, {".readmanyignore": BINARY + b"[unclosed\n"})
    make_files(repo, FILES)
    assert visible(repo) == {b".readmanyignore", b"half.tmp", b"keep.txt", b"junk"}
    rules = IgnoreRules(os.path.realpath(repo), Settings())
    assert rules.check("a.log", False) == Verdict("ignore-file", ".readmanyignore:6", "*.log")
    assert rules.check("good.txt", False) == Verdict("ignore-file", ".readmanyignore:1", "good.txt")
    assert rules.check(os.fsdecode(b"lat\xe9.bin"), False) is not None
    text = "\n".join(rules.warnings)
    assert ".readmanyignore:2: binary content" in text
    assert ".readmanyignore:7: pattern '[unclosed' can never match" in text


INVALID = [
    b"[abc",  # 1: unbalanced bracket: never matches (git: same)
    b"trail\\",  # 2: trailing backslash: never matches
    b"[[:nope:]]x",  # 3: unknown class: never matches
    b"\\",  # 4: a lone backslash
    b"[" * 50_000,  # 5: a very long line of brackets
    b"y" * 100_000,  # 6: a very long literal (valid, matches nothing)
    b"*.gen",  # 7: still applies
    b"!keep.gen",  # 8: still applies
]


def test_invalid_patterns_are_reported_and_the_rest_apply(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": b"\n".join(INVALID) + b"\n",
            "stars/.gitignore": b"***\n",  # valid: hides everything in stars/
        },
    )
    make_files(
        repo,
        [b"abc", b"a", b"trail", b"x", b"a.gen", b"keep.gen", b"stars/s.txt", b"other.txt"],
    )
    files, warnings = listing(repo)
    assert files == git_visible(repo)
    assert files == {b".gitignore", b"abc", b"a", b"trail", b"x", b"keep.gen", b"other.txt"}
    for line in (1, 2, 3, 4, 5):
        assert any(w.startswith(f".gitignore:{line}: pattern ") for w in warnings), (line, warnings)
    assert not any(w.startswith((".gitignore:6", ".gitignore:7", "stars/")) for w in warnings)


def test_huge_ignore_file_warnings_are_capped(repo: Path) -> None:
    lines = []
    for i in range(200_000):
        if i % 2:
            lines.append(b"# comment %d" % i)
        elif i % 20_000 == 0:
            lines.append(b"*.v%d" % i)  # 10 valid patterns spread over the file
        else:
            lines.append(b"[bad%d" % i)  # ~100k invalid lines
    write_tree(repo, {".gitignore": b"\n".join(lines) + b"\n"})
    make_files(repo, [b"f.v0", b"f.v180000", b"f.v1", b"f.txt"])
    start = time.monotonic()
    rules = IgnoreRules(os.path.realpath(repo), Settings())
    assert rules.check("f.v0", False) == Verdict("gitignore", ".gitignore:1", "*.v0")
    assert rules.check("f.v180000", False) == Verdict("gitignore", ".gitignore:180001", "*.v180000")
    assert rules.check("f.v1", False) is None and rules.check("f.txt", False) is None
    # Loading warned about the first lines only, and counted the rest.
    listed = [w for w in rules.warnings if w.startswith(".gitignore:") and "more" not in w]
    assert len(listed) == MAX_WARNINGS_PER_FILE
    assert (
        listed[0] == ".gitignore:3: pattern '[bad2' can never match (invalid per git's wildmatch)"
    )
    bad = sum(1 for i in range(0, 200_000, 2) if i % 20_000)
    assert f".gitignore: {bad - MAX_WARNINGS_PER_FILE} more problem lines not listed" in (
        rules.warnings
    )
    # Re-reading the same file (a second index, the same rules) adds nothing.
    assert visible(repo) == {b".gitignore", b"f.v1", b"f.txt"}
    assert time.monotonic() - start < 60  # was quadratic: minutes for 100k bad lines


def test_status_reports_ignore_file_warnings(repo: Path) -> None:
    """``readMany/status`` (``Service.status``, what the daemon answers) lists them."""
    write_tree(
        repo,
        {".gitignore": b"ok.log\n[bad\n\x00x\n", "sub/.readmanyignore": b"trail\\\n", "a.txt": "a"},
    )
    service = Service(Settings(), watch=False, snapshots=False, warm_cache=False)
    try:
        entry = service.acquire(str(repo), Settings())
        service.call(RequestContext(1), service.index_sync, entry)
        (root,) = service.status(entry).roots
        warnings = root.warnings or []
        assert any(w.startswith(".gitignore:2: pattern '[bad'") for w in warnings), warnings
        assert ".gitignore:3: binary content (NUL byte); pattern cut there" in warnings
        assert any(w.startswith("sub/.readmanyignore:1: pattern") for w in warnings), warnings
    finally:
        service.close()


# ------------------------------------------ huge and pathological pattern files (slow)


@pytest.mark.slow
def test_huge_file_of_valid_patterns_loads_in_bounded_time(repo: Path) -> None:
    data = b"\n".join(b"build%d/*.o" % i for i in range(200_000)) + b"\n"
    write_tree(repo, {".gitignore": data})
    start = time.monotonic()
    rules = IgnoreRules(os.path.realpath(repo), Settings())
    assert rules.check("build5/x.o", False) is not None
    assert rules.check("src/x.o", False) is None
    assert time.monotonic() - start < 15


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ["a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "**/" * 12 + "x"])
def test_pathological_pattern_matches_in_bounded_time(repo: Path, pattern: str) -> None:
    code = (
        "from readmany_daemon.rules.patterns import PatternList\n"
        f"pl = PatternList.from_bytes({pattern.encode()!r} + b'\\n', '.gitignore', '', 1, [])\n"
        "pl.last_match('a' * 100, 'a' * 100, False)\n"
        "pl.last_match('/'.join(['a'] * 40), 'a', False)\n"
    )
    try:
        subprocess.run([sys.executable, "-c", code], check=True, timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail(f"matching {pattern!r} took over 10 s")
