"""Benchmark: how much of a re-pack a provider prompt cache keeps, with ``order: "stable"``
against request (path) order (issue 25 item 6, PROTOCOL §3 ``order``).

Usage::

    python bench/bench_stable.py --repo CLONE [--glob 'src/**/*.py'] [--sessions 40]

Replays work sessions of CLONE's history: runs of at least ``--min-run`` (3)
consecutive commits (no merges, oldest first; each one's first parent is the one before:
one line of work, as ``git log``'s order interleaves branches) by one author, each less
than ``--gap-hours`` (2) after the one before, that change a file ``--glob`` matches. The
``--sessions`` most recent such runs are replayed in one temporary clone of CLONE
(CLONE itself is never changed): the work tree is moved to the parent of a session's
first commit (a root commit: to that commit), then to each of its commits in turn
(``git checkout``). After each move
the glob is re-packed whole (``preferFullRead: true``, ``maxTotalFiles`` 100000, no
total limit), once with ``order: "stable"`` and once in request order, through the
daemon's own service (``runtime.service.Service``, stat freshness), and each pack is
compared with the previous pack of the same order: the share of its characters that
are a byte-identical prefix of the previous one is what a provider cache that matches
a byte prefix keeps.

Prints the median share for both orders, and how many same-tree stable re-packs were
not byte-identical (must be 0), and writes ``bench/results/stable-latest.json``
(``--results-dir`` elsewhere).

``--bound`` replays the same sessions from git's objects alone, without the daemon:
the stable order's rules (PROTOCOL §4 "Stable order": seeded oldest git change first,
an unchanged file keeps its place, changed and new files go last) leave one choice, the
order among the files that change at once. It reports that replay with the daemon's
choice (oldest git change first, as the seed: the figure the daemon's own replay
gives), with path order, and with an order that knows the future (of the files
changing at once, the one that changes again soonest goes last): what an order within
those rules could keep with a perfect guess.
Each pack there is the files' contents, each after a header of its path.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import REPO_ROOT, table, write_results
from wcmatch.glob import GLOBSTAR, globmatch

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.index.stable_order import BATCH_COMMITS
from readmany_daemon.runtime.requests import RequestContext
from readmany_daemon.runtime.service import Service
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import decode_read_request

#: One commit: (hash, author email, committer time in seconds, changed paths, first
#: parent's hash or "").
Commit = tuple[str, str, int, list[str], str]


def _git(cwd: Path | str, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "core.quotepath=off", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="surrogateescape",
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench_stable: git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def matches(glob: str, path: str) -> bool:
    """Whether ``path`` matches ``glob`` (``**`` any folders, as a request glob)."""
    return bool(globmatch(path, glob, flags=GLOBSTAR))


def commits(repo: Path) -> list[Commit]:
    """CLONE's commits without merges, oldest first, with their changed paths."""
    out = _git(
        repo, "log", "--reverse", "--no-merges", "--format=//%H%x1f%ae%x1f%ct%x1f%P", "--name-only"
    )
    found: list[Commit] = []
    for line in out.splitlines():
        if line.startswith("//"):
            sha, email, when, parents = line[2:].split("\x1f")
            found.append((sha, email, int(when), [], parents.partition(" ")[0]))
        elif line and found:
            found[-1][3].append(line)
    return found


def sessions(history: list[Commit], glob: str, gap_hours: float, min_run: int) -> list[list[str]]:
    """Runs of at least ``min_run`` consecutive commits of ``history`` (each one's first
    parent the one before: followed through the parents, so that ``git log``'s
    interleaving of branches neither splits nor joins them) by one author, each less than
    ``gap_hours`` after the one before, every one changing a path that ``glob`` matches;
    their hashes, oldest first, the runs in the order their last commits come."""
    open_runs: dict[str, list[Commit]] = {}  # by the hash of the run's last commit
    ended: list[tuple[int, list[Commit]]] = []
    for at, commit in enumerate(history):
        if not any(matches(glob, p) for p in commit[3]):
            continue
        run = open_runs.pop(commit[4], None)
        if (
            run is None
            or commit[1] != run[-1][1]
            or not 0 <= commit[2] - run[-1][2] < gap_hours * 3600
        ):
            run = []
        run.append(commit)
        open_runs[commit[0]] = run
        ended.append((at, run))
    last = {id(run): at for at, run in ended}  # each run once, at its last commit
    return [[c[0] for c in run] for at, run in ended if last[id(run)] == at and len(run) >= min_run]


def common_prefix(before: str | bytes, after: str | bytes) -> int:
    """The length of the longest common prefix of two texts (or byte strings)."""
    low, high = 0, min(len(before), len(after))  # the common prefix is in [low, high]
    while low < high:
        mid = (low + high + 1) // 2
        if before[:mid] == after[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def prefix_share(before: str, after: str) -> float:
    """The share of ``after``'s characters that are a prefix it has in common with
    ``before`` (1.0 for two equal texts; 0.0 for an empty ``after``)."""
    return common_prefix(before, after) / len(after) if after else 0.0


def run(repo: Path, glob: str, count: int, gap_hours: float, min_run: int) -> dict[str, Any]:
    """Replay the ``count`` most recent sessions of ``repo``; returns the results."""
    chosen = sessions(commits(repo), glob, gap_hours, min_run)[-count:]
    if not chosen:
        raise SystemExit(f"bench_stable: no work session in {repo} changes {glob}")
    base = {"paths": [glob], "preferFullRead": True, "maxTotalFiles": 100_000}
    base |= {"maxTotalChars": 1 << 40, "sync": "stat", "format": "separator"}
    shares: dict[str, list[float]] = {"stable": [], "request-order": []}
    not_identical = 0
    sizes: list[int] = []
    with tempfile.TemporaryDirectory(prefix="rmb-stable-") as tmp:
        for var in ("XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            os.environ[var] = os.path.join(tmp, var.lower())
        work = Path(tmp) / "work"
        _git(tmp, "clone", "--quiet", "--no-checkout", str(repo), str(work))
        svc = Service(Settings(), watch=False, snapshots=False, warm_cache=False)
        try:
            entry = None
            for session in chosen:
                prev: dict[str, str] = {}
                has_parent = subprocess.run(
                    ["git", "rev-parse", "--verify", "--quiet", f"{session[0]}^"],
                    cwd=work,
                    capture_output=True,
                    check=False,
                )
                steps = [f"{session[0]}^", *session] if has_parent.returncode == 0 else session
                for step, sha in enumerate(steps):
                    _git(work, "checkout", "--quiet", "--force", sha)
                    if entry is None:
                        entry = svc.acquire(str(work), Settings())
                    for order in ("stable", "request-order"):
                        params = base | ({"order": "stable"} if order == "stable" else {})
                        text = _pack(svc, entry, params)
                        if order == "stable" and _pack(svc, entry, params) != text:
                            not_identical += 1
                        if step:
                            shares[order].append(prefix_share(prev[order], text))
                        else:
                            sizes.append(len(text))
                        prev[order] = text
        finally:
            svc.close()
    return {
        "repo": str(repo),
        "glob": glob,
        "sessions": len(chosen),
        "packs": len(shares["stable"]),
        "median_pack_chars": statistics.median(sizes),
        "median_prefix_share": {k: statistics.median(v) for k, v in shares.items()},
        "mean_prefix_share": {k: statistics.fmean(v) for k, v in shares.items()},
        "same_tree_not_identical": not_identical,
        "shares": shares,
    }


class _Objects:
    """Trees and blobs of ``repo`` read through one ``git cat-file --batch``."""

    def __init__(self, repo: Path, glob: str) -> None:
        self.repo, self.glob = repo, glob
        self._blobs: dict[str, bytes] = {}
        self._trees: dict[str, dict[str, str]] = {}

    def tree(self, sha: str) -> dict[str, str]:
        """``{path: blob id}`` of the files the glob matches at commit ``sha``."""
        if sha not in self._trees:
            listed = _git(self.repo, "ls-tree", "-r", "-z", sha)
            self._trees[sha] = {
                path: meta.split()[2]
                for meta, _, path in (e.partition("\t") for e in listed.split("\0") if e)
                if matches(self.glob, path)
            }
        return self._trees[sha]

    def blob(self, oid: str) -> bytes:
        if oid not in self._blobs:
            self._blobs[oid] = subprocess.run(
                ["git", "cat-file", "blob", oid], cwd=self.repo, capture_output=True, check=True
            ).stdout
        return self._blobs[oid]


def _kept(
    git: _Objects, before: list[str], old: dict[str, str], after: list[str], new: dict[str, str]
) -> float:
    """The share of the pack ``after`` (paths in order, ``new`` their blobs) that is a
    prefix of the pack ``before`` (``old``): whole files while path and blob agree, then
    the common prefix of the first differing file when its path is the same."""
    kept = 0
    for was, now in zip(before, after, strict=False):
        if was != now:
            break
        kept += len(now) + 1
        if old[was] != new[now]:
            a, b = git.blob(old[was]), git.blob(new[now])
            kept += common_prefix(a, b)
            break
        kept += len(git.blob(new[now]))
    total = sum(len(p) + 1 + len(git.blob(new[p])) for p in after)
    return kept / total if total else 0.0


def bound(repo: Path, glob: str, chosen: list[list[str]]) -> dict[str, float]:
    """The median prefix share of the stable order's replay from git's objects, with
    the files changing at once in path order (``"path"``), as the daemon orders them
    (``"oldest change first"``: ``StableOrder.places``) and in the order that knows each
    one's next change (``"knows the future"``)."""
    git = _Objects(repo, glob)
    steps = [
        [_git(repo, "rev-parse", f"{s[0]}^").strip(), *s] if _has_parent(repo, s[0]) else s
        for s in chosen
    ]
    moves = [(a, b) for session in steps for a, b in itertools.pairwise(session)]

    def next_change(path: str, after: int) -> int:
        for n in range(after + 1, len(moves)):
            a, b = moves[n]
            if git.tree(a).get(path) != git.tree(b).get(path):
                return n
        return len(moves)

    out: dict[str, float] = {}
    for name in ("path", "oldest change first", "knows the future"):
        seq: dict[str, int] = {}
        places = itertools.count()
        order: list[str] = []
        cur: dict[str, str] | None = None
        shares: list[float] = []
        move = -1
        for session in steps:
            for step, sha in enumerate(session):
                tree = git.tree(sha)
                if cur is None:
                    for path in _seed(repo, sha, tree):
                        seq[path] = next(places)
                else:
                    moved = sorted(p for p in tree if cur.get(p) != tree[p])
                    if step:
                        move += 1
                    if name == "knows the future":
                        moved.sort(key=lambda p: -next_change(p, move))
                    elif name == "oldest change first" and len(moved) > 1:
                        times = _last_changes(repo, sha, BATCH_COMMITS)
                        moved.sort(key=lambda p: (p not in seq, times.get(p, 0)))
                    for path in moved:
                        seq[path] = next(places)
                now = sorted(tree, key=seq.__getitem__)
                if step and cur is not None:
                    shares.append(_kept(git, order, cur, now, tree))
                order, cur = now, tree
        out[name] = statistics.median(shares)
    return out


def _has_parent(repo: Path, sha: str) -> bool:
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{sha}^"],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    return found.returncode == 0


def _last_changes(repo: Path, sha: str, commits: int = 0) -> dict[str, int]:
    """``{path: committer time}`` of the newest commit changing each path, of the last
    ``commits`` (0: all) before ``sha`` (as ``index.stable_order``)."""
    changed: dict[str, int] = {}
    when = 0
    limit = [f"--max-count={commits}"] if commits else []
    for line in _git(
        repo, "log", *limit, "--format=//%ct", "--name-only", "--no-renames", sha
    ).splitlines():
        if line.startswith("//"):
            when = int(line[2:])
        elif line:
            changed.setdefault(line, when)
    return changed


def _seed(repo: Path, sha: str, tree: dict[str, str]) -> list[str]:
    """``tree``'s paths oldest last change first at ``sha`` (as ``index.stable_order.git_seed``)."""
    changed = _last_changes(repo, sha)
    return sorted(tree, key=lambda p: (changed.get(p, 0), p))


def _pack(svc: Service, entry: Any, params: dict[str, Any]) -> str:
    """The ``llmContent`` of one read of ``params`` through the service."""
    return str(
        svc.call(RequestContext(1), svc.read_sync, entry, decode_read_request(params)).llm_content
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a clone (never changed)")
    parser.add_argument("--glob", default="src/**/*.py")
    parser.add_argument("--sessions", type=int, default=40, help="the most recent ones")
    parser.add_argument("--gap-hours", type=float, default=2.0)
    parser.add_argument("--min-run", type=int, default=3)
    parser.add_argument("--results-dir", type=Path, help="where to write the JSON")
    parser.add_argument(
        "--bound", action="store_true", help="replay from git's objects: what the rules allow"
    )
    args = parser.parse_args(argv)
    if args.bound:
        repo = args.repo.resolve()
        chosen = sessions(commits(repo), args.glob, args.gap_hours, args.min_run)[-args.sessions :]
        medians = bound(repo, args.glob, chosen)
        print(f"{repo}: {len(chosen)} sessions of {args.glob}, replayed from git's objects")
        print(
            table(
                [
                    {"files changing at once, in": k, "median prefix kept %": round(100 * v, 1)}
                    for k, v in medians.items()
                ]
            )
        )
        write_results(
            "stable-bound", {"repo": str(repo), "median_prefix_share": medians}, args.results_dir
        )
        return 0
    got = run(args.repo.resolve(), args.glob, args.sessions, args.gap_hours, args.min_run)
    print(
        f"{got['repo']}: {got['sessions']} sessions, {got['packs']} re-packs of {got['glob']} "
        f"(median {got['median_pack_chars']:,} characters); same-tree stable re-packs not "
        f"byte-identical: {got['same_tree_not_identical']}"
    )
    print(
        table(
            [
                {
                    "order": order,
                    "median prefix kept %": round(100 * got["median_prefix_share"][order], 1),
                    "mean prefix kept %": round(100 * got["mean_prefix_share"][order], 1),
                }
                for order in ("stable", "request-order")
            ]
        )
    )
    write_results("stable", got, args.results_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
