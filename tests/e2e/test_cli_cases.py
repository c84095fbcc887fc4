"""The issue's cases from public reports on other tools, through the real CLI process."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git, write_tree

ReadJson = Callable[..., dict[str, Any]]


def by_path(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in result["files"]}


def files_list(readmany: Any, root: Path, *args: str) -> list[str]:
    out = readmany("files", "--no-daemon", "--root", str(root), *args).stdout
    return [line for line in out.split("\n") if line]


def test_case1_nested_gitignore_in_glob(
    tmp_path: Path, read_json: ReadJson, env: dict[str, str]
) -> None:
    write_tree(
        tmp_path,
        {
            ".gitignore": "*.log\n",
            "pkg/sub/.gitignore": "secret.txt\n",
            "pkg/other.txt": "o\n",
            "pkg/sub/secret.txt": "s\n",
            "pkg/x.log": "l\n",
        },
    )
    git(tmp_path, "init", "-q", env=env)
    r = read_json(tmp_path, "**/*.txt")
    assert [f["path"] for f in r["files"]] == ["pkg/other.txt"]


def test_case2_star_gitignore_hides_only_its_folder(
    tmp_path: Path, readmany: Any, env: dict[str, str]
) -> None:
    write_tree(tmp_path, {"htmlcov/.gitignore": "*\n", "htmlcov/index.html": "x", "d/d.txt": "d\n"})
    git(tmp_path, "init", "-q", env=env)
    assert files_list(readmany, tmp_path) == ["d/d.txt"]


def test_case3_anchored_and_nested_dir_patterns(
    tmp_path: Path, readmany: Any, env: dict[str, str]
) -> None:
    write_tree(
        tmp_path,
        {
            ".gitignore": "/staticfiles/\nsrc/gen/\n",
            "staticfiles/a.css": "a",
            "src/gen/x.py": "x",
            "lib/staticfiles/b.css": "b",
            "src/ok.py": "o",
        },
    )
    git(tmp_path, "init", "-q", env=env)
    assert files_list(readmany, tmp_path) == [".gitignore", "lib/staticfiles/b.css", "src/ok.py"]


def test_case4_negation_relists_every_run(
    tmp_path: Path, readmany: Any, env: dict[str, str]
) -> None:
    write_tree(tmp_path, {".gitignore": "*.gen\n!keep.gen\n", "keep.gen": "k", "drop.gen": "d"})
    git(tmp_path, "init", "-q", env=env)
    for _ in range(3):
        assert files_list(readmany, tmp_path) == [".gitignore", "keep.gen"]


def test_case5_negation_cannot_reinclude_under_excluded_folder(
    tmp_path: Path, readmany: Any, env: dict[str, str]
) -> None:
    write_tree(
        tmp_path, {".gitignore": "build/\n!build/keep.txt\n", "build/keep.txt": "k", "a.txt": "a"}
    )
    git(tmp_path, "init", "-q", env=env)
    assert files_list(readmany, tmp_path, "--no-default-excludes") == [".gitignore", "a.txt"]


def test_case6_info_exclude_with_negation(
    tmp_path: Path, readmany: Any, env: dict[str, str]
) -> None:
    git(tmp_path, "init", "-q", env=env)
    write_tree(
        tmp_path,
        {
            ".git/info/exclude": "*.log\n!important.log\n",
            "important.log": "i",
            "nested/a.log": "a",
            "x.txt": "x",
        },
    )
    assert files_list(readmany, tmp_path) == ["important.log", "x.txt"]


def test_case7_latin1_text_kept_whole(tmp_path: Path, read_json: ReadJson) -> None:
    write_tree(tmp_path, {"latin.txt": "café naïve résumé\n".encode("latin-1")})
    r = read_json(tmp_path, "latin.txt")
    f = r["files"][0]
    assert f["status"] == "ok"
    assert f["encoding"].replace("-", "_").lower() in {
        "latin_1",
        "iso8859_1",
        "cp1252",
        "iso8859_15",
        "windows_1252",
    }
    assert "--- latin.txt ---\ncafé naïve résumé\n" in r["llmContent"]


def test_case8_utf8_char_across_1024_boundary_is_text(tmp_path: Path, read_json: ReadJson) -> None:
    data = b"a" * 1023 + "é".encode() + b"\n" + b"tail\n"
    write_tree(tmp_path, {"edge.txt": data})
    r = read_json(tmp_path, "edge.txt")
    assert r["files"][0]["status"] == "ok"
    assert r["files"][0]["encoding"].startswith("utf")
    assert "a" * 1023 + "é\ntail\n" in r["llmContent"]


def test_case9_folder_gives_every_visible_file(
    tmp_path: Path, read_json: ReadJson, env: dict[str, str]
) -> None:
    write_tree(
        tmp_path,
        {
            ".gitignore": "*.tmp\n",
            "docs/a.md": "a\n",
            "docs/sub/b.md": "b\n",
            "docs/c.tmp": "c\n",
            "other.md": "o\n",
        },
    )
    git(tmp_path, "init", "-q", env=env)
    r = read_json(tmp_path, "docs/")
    assert [f["path"] for f in r["files"]] == ["docs/a.md", "docs/sub/b.md"]


def test_case10_names_with_space_brackets_hash_unicode(tmp_path: Path, read_json: ReadJson) -> None:
    write_tree(
        tmp_path,
        {
            "with space.txt": "s\n",
            "app/[id]/page.tsx": "p\n",
            "#notes.md": "h\n",
            "naïve.txt": "n\n",
        },
    )
    r = read_json(tmp_path, "with space.txt", "app/[id]/page.tsx", "#notes.md", "naïve.txt")
    assert [(f["path"], f["status"]) for f in r["files"]] == [
        ("with space.txt", "ok"),
        ("app/[id]/page.tsx", "ok"),
        ("#notes.md", "ok"),
        ("naïve.txt", "ok"),
    ]


def test_case10b_nfd_spelling_of_an_nfc_name(tmp_path: Path, read_json: ReadJson) -> None:
    write_tree(tmp_path, {"caf\u00e9.txt": "nfc\n"})
    r = read_json(tmp_path, "cafe\u0301.txt")
    assert r["files"][0]["status"] == "ok"
    assert "nfc" in r["llmContent"]


def test_case11_outside_workspace(tmp_path: Path, read_json: ReadJson) -> None:
    root = tmp_path / "root"
    write_tree(tmp_path, {"outside.txt": "SECRET\n", "root/in.txt": "in\n"})
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    r = read_json(root, "../outside.txt", "link.txt", str(tmp_path / "outside.txt"), "in.txt")
    statuses = [(f["status"], f.get("code")) for f in r["files"]]
    assert statuses[:3] == [("error", "outside-workspace")] * 3
    assert statuses[3] == ("ok", None)
    assert "SECRET" not in r["llmContent"]
    r = read_json(root, "*.txt")
    assert "SECRET" not in r["llmContent"]
    assert by_path(r)["link.txt"]["code"] == "outside-workspace"


def test_case12_long_file_cut_at_200_lines(tmp_path: Path, read_json: ReadJson) -> None:
    write_tree(tmp_path, {"big.py": "".join(f"line {i}\n" for i in range(1, 2501))})
    r = read_json(tmp_path, "big.py")
    f = r["files"][0]
    assert (f["status"], f["lineStart"], f["lineEnd"], f["totalLines"], f["nextOffset"]) == (
        "partial",
        1,
        200,
        2500,
        201,
    )
    assert "[Showing lines 1-200 of 2500. Continue with offset=201.]" in r["llmContent"]
    assert "offset=201" in r["llmContent"]
    assert "line 200\n" in r["llmContent"] and "line 201\n" not in r["llmContent"]
    # The continuation the notice spells out works.
    r2 = read_json(tmp_path, "--params", json.dumps({"files": [{"path": "big.py", "offset": 201}]}))
    f2 = r2["files"][0]
    assert (f2["lineStart"], f2["lineEnd"], f2["nextOffset"]) == (201, 400, 401)


def test_case13_budget_omits_and_cursor_continues(tmp_path: Path, read_json: ReadJson) -> None:
    write_tree(tmp_path, {f"src/f{i:02}.py": f"x = {i}\n" for i in range(30)})
    r = read_json(tmp_path, "src/*.py")
    statuses = [f["status"] for f in r["files"]]
    assert statuses.count("ok") == 20 and statuses.count("omitted") == 10
    omitted = [f["path"] for f in r["files"] if f["status"] == "omitted"]
    assert all(f["code"] == "budget" for f in r["files"] if f["status"] == "omitted")
    for p in omitted:
        assert p in r["llmContent"]
    assert r["summary"]["omitted"] == 10 and r["nextCursor"]
    r2 = read_json(tmp_path, "--cursor", r["nextCursor"])
    assert [f["path"] for f in r2["files"] if f["status"] == "ok"] == omitted
    assert "nextCursor" not in r2


def test_case13c_cursor_on_a_tree_that_moves_between_pages(
    tmp_path: Path, read_json: ReadJson, readmany: Any
) -> None:
    """The issue's reproduction on a tree shaped like flask's ``src/``: two files created
    after page 1 sort among the files page 1 gave; page 2 repeats nothing, loses
    nothing, and names the two with the paths to ask for."""
    names = ["__init__", "__main__", "app", "blueprints", "cli", "config", "ctx", "debughelpers"]
    names += ["globals", "helpers", "logging", "py.typed", "sansio/app", "sansio/scaffold"]
    names += ["sessions", "signals", "templating", "testing", "typing", "views", "wrappers"]
    names += ["json/__init__", "json/provider", "json/tag"]
    files = {f"src/flask/{n}.py": f"# {n}\n" for n in names}
    write_tree(tmp_path, files)
    page1 = read_json(tmp_path, "src/**/*.py")
    cursor = page1["nextCursor"]
    assert cursor and len(cursor) <= 1000
    first = [f["path"] for f in page1["files"] if f["status"] == "ok"]
    write_tree(tmp_path, {"src/flask/aaa_added.py": "x=1\n", "src/flask/aab_added.py": "x=1\n"})
    page2 = read_json(tmp_path, "--cursor", cursor)
    second = [f["path"] for f in page2["files"] if f["status"] == "ok"]
    assert not set(first) & set(second)
    assert sorted(first + second) == sorted(files)
    assert "nextCursor" not in page2
    assert page2["createdPaths"] == ["src/flask/aaa_added.py", "src/flask/aab_added.py"]
    text = readmany("read", "--no-daemon", "--root", str(tmp_path), "--cursor", cursor).stdout
    assert 'paths: ["src/flask/aaa_added.py", "src/flask/aab_added.py"]' in text
    # Deleting two files page 1 showed loses nothing either.
    for path in first[:2]:
        (tmp_path / path).unlink()
    page2 = read_json(tmp_path, "--cursor", cursor)
    assert [f["path"] for f in page2["files"] if f["status"] == "ok"] == second


def test_case13b_huge_glob_answer_stays_small(tmp_path: Path, read_json: ReadJson) -> None:
    d = tmp_path / "many"
    d.mkdir()
    for i in range(50_000):
        (d / f"f{i:05}.txt").write_bytes(b"x\n")
    r = read_json(tmp_path, "many/*.txt")
    assert r["summary"]["matched"] == 50_000 and r["summary"]["read"] == 20
    assert r["summary"]["omitted"] == 49_980
    assert len(r["files"]) <= 20 + 200
    assert len(r["packing"]["omittedPaths"]) == 200 and r["packing"]["omittedTruncated"]
    assert len(json.dumps(r)) < 60_000
    assert r["nextCursor"]


def test_case14_git_config_never_read(
    tmp_path: Path, read_json: ReadJson, readmany: Any, env: dict[str, str]
) -> None:
    write_tree(tmp_path, {"a.txt": "a\n"})
    git(tmp_path, "init", "-q", env=env)
    r = read_json(
        tmp_path, ".git/config", "--no-gitignore", "--no-ignore-files", "--no-default-excludes"
    )
    f = r["files"][0]
    assert (f["status"], f["code"]) == ("error", "denied")
    assert "[core]" not in r["llmContent"]
    r = read_json(
        tmp_path, ".git/**", "--no-gitignore", "--no-ignore-files", "--no-default-excludes"
    )
    assert r["summary"]["read"] == 0
    assert ".git/config" not in files_list(
        readmany, tmp_path, "--no-gitignore", "--no-ignore-files", "--no-default-excludes"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["read"],
        ["read", "a", "--format", "yaml"],
        ["read", "a", "--max-total-files", "0"],
        ["read", "a", "--params", "{"],
        ["bogus"],
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, readmany: Any, args: list[str]) -> None:
    proc = (
        readmany(*args, "--root", str(tmp_path), check=False)
        if args[0] == "read"
        else readmany(*args, check=False)
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("readmany:")
    assert proc.stdout == ""


def test_per_file_problems_exit_0(tmp_path: Path, readmany: Any) -> None:
    proc = readmany("read", "--no-daemon", "--root", str(tmp_path), "missing.txt")
    assert proc.returncode == 0
    assert "missing.txt" in proc.stdout


def test_files_null_separated_and_sorted_by_bytes(tmp_path: Path, readmany: Any) -> None:
    write_tree(
        tmp_path,
        {
            "b.txt": "",
            "B.txt": "",
            "a/z.txt": "",
            "a b.txt": "",
            "é.txt": "",
            "line\nbreak.txt": "",
        },
    )
    out = readmany("files", "--no-daemon", "-0", "--root", str(tmp_path)).stdout
    names = out.split("\0")
    assert names[-1] == ""
    assert names[:-1] == sorted(names[:-1], key=lambda s: s.encode())
    assert "line\nbreak.txt" in names


@pytest.mark.parametrize("buffered", [True, False])
@pytest.mark.parametrize("stdout", ["full", "closed"])
@pytest.mark.parametrize("command", ["read", "files"])
def test_unwritable_output_is_one_line_and_exit_1(
    tmp_path: Path, env: dict[str, str], stdout: str, command: str, buffered: bool
) -> None:
    """Standard output that cannot be written (a full device, a closed descriptor): one
    line on stderr naming why, exit 1, no traceback; also with Python's default buffered
    stdout, whose leftover bytes would fail again at exit (``PYTHONUNBUFFERED`` unset)."""
    import subprocess
    import sys

    env = dict(env)
    if buffered:
        env.pop("PYTHONUNBUFFERED", None)
    else:
        env["PYTHONUNBUFFERED"] = "1"

    write_tree(tmp_path, {"a.txt": "a\n"})
    args = [sys.executable, "-m", "readmany_daemon", command, "--no-daemon"]
    args += ["--root", str(tmp_path)]
    if command == "read":
        args.append("a.txt")
    if stdout == "full":
        with open("/dev/full", "wb") as full:
            proc = subprocess.run(args, env=env, stdout=full, stderr=subprocess.PIPE, text=True)
    else:
        proc = subprocess.run(
            args, env=env, stderr=subprocess.PIPE, text=True, pass_fds=(),
            preexec_fn=lambda: os.close(1),
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("readmany: cannot write the answer"), lines
