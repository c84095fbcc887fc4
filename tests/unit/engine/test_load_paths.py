"""The request stage over the fast read paths (``engine.load``): globs read through
folder descriptors the same with and without the cache, symlinked folders inside and
outside, a folder swapped for a link, no descriptor left open, a file deeper than the
recursion limit.

Descriptor counts come from ``/proc/self/fd`` (``tests/read_paths.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readmany_daemon.content import reader as reader_mod
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.content.reader import FileRead as Loaded
from readmany_daemon.engine import answer as answer_mod
from readmany_daemon.engine import load as load_mod
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer
from tests.read_paths import NEEDS_PROC_FD, MiB, deep_root, fd_count, fds_below, put_files

pytestmark = NEEDS_PROC_FD


# ---------------------------------------------------------------------- the request stage


def ask(ws: Workspace, **params: Any) -> Any:
    return answer(ws, decode_read_params(params))


def comparable(result: Any) -> tuple[str, list[dict[str, Any]]]:
    files = []
    for f in result.files:
        item = msgspec.to_builtins(f)
        item.pop("source", None)
        files.append(item)
    return result.llm_content, files


BIG = {"preferFullRead": True, "maxTotalFiles": 10_000, "maxTotalChars": 10**9}


def many_folders(root: Path, folders: int = 6, per: int = 5) -> dict[str, str]:
    files = {
        f"pkg{d}/sub{d % 2}/m{i}.txt": (f'# {d}/{i} "q" \\ é 😀\n' * (40 + 300 * (i % 3)))
        for d in range(folders)
        for i in range(per)
    }
    files["top.txt"] = "top\n"
    put_files(root, files)
    return files


def test_glob_over_many_folders_same_with_and_without_the_cache(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    files = many_folders(root)
    off = Workspace.open(str(root), Settings())
    on = Workspace.open(str(root), Settings(), cache=ContentCache(64 * MiB))
    r_off = ask(off, paths=["**/*.txt"], **BIG)
    r_cold = ask(on, paths=["**/*.txt"], **BIG)
    r_warm = ask(on, paths=["**/*.txt"], **BIG)
    assert {f.source for f in r_cold.files} == {"disk"}
    assert {f.source for f in r_warm.files} == {"cache"}
    assert on.cache is not None and len(on.cache) == len(files)
    assert comparable(r_off) == comparable(r_cold) == comparable(r_warm)
    assert sorted(f.path for f in r_off.files) == sorted(files)
    assert all(f.status == "ok" for f in r_off.files)
    for rel, text in files.items():
        assert f"--- {rel} ---\n{text}\n" in r_off.llm_content

    # a window of each, too
    windows = [{"path": rel, "offset": 3, "limit": 7} for rel in sorted(files) if rel != "top.txt"]
    budget = {"maxTotalFiles": 1000, "maxTotalChars": 10**8}
    w_off = ask(off, files=windows, **budget)
    w_on = ask(on, files=windows, **budget)
    assert {f.source for f in w_on.files} == {"cache"}
    assert comparable(w_off) == comparable(w_on)
    assert [(f.status, f.line_start, f.line_end) for f in w_off.files] == [("ok", 3, 9)] * 30


def test_glob_reads_go_through_folder_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "proj"
    files = many_folders(root, folders=3, per=3)
    ws = Workspace.open(str(root), Settings())
    calls = {"at": 0, "path": 0}
    real_at, real_path = reader_mod.read_file_at, reader_mod.read_file

    def at(*a: Any, **kw: Any) -> Loaded:
        calls["at"] += 1
        return real_at(*a, **kw)

    def by_path(*a: Any, **kw: Any) -> Loaded:
        calls["path"] += 1
        return real_path(*a, **kw)

    monkeypatch.setattr(reader_mod, "read_file_at", at)
    monkeypatch.setattr(reader_mod, "read_file", by_path)
    r = ask(ws, paths=["**/*.txt"], **BIG)
    assert [f.status for f in r.files] == ["ok"] * len(files)
    assert calls == {"at": len(files), "path": 0}


def test_a_symlinked_folder_to_a_folder_inside_reads_through(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    put_files(root, {"real/x.txt": "inside x\n", "real/deeper/y.txt": "inside y\n"})
    (root / "link").symlink_to(root / "real", target_is_directory=True)
    (root / "rel_link").symlink_to("real", target_is_directory=True)
    (root / "chain").symlink_to("link", target_is_directory=True)
    for cache in (None, ContentCache(MiB)):
        ws = Workspace.open(str(root), Settings(), cache=cache)
        for _ in range(2):  # cold, then warm when cached
            r = ask(
                ws,
                paths=["link/x.txt", "rel_link/deeper/y.txt", "chain/x.txt"],
                **BIG,
            )
            assert [(f.path, f.status, f.code) for f in r.files] == [
                ("link/x.txt", "ok", None),
                ("rel_link/deeper/y.txt", "ok", None),
                ("chain/x.txt", "ok", None),
            ]
            assert "--- link/x.txt ---\ninside x\n" in r.llm_content
            assert "--- rel_link/deeper/y.txt ---\ninside y\n" in r.llm_content
            assert "--- chain/x.txt ---\ninside x\n" in r.llm_content
        named_dir = ask(ws, paths=["link/"], **BIG)
        assert sorted((f.path, f.status) for f in named_dir.files) == [
            ("real/deeper/y.txt", "ok"),
            ("real/x.txt", "ok"),
        ]


def test_a_symlinked_folder_pointing_outside_is_outside_workspace(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    outside = tmp_path / "outside"
    put_files(root, {"ok.txt": "fine\n"})
    put_files(outside, {"y.txt": "outside secret\n", "sub/z.txt": "outside secret z\n"})
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "leak.txt").symlink_to(outside / "y.txt")
    for cache in (None, ContentCache(MiB)):
        ws = Workspace.open(str(root), Settings(), cache=cache)
        r = ask(ws, paths=["ok.txt", "out/y.txt", "out/sub/z.txt", "leak.txt", "out/"], **BIG)
        assert [(f.path, f.status, f.code) for f in r.files] == [
            ("ok.txt", "ok", None),
            ("out/y.txt", "error", Code.OUTSIDE_WORKSPACE),
            ("out/sub/z.txt", "error", Code.OUTSIDE_WORKSPACE),
            ("leak.txt", "error", Code.OUTSIDE_WORKSPACE),
            ("out/", "error", Code.OUTSIDE_WORKSPACE),
        ]
        assert "outside secret" not in r.llm_content
        # ok.txt, and the links leak.txt and out (a glob lists both); not what lies past out/
        assert r.summary.matched == 3, r.summary


@pytest.mark.parametrize(
    "paths",
    [["leak.txt", "*.txt"], ["*.txt", "leak.txt"], ["./leak.txt", "*.txt"]],
    ids=["named-first", "glob-first", "dotted"],
)
def test_a_link_out_named_and_matched_is_listed_once(tmp_path: Path, paths: list[str]) -> None:
    """A link out of the root named by its path and matched by a glob too is one
    ``outside-workspace`` entry, as a file named both ways is one file."""
    root = tmp_path / "proj"
    put_files(root, {"ok.txt": "fine\n"})
    put_files(tmp_path / "outside", {"y.txt": "outside secret\n"})
    (root / "leak.txt").symlink_to(tmp_path / "outside" / "y.txt")
    r = ask(Workspace.open(str(root), Settings()), paths=paths)
    listed = [(f.path, f.status, f.code) for f in r.files]
    outside = [f for f in listed if f[2] == Code.OUTSIDE_WORKSPACE]
    assert [f[0].lstrip("./") for f in outside] == ["leak.txt"], listed
    assert r.summary.errors == 1 and r.summary.read == 1
    # The link is a file of the tree (a glob lists it): counted as matched either way.
    assert r.summary.matched == 2, r.summary


def test_a_folder_swapped_for_a_link_out_after_it_was_resolved_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "proj"
    outside = tmp_path / "outside"
    put_files(root, {"sub/f.txt": "inside\n"})
    put_files(outside, {"f.txt": "outside secret\n"})
    ws = Workspace.open(str(root), Settings())
    real_dir = load_mod.RequestPaths.real_dir
    swapped: list[str] = []

    def resolve_then_swap(self: load_mod.RequestPaths, head: str) -> tuple[str, str | None]:
        known = real_dir(self, head)
        if head == "sub" and not swapped:
            os.rename(root / "sub", root / "sub.old")
            (root / "sub").symlink_to(outside, target_is_directory=True)
            swapped.append(head)
        return known

    monkeypatch.setattr(load_mod.RequestPaths, "real_dir", resolve_then_swap)
    r = ask(ws, paths=["sub/f.txt"])
    assert swapped == ["sub"]
    assert r.files[0].status == "error"
    assert "outside secret" not in r.llm_content


@pytest.mark.parametrize("cached", [False, True])
def test_no_descriptor_stays_open_after_a_request(tmp_path: Path, cached: bool) -> None:
    root = tmp_path / "proj"
    files = {f"d{i:03}/s/f.txt": f"file {i}\n" for i in range(90)}  # more folders than 64
    put_files(root, files)
    os.mkfifo(root / "d000" / "pipe")
    (root / "d001" / "loop").symlink_to("loop")
    ws = Workspace.open(str(root), Settings(), cache=ContentCache(MiB) if cached else None)
    params = {"paths": ["**/*.txt", "d000/pipe", "d001/loop", "missing/x.txt"], **BIG}
    ask(ws, **params)  # the index is built and kept: not counted
    for _ in range(2):
        before = fd_count()
        r = ask(ws, **params)
        assert fd_count() == before
        assert fds_below(root) == {}
    assert [f.status for f in r.files if f.path in files] == ["ok"] * len(files)
    assert {f.path: f.code for f in r.files if f.path not in files} == {
        "d000/pipe": Code.NOT_A_FILE,
        "d001/loop": Code.NOT_FOUND,
        "missing/x.txt": Code.NOT_FOUND,
    }


def test_no_descriptor_stays_open_when_the_request_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "proj"
    put_files(root, {f"d{i}/f.txt": "x\n" for i in range(5)})
    ws = Workspace.open(str(root), Settings())
    ask(ws, paths=["**/*.txt"])

    def boom(*a: Any, **kw: Any) -> Any:
        raise RuntimeError("render failed")

    monkeypatch.setattr(answer_mod, "render_counted", boom)
    before = fd_count()
    with pytest.raises(RuntimeError, match="render failed"):
        ask(ws, paths=["**/*.txt"])
    assert fd_count() == before and fds_below(root) == {}


@pytest.fixture()
def shallow_deep(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    with deep_root(tmp_path, 120) as made:
        yield made


def test_a_named_file_deeper_than_the_recursion_limit_is_read(
    shallow_deep: tuple[Path, str],
) -> None:
    # A tree 1,000 folders deep costs minutes in the ignore rules' probes; the same
    # failure shows 120 folders deep with the recursion limit 70 frames above the
    # caller (the engine needs far fewer: the path route below passed so before 73249957).
    root, rel = shallow_deep
    ws = Workspace.open(str(root), Settings())
    frame, depth = sys._getframe(), 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back  # type: ignore[assignment]
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 70)
    try:
        r = ask(ws, paths=[f"{rel}/f.txt"])
    finally:
        sys.setrecursionlimit(old_limit)
    assert [(f.status, f.code) for f in r.files] == [("ok", None)]
    assert r.llm_content.endswith("f.txt ---\ndeep\n\n--- End of content ---")


@pytest.mark.parametrize("first", ["glob", "named"])
def test_a_link_is_counted_as_matched_whichever_entry_names_it(tmp_path: Path, first: str) -> None:
    """Links the tree lists (to a folder inside, to nowhere, out of the root) are
    files of the tree, as a glob lists them: each counts once in ``summary.matched``,
    whether the glob or its own path names it first (PROTOCOL §4 "Counters")."""
    root = tmp_path / "proj"
    put_files(root, {"a.txt": "a\n", "d/z.txt": "z\n"})
    put_files(tmp_path / "outside", {"o.txt": "secret\n"})
    (root / "ind").symlink_to(root / "d", target_is_directory=True)
    (root / "dang").symlink_to(tmp_path / "nowhere")
    (root / "lo.txt").symlink_to(tmp_path / "outside" / "o.txt")
    (root / "gone").symlink_to(root / "missing.txt")  # broken, inside
    named = ["ind", "dang", "lo.txt", "gone"]
    paths = ["*", *named] if first == "glob" else [*named, "*"]
    r = ask(Workspace.open(str(root), Settings()), paths=paths)
    s = r.summary
    listed = {f.path: (f.status, f.code) for f in r.files}
    assert listed["a.txt"] == ("ok", None) and len(r.files) == 6, listed  # d/z.txt too
    assert s.matched == 6 and (s.read, s.errors) == (2, 4), s
    assert "secret" not in r.llm_content
