"""Differential test: readmany's own ignore engine against git itself.

Each case builds a random tree in a fresh repository (nested ``.gitignore`` files at
several depths, ``.git/info/exclude``, ``core.excludesFile`` both set explicitly and at
git's default path, files tracked with ``git add -f``, symlinks, odd names) and random
patterns (negations, anchors, ``**``, ``[!x]``/``[^x]``/ranges/``[[:alpha:]]`` classes,
trailing spaces with and without ``\\ ``, escaped ``#`` and ``!``, folder-only patterns,
CRLF lines, a BOM). Half the cases also get
``.readmanyignore`` files (a tool ignore file git does not read) whose patterns hide some
tracked paths too. It asserts, for both walkers (the index walk, and the cold git-seeded
listing of ``index/gitlist.py``),

    set(listing(root, Settings(default_excludes=[], deny_patterns=[]),
                Filters(use_default_excludes=False, respect_ignore_files=False)))
    == set(git ls-files -z --cached --others --exclude-standard)   (files on disk)

and the same with ignore files on where the case has none, except for a root inside a
folder git ignores, which readmany reads as a named path (as ripgrep does): there the
extra paths must be ones git lists as ignored.

The index walks the tree itself with its own rules (git is asked only for the tracked set
and core.excludesFile); the cold listing starts from git's own listing and applies the
other kinds. A failure prints the seed and the case; rerun one case with
``READMANY_DIFF_SEED=<seed> pytest tests/unit/rules/test_ignore_differential.py -k one``.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from readmany_daemon.index import gitlist
from readmany_daemon.index.model import Index
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.settings import Settings
from tests.helpers import git

NAMES = [
    "a",
    "b",
    "ab",
    "ba",
    "a.log",
    "b.log",
    "x.txt",
    "keep.txt",
    "c d",
    "x#y",
    "#h",
    "!bang",
    "sp ",
    "[br]",
    "q?",
    "st*r",
    "Ab",
    "B",
    "a1",
    "9",
    "\u00e9t\u00e9",
    "back\\sl",
    "d.d",
    "-",
    "build",
    "node",
    "tab\tx",
    "A.LOG",
    "KEEP.txt",
    "\u00c9t\u00c9",
]
DIRNAMES = ["a", "b", "sub", "build", "ab", "x.d", "Deep", "\u00e9", "n m", "Build", "SUB"]

LITERALS = [
    *("a", "b", "ab", "log", "txt", "build", "sub", "d", "x", "keep", "B", "1", "\u00e9"),
    *("A", "LOG", "Build", "\u00c9"),
]
CLASSES = [
    "[ab]",
    "[AB]",
    "[A-C]",
    "[!B]",
    "[[:lower:]]",
    "[!a]",
    "[^b]",
    "[a-c]",
    "[c-a]",
    "[[:alpha:]]",
    "[[:digit:]]",
    "[[:upper:]]",
    "[[:space:]]",
    "[[:punct:]]",
    "[]a]",
    "[!]]",
    "[a-]",
    "[\\]]",
    "[[:alnum:]x]",
    "[/]",
]
RARE = ["[a", "[[:bogus:]]", "\\", "[[:alpha:]", "[!"]


def _segment(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.12:
        return "**"
    if r < 0.2:
        return "*"
    parts: list[str] = []
    for _ in range(rng.randint(1, 3)):
        k = rng.random()
        if k < 0.45:
            parts.append(rng.choice(LITERALS))
        elif k < 0.6:
            parts.append("*")
        elif k < 0.7:
            parts.append("?")
        elif k < 0.85:
            parts.append(rng.choice(CLASSES))
        elif k < 0.9:
            parts.append(rng.choice(["\\#", "\\!", "\\*", "\\a", "\\A", "\\ ", "#", "!", " "]))
        elif k < 0.95:
            parts.append("**")
        else:
            parts.append(rng.choice(RARE) if rng.random() < 0.3 else ".")
    return "".join(parts)


def _pattern(rng: random.Random, names: list[str]) -> str:
    if rng.random() < 0.3:
        # a name from the tree, so that patterns hit
        body = rng.choice(names)
        body = "".join("\\" + c if c in "*?[\\" and rng.random() < 0.7 else c for c in body)
        if body.startswith(("#", "!")) and rng.random() < 0.8:
            body = "\\" + body
    else:
        body = "/".join(_segment(rng) for _ in range(rng.choice([1, 1, 1, 2, 2, 3])))
    if rng.random() < 0.2:
        body = "/" + body
    if rng.random() < 0.25:
        body += "/"
    if rng.random() < 0.25:
        body = "!" + body
    r = rng.random()
    if r < 0.08:
        body += "  "
    elif r < 0.12:
        body += "\\ "
    elif r < 0.14:
        body += "\\  "
    elif r < 0.16:
        body += "\t"
    return body


def _ignore_text(rng: random.Random, names: list[str]) -> bytes:
    lines: list[str] = []
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.06:
            lines.append("# comment " + rng.choice(names))
        elif r < 0.1:
            lines.append("")
        else:
            lines.append(_pattern(rng, names))
    eol = "\r\n" if rng.random() < 0.1 else "\n"
    text = eol.join(lines) + (eol if rng.random() < 0.8 else "")
    data = text.encode("utf-8")
    if rng.random() < 0.05:
        data = b"\xef\xbb\xbf" + data
    return data


def make_case(seed: int, base: Path, ignorecase: bool = False) -> tuple[Path, Path, str]:
    """Build case ``seed`` under ``base``: returns ``(repo, root, description)``.
    ``ignorecase``: ``core.ignorecase true`` in the repository's config."""
    rng = random.Random(seed)
    repo = base / "repo"
    home = base / "home"
    repo.mkdir(parents=True)
    home.mkdir()
    os.environ["HOME"] = str(home)
    desc: list[str] = [f"seed={seed}"]
    dirs = [""]
    files: list[str] = []
    for _ in range(rng.randint(2, 7)):
        parent = rng.choice(dirs)
        if parent.count("/") >= 2:
            continue
        d = (parent + "/" if parent else "") + rng.choice(DIRNAMES)
        if d not in dirs:
            dirs.append(d)
            (repo / d).mkdir(parents=True, exist_ok=True)
    for _ in range(rng.randint(4, 16)):
        d = rng.choice(dirs)
        f = (d + "/" if d else "") + rng.choice(NAMES)
        if f in files or f in dirs:
            continue
        (repo / f).write_bytes(b"x")
        files.append(f)
    if rng.random() < 0.15 and files:
        ld = rng.choice(dirs)
        link = (ld + "/" if ld else "") + "lnk"
        if link not in files and link not in dirs:
            target = rng.choice([*files, *dirs[1:]]) if len(dirs) > 1 else rng.choice(files)
            os.symlink(os.path.relpath(repo / target, (repo / link).parent), repo / link)
            files.append(link)
            desc.append(f"symlink {link} -> {target}")
    names = sorted({p.rpartition("/")[2] for p in files + dirs if p})
    git(repo, "init", "-q")
    for d in dirs:
        if rng.random() < (0.7 if d == "" else 0.35):
            data = _ignore_text(rng, names)
            (repo / d / ".gitignore").write_bytes(data)
            desc.append(f"{d or '.'}/.gitignore: {data!r}")
    if rng.random() < 0.4:
        data = _ignore_text(rng, names)
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "exclude").write_bytes(data)
        desc.append(f"info/exclude: {data!r}")
    r = rng.random()
    if r < 0.2:
        data = _ignore_text(rng, names)
        (home / "custom-ignore").write_bytes(data)
        (home / ".gitconfig").write_text(f"[core]\n\texcludesFile = {home / 'custom-ignore'}\n")
        desc.append(f"core.excludesFile (set): {data!r}")
    elif r < 0.35:
        data = _ignore_text(rng, names)
        (home / ".config" / "git").mkdir(parents=True)
        (home / ".config" / "git" / "ignore").write_bytes(data)
        desc.append(f"core.excludesFile (default path): {data!r}")
    tracked = [f for f in files if rng.random() < 0.25 and not os.path.islink(repo / f)]
    if tracked:
        git(repo, "add", "-f", "--", *tracked)
        desc.append(f"tracked: {tracked}")
    if ignorecase:  # after "git add": it refuses two paths that differ only in case
        git(repo, "config", "core.ignorecase", "true")
        desc.append("core.ignorecase true")
    root = repo
    if rng.random() < 0.2 and len(dirs) > 1:
        sub = rng.choice(dirs[1:])
        root = repo / sub
        desc.append(f"root below top: {sub}")
    _tool_ignore_files(random.Random(seed + 0x5EED), repo, dirs, names, tracked, desc)
    return repo, root, "\n".join(desc)


def _tool_ignore_files(
    rng: random.Random,
    repo: Path,
    dirs: list[str],
    names: list[str],
    tracked: list[str],
    desc: list[str],
) -> None:
    """In half the cases, ``.readmanyignore`` files in some folders, with random patterns
    and lines naming tracked files and their folders (a tool ignore file hides tracked
    paths too; with ignore files off they must show, as git shows them). A generator of
    its own keeps the rest of each case as it was."""
    if rng.random() < 0.5:
        return
    for d in dirs:
        if rng.random() < (0.8 if d == "" else 0.3):
            lines = [_pattern(rng, names) for _ in range(rng.randint(0, 3))]
            below = [t for t in tracked if not d or t.startswith(d + "/")]
            for t in rng.sample(below, min(len(below), rng.randint(0, 2))):
                rest = t[len(d) + 1 :] if d else t
                if "/" in rest and rng.random() < 0.5:
                    rest = rest.rpartition("/")[0] + "/"  # the folder holding it
                lines.append("/" + _escape(rest))
            data = "".join(line + "\n" for line in lines).encode("utf-8")
            (repo / d / ".readmanyignore").write_bytes(data)
            desc.append(f"{d or '.'}/.readmanyignore: {data!r}")


def _escape(path: str) -> str:
    """``path`` as a pattern matching itself only (wildcards, ``\\``, a leading ``#``
    or ``!`` and trailing spaces escaped)."""
    out = "".join("\\" + c if c in "*?[\\" else c for c in path)
    if out.startswith(("#", "!")):
        out = "\\" + out
    stripped = out.rstrip(" ")
    return stripped + "\\ " * (len(out) - len(stripped))


def _ascii_fold(s: str) -> str:
    """git's case folding: ASCII letters only."""
    return s.translate(_FOLD)


_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def run_case(seed: int, base: Path, ignorecase: bool = False) -> str | None:
    """None if readmany agrees with git on case ``seed``, else a report.

    With ``ignorecase``, git on a case-sensitive file system takes an untracked file
    whose path differs from a tracked one only in case for that tracked file, and lists
    neither it nor its content (``index_file_exists`` with ``ignore_case``); readmany
    lists it when no pattern hides it, as ``git check-ignore --no-index`` judges it."""
    _, root, desc = make_case(seed, base, ignorecase)
    out = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    want = {p for p in os.fsdecode(out).split("\0") if p and os.path.lexists(root / p)}
    settings = Settings(default_excludes=[], deny_patterns=[])
    ix = Index.build(str(root), settings)
    off = Filters(use_default_excludes=False, respect_ignore_files=False)
    job = gitlist.start(str(root))
    assert job is not None
    listings = {
        "index walk, ignore files off": ix.files(off),
        f"cold listing ({job.fallback or 'git-seeded'}), ignore files off": job.files(
            settings, off
        ),
    }
    if ".readmanyignore" not in desc:
        on = off._replace(respect_ignore_files=True)
        listings["index walk"] = ix.files(on)
        job = gitlist.start(str(root))
        assert job is not None
        listings[f"cold listing ({job.fallback or 'git-seeded'})"] = job.files(settings, on)
    reports = []
    for what, listed in listings.items():
        report = _differs(root, want, set(listed), ix, ignorecase)
        if report is not None:
            reports.append(f"{what}: {report}")
    return f"{desc}\n" + "\n".join(reports) if reports else None


def _differs(root: Path, want: set[str], got: set[str], ix: Index, ignorecase: bool) -> str | None:
    """None if readmany's listing ``got`` agrees with git's ``want``, else a report.

    With ``ignorecase``, git on a case-sensitive file system takes an untracked file
    whose path differs from a tracked one only in case for that tracked file, and lists
    neither it nor its content (``index_file_exists`` with ``ignore_case``); readmany
    lists it when no pattern hides it, as ``git check-ignore --no-index`` judges it."""
    twins_ignored: set[str] = set()  # twins git calls ignored (it lists none as ignored)
    if ignorecase:
        tracked = set(os.fsdecode(git(root, "ls-files", "-z", "--cached")).split("\0"))
        folded = {_ascii_fold(t) for t in tracked}
        twins = [p for p in got - want if p not in tracked and _ascii_fold(p) in folded]
        if twins:
            proc = subprocess.run(
                ["git", "check-ignore", "--no-index", "-z", "--stdin"],
                cwd=root,
                input=os.fsencode("\0".join(twins)),
                capture_output=True,
                check=False,
            )
            ignored = {p for p in os.fsdecode(proc.stdout).split("\0") if p}
            got -= set(twins) - ignored  # an ignored twin listed stays a difference
            twins_ignored = ignored
    if got == want:
        return None
    if any("named explicitly" in w for w in ix.rules.warnings):
        # A root inside a folder git ignores is read as named (as ripgrep does): git
        # lists only tracked files there; readmany adds what git calls ignored, no more.
        out = git(root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard")
        ignored = {p for p in os.fsdecode(out).split("\0") if p} | twins_ignored
        if want <= got <= want | ignored:
            return None
    return (
        f"only readmany: {sorted(got - want)}\nonly git: {sorted(want - got)}\n"
        f"warnings: {ix.rules.warnings}"
    )


def _run_many(seeds: range, base: Path, ignorecase: bool = False) -> None:
    failures: list[str] = []
    for seed in seeds:
        case_dir = base / f"c{seed}"
        try:
            report = run_case(seed, case_dir, ignorecase)
        finally:
            shutil.rmtree(case_dir, ignore_errors=True)
        if report is not None:
            failures.append(report)
            if len(failures) >= 3:
                break
    assert not failures, f"{len(failures)} case(s) differ from git:\n\n" + "\n\n".join(failures)


def test_differential_default(git_env: Path) -> None:
    """300 random cases (seeds 0-299) in the default suite."""
    _run_many(range(300), git_env)


def test_differential_ignorecase(git_env: Path) -> None:
    """200 random cases (seeds 0-199) with ``core.ignorecase true``: ignore patterns match
    without regard to case, as git's do."""
    _run_many(range(200), git_env, ignorecase=True)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_differential_10k(git_env: Path) -> None:
    """10,000 random cases (seeds 1000-10999)."""
    _run_many(range(1000, 11000), git_env)


def test_differential_one(git_env: Path) -> None:
    """One case, chosen with READMANY_DIFF_SEED (default 7), for reproducing a failure."""
    _run_many(
        range(
            int(os.environ.get("READMANY_DIFF_SEED", "7")),
            int(os.environ.get("READMANY_DIFF_SEED", "7")) + 1,
        ),
        git_env,
    )
