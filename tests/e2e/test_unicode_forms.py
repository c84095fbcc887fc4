"""NFC and NFD spellings of a name (issue 22, item 5): a path, folder, glob or
``exclude`` typed in one Unicode normalization form matches a name stored in the other
(macOS writes names decomposed, NFD; keyboards and most tools type them composed, NFC).
A file keeps the name it has on disk as its label. Ignore files keep git's byte-for-byte
matching (tests/unit/rules/test_ignore_differential.py)."""

from __future__ import annotations

import subprocess
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git, write_tree

ReadJson = Callable[..., dict[str, Any]]
Run = Callable[..., subprocess.CompletedProcess[str]]


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def nfd(s: str) -> str:
    return unicodedata.normalize("NFD", s)


#: names as macOS stores them: decomposed
CAFE = nfd("docs/café")
HAKJEOM = nfd("notes/2024 학점인정 신청.txt")
TREE = {
    f"{CAFE}/intro.md": "intro\n",
    f"{CAFE}/skip.md": "skip\n",
    f"{CAFE}/data.txt": "data\n",
    HAKJEOM: "credits\n",
    "docs/plain.md": "plain\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    write_tree(root, TREE)
    assert nfc(CAFE) != CAFE and nfc(HAKJEOM) != HAKJEOM
    return root


def _ok(result: dict[str, Any]) -> list[str]:
    return [f["path"] for f in result["files"] if f["status"] == "ok"]


def test_nfc_glob_matches_nfd_names(tree: Path, read_json: ReadJson) -> None:
    r = read_json(tree, nfc("docs/café/*.md"), nfc("**/*학점인정*"))
    # labels are the names on disk (NFD), in the order of the request
    assert _ok(r) == [f"{CAFE}/intro.md", f"{CAFE}/skip.md", HAKJEOM]
    assert f"--- {HAKJEOM} ---" in r["llmContent"]


def test_nfd_glob_matches_nfc_names(tmp_path: Path, read_json: ReadJson) -> None:
    write_tree(tmp_path, {nfc("docs/café/intro.md"): "intro\n"})
    r = read_json(tmp_path, nfd("docs/café/*.md"), nfd("docs/**/café/intro.md"))
    assert _ok(r) == [nfc("docs/café/intro.md")]


def test_nfc_folder_and_path_match_nfd_names(tree: Path, read_json: ReadJson) -> None:
    r = read_json(tree, nfc("docs/café"), nfc("notes/2024 학점인정 신청.txt"))
    assert _ok(r) == [f"{CAFE}/data.txt", f"{CAFE}/intro.md", f"{CAFE}/skip.md", HAKJEOM]


def test_nfc_exclude_removes_nfd_names(tree: Path, read_json: ReadJson) -> None:
    r = read_json(
        tree,
        "docs/**",
        "--exclude",
        nfc("docs/café/skip.md"),
        "--exclude",
        nfc("docs/café/*.txt"),
    )
    assert _ok(r) == [f"{CAFE}/intro.md", "docs/plain.md"]
    r = read_json(tree, "**", "--exclude", nfc("café/"), "--exclude", nfc("*학점*"))
    assert _ok(r) == ["docs/plain.md"]


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain"])
def test_files_lists_either_spelling(tree: Path, readmany: Run, in_git: bool) -> None:
    if in_git:
        git(tree, "init", "-q")
    for pattern, want in (
        (nfc("docs/café/*.md"), [f"{CAFE}/intro.md", f"{CAFE}/skip.md"]),
        (nfc("docs/café"), [f"{CAFE}/data.txt", f"{CAFE}/intro.md", f"{CAFE}/skip.md"]),
        (nfc("**/*학점인정*"), [HAKJEOM]),
        (nfc("notes/2024 학점인정 신청.txt"), [HAKJEOM]),
    ):
        out = readmany("files", "--no-daemon", "--root", str(tree), pattern).stdout
        assert out.splitlines() == want, pattern


def test_gitignore_stays_byte_for_byte(tree: Path, readmany: Run) -> None:
    """git matches ignore patterns by bytes: an NFC line does not hide an NFD name, and
    readmany agrees with ``git ls-files`` there."""
    git(tree, "init", "-q")
    (tree / ".gitignore").write_text(nfc("café/\n*학점*\n"), encoding="utf-8")
    want = git(tree, "ls-files", "-z", "--others", "--exclude-standard").split("\0")[:-1]
    assert f"{CAFE}/intro.md" in want and HAKJEOM in want
    out = readmany("files", "--no-daemon", "--root", str(tree)).stdout
    assert out.splitlines() == sorted(want, key=lambda p: p.encode())


def test_both_spellings_on_disk_both_match(tmp_path: Path, read_json: ReadJson) -> None:
    """Linux keeps an NFC and an NFD name apart: a glob in either form finds both."""
    write_tree(tmp_path, {nfc("café/a.md"): "c\n", nfd("café/b.md"): "d\n"})
    for typed in (nfc("café/*.md"), nfd("café/*.md"), nfc("caf?/*.md")):
        r = read_json(tmp_path, typed)
        assert sorted(_ok(r)) == sorted([nfc("café/a.md"), nfd("café/b.md")]), typed
