"""A request's ``exclude`` list (PROTOCOL §3) matched in one pass: ``GitPatterns.keep``
against the per-path ``GitPatterns.match`` it replaced (the reference), on random
patterns and paths and on a list of 260 patterns routed through the engine."""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readmany_daemon.engine.files import list_paths
from readmany_daemon.engine.options import options_for
from readmany_daemon.engine.resolve import resolve
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.rules.patterns import GitPatterns, PatternList
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import ReadRequest
from readmany_daemon.wire.messages import ReadManyParams
from tests.helpers import write_tree

SEGMENTS = ["a", "b", "ab", "A", "x.py", "y.txt", "\u00e9", "d d", "[a]", "n\nl", ""]
PIECES = ["a", "b", "A", "x", ".py", "*", "?", "**", "[ab]", "[!a]", "[A-Z]", "\\*", "\u00e9"]


@st.composite
def patterns(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=3), min_size=1, max_size=3)
    )
    body = "/".join("".join(p) for p in parts)
    if draw(st.booleans()):
        body = "/" + body
    if draw(st.integers(0, 3)) == 0:
        body += "/"
    if draw(st.integers(0, 3)) == 0:
        body = "!" + body
    return body


paths = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map("/".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(patterns(), min_size=1, max_size=30), st.lists(paths, max_size=60))
def test_keep_agrees_with_per_path_match(lines: list[str], files: list[str]) -> None:
    ex = GitPatterns(lines)
    assert ex.keep(files) == [p for p in files if not ex.match(p)]


def test_keep_on_long_lists_agrees_with_match() -> None:
    """Lists long enough for the RE2 side of the seam (more than 12 patterns in a chunk,
    over 500 in all), with slashes around paths as a client may send them."""
    rng = random.Random(13)
    names = [f"n{i}" for i in range(40)] + ["A", "b.py", "c.txt"]
    files = ["/".join(rng.choice(names) for _ in range(rng.randint(1, 4))) for _ in range(3000)] + [
        "/lead/n1",
        "trail/n2/",
    ]
    lines = []
    for _ in range(700):
        k = rng.random()
        seg = rng.choice(names)
        if k < 0.3:
            lines.append(seg)
        elif k < 0.5:
            lines.append(f"{seg}/")
        elif k < 0.7:
            lines.append(f"**/{seg}/{rng.choice(names)}")
        elif k < 0.85:
            lines.append(f"{seg}*/*.py")
        else:
            lines.append(f"!{seg}")
    ex = GitPatterns(lines)
    assert ex.keep(files) == [p for p in files if not ex.match(p)]


def _tree(root: Path) -> list[str]:
    files = {
        f"pkg{i:02d}/mod{j:02d}/f{k}.{ext}": "x"
        for i in range(20)
        for j in range(10)
        for k, ext in enumerate(("py", "txt", "md", "js"))
    }
    write_tree(root, files)
    return sorted(files)


def _excludes() -> list[str]:
    """260 patterns of every shape, a few of which hit the tree."""
    out: list[str] = []
    for i in range(52):
        out += [
            f"gen{i}/",
            f"*.ext{i}",
            f"**/cache{i}/**",
            f"pkg{i:02d}/mod0[0-3]/f0.py" if i < 20 else f"vendor{i}/*.js",
            f"!keep{i}.py" if i % 2 else f"/pkg{i:02d}/mod09/",
        ]
    return out


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Workspace, list[str]]:
    files = _tree(tmp_path / "w")
    ws = Workspace.open(str(tmp_path / "w"), Settings())
    ws.index.files(Filters())
    return ws, files


def test_260_excludes_judge_only_prefilter_hits(
    workspace: tuple[Workspace, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request with 260 excludes keeps what the per-path matcher keeps, and asks git's
    last-matching-line rule only for paths the prefilter hits: not for every folder of
    every path (800 files here, each three folders deep)."""
    ws, files = workspace
    excludes = _excludes()
    assert len(excludes) == 260
    ref = GitPatterns(excludes)
    want = [p for p in files if not ref.match(p)]
    assert 0 < len(want) < len(files)

    calls = Counter[bool]()
    real = PatternList.last_match

    def counted(self: PatternList, path: str, name: str, is_dir: bool) -> object:
        calls[is_dir] += 1
        return real(self, path, name, is_dir)

    monkeypatch.setattr(PatternList, "last_match", counted)
    params = ReadManyParams(paths=["."], exclude=excludes)
    resolved = resolve(ws, options_for(ws, ReadRequest(params=params)).resolve)
    got = [item.rel for item in resolved.items]
    assert got == want
    assert resolved.hidden["exclude"] == len(files) - len(want)
    # The per-path matcher asks once per folder of every path (3 x 800 and more). The
    # prefilter hits: the 20 folders pkg??/mod09/, and files by basename (a superset
    # for path patterns: every f0.py and every .js not below an excluded folder).
    bound = len(files) // 2
    assert calls[True] + calls[False] <= bound, calls
    calls.clear()
    assert list_paths(ws, ["."], Filters(), True, excludes) == want
    assert calls[True] + calls[False] <= bound, calls


def test_exclude_with_only_negations_keeps_everything(
    workspace: tuple[Workspace, list[str]],
) -> None:
    ws, files = workspace
    assert list_paths(ws, [], Filters(), True, ["!pkg01/", "!*.py"]) == files
    assert os.path.isdir(ws.root)
