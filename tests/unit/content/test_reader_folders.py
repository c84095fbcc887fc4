"""The fast read paths of ``content.reader``: folder descriptors (``FolderHandles``) and
reads by name in an open folder (``read_file_at``).

Descriptor counts come from ``/proc/self/fd`` (``tests/read_paths.py``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from readmany_daemon.content.reader import FileRead as Loaded
from readmany_daemon.content.reader import FolderHandles, ReadOptions, read_file, read_file_at
from readmany_daemon.errors import Code
from tests.read_paths import NEEDS_PROC_FD, MiB, deep_root, fd_count, fds_below

pytestmark = NEEDS_PROC_FD


# ------------------------------------------------------------------------------ helpers


def mkdirs(root: Path, *rels: str) -> Path:
    for rel in rels:
        (root / rel).mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture()
def deep(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    with deep_root(tmp_path, 1200) as made:
        yield made


class OpenSpy:
    """Records ``os.open`` calls as ``(path, flags, dir_fd)``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[Any, int, int | None]] = []
        real = os.open

        def spy(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
            self.calls.append((path, flags, dir_fd))
            return real(path, flags, mode, dir_fd=dir_fd)

        monkeypatch.setattr(os, "open", spy)


DIR_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW


# ------------------------------------------------------------------------ FolderHandles


def test_fd_opens_component_by_component_relative_to_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = mkdirs(tmp_path / "root", "a/b/c")
    spy = OpenSpy(monkeypatch)
    with FolderHandles(str(root)) as h:
        fd_c = h.fd("a/b/c")
        assert os.fstat(fd_c).st_ino == (root / "a/b/c").stat().st_ino
        # root by path, then each component by name relative to its parent's descriptor
        assert [(c[0], c[2]) for c in spy.calls] == [
            (str(root), None),
            ("a", h.fd("")),
            ("b", h.fd("a")),
            ("c", h.fd("a/b")),
        ]
        assert all(flags & DIR_FLAGS == DIR_FLAGS for _, flags, _ in spy.calls)
        # cached: asking again opens nothing and gives the same descriptor
        spy.calls.clear()
        assert h.fd("a/b/c") == fd_c and h.fd("a/b") == h.fd("a/b")
        assert spy.calls == []
        assert sorted(fds_below(root).values()) == [
            str(root),
            str(root / "a"),
            str(root / "a/b"),
            str(root / "a/b/c"),
        ]
        assert os.fstat(h.fd("")).st_ino == root.stat().st_ino


def test_at_most_limit_descriptors_stay_open(tmp_path: Path) -> None:
    rels = [f"d{i:03}/sub" for i in range(100)]
    root = mkdirs(tmp_path / "root", *rels)
    with FolderHandles(str(root), limit=8) as h:
        for rel in rels:
            fd = h.fd(rel)
            assert os.fstat(fd).st_ino == (root / rel).stat().st_ino
            assert len(fds_below(root)) <= 8
        assert len(fds_below(root)) == 8
        # an evicted folder is opened again, and is the right one
        assert os.fstat(h.fd("d000/sub")).st_ino == (root / "d000/sub").stat().st_ino
        assert len(fds_below(root)) == 8
        h.close()
        assert fds_below(root) == {}
        h.close()  # a second close is harmless
    assert fds_below(root) == {}


def test_default_limit_is_64_and_close_leaves_none(tmp_path: Path) -> None:
    rels = [f"d{i:03}" for i in range(150)]
    root = mkdirs(tmp_path / "root", *rels)
    before = fd_count()
    h = FolderHandles(str(root))
    for rel in rels:
        h.fd(rel)
    assert len(fds_below(root)) == 64
    assert fd_count() == before + 64
    h.close()
    assert fds_below(root) == {} and fd_count() == before


def test_limit_two_still_reaches_deep_folders(tmp_path: Path) -> None:
    root = mkdirs(tmp_path / "root", "a/b/c/d/e")
    with FolderHandles(str(root), limit=2) as h:
        assert os.fstat(h.fd("a/b/c/d/e")).st_ino == (root / "a/b/c/d/e").stat().st_ino
        assert len(fds_below(root)) == 2
        assert os.fstat(h.fd("a/b")).st_ino == (root / "a/b").stat().st_ino
    assert fds_below(root) == {}


@pytest.mark.parametrize("limit", [1, 0, -5])
def test_limit_below_two_is_refused(tmp_path: Path, limit: int) -> None:
    with pytest.raises(ValueError, match="limit"):
        FolderHandles(str(tmp_path), limit=limit)


@pytest.mark.parametrize("where", ["inside", "outside"])
@pytest.mark.parametrize("rel", ["link", "link/sub", "a/link", "a/link/sub"])
def test_a_symbolic_link_on_the_way_is_refused(tmp_path: Path, where: str, rel: str) -> None:
    root = mkdirs(tmp_path / "root", "a", "real/sub")
    outside = mkdirs(tmp_path / "outside", "sub")
    target = root / "real" if where == "inside" else outside
    (root / "link").symlink_to(target, target_is_directory=True)
    (root / "a" / "link").symlink_to(target, target_is_directory=True)
    with FolderHandles(str(root)) as h:
        with pytest.raises(OSError) as info:
            h.fd(rel)
        assert info.value.errno in (errno.ELOOP, errno.ENOTDIR)
        assert fds_below(outside) == {}
        held = set(fds_below(root).values())
        assert held <= {str(root), str(root / "a")}  # nothing of the target held open
        assert not any(p.startswith(str(root / "real")) for p in held)
    assert fds_below(root) == {}


@pytest.mark.parametrize("rel", ["..", "../x", "a/..", "a/../a", ".", "a/.", "a/", "a//b", "./a"])
def test_dot_dot_and_empty_components_are_einval(tmp_path: Path, rel: str) -> None:
    root = mkdirs(tmp_path / "root", "a/b")
    with FolderHandles(str(root)) as h:
        with pytest.raises(OSError) as info:
            h.fd(rel)
        assert info.value.errno == errno.EINVAL
        assert str(tmp_path) not in fds_below(tmp_path).values()  # root's parent not opened


def test_missing_folder_and_a_file_on_the_way(tmp_path: Path) -> None:
    root = mkdirs(tmp_path / "root", "a")
    (root / "a" / "file").write_text("x")
    with FolderHandles(str(root)) as h:
        with pytest.raises(FileNotFoundError):
            h.fd("a/missing")
        with pytest.raises(NotADirectoryError):
            h.fd("a/file")
        with pytest.raises(NotADirectoryError):
            h.fd("a/file/below")


def test_context_manager_closes_even_on_an_exception(tmp_path: Path) -> None:
    root = mkdirs(tmp_path / "root", "x/y")
    with pytest.raises(RuntimeError), FolderHandles(str(root)) as h:
        h.fd("x/y")
        assert len(fds_below(root)) == 3
        raise RuntimeError("boom")
    assert fds_below(root) == {}


def test_a_descriptor_keeps_naming_a_folder_renamed_meanwhile(tmp_path: Path) -> None:
    root = mkdirs(tmp_path / "root", "a")
    (root / "a" / "f.txt").write_text("first\n")
    with FolderHandles(str(root)) as h:
        fd = h.fd("a")
        os.rename(root / "a", root / "moved")
        mkdirs(root, "a")
        assert h.fd("a") == fd
        assert os.listdir(fd) == ["f.txt"]


def test_a_very_deep_folder_is_opened_or_refused_with_oserror(deep: tuple[Path, str]) -> None:
    root, rel = deep
    with FolderHandles(str(root)) as h:
        try:
            fd = h.fd(rel)
        except OSError:
            return  # an OSError is what the docstring promises for a folder it can't open
        assert os.listdir(fd) == ["f.txt"]
    assert fds_below(root) == {}


# ------------------------------------------------------------------------ read_file_at


def loaded_equal(a: Loaded, b: Loaded) -> bool:
    return replace(a, read_at_ns=0) == replace(b, read_at_ns=0)


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
LINES = "".join(f"line {i} é\r\n" if i % 3 else f"line {i}\n" for i in range(1, 301))

READ_CASES: list[tuple[str, bytes, dict[str, Any], str, str | None]] = [
    ("utf8", "alpha\nbéta\r\ngamma 😀".encode(), {}, "text", None),
    ("cp1252", "Grüße aus Köln, schöne Straße\n".encode("cp1252"), {}, "text", None),
    ("empty", b"", {}, "text", None),
    ("binary", PNG, {"want_bytes": True}, "binary", Code.BINARY),
    ("window", LINES.encode(), {"offset": 40, "limit": 25}, "text", None),
    ("chars", LINES.encode(), {"offset": 7, "max_chars": 100}, "text", None),
    ("full", LINES.encode(), {"want_full": True}, "text", None),
    ("too-large", LINES.encode(), {"max_file_bytes": 1000}, "error", Code.TOO_LARGE),
    (
        "too-large-full",
        LINES.encode(),
        {"max_file_bytes": 1000, "want_full": True, "limit": 3},
        "error",
        Code.TOO_LARGE,
    ),
    (
        "too-large-window",
        LINES.encode() * 400,  # over the 1 MiB chunk: only a prefix is decoded
        {"max_file_bytes": 1000, "offset": 250, "limit": 5},
        "text",
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "data", "kw", "kind", "code"), READ_CASES, ids=[c[0] for c in READ_CASES]
)
def test_read_file_at_answers_as_read_file(
    tmp_path: Path, name: str, data: bytes, kw: dict[str, Any], kind: str, code: str | None
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    kw = {"max_file_bytes": MiB, **kw}
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        before = fd_count()
        pre = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        at = read_file_at(dir_fd, name, pre, ReadOptions(**kw))
        assert fd_count() == before  # the file's descriptor is closed again
    finally:
        os.close(dir_fd)
    by_path = read_file(str(path), ReadOptions(**kw))
    assert loaded_equal(at, by_path)
    assert (at.kind, at.code) == (kind, code)
    st_ = path.stat()
    assert (at.size, at.ino, at.mtime_ns) == (st_.st_size, st_.st_ino, st_.st_mtime_ns)
    if kind == "text":
        assert at.text is not None and at.window is not None
        if at.complete_text:
            assert at.sha256 == hashlib.sha256(data).hexdigest()
    if name == "window":
        assert at.window is not None and at.window.text.startswith("line 40 é\r\n")
        assert (at.window.line_start, at.window.line_end, at.window.next_offset) == (40, 64, 65)
    if name == "too-large-window":
        assert at.window is not None and at.window.text.startswith("line 250 é\r\n")
        assert not at.complete_text and at.sha256 is None and at.total_lines == 300 * 400
    if name == "binary":
        assert at.data == PNG


def test_read_file_at_refuses_a_fifo_without_opening_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(tmp_path / "pipe")
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        pre = os.stat("pipe", dir_fd=dir_fd, follow_symlinks=False)
        spy = OpenSpy(monkeypatch)
        got = read_file_at(dir_fd, "pipe", pre, ReadOptions(max_file_bytes=MiB))
        monkeypatch.undo()
    finally:
        os.close(dir_fd)
    assert (got.kind, got.code) == ("error", Code.NOT_A_FILE)
    assert got.message is not None and "FIFO" in got.message
    assert spy.calls == []


def test_read_file_at_refuses_a_folder_from_its_pre_stat(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        pre = os.stat("sub", dir_fd=dir_fd, follow_symlinks=False)
        got = read_file_at(dir_fd, "sub", pre, ReadOptions(max_file_bytes=MiB))
    finally:
        os.close(dir_fd)
    assert got.code == Code.NOT_A_FILE and got.message is not None and "directory" in got.message


def _run_bounded(fn: Callable[[], Loaded], fifo: Path, timeout: float = 5.0) -> Loaded:
    """``fn()`` in a thread; if it is still blocked after ``timeout`` s (an open of
    ``fifo`` waiting for a writer), unblock it with a writer and fail."""
    out: list[Loaded] = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        with_writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(with_writer)
        worker.join(timeout)
        pytest.fail("read_file_at blocked on a FIFO")
    return out[0]


def test_a_file_swapped_for_a_fifo_after_its_stat_is_refused_without_blocking(
    tmp_path: Path,
) -> None:
    target = tmp_path / "racy.txt"
    target.write_text("regular\n")
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        pre = os.stat("racy.txt", dir_fd=dir_fd, follow_symlinks=False)
        assert stat.S_ISREG(pre.st_mode)
        target.unlink()
        os.mkfifo(target)
        before = fd_count()
        started = time.monotonic()
        got = _run_bounded(
            lambda: read_file_at(dir_fd, "racy.txt", pre, ReadOptions(max_file_bytes=MiB)), target
        )
        assert time.monotonic() - started < 2
        assert fd_count() == before
    finally:
        os.close(dir_fd)
    assert (got.kind, got.code) == ("error", Code.NOT_A_FILE)
    assert got.message is not None and "FIFO" in got.message


@pytest.mark.parametrize("to", ["inside", "outside"])
def test_a_name_that_became_a_symlink_after_its_stat_is_not_followed(
    tmp_path: Path, to: str
) -> None:
    root = mkdirs(tmp_path / "root", "d")
    (root / "d" / "f.txt").write_text("regular\n")
    secret = (root / "secret.txt") if to == "inside" else (tmp_path / "secret.txt")
    secret.write_text("SECRET CONTENT\n")
    dir_fd = os.open(root / "d", os.O_RDONLY | os.O_DIRECTORY)
    try:
        pre = os.stat("f.txt", dir_fd=dir_fd, follow_symlinks=False)
        (root / "d" / "f.txt").unlink()
        (root / "d" / "f.txt").symlink_to(secret)
        got = read_file_at(dir_fd, "f.txt", pre, ReadOptions(max_file_bytes=MiB))
    finally:
        os.close(dir_fd)
    assert (got.kind, got.code, got.text) == ("error", Code.NOT_A_FILE, None)
    assert got.message is not None and "symbolic link" in got.message


def test_the_stat_returned_is_of_the_file_opened_not_the_pre_stat(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old\n")
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        pre = os.stat("f.txt", dir_fd=dir_fd, follow_symlinks=False)
        (tmp_path / "new.txt").write_text("a new, longer file\n")
        os.replace(tmp_path / "new.txt", tmp_path / "f.txt")
        got = read_file_at(dir_fd, "f.txt", pre, ReadOptions(max_file_bytes=MiB))
        gone = pre
        (tmp_path / "f.txt").unlink()
        missing = read_file_at(dir_fd, "f.txt", gone, ReadOptions(max_file_bytes=MiB))
    finally:
        os.close(dir_fd)
    assert got.text == "a new, longer file\n"
    assert got.ino != pre.st_ino and got.size == len(got.text)
    assert (missing.kind, missing.code) == ("error", Code.NOT_FOUND)


def test_read_file_at_checks_window_arguments(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x\n")
    pre = os.lstat(tmp_path / "f")
    with pytest.raises(ValueError, match="offset"):
        read_file_at(-1, "f", pre, ReadOptions(max_file_bytes=MiB, offset=0))
