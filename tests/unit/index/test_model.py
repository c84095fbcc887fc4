"""Unit tests of readmany_daemon.index: the walk, listing, globs, expansions, filters off,
hidden counts, explanations, refresh."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from readmany_daemon.index.model import Index
from readmany_daemon.rules.kinds import ALL, Filters, Verdict
from readmany_daemon.settings import Settings
from tests.helpers import git, write_tree

NONE_OFF = Filters(respect_gitignore=False, respect_ignore_files=False, use_default_excludes=False)


def build(root: Path, **settings: object) -> Index:
    return Index.build(str(root), Settings(**settings))  # type: ignore[arg-type]


# ---- the cases named in the issue -----------------------------------------------------------


def test_nested_gitignore_and_glob(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "*.log\n",
            "pkg/sub/.gitignore": "secret.txt\n",
            "pkg/other.txt": "",
            "pkg/sub/secret.txt": "",
            "pkg/sub/open.txt": "",
            "a.log": "",
        },
    )
    ix = build(repo)
    assert ix.glob("**/*.txt", ALL) == ["pkg/other.txt", "pkg/sub/open.txt"]
    assert "a.log" not in ix.files()


def test_htmlcov_star_hides_only_its_folder(repo: Path) -> None:
    write_tree(repo, {"htmlcov/.gitignore": "*\n", "htmlcov/index.html": "", "d/d.txt": ""})
    ix = build(repo)
    assert ix.files() == ["d/d.txt"]


def test_anchored_folder_patterns(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "/staticfiles/\nsrc/gen/\n",
            "staticfiles/a.css": "",
            "src/gen/x.py": "",
            "lib/staticfiles/b.css": "",
            "src/main.py": "",
        },
    )
    assert build(repo).files() == [".gitignore", "lib/staticfiles/b.css", "src/main.py"]


def test_negation_keeps_file(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.gen\n!keep.gen\n", "a.gen": "", "keep.gen": ""})
    assert build(repo).files() == [".gitignore", "keep.gen"]


def test_negation_under_excluded_folder_stays_ignored(repo: Path) -> None:
    write_tree(repo, {".gitignore": "build/\n!build/keep.txt\n", "build/keep.txt": ""})
    assert build(repo).files() == [".gitignore"]


def test_info_exclude(repo: Path) -> None:
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.log\n!important.log\n")
    write_tree(repo, {"important.log": "", "nested/a.log": "", "nested/b.txt": ""})
    assert build(repo).files() == ["important.log", "nested/b.txt"]


def test_docs_expansion(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "*.tmp\n",
            "docs/a.md": "",
            "docs/deep/b.md": "",
            "docs/deep/c.tmp": "",
            "docs/.hidden.md": "",
            "other.md": "",
        },
    )
    ix = build(repo)
    assert ix.expand_dir("docs", ALL, recursive=True) == [
        "docs/.hidden.md",
        "docs/a.md",
        "docs/deep/b.md",
    ]
    assert ix.expand_dir("docs", ALL, recursive=False) == ["docs/.hidden.md", "docs/a.md"]


def test_git_config_never_visible(repo: Path) -> None:
    write_tree(repo, {"a.txt": ""})
    ix = build(repo)
    assert ".git/config" not in ix.files(NONE_OFF)
    assert not any(p.startswith(".git/") for p in ix.files(NONE_OFF))
    assert ix.expand_dir(".git", NONE_OFF, True) == []
    assert ix.explain(".git/config", NONE_OFF) == Verdict("deny", ".git", ".git")
    assert ix.glob(".git/*", NONE_OFF) == []


def test_tracked_file_in_ignored_folder(repo: Path) -> None:
    write_tree(
        repo, {".gitignore": "out/\n", "out/t.txt": "", "out/u.txt": "", "out/deep/v.txt": ""}
    )
    git(repo, "add", "-f", "out/t.txt")
    ix = build(repo)
    assert ix.files() == [".gitignore", "out/t.txt"]
    assert ix.explain("out/u.txt") == Verdict("gitignore", ".gitignore:1", "out/")
    assert ix.files(Filters(respect_gitignore=False)) == [
        ".gitignore",
        "out/deep/v.txt",
        "out/t.txt",
        "out/u.txt",
    ]


def test_tracked_folder_not_dropped_by_default_excludes(repo: Path) -> None:
    write_tree(
        repo,
        {"build/main.c": "", "build/gen.o": "", "node_modules/x.js": "", "node_modules/y.js": ""},
    )
    git(repo, "add", "build/main.c", "node_modules/x.js")
    ix = build(repo, default_excludes=["build/", "node_modules/"])
    assert ix.files() == ["build/main.c", "node_modules/x.js"]
    assert ix.files(Filters(use_default_excludes=False)) == [
        "build/gen.o",
        "build/main.c",
        "node_modules/x.js",
        "node_modules/y.js",
    ]


def test_root_below_top(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.tmp\n", "sub/a.py": "", "sub/b.tmp": "", "sub/d/c.tmp": ""})
    ix = build(repo / "sub")
    assert ix.files() == ["a.py"]
    v = ix.explain("d/c.tmp")
    assert v is not None and v.source.endswith("/.gitignore:1")


def test_worktree(repo: Path, tmp_path: Path) -> None:
    write_tree(repo, {"f.py": "", ".gitignore": "*.pyc\n"})
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("local/\n")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt))
    write_tree(wt, {"g.pyc": "", "local/x": "", "new.py": ""})
    ix = build(wt)
    assert ix.files() == [".gitignore", "f.py", "new.py"]


def test_outside_repo(git_env: Path, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write_tree(root, {".gitignore": "*.o\nbin/\n", "a.c": "", "a.o": "", "bin/x": ""})
    ix = build(root)
    assert ix.files() == [".gitignore", "a.c"]


def test_explain_gives_file_and_line(repo: Path) -> None:
    write_tree(
        repo, {"pkg/.gitignore": "# c\n\n*.bak\n", "pkg/x.bak": "", "node_modules/m/i.js": ""}
    )
    ix = build(repo)
    assert ix.explain("pkg/x.bak") == Verdict("gitignore", "pkg/.gitignore:3", "*.bak")
    assert ix.explain("node_modules/m/i.js") == Verdict(
        "default-exclude", "defaultExcludes:node_modules/", "node_modules/"
    )
    assert ix.explain("pkg/does-not-exist.bak") == Verdict("gitignore", "pkg/.gitignore:3", "*.bak")
    assert ix.explain("pkg/.gitignore") is None


# ---- walk details ---------------------------------------------------------------------------


def test_default_excludes_pruned_and_on_demand(repo: Path) -> None:
    write_tree(
        repo,
        {
            "src/a.py": "",
            "node_modules/p/index.js": "",
            "node_modules/p/.readmanyignore": "*.map\n",
            "node_modules/p/x.map": "",
            "venv1/pyvenv.cfg": "",
            "venv1/lib/site.py": "",
            "__pycache__/a.pyc": "",
        },
    )
    ix = build(repo)
    assert ix.files() == ["src/a.py"]
    assert "node_modules" not in ix.walked_dirs()
    off = ix.files(Filters(use_default_excludes=False))
    assert off == [
        "__pycache__/a.pyc",
        "node_modules/p/.readmanyignore",
        "node_modules/p/index.js",
        "src/a.py",
        "venv1/lib/site.py",
        "venv1/pyvenv.cfg",
    ]
    # the on-demand walk did not change the ALL view
    assert ix.files() == ["src/a.py"]
    assert ix.expand_dir("node_modules", Filters(use_default_excludes=False), True) == [
        "node_modules/p/.readmanyignore",
        "node_modules/p/index.js",
    ]


def test_hidden_counts(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "*.log\n",
            ".readmanyignore": "*.md\n",
            "d/a.log": "",
            "d/b.md": "",
            "d/c.py": "",
            "d/node_modules/x.js": "",
            "d/.env": "",
        },
    )
    ix = build(repo)
    hidden: Counter[str] = Counter()
    assert ix.expand_dir("d", ALL, True, hidden=hidden) == ["d/c.py"]
    # Files under their kind; a folder not entered under its kind and "/".
    assert hidden == Counter({"gitignore": 1, "ignore-file": 1, "default-exclude/": 1, "deny": 1})
    hidden2: Counter[str] = Counter()
    assert ix.glob("d/*.log", ALL, hidden=hidden2) == []
    assert hidden2 == Counter({"gitignore": 1})
    assert ix.hidden_counts("d", Filters(respect_gitignore=False)) == {
        "ignore-file": 1,
        "default-exclude": 1,
        "deny": 1,
    }


def test_glob_syntax(repo: Path) -> None:
    write_tree(
        repo,
        {
            "a.py": "",
            "b.txt": "",
            ".hidden.py": "",
            "src/x.py": "",
            "src/deep/y.py": "",
            "src/Z.PY": "",
            "app/[id]/page.tsx": "",
        },
    )
    ix = build(repo)
    assert ix.glob("*.py", ALL) == [".hidden.py", "a.py"]
    assert ix.glob("**/*.py", ALL) == [".hidden.py", "a.py", "src/deep/y.py", "src/x.py"]
    assert ix.glob("src/**", ALL) == ["src/Z.PY", "src/deep/y.py", "src/x.py"]
    assert ix.glob("*.{py,txt}", ALL) == [".hidden.py", "a.py", "b.txt"]
    assert ix.glob("?.py", ALL) == ["a.py"]
    assert ix.glob("[ab].*", ALL) == ["a.py", "b.txt"]
    assert ix.glob("src/*.py", ALL) == ["src/x.py"]
    assert ix.glob("src/**/*.py", ALL, recursive=False) == ["src/deep/y.py"]  # ** acts as *
    assert ix.glob("src/**", ALL, recursive=False) == ["src/Z.PY", "src/x.py"]
    assert ix.glob("app/*/page.tsx", ALL) == ["app/[id]/page.tsx"]
    for bad in ("", "/abs/*.py", "../x/*"):
        with pytest.raises(ValueError, match="invalid glob pattern"):
            ix.glob(bad, ALL)


def test_sorted_by_bytes(repo: Path) -> None:
    write_tree(repo, {"a-b": "", "a/x": "", "a0": "", "B": "", "\u00e9": "", "z": ""})
    assert build(repo).files() == ["B", "a-b", "a/x", "a0", "z", "\u00e9"]


def test_undecodable_names(repo: Path) -> None:
    raw = os.path.join(os.fsencode(repo), b"bad\xff.txt")
    with open(raw, "wb") as fh:
        fh.write(b"x")
    write_tree(repo, {".gitignore": "*.log\n"})
    ix = build(repo)
    name = os.fsdecode(b"bad\xff.txt")
    assert name in ix.files()
    assert ix.explain(name) is None
    assert ix.glob("bad*", ALL) == [name]


def test_symlinks_listed_not_followed(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_tree(outside, {"big.txt": ""})
    write_tree(repo, {"f.txt": ""})
    os.symlink(outside, repo / "link-dir")
    os.symlink("f.txt", repo / "link-file")
    ix = build(repo)
    assert ix.files() == ["f.txt", "link-dir", "link-file"]
    assert ix.is_dir("link-dir") is False


def test_nested_repo_like_ripgrep(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "*.out\n",
            "inner/.gitignore": "*.in\n",
            "inner/a.out": "",
            "inner/b.in": "",
        },
    )
    git(repo / "inner", "init", "-q")
    ix = build(repo)
    assert ix.files() == [".gitignore", "inner/.gitignore", "inner/a.out"]


def test_dir_mtimes_and_queries(repo: Path) -> None:
    write_tree(repo, {"d/f.txt": ""})
    ix = build(repo)
    assert ix.dir_mtime("d") == os.stat(repo / "d").st_mtime_ns
    assert ix.is_dir("d") is True and ix.is_dir("d/f.txt") is False and ix.is_dir("nope") is None
    assert ix.contains("d/f.txt") and not ix.contains("d/nope")


def test_refresh_after_gitignore_change(repo: Path) -> None:
    write_tree(repo, {"d/a.txt": "", "d/b.log": ""})
    ix = build(repo)
    assert ix.files() == ["d/a.txt", "d/b.log"]
    clock = ix.clock
    (repo / "d" / ".gitignore").write_text("*.log\n")
    ix.refresh("d")
    assert ix.files() == ["d/.gitignore", "d/a.txt"]
    assert ix.clock == clock + 1
    ix.refresh("d")
    assert ix.clock == clock + 1  # nothing changed


def test_refresh_after_git_add(repo: Path) -> None:
    write_tree(repo, {".gitignore": "gen/\n", "gen/x.py": ""})
    ix = build(repo)
    assert ix.files() == [".gitignore"]
    git(repo, "add", "-f", "gen/x.py")
    ix.refresh("")
    assert ix.files() == [".gitignore", "gen/x.py"]


def test_memory_per_file_is_small(repo: Path) -> None:
    import tracemalloc

    for i in range(40):
        d = repo / f"d{i}"
        d.mkdir()
        for j in range(50):
            (d / f"file_{j:04d}.py").write_bytes(b"")
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    ix = build(repo)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    n = len(ix.files())
    assert n == 2000
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert grown / n < 600  # includes fixed costs; ~100 bytes per file at 100k


def test_unlisted_folder_is_recorded_and_listed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a folder that cannot be listed is remembered (warning, unlisted_under) and stays
    # stale, so the next check lists it again once it can be
    write_tree(tmp_path, {"a.txt": "", "locked/s.txt": "", "locked/deep/t.txt": ""})
    real_scandir = os.scandir
    denied = {str(tmp_path / "locked")}

    def scandir(path: str) -> object:
        if path in denied:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)  # the file system's answer, not the index's
    idx = Index.build(str(tmp_path), Settings())
    assert idx.files() == ["a.txt"]
    assert idx.unlisted_under("") == [("locked", 13, "Permission denied")]
    assert idx.unlisted_under("locked", recursive=False) == [("locked", 13, "Permission denied")]
    assert idx.unlisted_under("other") == []
    assert "locked: not listed: Permission denied" in idx.warnings
    assert idx.is_stale("locked")
    denied.clear()
    idx.verify()
    assert idx.files() == ["a.txt", "locked/deep/t.txt", "locked/s.txt"]
    assert idx.unlisted_under("") == [] and idx.warnings == []
