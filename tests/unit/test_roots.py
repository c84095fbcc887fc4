"""roots.resolve_root: the one resolver of a request's root, and each surface's policy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from readmany_daemon.errors import RootNotFound
from readmany_daemon.paths import path_to_uri
from readmany_daemon.roots import Root, make_root, resolve_root


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    top = Path(os.path.realpath(tmp_path))
    (top / "ws" / "sub").mkdir(parents=True)
    (top / "other").mkdir()
    (top / "ws" / "file.txt").write_text("x")
    os.symlink(top / "ws" / "sub", top / "link")
    return top


def test_make_root_resolves_and_names(tree: Path) -> None:
    r = make_root(str(tree / "link"))
    assert r == Root(str(tree / "ws" / "sub"), "sub", path_to_uri(str(tree / "ws" / "sub")))
    assert make_root(str(tree / "ws"), "mine").name == "mine"


def test_none_is_the_first_root_or_an_error_without_one(tree: Path) -> None:
    roots = [make_root(str(tree / "ws")), make_root(str(tree / "other"))]
    assert resolve_root(None, roots) == str(tree / "ws")
    with pytest.raises(RootNotFound) as info:
        resolve_root(None, [])
    assert info.value.field == "$.root"
    assert str(info.value).startswith("invalid params: $.root: no workspace folder")


def test_a_root_by_name_uri_or_path(tree: Path) -> None:
    ws = Root(str(tree / "ws"), "project", "file:///as/the/client/sent/it")
    for raw in ("project", "file:///as/the/client/sent/it", str(tree / "ws")):
        assert resolve_root(raw, [ws]) == str(tree / "ws")


def test_paths_and_uris_resolve_symlinks(tree: Path) -> None:
    assert resolve_root(str(tree / "link"), []) == str(tree / "ws" / "sub")
    assert resolve_root(path_to_uri(str(tree / "link")), []) == str(tree / "ws" / "sub")
    assert resolve_root("file://localhost" + str(tree / "other"), []) == str(tree / "other")


@pytest.mark.parametrize("raw", ["file://server/share", "file:relative", "file:///a%2Fb"])
def test_a_uri_naming_no_local_path_is_refused(raw: str) -> None:
    with pytest.raises(RootNotFound, match="is not a local file: URI") as info:
        resolve_root(raw, [])
    assert info.value.field == "$.root"


def test_relative_paths_need_a_start(tree: Path) -> None:
    with pytest.raises(RootNotFound, match="names no workspace folder"):
        resolve_root("ws", [])
    assert resolve_root("sub", [], relative_to=str(tree / "ws")) == str(tree / "ws" / "sub")
    assert resolve_root("../other", [], relative_to=str(tree / "ws")) == str(tree / "other")


def test_confined_refuses_folders_outside_the_roots(tree: Path) -> None:
    roots = [make_root(str(tree / "ws"))]
    kw = {"relative_to": roots[0].path, "confined": True}
    assert resolve_root("sub", roots, **kw) == str(tree / "ws" / "sub")  # type: ignore[arg-type]
    for raw in ("../other", str(tree / "other"), str(tree)):
        with pytest.raises(RootNotFound, match="outside the workspace roots"):
            resolve_root(raw, roots, **kw)  # type: ignore[arg-type]
    # Not confined (the LSP daemon, the CLI): any existing folder.
    assert resolve_root(str(tree / "other"), roots) == str(tree / "other")


@pytest.mark.parametrize("name", ["missing", "ws/file.txt"])
def test_not_a_folder(tree: Path, name: str) -> None:
    with pytest.raises(RootNotFound, match="is not a folder"):
        resolve_root(str(tree / name), [])


def test_a_root_that_is_a_candidate_needs_no_folder_on_disk(tree: Path) -> None:
    gone = Root(str(tree / "gone"), "gone", path_to_uri(str(tree / "gone")))
    assert resolve_root(str(tree / "gone"), [gone]) == str(tree / "gone")


def test_the_cli_field_has_no_invalid_params_prefix(tree: Path) -> None:
    with pytest.raises(RootNotFound) as info:
        resolve_root(str(tree / "missing"), [], relative_to=str(tree), field="--root")
    assert info.value.field == "--root"
    assert str(info.value) == f"--root: {str(tree / 'missing')!r} is not a folder"
