"""Smoke test of the benchmark tooling: a tiny generated tree and one run of bench_files.py.

No timing is asserted: the benchmark's numbers are reported, never tested.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers import git

BENCH = Path(__file__).resolve().parents[2] / "bench"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _load(name: str) -> ModuleType:
    """Import ``bench/<name>.py`` under a private module name (bench/ isn't a package)."""
    spec = importlib.util.spec_from_file_location(f"readmany_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen_tree() -> ModuleType:
    """The ``bench/gen_tree.py`` module."""
    return _load("gen_tree")


@pytest.fixture(scope="module")
def tree(gen_tree: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A 300-file tree (``TreeInfo``)."""
    return gen_tree.build_tree(tmp_path_factory.mktemp("bench") / "tree", files=300)


def test_tree_layout(tree: Any) -> None:
    root: Path = tree.root
    assert tree.files_on_disk == 300
    on_disk = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
    assert len(on_disk) == 300
    for folder in ("node_modules", ".venv", "build", "dist", "copy00", "tmp"):
        assert (root / folder).is_dir(), folder
    assert (root / ".venv" / "pyvenv.cfg").is_file()
    assert (root / ".env").is_file()
    assert list(root.glob("*.log"))
    nested = [p for p in root.rglob(".gitignore") if len(p.relative_to(root).parts) >= 3]
    assert nested, "no .gitignore below the first level"

    assert git(root, "rev-list", "--count", "HEAD").strip() == "1"
    tracked = git(root, "ls-files").splitlines()
    assert len(tracked) == tree.files_visible
    assert 0 < len(tracked) < 300
    for top in (".venv/", "build/", "dist/", "tmp/", "copy00/tmp/"):
        assert not any(p.startswith(top) for p in tracked), top
    for anywhere in ("node_modules/", "__pycache__/"):
        assert not any(p.startswith(anywhere) or f"/{anywhere}" in p for p in tracked), anywhere
    assert ".env" not in tracked and ".env.example" in tracked
    assert "build/keep.txt" not in tracked  # excluded folder: the negation can't apply
    assert not any(p.endswith(".log") and not p.endswith("/audit.log") for p in tracked)
    assert git(root, "status", "--porcelain") == ""


def test_tree_is_reused(gen_tree: ModuleType, tree: Any) -> None:
    again = gen_tree.build_tree(tree.root, files=300)
    assert again.reused
    assert (again.files_on_disk, again.files_visible) == (tree.files_on_disk, tree.files_visible)


def test_bench_files_runs(tree: Any, tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "bench_files.py"),
            "--tree",
            str(tree.root),
            "--runs",
            "1",
            "--warmup",
            "0",
            "--results-dir",
            str(results),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "| command" in out and "| median ms |" in out and "ratio to rg" in out
    assert re.search(r"target readmany ≤ 1\.5x rg: (PASS|FAIL|SKIP)", out)
    assert "readmany set differences:" in out
    saved = json.loads((results / "files-latest.json").read_text(encoding="utf-8"))
    assert saved["tree"]["files_on_disk"] == 300

    if not (BENCH.parent / "readmany_daemon" / "cli.py").is_file():
        pytest.skip("readmany_daemon.cli doesn't exist yet: readmany row not checked")
    row = re.search(r"^\| readmany files --no-daemon +\| +([\d.,]+) \|", out, re.MULTILINE)
    assert row is not None, out
    assert re.search(r"readmany set differences: \d+ \(\d+ unexpected", out), out
    assert any(t["label"] == "readmany" and t["returncode"] == 0 for t in saved["timings"])


def test_bench_daemon_quick(gen_tree: ModuleType, tmp_path: Path) -> None:
    """``bench_daemon.py --quick`` on a fresh 300-file tree: it runs, prints the table and
    writes its JSON; the figures and PASS/FAIL verdicts are not checked."""
    if not (BENCH.parent / "readmany_daemon" / "daemon.py").is_file():
        pytest.skip("readmany_daemon.daemon doesn't exist yet")
    info = gen_tree.build_tree(tmp_path / "tree", files=300)
    results = tmp_path / "results"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "bench_daemon.py"),
            "--tree",
            str(info.root),
            "--quick",
            "--results-dir",
            str(results),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "| measure" in proc.stdout and "| readmany" in proc.stdout, proc.stdout
    assert "ratio / target" in proc.stdout and "| result" in proc.stdout
    saved = json.loads((results / "daemon-latest.json").read_text(encoding="utf-8"))
    assert len(saved["rows"]) >= 7
    assert not list(info.root.rglob("_rmbench_*")), "the benchmark left files in the tree"


def _peers_installed() -> bool:
    """Whether ``bench/peers/node_modules`` holds the pinned npm packages (no install)."""
    peers = BENCH / "peers"
    try:
        wanted = json.loads((peers / "package.json").read_text(encoding="utf-8"))["dependencies"]
        return all(
            json.loads((peers / "node_modules" / name / "package.json").read_text())["version"]
            == version
            for name, version in wanted.items()
        )
    except (OSError, ValueError, KeyError):
        return False


def test_bench_peers_quick(gen_tree: ModuleType, tmp_path: Path) -> None:
    """``bench_peers.py --quick`` on a fresh 200-file tree: the readmany rows (cold CLI and
    warm socket) and the rg / ``xargs cat`` rows of every request, with their file
    checks; Gemini's tool too when ``bench/peers`` is already installed (never installed
    here: ``npm ci`` is too slow for the default suite). No figure is checked."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed: apt-get install nodejs npm (node >= 20)")
    if shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed: apt-get install ripgrep")
    if not (BENCH.parent / "readmany_daemon" / "daemon.py").is_file():
        pytest.skip("readmany_daemon.daemon doesn't exist yet")
    gemini = _peers_installed()
    info = gen_tree.build_tree(tmp_path / "tree", files=200)
    results = tmp_path / "results"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "bench_peers.py"),
            "--quick",
            "--no-install",
            "--tree",
            str(info.root),
            "--peers",
            "rg,xargs" + (",gemini" if gemini else ""),
            "--gemini-cold",
            "",
            "--results-dir",
            str(results),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "| tree" in out and "| median ms |" in out and "÷ warm" in out, out
    for request in ("full", "default", "named10", "listing"):
        for tool in ("readmany cold (CLI --no-daemon)", "readmany warm (socket)"):
            row = re.search(
                rf"^\| tree +\| {request} +\| {re.escape(tool)} +\| +[\d.,]+ \|", out, re.MULTILINE
            )
            assert row is not None, (request, tool, out)
    for pattern in (
        r"^\| tree +\| full +\| rg --files .*xargs -0 cat .*same files",
        r"^\| tree +\| named10 +\| xargs cat \(10 names\) .*same files",
        r"^\| tree +\| listing +\| rg --files --hidden .*same files",
        r"^\| tree +\| full +\| readmany cold .*same files",
    ):
        assert re.search(pattern, out, re.MULTILINE), (pattern, out)
    if gemini:
        assert re.search(r"^\| tree +\| full +\| gemini read_many_files \(warm", out, re.M), out
    saved = json.loads((results / "peers-latest.json").read_text(encoding="utf-8"))
    mine = [r for r in saved["results"] if r["kind"].startswith("readmany")]
    assert len(mine) == 8 and all(r["median_ms"] is not None and not r["error"] for r in mine)


def _bench(name: str, results: Path, *args: str, saved_as: str = "") -> tuple[str, Any]:
    """Run ``bench/bench_<name>.py ARGS --results-dir RESULTS``, which must succeed;
    its standard output and the JSON it wrote (``<saved_as or name>-latest.json``)."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / f"bench_{name}.py"), *args, "--results-dir", str(results)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, json.loads(
        (results / f"{saved_as or name}-latest.json").read_text(encoding="utf-8")
    )


def test_bench_scale_quick(tmp_path: Path) -> None:
    """``bench_scale.py --quick`` (300 and 1,000 empty files in a temporary folder): it
    runs, prints the table with the flatness target and writes its JSON and plot into the
    results folder given, not into the repository."""
    results = tmp_path / "results"
    plot = BENCH / "plots" / "scale.png"
    before = plot.stat().st_mtime_ns if plot.exists() else None
    out, saved = _bench("scale", results, "--quick")
    assert "| paths (tree)" in out and "bytes/file" in out, out
    assert saved
    assert (plot.stat().st_mtime_ns if plot.exists() else None) == before


def _session_repo(repo: Path, session: list[str]) -> None:
    """A git repository at ``repo``: ``src/a.py`` .. ``src/e.py`` committed, then a day
    later one session of ``session``'s commits by one author, an hour apart, each
    rewriting the files named by its letters (``"ab"``: ``src/a.py`` and ``src/b.py``).
    Git runs under the environment as it is: callers take the ``git_env`` fixture (a
    committer identity, no user configuration)."""
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    when = 1_600_000_000

    def commit(message: str, names: str) -> None:
        for name in names:
            (repo / "src" / f"{name}.py").write_text(f"# {name} {message}\n" * 200, "utf-8")
        date = f"@{when} +0000"
        env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        git(repo, "add", "-A", env=env)
        git(repo, "commit", "-q", "-m", message, env=env)

    commit("start", "abcde")
    when += 86_400  # the session begins a day later
    for n, names in enumerate(session):
        when += 3600
        commit(f"edit {n}", names)


def test_bench_stable_replays_sessions_of_a_small_repo(tmp_path: Path, git_env: Path) -> None:
    """``bench_stable.py --repo`` on a repository the test builds: one session of three
    commits by one author, an hour apart, each changing ``src/a.py`` (first in path
    order). It leaves the repository as it was, finds same-tree stable re-packs
    byte-identical, and keeps more of each re-pack in stable order than in path order."""
    repo = tmp_path / "repo"
    _session_repo(repo, ["a", "a", "a"])
    head = git(repo, "rev-parse", "HEAD")
    out, saved = _bench("stable", tmp_path / "results", "--repo", str(repo))
    assert "| stable" in out and "| request-order" in out, out
    assert saved["sessions"] == 1 and saved["packs"] == 3
    assert saved["same_tree_not_identical"] == 0
    shares = saved["median_prefix_share"]
    assert shares["stable"] > shares["request-order"]
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""


def test_bench_stable_bound_knows_the_next_change(tmp_path: Path, git_env: Path) -> None:
    """``bench_stable.py --bound`` replays a session from git's objects: its first commit
    changes ``src/a.py`` and ``src/b.py``, the next two ``src/a.py`` again. As the daemon
    orders the two (one commit: the same git time, then path order; the daemon's own
    replay gives that figure) the second commit's change to ``a.py`` ends the prefix
    before ``b.py``; the order that knows ``a.py`` changes again puts it last and keeps
    ``b.py``, so its median is higher."""
    repo = tmp_path / "repo"
    _session_repo(repo, ["ab", "a", "a"])
    out, saved = _bench(
        "stable", tmp_path / "results", "--repo", str(repo), "--bound", saved_as="stable-bound"
    )
    assert "knows the future" in out, out
    shares = saved["median_prefix_share"]
    assert shares["knows the future"] > shares["oldest change first"] + 0.2, shares
    # (one commit's files share its time: oldest change first is path order here)
    assert shares["path"] == shares["oldest change first"]
    # the replay is the daemon's own stable order, up to the headers
    _, daemon = _bench("stable", tmp_path / "results", "--repo", str(repo))
    got = daemon["median_prefix_share"]["stable"]
    assert got == pytest.approx(shares["oldest change first"], abs=0.03)


def test_bench_stable_sessions_follow_parents(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session is a line of work: each commit's first parent is the one before. Two
    branches by one author whose commits ``git log`` interleaves give two sessions, not
    none (and not one that jumps between the branches); another author's commit, or a
    gap of 2 hours, ends a session."""
    monkeypatch.syspath_prepend(str(BENCH))  # its ``common``
    stable = _load("bench_stable")
    hour = 3600

    def c(sha: str, parent: str, when: int, author: str = "me") -> Any:
        return (sha, author, when * hour // 4, ["src/x.py"], parent)

    history = [
        c("a1", "p", 0), c("b1", "q", 1), c("a2", "a1", 2), c("b2", "b1", 3),
        c("a3", "a2", 4), c("b3", "b2", 5), c("x1", "a3", 6, "you"), c("y1", "b3", 14),
    ]  # fmt: skip
    assert stable.sessions(history, "src/**/*.py", 2.0, 3) == [
        ["a1", "a2", "a3"],
        ["b1", "b2", "b3"],
    ]
    assert stable.sessions(history, "src/**/*.py", 2.0, 4) == []
