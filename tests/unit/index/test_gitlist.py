"""Differential test of readmany_daemon.index.gitlist (the git-seeded cold listing) against
the index walk it replaces.

For every case and every filter combination (8: each of gitignore, ignore files and
default excludes on or off) it asserts

    gitlist.start(root, ...).files(settings, filters)
    == Index.build(root, settings).files(filters)                       (byte for byte)

and that the git-seeded path really ran (no fallback) with gitignore on, unless the root
lies inside a folder gitignore excludes. With ignore files off both must also list what an
index with no ignore files at all lists: a tracked path an ignore file hides is visible
then, as git and ``IgnoreRules.check`` say.

Random cases build small repositories with nested ``.gitignore`` files (negations,
anchors, folder-only patterns, ``*``), ``.readmanyignore`` files at several depths (path
patterns included, some gitignored), node_modules with force-added files, a virtualenv
with ``pyvenv.cfg`` (ignored or not), a conda env, ``__pycache__``, deny-listed names,
tracked-but-ignored files, tracked files deleted or turned into folders after ``git add``,
untracked files added afterwards, nested repositories (untracked, as submodule gitlinks,
over outer-tracked files), symlinks to files and folders, non-ASCII names,
``info/exclude``, ``core.excludesFile`` and roots below the top. Targeted cases pin each
of those alone, plus unmerged paths, undecodable names, custom settings, the fallbacks
and the CLI. A failure prints the seed and the case; rerun one with
``READMANY_GITLIST_SEED=<seed> pytest tests/unit/index/test_gitlist.py -k one``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

from readmany_daemon.cli import main
from readmany_daemon.index import gitlist
from readmany_daemon.index.model import Index
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.settings import Settings
from tests.helpers import git, write_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

FILTERS = [
    Filters(respect_gitignore=g, respect_ignore_files=i, use_default_excludes=d)
    for g, i, d in itertools.product((True, False), repeat=3)
]


def _same(got: list[str], want: list[str], what: str) -> None:
    if got != want:
        only_fast = sorted(set(got) - set(want))
        only_ref = sorted(set(want) - set(got))
        raise AssertionError(
            f"{what}: fast path differs\nonly fast: {only_fast}\nonly reference: {only_ref}\n"
            f"order differs: {not only_fast and not only_ref}"
        )


#: how often the git-seeded runs of ``compare`` took each branch (see GitSeededListing.counts)
SEEN: dict[str, int] = {}


def compare(root: Path, settings: Settings | None = None) -> list[str]:
    """Assert fast == index for every filter combination, and with ignore files off also
    == an index with no ignore files; return why the runs that should take the git-seeded
    path fell back (empty: none did)."""
    settings = settings or Settings()
    ix = Index.build(str(root), settings)
    without: Index | None = None
    reasons: list[str] = []
    for filters in FILTERS:
        job = gitlist.start(str(root), filters.respect_gitignore)
        assert job is not None
        got = job.files(settings, filters)
        _same(got, ix.files(filters), f"{filters} ({job.fallback})")
        if filters.respect_gitignore and job.fallback:
            reasons.append(job.fallback)
        for key, n in job.counts.items():
            SEEN[key] = SEEN.get(key, 0) + (n > 0)
        if not filters.respect_ignore_files:
            if without is None:
                without = Index.build(str(root), replace(settings, ignore_file_names=[]))
            want = without.files(filters._replace(respect_ignore_files=True))
            _same(got, want, f"{filters} ({job.fallback}), vs no ignore files")
    return reasons


# ---- random cases ---------------------------------------------------------------------------

FILE_NAMES = [
    "a.py", "b.txt", "c.log", "keep.log", "m.pyc", ".env", ".env.example", "k.pem",
    "id_rsa", "keep.txt", "data.json", "Z", "q[1].md", "sp ace.txt", "\u00e9t\u00e9.txt",
    "\u65e5\u672c.md", "x.tmp", "README",
]  # fmt: skip
DIR_NAMES = [
    "src", "lib", "docs", "build", "gen", "sub", "vendor", "tmp", "\u00f1", "n m", "deep",
]  # fmt: skip
GITIGNORE_LINES = [
    "*.log", "!keep.log", "build/", "/tmp/", "*.pyc", "node_modules/", ".venv/", "docs/*.txt",
    "!docs/keep.txt", "**/gen/", "vendor", "*.json", "!data.json", "sub/", "\u00f1/", "*.tmp",
    "/lib/b.txt", "deep/**/a.py", "Z", "!Z", "*", "!*/", "!*.py", ".readmanyignore",
]  # fmt: skip
IGNORE_LINES = [
    "*.txt", "!keep.txt", "gen/", "/a.py", "lib/*.py", "**/Z", "*.md", "!README", "src/",
    "deep/", "n m/*.txt", "*.py", "!b.txt", "\u00e9t\u00e9.txt", "sub/**",
]  # fmt: skip


def _lines(rng: random.Random, pool: list[str], lo: int, hi: int) -> str:
    return "".join(line + "\n" for line in rng.sample(pool, rng.randint(lo, hi)))


def make_case(seed: int, base: Path) -> tuple[Path, str]:
    """Build random case ``seed`` under ``base``: returns ``(root, description)``."""
    rng = random.Random(seed)
    repo = base / "repo"
    repo.mkdir(parents=True)
    desc = [f"seed={seed}"]
    git(repo, "init", "-q")
    dirs = [""]
    for _ in range(rng.randint(3, 9)):
        parent = rng.choice(dirs)
        if parent.count("/") >= 2:
            continue
        d = (parent + "/" if parent else "") + rng.choice(DIR_NAMES)
        if d not in dirs:
            dirs.append(d)
    files: dict[str, str] = {}
    for _ in range(rng.randint(8, 24)):
        d = rng.choice(dirs)
        files[(d + "/" if d else "") + rng.choice(FILE_NAMES)] = "x"
    # dependency and environment folders
    if rng.random() < 0.6:
        nm = rng.choice(["", *dirs[1:]])
        nm = (nm + "/" if nm else "") + "node_modules"
        files[nm + "/pkg/index.js"] = "x"
        files[nm + "/pkg/package.json"] = "{}"
        files[nm + "/.bin/tool"] = "x"
        desc.append(f"node_modules at {nm}")
    if rng.random() < 0.5:
        venv = rng.choice(["", *dirs[1:]])
        venv = (venv + "/" if venv else "") + rng.choice([".venv", "env", "py"])
        files[venv + "/pyvenv.cfg"] = "home = /usr\n"
        files[venv + "/lib/site.py"] = "x"
        files[venv + "/bin/activate"] = "x"
        if rng.random() < 0.5:
            files[venv + "/.gitignore"] = "*\n"
        desc.append(f"venv at {venv}")
    if rng.random() < 0.2:
        files["conda/conda-meta/history"] = "x"
        files["conda/lib/c.py"] = "x"
        desc.append("conda env at conda")
    if rng.random() < 0.4:
        d = rng.choice(dirs)
        files[(d + "/" if d else "") + "__pycache__/m.cpython-311.pyc"] = "x"
    for d in dirs:
        if rng.random() < (0.7 if d == "" else 0.3):
            files[(d + "/" if d else "") + ".gitignore"] = _lines(rng, GITIGNORE_LINES, 1, 5)
        if rng.random() < (0.5 if d == "" else 0.3):
            files[(d + "/" if d else "") + ".readmanyignore"] = _lines(rng, IGNORE_LINES, 1, 4)
    write_tree(repo, files)
    for d in dirs:
        (repo / d).mkdir(parents=True, exist_ok=True)
    desc += [f"{p}: {c!r}" for p, c in sorted(files.items()) if p.endswith("ignore")]
    if rng.random() < 0.3:
        (repo / ".git" / "info").mkdir(exist_ok=True)
        text = _lines(rng, GITIGNORE_LINES, 1, 3)
        (repo / ".git" / "info" / "exclude").write_text(text)
        desc.append(f"info/exclude: {text!r}")
    if rng.random() < 0.15:
        home = Path(os.environ["HOME"])
        text = _lines(rng, GITIGNORE_LINES, 1, 2)
        (home / ".config" / "git").mkdir(parents=True, exist_ok=True)
        (home / ".config" / "git" / "ignore").write_text(text)
        desc.append(f"core.excludesFile: {text!r}")
    if rng.random() < 0.15:
        target = rng.choice(sorted(files))
        link = rng.choice(dirs)
        link = (link + "/" if link else "") + "lnk"
        if not (repo / link).exists():
            os.symlink(os.path.relpath(repo / target, (repo / link).parent), repo / link)
            desc.append(f"symlink {link} -> {target}")
    if rng.random() < 0.1 and len(dirs) > 1:
        d = rng.choice(dirs[1:])
        link = (d.rpartition("/")[0] + "/" if "/" in d else "") + "dlnk"
        if not (repo / link).exists():
            os.symlink(os.path.relpath(repo / d, (repo / link).parent), repo / link)
            desc.append(f"folder symlink {link} -> {d}")
    # the index: everything gitignore keeps, then some ignored files forced in
    git(repo, "add", "-A")
    ignored_ones = sorted(p for p in files if rng.random() < 0.15)
    if ignored_ones:
        git(repo, "add", "-f", "--", *ignored_ones)
        desc.append(f"force-added: {ignored_ones}")
    # nested repositories
    r = rng.random()
    if r < 0.15:
        nested = rng.choice(dirs) + "/inner" if rng.random() < 0.5 else "inner"
        nested = nested.lstrip("/")
        write_tree(repo / nested, {"n.py": "x", "n.log": "x", ".gitignore": "*.py\n"})
        git(repo / nested, "init", "-q")
        desc.append(f"untracked nested repository {nested}")
    elif r < 0.25:
        nested = "modules/sm"
        write_tree(repo / nested, {"s.txt": "x", "s.log": "x"})
        git(repo / nested, "init", "-q")
        git(repo / nested, "add", "-A", "-f")
        git(repo / nested, "commit", "-qm", "s", "--allow-empty")
        git(repo, "add", "-f", nested)  # a gitlink, as a submodule
        desc.append(f"gitlink {nested}")
    elif r < 0.32 and len(dirs) > 1:
        d = rng.choice(dirs[1:])
        if (repo / d).is_dir() and not (repo / d).is_symlink():
            git(repo / d, "init", "-q")
            desc.append(f"nested repository over outer-tracked {d}")
    # the working tree moves on
    tracked_files = sorted(p for p in files if (repo / p).is_file())
    if tracked_files and rng.random() < 0.4:
        gone = rng.choice(tracked_files)
        (repo / gone).unlink()
        desc.append(f"deleted {gone}")
    if tracked_files and rng.random() < 0.15:
        changed = rng.choice(tracked_files)
        if (repo / changed).is_file():
            (repo / changed).unlink()
            write_tree(repo, {changed + "/inside.txt": "x"})
            desc.append(f"file became folder {changed}")
    if rng.random() < 0.7:
        new = {}
        for _ in range(rng.randint(1, 6)):
            d = rng.choice([*dirs, "fresh", "fresh/deeper"])
            new[(d + "/" if d else "") + rng.choice(FILE_NAMES)] = "y"
        for p in new:
            if not (repo / p).exists() and not any((repo / q).is_file() for q in _parents(p)):
                write_tree(repo, {p: "y"})
        desc.append(f"untracked afterwards: {sorted(new)}")
    root = repo
    if rng.random() < 0.2 and len(dirs) > 1:
        sub = rng.choice(dirs[1:])
        if (repo / sub).is_dir() and not (repo / sub).is_symlink():
            root = repo / sub
            desc.append(f"root below top: {sub}")
    return root, "\n".join(desc)


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _run_cases(seeds: range, base: Path) -> tuple[int, int]:
    """Run the cases; returns (cases, fast runs that fell back)."""
    failures: list[str] = []
    fell_back = 0
    for seed in seeds:
        case = base / f"c{seed}"
        home = case / "home"
        home.mkdir(parents=True)
        os.environ["HOME"] = str(home)
        try:
            root, desc = make_case(seed, case)
            try:
                reasons = compare(root)
            except AssertionError as exc:
                failures.append(f"{desc}\n{exc}")
                if len(failures) >= 3:
                    break
                continue
            unexpected = [r for r in reasons if "gitignore excludes" not in r]
            if unexpected:
                failures.append(f"{desc}\nfell back: {unexpected}")
            fell_back += len(reasons)
        finally:
            shutil.rmtree(case, ignore_errors=True)
    assert not failures, f"{len(failures)} case(s) failed:\n\n" + "\n\n".join(failures)
    return len(seeds), fell_back


def test_differential_default(git_env: Path, tmp_path: Path) -> None:
    """50 random cases (seeds 0-49), 8 filter combinations each, every branch of the
    git-seeded listing reached."""
    SEEN.clear()
    cases, fell_back = _run_cases(range(50), tmp_path)
    assert fell_back <= 2 * cases  # only roots inside an excluded folder fall back
    # runs (of 4 per case with gitignore on) where each branch did something
    assert all(SEEN.get(k, 0) >= 5 for k in ("listed", "extra", "engine", "cut", "dropped")), SEEN


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_differential_2k(git_env: Path, tmp_path: Path) -> None:
    """2,000 random cases (seeds 1000-2999)."""
    _run_cases(range(1000, 3000), tmp_path)


def test_differential_one(git_env: Path, tmp_path: Path) -> None:
    """One case, chosen with READMANY_GITLIST_SEED (default 7), to reproduce a failure."""
    seed = int(os.environ.get("READMANY_GITLIST_SEED", "7"))
    _run_cases(range(seed, seed + 1), tmp_path)


# ---- targeted cases -------------------------------------------------------------------------


def fast(
    root: Path, filters: Filters | None = None, settings: Settings | None = None
) -> tuple[list[str], str | None]:
    """The git-seeded listing of ``root`` and why it fell back (None: it did not)."""
    filters = filters or Filters()
    job = gitlist.start(str(root))
    assert job is not None
    got = job.files(settings or Settings(), filters)
    return got, job.fallback


def test_gitignore_deny_default_and_ignore_files(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n",
            ".readmanyignore": "docs/*.md\n!docs/keep.md\n",
            "pkg/.readmanyignore": "/gen/\nsecret.txt\n",
            "a.log": "", "keep.log": "", "build/x.py": "", "src/m.py": "",
            "docs/a.md": "", "docs/keep.md": "", "pkg/gen/g.py": "", "pkg/secret.txt": "",
            "pkg/ok.txt": "", ".env": "", ".env.example": "", "certs/k.pem": "",
            "src/__pycache__/m.pyc": "", "node_modules/p/i.js": "",
        },
    )  # fmt: skip
    git(repo, "add", ".gitignore", "src/m.py", "docs")
    got, why = fast(repo)
    assert why is None
    assert got == [
        ".env.example", ".gitignore", ".readmanyignore", "docs/keep.md", "keep.log",
        "pkg/.readmanyignore", "pkg/ok.txt", "src/m.py",
    ]  # fmt: skip
    compare(repo)


def test_core_ignorecase(repo: Path) -> None:
    """git's listing and the rule engine both fold the case of gitignore patterns when the
    repository sets core.ignorecase; tool ignore files stay case-sensitive."""
    write_tree(
        repo,
        {
            ".gitignore": "*.LOG\nBuild/\n[A]y\n", ".readmanyignore": "*.TMP\n",
            "a.log": "", "B.Log": "", "build/x.py": "", "ay": "", "Ay": "", "s.tmp": "",
            "S.TMP": "", "src/m.py": "",
        },
    )  # fmt: skip
    git(repo, "add", ".gitignore", "src/m.py")
    git(repo, "config", "core.ignorecase", "true")
    got, why = fast(repo)
    assert why is None
    assert got == [".gitignore", ".readmanyignore", "Ay", "ay", "s.tmp", "src/m.py"]
    compare(repo)


def test_tracked_changes_after_add(repo: Path) -> None:
    write_tree(repo, {"a.txt": "", "gone.txt": "", "was_file": "", "d/x.txt": "", "fifo": ""})
    git(repo, "add", "-A")
    (repo / "gone.txt").unlink()
    (repo / "was_file").unlink()
    write_tree(repo, {"was_file/inside.txt": ""})
    (repo / "fifo").unlink()
    os.mkfifo(repo / "fifo")
    got, why = fast(repo)
    assert why is None
    assert got == ["a.txt", "d/x.txt", "was_file/inside.txt"]
    compare(repo)


def test_unmerged_paths(repo: Path) -> None:
    """git lists an unmerged path once per stage; it is one file."""
    write_tree(repo, {"f.txt": "a\n", "g.txt": "", "h/i.txt": ""})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "1")
    git(repo, "checkout", "-qb", "side")
    (repo / "f.txt").write_text("b\n")
    git(repo, "commit", "-qam", "2")
    git(repo, "checkout", "-q", "-")
    (repo / "f.txt").write_text("c\n")
    (repo / "h/i.txt").write_text("c\n")
    git(repo, "commit", "-qam", "3")
    with pytest.raises(subprocess.CalledProcessError):
        git(repo, "merge", "side")
    write_tree(repo, {"new.txt": ""})
    got, why = fast(repo)
    assert (got, why) == (["f.txt", "g.txt", "h/i.txt", "new.txt"], None)
    (repo / "f.txt").unlink()
    got, why = fast(repo)
    assert (got, why) == (["g.txt", "h/i.txt", "new.txt"], None)
    compare(repo)


def test_tracked_folder_replaced_by_symlink(repo: Path) -> None:
    write_tree(repo, {"d/x.txt": "", "other/y.txt": ""})
    git(repo, "add", "-A")
    shutil.rmtree(repo / "d")
    os.symlink("other", repo / "d")
    got, why = fast(repo)
    assert why is None
    assert got == ["d", "other/y.txt"]
    compare(repo)


def test_tracked_inside_ignored_and_default_excluded_folders(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "build/\nnode_modules/\n",
            "build/keep.txt": "", "build/junk.txt": "",
            "node_modules/p/tracked.js": "", "node_modules/p/untracked.js": "",
            "web/node_modules/q/i.js": "",
            ".venv/pyvenv.cfg": "", ".venv/lib/t.py": "",
        },
    )  # fmt: skip
    git(repo, "add", ".gitignore")
    git(repo, "add", "-f", "build/keep.txt", "node_modules/p/tracked.js", ".venv/lib/t.py")
    write_tree(repo, {".venv/lib/new.py": "", "web/node_modules/q/j.js": ""})
    got, why = fast(repo)
    assert why is None
    assert got == [".gitignore", ".venv/lib/t.py", "build/keep.txt", "node_modules/p/tracked.js"]
    compare(repo)


def test_untracked_venv_and_conda_env_not_gitignored(repo: Path) -> None:
    write_tree(
        repo,
        {
            "env/pyvenv.cfg": "", "env/lib/a.py": "", "tools/conda-meta/history": "",
            "tools/bin/x": "", "src/a.py": "",
        },
    )  # fmt: skip
    got, why = fast(repo)
    assert why is None
    assert got == ["src/a.py"]
    compare(repo)


def test_nested_repositories(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.log\n", "a.py": "", "over/o.txt": "", "over/o.log": ""})
    git(repo, "add", "-A")
    # untracked nested repository: its own rules, not the outer *.log
    write_tree(repo / "inner", {".gitignore": "*.py\n", "n.py": "", "n.log": ""})
    git(repo / "inner", "init", "-q")
    # a gitlink (submodule) with a checkout, and one without
    write_tree(repo / "mods/sm", {"s.txt": "", "s.log": ""})
    git(repo / "mods/sm", "init", "-q")
    git(repo / "mods/sm", "add", "-A")
    git(repo / "mods/sm", "commit", "-qm", "s")
    git(repo, "add", "mods/sm")
    # a repository created over outer-tracked files
    git(repo / "over", "init", "-q")
    # a .git git does not take for a repository, in a folder git lists
    write_tree(repo, {"bogus/b.log": "", "bogus/b.txt": ""})
    (repo / "bogus/.git").mkdir()
    got, why = fast(repo)
    assert why is None
    assert "inner/n.log" in got and "inner/n.py" not in got
    assert "bogus/b.log" in got  # the index reads bogus/ as a repository of its own
    compare(repo)


def test_root_below_top_and_inside_ignored_folder(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "*.log\nignored/\n",
            ".readmanyignore": "*.md\n",
            "sub/a.py": "", "sub/a.log": "", "sub/r.md": "", "sub/deeper/b.py": "",
            "ignored/c.py": "", "ignored/c.log": "",
        },
    )  # fmt: skip
    git(repo, "add", "-A")
    git(repo, "add", "-f", "ignored/c.py")
    got, why = fast(repo / "sub")
    assert why is None
    assert got == ["a.py", "deeper/b.py"]
    compare(repo / "sub")
    got, why = fast(repo / "ignored")
    assert why is not None and "gitignore excludes" in why
    compare(repo / "ignored")


def test_non_ascii_and_undecodable_names(repo: Path) -> None:
    write_tree(repo, {"\u00e9/\u00e8.txt": "", "z.txt": "", "\u65e5.md": "", "a b.txt": ""})
    with open(os.path.join(os.fsencode(repo), b"\xff\xfe.txt"), "wb"):
        pass
    os.mkdir(os.path.join(os.fsencode(repo), b"d\xe9"))
    with open(os.path.join(os.fsencode(repo), b"d\xe9", b"x.log"), "wb"):
        pass
    (repo / ".gitignore").write_bytes(b"*.log\n")
    git(repo, "add", "\u00e9", "z.txt")
    got, why = fast(repo)
    assert why is None
    assert got == sorted(got, key=os.fsencode)
    compare(repo)


def test_custom_settings(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".toolignore": "*.txt\n", "d/.toolignore": "!keep.txt\n", "d/keep.txt": "",
            "d/a.txt": "", "out/x.py": "", "s.secret": "", "d/.readmanyignore": "*\n",
        },
    )  # fmt: skip
    settings = Settings(
        ignore_file_names=[".toolignore"], default_excludes=["out/"], deny_patterns=["*.secret"]
    )
    got, why = fast(repo, settings=settings)
    assert why is None
    assert got == [".toolignore", "d/.readmanyignore", "d/.toolignore", "d/keep.txt"]
    compare(repo, settings)


def test_gitignored_ignore_file_still_applies(repo: Path) -> None:
    write_tree(repo, {".readmanyignore": "*.md\n", "a.md": "", "b.py": ""})
    (repo / ".git/info/exclude").write_text(".readmanyignore\n")
    got, why = fast(repo)
    assert (got, why) == (["b.py"], None)
    compare(repo)


def test_fallbacks(repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_tree(repo, {".gitignore": "*.log\n", "a.log": "", "b.py": ""})
    got, why = fast(repo, Filters(respect_gitignore=False))
    assert (got, why) == ([".gitignore", "a.log", "b.py"], "--no-gitignore")
    plain = tmp_path / "plain"
    write_tree(plain, {".gitignore": "*.log\n", "a.log": "", "b.py": ""})
    got, why = fast(plain)
    assert got == Index.build(str(plain), Settings()).files() and why is not None
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    got, why = fast(repo)
    assert (got, why is not None) == ([".gitignore", "b.py"], True)
    assert gitlist.start(str(tmp_path / "missing")) is None


def test_no_repository_starts_no_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A root in no git work tree lists with the index walk and never starts git (which
    could only fail there); the answer is the index's, nested repositories included."""
    plain = tmp_path / "plain"
    write_tree(
        plain,
        {".gitignore": "*.log\n", "a.log": "", "b.py": "", "node_modules/x.js": "", "c/d.txt": ""},
    )
    nested = plain / "nested"
    write_tree(nested, {".gitignore": "*.txt\n", "e.txt": "", "f.py": ""})
    git(nested, "init", "-q")
    started: list[list[str]] = []
    real_call = gitlist.GitCall

    def spy(args: list[str], *rest: object, **kw: object) -> object:
        started.append(args)
        return real_call(args, *rest, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(gitlist, "GitCall", spy)
    for filters in FILTERS:
        job = gitlist.start(str(plain), filters.respect_gitignore)
        assert job is not None
        got = job.files(Settings(), filters)
        assert got == Index.build(str(plain), Settings()).files(filters), filters
        assert job.fallback is not None
    assert started == []
    job = gitlist.start(str(plain))
    assert job is not None and job.fallback == gitlist.NO_REPOSITORY
    assert job.files(Settings(), Filters()) == [
        ".gitignore",
        "b.py",
        "c/d.txt",
        "nested/.gitignore",
        "nested/f.py",
    ]


def test_cli_files_uses_the_fast_listing(
    repo: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    write_tree(repo, {".gitignore": "*.log\n", "a.log": "", "b.py": "", "c/d.txt": "", ".env": ""})
    git(repo, "add", "-A")
    assert main(["files", "--no-daemon", "--root", str(repo)]) == 0
    assert capsysbinary.readouterr().out == b".gitignore\nb.py\nc/d.txt\n"
    assert main(["files", "--no-daemon", "-0", "--no-gitignore", "--root", str(repo)]) == 0
    assert capsysbinary.readouterr().out == b".gitignore\0a.log\0b.py\0c/d.txt\0"
    assert main(["files", "--no-daemon", "--root", str(repo / "nope")]) == 2  # RootNotFound


#: Module files (relative to the package folder; a trailing "/" is a whole folder) that
#: ``readmany files --no-daemon`` must not load: the engine, content, wire, the index's
#: model (the git-seeded listing is index/gitlist.py), the runtime,
#: LSP and MCP. Checked on files, not module names, so a rename cannot make it vacuous.
HEAVY_FILES = (
    "engine/",
    "content/",
    "wire/",
    "index/model.py",
    "index/walk.py",
    "index/changes.py",
    "index/dump.py",
    "index/snapshot.py",
    "runtime/",
    "lsp/",
    "mcp/",
)
HEAVY_PACKAGES = (
    "pygls",
    "lsprotocol",
    "watchdog",
    "mcp",
    "wcmatch",
    "charset_normalizer",
    "tree_sitter",
)


def test_cli_imports_stay_light(repo: Path) -> None:
    """The files command's one-shot path loads none of ``HEAVY_FILES`` nor
    ``HEAVY_PACKAGES``; it does load cli.py and the git-seeded listing."""
    write_tree(repo, {"a.py": ""})
    code = (
        "import json, os, sys; import readmany_daemon; from readmany_daemon.cli import main\n"
        f"rc = main(['files', '--no-daemon', '--root', {str(repo)!r}])\n"
        "pkg = os.path.dirname(os.path.realpath(readmany_daemon.__file__))\n"
        "files = sorted({os.path.relpath(os.path.realpath(f), pkg)"
        " for m in list(sys.modules.values()) if isinstance(f := getattr(m, '__file__', None), str)"
        " and os.path.realpath(f).startswith(pkg + os.sep)})\n"
        "tops = sorted({name.partition('.')[0] for name in sys.modules})\n"
        "print(json.dumps([rc, files, tops]), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout == "a.py\n"
    rc, files, tops = json.loads(proc.stderr)
    assert rc == 0
    assert "cli.py" in files, files
    assert "index/gitlist.py" in files, files
    assert [f for f in files if f.startswith(HEAVY_FILES)] == [], files
    assert [t for t in tops if t in HEAVY_PACKAGES] == [], tops
