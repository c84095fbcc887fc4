"""readmany_daemon.paths: file: URIs both ways, rels, containment, byte order."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from readmany_daemon.paths import (
    abs_path,
    byte_order_key,
    is_inside,
    path_to_uri,
    realpath_of,
    rel_path,
    resolves_inside,
    sort_in_byte_order,
    to_rel,
    uri_to_path,
)

# ------------------------------------------------------------------------------ path_to_uri


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("/", "file:///"),
        ("/a/b.txt", "file:///a/b.txt"),
        ("/my docs/a b.txt", "file:///my%20docs/a%20b.txt"),
        ("/café", "file:///caf%C3%A9"),
        ("/x/100%;#?.md", "file:///x/100%25%3B%23%3F.md"),
        ("/a~b_c-d.e", "file:///a~b_c-d.e"),
        ("/bad\udcffname", "file:///bad%FFname"),
    ],
)
def test_path_to_uri(path: str, uri: str) -> None:
    assert path_to_uri(path) == uri


def test_path_to_uri_agrees_with_pathlib() -> None:
    path = "/tmp/a b/ü/[x]{y}@z+=,.txt"
    assert path_to_uri(path) == PurePosixPath(path).as_uri()


@pytest.mark.parametrize("path", ["", "a/b", "./a", "relative dir"])
def test_path_to_uri_refuses_a_relative_path(path: str) -> None:
    with pytest.raises(ValueError, match="not an absolute path"):
        path_to_uri(path)


# ------------------------------------------------------------------------------ uri_to_path


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///a/b.txt", "/a/b.txt"),
        ("file:/a/b.txt", "/a/b.txt"),
        ("file:///", "/"),
        ("FILE:///a", "/a"),
        ("file://localhost/a/b", "/a/b"),
        ("file://LocalHost/a/b", "/a/b"),
        ("file:///my%20docs/a%20b.txt", "/my docs/a b.txt"),
        ("file:///my docs/a b.txt", "/my docs/a b.txt"),
        ("file:///caf%C3%A9", "/café"),
        ("file:///caf%c3%a9", "/café"),
        ("file:///café", "/café"),
        ("file:///x/100%25%3B%23%3F.md", "/x/100%;#?.md"),
        ("file:///a;b.txt", "/a;b.txt"),
        ("file:///a\tb", "/a\tb"),
        ("file:///a/b?query=1", "/a/b"),
        ("file:///a/b#L10", "/a/b"),
        ("file:///a/b#frag?x", "/a/b"),
        ("file:///a/../b/./c", "/a/../b/./c"),
        ("file:///C:/Users/x", "/C:/Users/x"),
        ("file:////server/share", "//server/share"),
    ],
)
def test_uri_to_path(uri: str, path: str) -> None:
    assert uri_to_path(uri) == path


def test_non_utf8_percent_bytes_come_back_as_surrogate_escapes() -> None:
    path = uri_to_path("file:///d/%FF%FEx%C3")
    assert path == "/d/\udcff\udcfex\udcc3"
    assert path is not None
    assert os.fsencode(path) == b"/d/\xff\xfex\xc3"


@pytest.mark.parametrize(
    "uri",
    [
        "http://example.com/a",
        "untitled:Untitled-1",
        "/a/b",
        "a/b",
        "",
        "file:",
        "file://",
        "file://localhost",
        "file:a/b",
        "file:C:/x",
        "file://C:/x",
        "file://server/share/a.txt",
        "file://localhost:80/a",
        "file://user@localhost/a",
        "file://127.0.0.1/a",
        "file:///a%2Fb",
        "file:///a%2fb",
        "file:///a%00b",
        "file:///a%4",
        "file:///a%zz",
        "file:///a%",
        "file:///a\ud800",
    ],
)
def test_uri_to_path_refuses(uri: str) -> None:
    assert uri_to_path(uri) is None


@pytest.mark.parametrize(
    "path",
    ["/", "/a", "/my docs/a b.txt", "/café/naïve", "/x/100%;#?.md", "/bad\udcff\udc80", "/C:/x"],
)
def test_round_trip(path: str) -> None:
    assert uri_to_path(path_to_uri(path)) == path


def test_round_trip_of_a_real_file_with_a_non_utf8_name(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9 \xff.txt")
    (tmp_path / name).write_text("x")
    uri = path_to_uri(str(tmp_path / name))
    assert uri.endswith("/caf%E9%20%FF.txt")
    back = uri_to_path(uri)
    assert back is not None
    assert os.path.isfile(back)
    assert os.listdir(tmp_path) == [name]


# ------------------------------------------------------------------------------ containment


@pytest.mark.parametrize(
    ("path", "top", "inside"),
    [
        ("/a/b", "/a/b", True),
        ("/a/b/c", "/a/b", True),
        ("/a/b/c/d", "/a/b", True),
        ("/a/bc", "/a/b", False),
        ("/a/b.txt", "/a/b", False),
        ("/a", "/a/b", False),
        ("/x/a/b", "/a/b", False),
        ("/a/b/c", "/a/b/", True),
        ("/a/b", "/", True),
        ("/", "/", True),
        ("/a/b/../../etc", "/a/b", True),  # lexical: resolve first when it matters
    ],
)
def test_is_inside(path: str, top: str, inside: bool) -> None:
    assert is_inside(path, top) is inside


@pytest.mark.parametrize(
    ("root", "path", "rel"),
    [
        ("/r", "/r", ""),
        ("/r", "/r/a", "a"),
        ("/r", "/r/a/b.txt", "a/b.txt"),
        ("/r", "/rx/a", None),
        ("/r", "/", None),
        ("/", "/a/b", "a/b"),
        ("/", "/", ""),
    ],
)
def test_rel_path(root: str, path: str, rel: str | None) -> None:
    assert rel_path(root, path) == rel
    assert (rel is not None) is is_inside(path, root)


@pytest.mark.parametrize(
    ("root", "rel", "path"),
    [("/r", "", "/r"), ("/r", "a/b", "/r/a/b"), ("/", "a", "/a"), ("/", "", "/")],
)
def test_abs_path(root: str, rel: str, path: str) -> None:
    assert abs_path(root, rel) == path


@pytest.mark.parametrize(
    ("raw", "rel"),
    [
        ("a.txt", "a.txt"),
        ("./a/./b/", "a/b"),
        ("a/../b", "b"),
        (".", ""),
        ("", ""),
        ("a/..", ""),
        ("..", None),
        ("../x", None),
        ("a/../../x", None),
        ("/r/a/b", "a/b"),
        ("/r", ""),
        ("/r/../r/a", "a"),
        ("/rx/a", None),
        ("/etc/passwd", None),
        ("file:///r/a%20b.txt", "a b.txt"),
        ("file://localhost/r/a", "a"),
        ("file:///etc/passwd", None),
        ("file://otherhost/r/a", None),
        ("file:relative", None),
        ("file:///r/a%2Fb", None),
    ],
)
def test_to_rel_lexical(raw: str, rel: str | None) -> None:
    assert to_rel("/r", raw) == rel


def test_to_rel_through_a_symlinked_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(root)
    real = os.path.realpath(root)
    assert to_rel(real, str(tmp_path / "alias" / "d" / "f")) == "d/f"
    assert to_rel(real, path_to_uri(str(tmp_path / "alias" / "d"))) == "d"
    assert to_rel(real, str(tmp_path / "elsewhere")) is None


def test_realpath_of_and_resolves_inside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "f.txt").write_text("x")
    (root / "in").symlink_to(root / "d")
    (root / "out").symlink_to(outside)
    (root / "loop").symlink_to(root / "loop")
    r = os.path.realpath(root)
    assert realpath_of(r, "") == r
    assert realpath_of(r, "d/f.txt") == f"{r}/d/f.txt"
    assert realpath_of(r, "in/f.txt") == f"{r}/d/f.txt"
    assert realpath_of(r, "out") == os.path.realpath(outside)
    assert realpath_of(r, "missing/x") == f"{r}/missing/x"
    assert resolves_inside(r, "d/f.txt")
    assert resolves_inside(r, "in")
    assert not resolves_inside(r, "out")
    # A link on the way hands over to os.path.realpath, loops included.
    assert realpath_of(r, "loop/x") == os.path.realpath(f"{r}/loop/x")


# ------------------------------------------------------------------------------ byte order


def test_byte_order_key() -> None:
    assert byte_order_key("a/b") == b"a/b"
    assert byte_order_key("café") == b"caf\xc3\xa9"
    assert byte_order_key("x\udcff") == b"x\xff"
    with pytest.raises(UnicodeEncodeError):
        byte_order_key("x\ud800")


def test_byte_order_puts_non_ascii_after_ascii_and_escapes_by_byte() -> None:
    names = ["é.txt", "z.txt", "B.txt", "a.txt", "\udcff.bin", "\udce9.bin", "ÿ", "\U0001f600"]
    want = ["B.txt", "a.txt", "z.txt", "é.txt", "ÿ", "\udce9.bin", "\U0001f600", "\udcff.bin"]
    assert sorted(names, key=byte_order_key) == want
    in_place = list(names)
    sort_in_byte_order(in_place)
    assert in_place == want
    # Code point order puts the escapes (U+DCxx) before U+1F600; their bytes (0xE9,
    # 0xFF) put U+1F600 (0xF0...) between them, as git and the index do.
    assert sorted(names)[-3:] == ["\udce9.bin", "\udcff.bin", "\U0001f600"]


def test_sort_in_byte_order_ascii_is_plain_sort() -> None:
    names = ["b/c", "b", "a-b", "a/b", "a.b", "A"]
    sort_in_byte_order(names)
    assert names == ["A", "a-b", "a.b", "a/b", "b", "b/c"]
