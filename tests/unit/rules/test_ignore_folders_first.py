"""``IgnoreRules.check_folders_first`` against what it replaces: ``check`` of each folder
above a path, shallowest first, then of the path (``Workspace.explain``'s rule). One walk
instead of one per folder, so a path thousands of folders deep is explained in time
linear in its depth (issue 22, item 5); the answers must not change."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from readmany_daemon.rules.ignore import IgnoreRules
from readmany_daemon.rules.kinds import Filters, Verdict
from readmany_daemon.settings import Settings
from tests.helpers import git, write_tree

FILTERS = [Filters(*bits) for bits in itertools.product((True, False), repeat=3)]


def _per_folder(rules: IgnoreRules, rel: str, is_dir: bool, f: Filters) -> Verdict | None:
    parts = rel.split("/")
    for i in range(1, len(parts)):
        verdict = rules.check("/".join(parts[:i]), True, f)
        if verdict is not None:
            return verdict
    return rules.check(rel, is_dir, f)


def test_same_verdicts_as_one_check_per_folder(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "build/\n*.log\n!keep.log\n/top-only/\n",
            ".readmanyignore": "secret/\n",
            "build/tracked/t.txt": "",
            "build/u.txt": "",
            "src/a.log": "",
            "src/keep.log": "",
            "src/.gitignore": "gen/\n!gen/\n",
            "src/gen/x.py": "",
            "src/secret/k.txt": "",
            "node_modules/p/index.js": "",
            "node_modules/tracked.js": "",
            "env/pyvenv.cfg": "",
            "env/lib/m.py": "",
            "conda/conda-meta/h": "",
            "conda/lib/n.py": "",
            "top-only/f.txt": "",
            "deep/top-only/f.txt": "",
            "sub/.git/HEAD": "",
            "sub/inner.txt": "",
        },
    )
    git(repo, "add", "-f", "build/tracked/t.txt", "node_modules/tracked.js", "src/a.log")
    rules = IgnoreRules(os.path.realpath(repo), Settings())
    paths = [
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*")
        if ".git" not in p.relative_to(repo).parts[:1]
    ]
    paths += ["build/gone/x.txt", "src/gen/missing/y.py", "sub/.git/config", "a/b/c.log"]
    kinds: set[str | None] = set()
    for rel in paths:
        full = repo / rel
        for is_dir in {full.is_dir() and not full.is_symlink(), False}:
            for f in FILTERS:
                want = _per_folder(rules, rel, is_dir, f)
                assert rules.check_folders_first(rel, is_dir, f) == want, (rel, is_dir, f)
                kinds.add(want.kind if want is not None else None)
    assert kinds == {None, "deny", "ignore-file", "gitignore", "default-exclude"}
