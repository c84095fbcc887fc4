"""Build a deterministic benchmark tree: the Python standard library laid out as a repository.

Usage::

    python bench/gen_tree.py DEST [--files 100000] [--seed 0] [--empty]

The tree holds exactly ``--files`` regular files (``.git/`` not counted):

* ``copy00/``, ``copy01/``, … — copies of the running interpreter's standard library
  (``sysconfig.get_paths()["stdlib"]``, without ``site-packages/``, ``__pycache__/``,
  symlinks and files over 1 MiB), in sorted order, the last copy partial so the total
  comes out exact. Each copy has its own ``.gitignore`` (``/tmp/``, ``*.bak``, a
  negation) and, in a few seeded folders at depths 1-3, nested ``.gitignore`` files
  (``/generated/``, ``**/snapshots/*.snap``, ``!audit.log``…) with files each rule
  ignores or re-includes; about 2.5 % of ``.py`` files get an ignored ``__pycache__/*.pyc``.
* ignored bulk: ``node_modules/`` (~6 % of the files: thousands of small ``.js``/``.json``
  files, scoped and nested packages), ``.venv/`` (~3 %: ``pyvenv.cfg``, ``bin/``,
  ``lib/python3.X/site-packages/``), ``build/`` (~1.5 %) and ``dist/``.
* at the top: ``.gitignore`` (``*.log``, ``/tmp/``, ``__pycache__/``, ``/build/`` with the
  ``!/build/keep.txt`` negation git does *not* honour…), ``.env`` (ignored),
  ``.env.example``, ``debug.log``, ``tmp/``, ``README.md``, ``pyproject.toml``.

Then ``git init``, ``git add -A`` and one commit with fixed author, committer and dates.
The layout and contents depend only on the parameters and the standard library; the seed
picks the nested ``.gitignore`` folders, package names and ``.pyc`` files. ``--empty``
creates every file empty except the ignore files and ``pyvenv.cfg`` (for the 1M-path
scale tree).

Idempotent: the parameters and counts are kept in ``DEST/.git/readmany-bench-tree.json``;
a tree with the same parameters is reused, one with other parameters is rebuilt. The tree
is built in a sibling ``.DEST.partial`` folder and renamed into place, so an interrupted
build never leaves a tree that looks finished. Source files are copied, never hard-linked
to the interpreter's own files: benchmarks may write into the tree.

``build_tree()`` is the API for other benchmarks and tests. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import stat
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path

#: Bumped whenever the layout changes, so older trees are rebuilt rather than reused.
GENERATOR_VERSION = 1
#: Parameters and counts of a finished tree, inside its ``.git/`` so no walker lists it.
MARKER_NAME = "readmany-bench-tree.json"
#: Written first into a tree being built, so a stale partial build is recognised as ours.
PARTIAL_MARKER = ".readmany-bench-partial"
#: Standard library files above this size (static libraries, wheels) are left out.
MAX_SOURCE_BYTES = 1 << 20
#: Below this the fixed layout would crowd out the source copies.
MIN_FILES = 100
#: The big ignored folders at the top of every tree.
IGNORED_DIRS: tuple[str, ...] = ("node_modules", ".venv", "build", "dist")

_GIT_IDENTITY = (
    "-c",
    "user.name=bench",
    "-c",
    "user.email=bench@example.invalid",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
)
_GIT_DATE = "2000-01-01T00:00:00+0000"

ROOT_GITIGNORE = """\
# Python
__pycache__/
*.py[cod]
*.egg-info/
.venv/
/build/
# git keeps build/keep.txt ignored: a file inside an excluded folder can't be re-included
!/build/keep.txt
/dist/

# Node
node_modules/

# Logs and scratch space
*.log
/tmp/

# Secrets
.env
.env.*
!.env.example
"""

COPY_GITIGNORE = """\
# scratch space of this package
/tmp/
*.orig
*.bak
!keep.bak
"""

#: Nested ``.gitignore`` templates: (content, {relative path: text}) of the files beside it.
NESTED_TEMPLATES: tuple[tuple[str, dict[str, str]], ...] = (
    (
        "# keep the audit trail, whatever the top-level *.log says\n!audit.log\n",
        {"audit.log": "audit entry\n", "server.log": "GET / 200\n"},
    ),
    (
        "/generated/\n*.tmp\n!keep.tmp\n",
        {
            "generated/out.py": "VALUE = 1\n",
            "generated/data.json": "{}\n",
            "cache.tmp": "cache\n",
            "keep.tmp": "keep me\n",
        },
    ),
    (
        "**/snapshots/*.snap\n!**/snapshots/golden.snap\ncoverage/\n",
        {
            "snapshots/a.snap": "snapshot a\n",
            "snapshots/golden.snap": "golden\n",
            "coverage/index.html": "<html></html>\n",
        },
    ),
)


class TreeError(Exception):
    """The tree can't be built at DEST (it exists and isn't ours, git failed, …)."""


@dataclass(frozen=True)
class TreeInfo:
    """What ``build_tree`` built (or found), as recorded in the tree's marker file.

    ``files_on_disk`` counts regular files outside ``.git/`` (it equals ``files``);
    ``files_visible`` is what ``git ls-files`` lists after the commit (nothing is left
    untracked, so it is also ``git ls-files --cached --others --exclude-standard``).
    ``commit`` is the commit's hash: author, committer and dates are fixed, so equal
    parameters and an equal standard library give an equal hash on any machine.
    """

    root: Path
    files: int
    seed: int
    empty: bool
    files_on_disk: int
    files_visible: int
    copies: int
    source_files: int
    stdlib: str
    build_seconds: float
    reused: bool
    commit: str = ""
    generator: int = GENERATOR_VERSION
    ignored_dirs: tuple[str, ...] = IGNORED_DIRS

    def to_json(self) -> dict[str, object]:
        """JSON-ready builtins (``root`` as a string)."""
        data = asdict(self)
        data["root"] = str(self.root)
        data["ignored_dirs"] = list(self.ignored_dirs)
        return data

    def summary(self) -> str:
        """The one-line summary the command prints."""
        how = "reused" if self.reused else f"built in {self.build_seconds:.1f} s"
        kind = "empty files" if self.empty else "files"
        return (
            f"{self.root}: {self.files_on_disk:,} {kind} on disk, "
            f"{self.files_visible:,} visible to git, {self.copies} stdlib copies "
            f"of {self.source_files:,} files, {how}"
        )


@dataclass(frozen=True)
class _Entry:
    """One file to create: copied from ``source``, else written from ``data``.

    ``control`` files (ignore files, ``pyvenv.cfg``) keep their content in empty mode.
    """

    rel: str
    source: str | None = None
    data: bytes = b""
    control: bool = False


def stdlib_dir() -> Path:
    """The running interpreter's standard library folder."""
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_files(root: Path | None = None) -> list[str]:
    """Sorted POSIX paths, relative to ``root``, of the standard library files to copy.

    Leaves out ``site-packages/`` (machine-specific), ``__pycache__/``, symlinks and
    files over ``MAX_SOURCE_BYTES``.
    """
    base = stdlib_dir() if root is None else root
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d != "__pycache__"
            and not (here == base and d == "site-packages")
            and not (here / d).is_symlink()
        )
        for name in filenames:
            path = here / name
            st = path.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_SOURCE_BYTES:
                out.append(path.relative_to(base).as_posix())
    out.sort()
    return out


def _word(rng: random.Random, syllables: int) -> str:
    """A pronounceable lowercase name such as ``lomavi``."""
    consonants = "bcdfghjklmnprstvz"
    vowels = "aeiou"
    return "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables))


def _unique_names(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct package-like names."""
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        name = _word(rng, rng.randint(2, 4))
        if rng.random() < 0.3:
            name += "-" + _word(rng, 2)
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def _top_entries() -> Iterator[_Entry]:
    """The files at the top of the repository."""
    yield _Entry(".gitignore", data=ROOT_GITIGNORE.encode(), control=True)
    yield _Entry("README.md", data=b"# bench tree\n\nGenerated by bench/gen_tree.py.\n")
    yield _Entry(
        "pyproject.toml",
        data=b'[project]\nname = "benchproj"\nversion = "0.1.0"\n',
    )
    yield _Entry(".env", data=b"SECRET_TOKEN=not-a-real-secret\n")
    yield _Entry(".env.example", data=b"SECRET_TOKEN=\n")
    yield _Entry("debug.log", data=b"debug: started\n")
    yield _Entry("tmp/scratch.txt", data=b"scratch\n")
    yield _Entry("tmp/run-1.log", data=b"run 1\n")


def _build_dist_entries(rng: random.Random, count: int, sources: list[str]) -> Iterator[_Entry]:
    """``build/`` (a ``lib/`` of copied sources, the keep.txt trap) and ``dist/``."""
    yield _Entry("build/keep.txt", data=b"git keeps this ignored\n")
    yield _Entry("dist/benchproj-0.1.0.tar.gz", data=rng.randbytes(512))
    yield _Entry("dist/benchproj-0.1.0-py3-none-any.whl", data=rng.randbytes(384))
    yield _Entry(
        "build/bdist.linux-x86_64/wheel/benchproj-0.1.0.dist-info/WHEEL",
        data=b"Wheel-Version: 1.0\n",
    )
    py_sources = [s for s in sources if s.endswith(".py")]
    for i in range(max(0, count - 4)):
        src = py_sources[i % len(py_sources)]
        yield _Entry(f"build/lib/benchproj/{src}", source=src)


def _venv_entries(rng: random.Random, count: int, sources: list[str]) -> Iterator[_Entry]:
    """A virtual environment: ``pyvenv.cfg``, ``bin/`` and packages in site-packages."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    cfg = (
        f"home = /usr/bin\ninclude-system-site-packages = false\n"
        f"version = {version}.{sys.version_info.micro}\n"
    )
    yield _Entry(".venv/pyvenv.cfg", data=cfg.encode(), control=True)
    yield _Entry(".venv/.gitignore", data=b"# created by venv\n*\n", control=True)
    for script in ("activate", "activate.fish", "python", "python3", "pip"):
        yield _Entry(f".venv/bin/{script}", data=b"#!/bin/sh\n")
    site = f".venv/lib/python{version}/site-packages"
    remaining = count - 7
    names = _unique_names(rng, max(1, remaining // 40 + 1))
    index = 0
    for name in names:
        pkg = name.replace("-", "_")
        info = f"{site}/{pkg}-1.{rng.randint(0, 20)}.0.dist-info"
        for meta in ("METADATA", "RECORD", "WHEEL", "INSTALLER"):
            yield _Entry(f"{info}/{meta}", data=f"{meta}: {name}\n".encode())
        for _ in range(rng.randint(20, 60)):
            src = sources[index % len(sources)]
            index += 1
            yield _Entry(f"{site}/{pkg}/{src}", source=src)
    # Enough for any budget: the caller stops at the budget.
    while True:
        src = sources[index % len(sources)]
        yield _Entry(f"{site}/zz_vendor/{index}/{Path(src).name}", source=src)
        index += 1


def _js(rng: random.Random, name: str) -> bytes:
    """A few lines of CommonJS."""
    n = rng.randint(1, 9)
    body = "".join(f"  acc = (acc * 31 + {rng.randint(0, 999)}) | 0;\n" for _ in range(n))
    return (
        f"'use strict';\n// {name}\nmodule.exports = function {name.replace('-', '_')}(x) {{\n"
        f"  let acc = x;\n{body}  return acc;\n}};\n"
    ).encode()


def _package_files(rng: random.Random, prefix: str, name: str) -> Iterator[_Entry]:
    """The files of one npm package under ``prefix``."""
    version = f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
    manifest = {"name": name, "version": version, "main": "index.js", "license": "MIT"}
    yield _Entry(f"{prefix}/package.json", data=json.dumps(manifest, indent=2).encode() + b"\n")
    yield _Entry(f"{prefix}/index.js", data=_js(rng, "index"))
    yield _Entry(f"{prefix}/README.md", data=f"# {name}\n".encode())
    yield _Entry(f"{prefix}/LICENSE", data=b"MIT\n")
    for _ in range(rng.randint(2, 14)):
        mod = _word(rng, 3)
        folder = rng.choice(("lib", "lib", "src", "dist", "lib/internal"))
        yield _Entry(f"{prefix}/{folder}/{mod}.js", data=_js(rng, mod))
        if rng.random() < 0.3:
            yield _Entry(f"{prefix}/{folder}/{mod}.d.ts", data=b"export {};\n")
    if rng.random() < 0.2:
        yield _Entry(f"{prefix}/tsconfig.json", data=b"{}\n")


def _node_modules_entries(rng: random.Random) -> Iterator[_Entry]:
    """An endless ``node_modules/``: plain, scoped and nested packages (caller stops it)."""
    yield _Entry("node_modules/.package-lock.json", data=b'{"lockfileVersion": 3}\n')
    yield _Entry("npm-debug.log", data=b"npm ERR! bench\n")
    scope = "@" + _word(rng, 2)
    seen: set[str] = set()
    while True:
        name = _unique_names(rng, 1)[0]
        if rng.random() < 0.15:
            name = f"{scope}/{name}"
        if name in seen:
            continue
        seen.add(name)
        prefix = f"node_modules/{name}"
        yield from _package_files(rng, prefix, name)
        if rng.random() < 0.2:
            dep = _word(rng, 3)
            yield from _package_files(rng, f"{prefix}/node_modules/{dep}", dep)
        if rng.random() < 0.1:
            yield _Entry(f"node_modules/.bin/{name.split('/')[-1]}", data=b"#!/bin/sh\n")


def _nested_choices(rng: random.Random, sources: list[str]) -> dict[str, int]:
    """Folders of a copy that get a nested ``.gitignore``, mapped to a template index.

    One folder at each depth 1, 2 and 3 when the standard library has them.
    """
    by_depth: dict[int, list[str]] = {}
    for folder in sorted({str(Path(s).parent) for s in sources} - {"."}):
        by_depth.setdefault(folder.count("/") + 1, []).append(folder)
    chosen: dict[str, int] = {}
    for depth in (1, 2, 3):
        folders = by_depth.get(depth)
        if folders:
            chosen[rng.choice(folders)] = rng.randrange(len(NESTED_TEMPLATES))
    return chosen


def _copy_entries(seed: int, sources: list[str]) -> Iterator[tuple[int, _Entry]]:
    """Endless numbered copies of the sources with their ignore files and ignored files.

    Yields ``(copy number, entry)``.
    """
    copy = 0
    while True:
        rng = random.Random(f"{seed}:copy:{copy}")
        top = f"copy{copy:02d}"
        yield copy, _Entry(f"{top}/.gitignore", data=COPY_GITIGNORE.encode(), control=True)
        for rel, text in (
            ("tmp/scratch.txt", "scratch\n"),
            ("notes.orig", "orig\n"),
            ("old.bak", "old\n"),
            ("keep.bak", "kept by a negation\n"),
        ):
            yield copy, _Entry(f"{top}/{rel}", data=text.encode())
        for folder, template in _nested_choices(rng, sources).items():
            content, files = NESTED_TEMPLATES[template]
            base = f"{top}/{folder}"
            yield copy, _Entry(f"{base}/.gitignore", data=content.encode(), control=True)
            for rel, text in files.items():
                yield copy, _Entry(f"{base}/{rel}", data=text.encode())
        for src in sources:
            folder = str(Path(src).parent)
            yield copy, _Entry(f"{top}/{src}", source=src)
            if src.endswith(".py") and rng.random() < 0.025:
                base = top if folder == "." else f"{top}/{folder}"
                pyc = f"{base}/__pycache__/{Path(src).stem}.{sys.implementation.cache_tag}.pyc"
                yield copy, _Entry(pyc, data=b"\xa7\r\r\n" + rng.randbytes(60))
        copy += 1


def _plan(files: int, seed: int, sources: list[str]) -> Iterator[tuple[int, _Entry]]:
    """Every file of the tree, in creation order, exactly ``files`` of them.

    Yields ``(copy number or -1, entry)``; paths may repeat only by accident of the
    standard library's names, and the writer skips repeats without counting them.
    """
    rng = random.Random(f"{seed}:layout")
    build_budget = max(6, round(files * 0.015))
    venv_budget = max(10, round(files * 0.03))
    node_budget = max(12, round(files * 0.06))
    for entry in _top_entries():
        yield -1, entry
    for stream, budget in (
        (_build_dist_entries(rng, build_budget, sources), build_budget),
        (_venv_entries(rng, venv_budget, sources), venv_budget),
        (_node_modules_entries(rng), node_budget),
    ):
        for _, entry in zip(range(budget), stream, strict=False):
            yield -1, entry
    yield from _copy_entries(seed, sources)


def _write(root: Path, entry: _Entry, stdlib: Path, empty: bool, made: set[str]) -> None:
    """Create one file (and its folders)."""
    parent, _, _ = entry.rel.rpartition("/")
    if parent and parent not in made:
        (root / parent).mkdir(parents=True, exist_ok=True)
        made.add(parent)
    target = root / entry.rel
    if empty and not entry.control:
        os.mknod(target, 0o644 | stat.S_IFREG)
    elif entry.source is not None:
        shutil.copyfile(stdlib / entry.source, target)
    else:
        target.write_bytes(entry.data)


def _git(root: Path, *args: str) -> bytes:
    """Run git in ``root`` with the bench identity and fixed dates; return stdout."""
    env = dict(os.environ, GIT_AUTHOR_DATE=_GIT_DATE, GIT_COMMITTER_DATE=_GIT_DATE)
    proc = subprocess.run(
        ["git", *_GIT_IDENTITY, *args], cwd=root, env=env, capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise TreeError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout


def read_marker(dest: Path) -> TreeInfo | None:
    """The recorded ``TreeInfo`` of a generated tree at ``dest``, or None if it isn't one."""
    marker = dest / ".git" / MARKER_NAME
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TreeError(f"unreadable marker {marker}: {exc}") from exc
    known = {f.name for f in fields(TreeInfo)}
    data = {k: v for k, v in data.items() if k in known}
    data["root"] = dest
    data["reused"] = True
    data["ignored_dirs"] = tuple(data.get("ignored_dirs", IGNORED_DIRS))
    try:
        return TreeInfo(**data)
    except TypeError as exc:  # a marker from an older generator, missing fields
        raise TreeError(f"outdated marker {marker}: {exc}; delete {dest} to rebuild") from exc


def _same_parameters(info: TreeInfo, files: int, seed: int, empty: bool) -> bool:
    """Whether a recorded tree was made by this generator version with these parameters."""
    return (
        info.generator == GENERATOR_VERSION
        and (info.files, info.seed, info.empty) == (files, seed, empty)
        and info.stdlib == str(stdlib_dir())
    )


def _remove_ours(path: Path, marker: Path) -> None:
    """Delete ``path`` if ``marker`` (a file inside it) shows we made it; else refuse."""
    if not path.exists():
        return
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()
        return
    if not marker.is_file():
        raise TreeError(f"{path} exists and was not made by gen_tree.py; refusing to replace it")
    shutil.rmtree(path)


def build_tree(dest: Path, files: int = 100_000, seed: int = 0, empty: bool = False) -> TreeInfo:
    """Build (or reuse) the benchmark tree at ``dest`` and return what it holds.

    Reuses a tree at ``dest`` built with the same parameters; replaces one built with
    other parameters; raises ``TreeError`` if ``dest`` is anything else that isn't empty.
    """
    if files < MIN_FILES:
        raise ValueError(f"files must be at least {MIN_FILES}, got {files}")
    dest = Path(dest).absolute()
    try:
        existing = read_marker(dest)
    except TreeError:
        existing = None  # ours (the marker exists) but unreadable: rebuilt below
    if existing is not None and _same_parameters(existing, files, seed, empty):
        return existing
    _remove_ours(dest, dest / ".git" / MARKER_NAME)

    start = time.perf_counter()
    stdlib = stdlib_dir()
    sources = stdlib_files(stdlib)
    if not sources:
        raise TreeError(f"no standard library files found under {stdlib}")
    work = dest.parent / f".{dest.name}.partial"
    _remove_ours(work, work / PARTIAL_MARKER)
    work.mkdir(parents=True)
    (work / PARTIAL_MARKER).touch()

    made: set[str] = set()
    written: set[str] = set()
    copies = 0
    for copy, entry in _plan(files, seed, sources):
        if len(written) == files:
            break
        if entry.rel in written:
            continue
        _write(work, entry, stdlib, empty, made)
        written.add(entry.rel)
        copies = max(copies, copy + 1)
    (work / PARTIAL_MARKER).unlink()

    _git(work, "-c", "init.defaultBranch=main", "init", "-q")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", f"bench tree: {files} files, seed {seed}")
    visible = _git(work, "ls-files", "-z").count(b"\0")
    commit = _git(work, "rev-parse", "HEAD").decode().strip()
    info = TreeInfo(
        root=dest,
        files=files,
        seed=seed,
        empty=empty,
        files_on_disk=len(written),
        files_visible=visible,
        copies=copies,
        source_files=len(sources),
        stdlib=str(stdlib),
        build_seconds=round(time.perf_counter() - start, 3),
        reused=False,
        commit=commit,
    )
    record = info.to_json()
    del record["root"], record["reused"]
    (work / ".git" / MARKER_NAME).write_text(json.dumps(record, indent=2) + "\n", "utf-8")
    dest.parent.mkdir(parents=True, exist_ok=True)
    work.rename(dest)
    return info


def main(argv: list[str] | None = None) -> int:
    """Command line entry point: build or reuse the tree and print a one-line summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path, help="folder to create (reused if already built)")
    parser.add_argument("--files", type=int, default=100_000, help="files in the tree")
    parser.add_argument("--seed", type=int, default=0, help="seed for the seeded choices")
    parser.add_argument("--empty", action="store_true", help="create empty files, not copies")
    args = parser.parse_args(argv)
    try:
        info = build_tree(args.dest, files=args.files, seed=args.seed, empty=args.empty)
    except (TreeError, ValueError, OSError) as exc:
        print(f"gen_tree: {exc}", file=sys.stderr)
        return 1
    print(info.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
