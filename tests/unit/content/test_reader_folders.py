"""The fast read paths: folder descriptors (``FolderHandles``), reads by name in an open
folder (``read_file_at``), the JSON form kept with a cached text
(``lsp.encode.cached_json_body``, in the slot of ``ContentCache.derived``), the one-call
UTF-8 decode, and the request stage over them.

Descriptor counts come from ``/proc/self/fd`` (Linux): a descriptor of ours is one whose
link names a folder below the test's tree, so other descriptors of the process (pytest's,
the interpreter's) never disturb a count.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from readmany_daemon.content import cache as cache_mod
from readmany_daemon.content import decode as decode_mod
from readmany_daemon.content import reader as reader_mod
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.content.decode import Decoded, decode
from readmany_daemon.content.reader import FileRead as Loaded
from readmany_daemon.content.reader import FolderHandles, read_file, read_file_at
from readmany_daemon.engine import answer as answer_mod
from readmany_daemon.engine import load as load_mod
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code
from readmany_daemon.lsp.encode import cached_json_body
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer

MiB = 1 << 20
HOUR = 3600

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="descriptor counts need /proc/self/fd"
)


# ------------------------------------------------------------------------------ helpers


def fds_below(top: Path | str) -> dict[int, str]:
    """Open descriptors of this process naming ``top`` or a path below it."""
    top = os.path.realpath(top)
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own descriptor, closed by now
            continue
        if target == top or target.startswith(top + "/"):
            found[int(name)] = target
    return found


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def mkdirs(root: Path, *rels: str) -> Path:
    for rel in rels:
        (root / rel).mkdir(parents=True, exist_ok=True)
    return root


def put_files(root: Path, files: Mapping[str, str | bytes], *, age: float = HOUR) -> None:
    """Write ``files`` and date them ``age`` seconds back (so no cache finds them racy)."""
    past = time.time() - age
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        os.utime(p, (past, past))


def deep_tree(root: Path, depth: int) -> str:
    """``a/a/…/a`` ``depth`` folders deep below ``root`` (made without recursion);
    returns the relative path."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("a", dir_fd=fd)
            nxt = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        out = os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"deep\n")
        os.close(out)
    finally:
        os.close(fd)
    return "/".join(["a"] * depth)


def remove_deep_tree(root: Path, depth: int) -> None:
    """Undo :func:`deep_tree` bottom-up (shutil.rmtree recurses once per level)."""
    path = root.joinpath(*(["a"] * depth))
    (path / "f.txt").unlink(missing_ok=True)
    for _ in range(depth):
        os.rmdir(path)
        path = path.parent


@contextlib.contextmanager
def deep_root(tmp_path: Path, depth: int) -> Iterator[tuple[Path, str]]:
    """A root holding ``f.txt`` ``depth`` folders down: ``(root, relative path)``;
    removed afterwards."""
    root = tmp_path / "deep"
    root.mkdir()
    rel = deep_tree(root, depth)
    try:
        yield root, rel
    finally:
        remove_deep_tree(root, depth)


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
        at = read_file_at(dir_fd, name, pre, **kw)
        assert fd_count() == before  # the file's descriptor is closed again
    finally:
        os.close(dir_fd)
    by_path = read_file(str(path), **kw)
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
        got = read_file_at(dir_fd, "pipe", pre, max_file_bytes=MiB)
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
        got = read_file_at(dir_fd, "sub", pre, max_file_bytes=MiB)
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
            lambda: read_file_at(dir_fd, "racy.txt", pre, max_file_bytes=MiB), target
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
        got = read_file_at(dir_fd, "f.txt", pre, max_file_bytes=MiB)
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
        got = read_file_at(dir_fd, "f.txt", pre, max_file_bytes=MiB)
        gone = pre
        (tmp_path / "f.txt").unlink()
        missing = read_file_at(dir_fd, "f.txt", gone, max_file_bytes=MiB)
    finally:
        os.close(dir_fd)
    assert got.text == "a new, longer file\n"
    assert got.ino != pre.st_ino and got.size == len(got.text)
    assert (missing.kind, missing.code) == ("error", Code.NOT_FOUND)


def test_read_file_at_checks_window_arguments(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x\n")
    pre = os.lstat(tmp_path / "f")
    with pytest.raises(ValueError, match="offset"):
        read_file_at(-1, "f", pre, max_file_bytes=MiB, offset=0)


# ---------------------------------------------------------- lsp.encode.cached_json_body


def loaded_for(tmp_path: Path, name: str, text: str) -> tuple[str, Loaded]:
    path = tmp_path / name
    put_files(tmp_path, {name: text})
    got = read_file(str(path), max_file_bytes=16 * MiB)
    assert got.kind == "text" and got.complete_text and got.text == text
    return str(path), got


TRICKY = 'plain "quoted" back\\slash\ttab\nnew\r\n\x01\x1b[0m café \u2028 \U0001f600 </script>\n'


def test_json_body_is_the_json_form_of_the_very_stored_text(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, lo = loaded_for(tmp_path, "a.txt", TRICKY * 50)
    assert cache.put(path, lo)
    assert lo.text is not None
    body = cached_json_body(cache, lo.text)
    assert body == msgspec.json.encode(lo.text)[1:-1]
    assert json.loads(b'"' + body + b'"') == lo.text
    assert cached_json_body(cache, lo.text) is body  # kept, not made again
    equal = "".join(list(lo.text))
    assert equal == lo.text and equal is not lo.text
    assert cached_json_body(cache, equal) is None
    assert cached_json_body(cache, "not stored anywhere") is None


def test_json_body_is_charged_once_to_bytes_used(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, lo = loaded_for(tmp_path, "a.txt", TRICKY * 20)
    assert cache.put(path, lo) and lo.text is not None
    before = cache.bytes_used
    assert before == cache_mod._cost(lo)
    body = cached_json_body(cache, lo.text)
    assert body is not None and len(body) > len(lo.text)  # escapes and UTF-8 count
    # the JSON form, and the UTF-8 copy the encoder left on the (non-ASCII) str
    utf8_copy = len(lo.text.encode()) + 1
    assert not lo.text.isascii()
    assert cache.bytes_used == before + len(body) + utf8_copy
    cached_json_body(cache, lo.text)
    assert cache.bytes_used == before + len(body) + utf8_copy


@pytest.mark.parametrize("how", ["invalidate", "clear", "put-again", "evict", "stale-get"])
def test_json_body_goes_with_its_entry(tmp_path: Path, how: str) -> None:
    path, lo = loaded_for(tmp_path, "a.txt", "a" * 5000)
    other_path, other = loaded_for(tmp_path, "b.txt", "b" * 5000)
    cache = ContentCache(
        MiB if how != "evict" else cache_mod._cost(lo) + cache_mod._cost(other) - 1
    )
    assert cache.put(path, lo) and lo.text is not None
    assert cached_json_body(cache, lo.text) == b"a" * 5000
    if how == "invalidate":
        assert cache.invalidate(path)
    elif how == "clear":
        cache.clear()
    elif how == "put-again":
        again = read_file(path, max_file_bytes=MiB)
        assert again.text == lo.text and again.text is not lo.text
        assert cache.put(path, again) and again.text is not None
        assert cached_json_body(cache, again.text) == b"a" * 5000
    elif how == "evict":
        assert cache.put(other_path, other)
        assert path not in cache
    else:
        os.utime(path, (time.time() - 10, time.time() - 10))
        assert cache.get(path, os.stat(path)) is None
    assert cached_json_body(cache, lo.text) is None
    expected = 0 if how in ("invalidate", "clear", "stale-get") else None
    if expected is not None:
        assert cache.bytes_used == expected
    if how == "put-again":
        assert cache.bytes_used == cache_mod._cost(lo) + 5000


def test_charging_a_json_body_evicts_older_entries(tmp_path: Path) -> None:
    a_path, a = loaded_for(tmp_path, "a.txt", "a" * 10_000)
    b_path, b = loaded_for(tmp_path, "b.txt", "b" * 10_000)
    cache = ContentCache(cache_mod._cost(a) + cache_mod._cost(b) + 100)
    assert cache.put(a_path, a) and cache.put(b_path, b) and b.text is not None
    assert len(cache) == 2
    body = cached_json_body(cache, b.text)
    assert body == b"b" * 10_000
    assert a_path not in cache and b_path in cache
    assert cache.bytes_used == cache_mod._cost(b) + len(body) <= cache.max_bytes
    assert cached_json_body(cache, b.text) is body


def test_a_json_body_too_big_for_the_cache_drops_its_own_entry(tmp_path: Path) -> None:
    path, lo = loaded_for(tmp_path, "a.txt", "x" * 10_000)
    cache = ContentCache(cache_mod._cost(lo) + 10)
    assert cache.put(path, lo) and lo.text is not None
    assert cached_json_body(cache, lo.text) == b"x" * 10_000  # still answered
    assert path not in cache and cache.bytes_used == 0
    assert cached_json_body(cache, lo.text) is None


def test_json_body_of_text_json_cannot_carry_is_none() -> None:
    now = time.time_ns()
    text = "lone \udc80 surrogate"
    lo = Loaded(
        "text",
        text=text,
        complete_text=True,
        size=20,
        mtime_ns=now - HOUR * 10**9,
        ino=1,
        ctime_ns=now - HOUR * 10**9,
        sha256="0" * 64,
        read_at_ns=now,
    )
    cache = ContentCache(MiB)
    assert cache.put("/x/surrogate.txt", lo)
    used = cache.bytes_used
    assert cached_json_body(cache, text) is None
    assert cache.bytes_used == used


def test_racy_entries_are_not_stored_so_have_no_json_body(tmp_path: Path) -> None:
    (tmp_path / "fresh.txt").write_text("y" * 5000)
    lo = read_file(str(tmp_path / "fresh.txt"), max_file_bytes=MiB)
    cache = ContentCache(MiB)
    assert not cache.put(str(tmp_path / "fresh.txt"), lo)
    assert lo.text is not None and cached_json_body(cache, lo.text) is None
    relaxed = ContentCache(MiB, granularity_ns=0)
    assert relaxed.put(str(tmp_path / "fresh.txt"), lo)
    assert cached_json_body(relaxed, lo.text) == b"y" * 5000


def test_short_texts_get_no_json_body_even_when_entries_share_the_object(
    tmp_path: Path,
) -> None:
    """CPython shares one object among equal short strings; such texts are never given a
    kept JSON form (below ``JSON_BODY_MIN_CHARS``), so two entries can't share one."""
    p1, one = loaded_for(tmp_path, "one.txt", "x")
    p2, two = loaded_for(tmp_path, "two.txt", "x")
    assert one.text is two.text  # the same interned object
    cache = ContentCache(MiB)
    assert cache.put(p1, one) and cache.put(p2, two)
    assert one.text is not None and cached_json_body(cache, one.text) is None
    assert cache.invalidate(p2)
    assert p1 in cache and cached_json_body(cache, one.text) is None
    short = "y" * (cache_mod.JSON_BODY_MIN_CHARS - 1)
    p3, three = loaded_for(tmp_path, "three.txt", short)
    assert cache.put(p3, three) and three.text is not None
    assert cached_json_body(cache, three.text) is None
    p4, four = loaded_for(tmp_path, "four.txt", short + "y")
    assert cache.put(p4, four) and four.text is not None
    assert cached_json_body(cache, four.text) == b"y" * cache_mod.JSON_BODY_MIN_CHARS


# ---------------------------------------------------------------------------- decode


@pytest.mark.parametrize(
    "text",
    [
        "plain ascii\n",
        "crlf\r\nand lf\n",
        "héllo wörld — “quotes” 😀\n",
        "\x1b[31mred\x1b[0m escape codes\n",
        "日本語のテキスト\n",
        "no newline at end",
    ],
)
def test_valid_utf8_is_utf8(text: str) -> None:
    assert decode(text.encode()) == Decoded("text", text, "utf-8")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00")).filter(
        lambda s: not s.startswith("\ufeff")
    )
)
def test_any_nul_free_utf8_decodes_to_itself(text: str) -> None:
    assert decode(text.encode()) == Decoded("text", text, "utf-8")


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("Grüße aus München, schöne Straße\n", "cp1252"),
        ("café naïve résumé\n", "cp1252"),
        ("Съешь же ещё этих мягких французских булок, да выпей чаю.\n", "cp1251"),
        ("Příliš žluťoučký kůň úpěl ďábelské ódy.\n", "cp1250"),
    ],
)
def test_invalid_utf8_goes_the_legacy_way(text: str, codec: str) -> None:
    data = text.encode(codec)
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    got = decode(data)
    assert got == decode_mod._decode_legacy(data, True)
    assert got == Decoded("text", text, codec)
    # a prefix takes the same way (the incremental route)
    assert decode(data, complete=False).encoding == codec


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=1, max_size=300))
def test_complete_decode_is_utf8_exactly_when_the_bytes_are(data: bytes) -> None:
    got = decode(data)
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    plain_utf8 = text is not None and b"\x00" not in data and not data.startswith(b"\xef\xbb\xbf")
    assert (got == Decoded("text", text, "utf-8")) == plain_utf8
    if text is None and got.kind == "text" and got.encoding in ("utf-8", "utf-8-sig"):
        # Mostly UTF-8 (PROTOCOL §4, encodings): each byte that is not valid UTF-8 is
        # one U+FFFD, counted; every other character is as a strict decoder reads it.
        body = data[3:] if got.bom else data
        escaped = body.decode("utf-8", "surrogateescape")
        bad = sum(1 for c in escaped if "\udc80" <= c <= "\udcff")
        assert got.replaced_bytes == bad > 0
        assert got.text == "".join("\ufffd" if "\udc80" <= c <= "\udcff" else c for c in escaped)
    else:
        assert got.replaced_bytes == 0


@pytest.mark.parametrize(
    "data",
    [b"abc\x00def", "héllo\x00wörld\n".encode(), b"\x00" * 10, b"text\n" * 100 + b"\x00"],
)
def test_nul_means_binary(data: bytes) -> None:
    assert decode(data) == Decoded("binary", None, None)


def test_bomless_utf16_with_nuls_is_still_text() -> None:
    text = "hello world, plain text\n" * 4
    assert decode(text.encode("utf-16-le")) == Decoded("text", text, "utf-16-le")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\xef\xbb\xbf" + "héllo\n".encode(), Decoded("text", "héllo\n", "utf-8-sig", bom=True)),
        (b"\xef\xbb\xbfplain", Decoded("text", "plain", "utf-8-sig", bom=True)),
        (
            b"\xff\xfe" + "héllo\n".encode("utf-16-le"),
            Decoded("text", "héllo\n", "utf-16-le", bom=True),
        ),
        (
            b"\xfe\xff" + "héllo\n".encode("utf-16-be"),
            Decoded("text", "héllo\n", "utf-16-be", bom=True),
        ),
        (
            b"\xff\xfe\x00\x00" + "héllo\n".encode("utf-32-le"),
            Decoded("text", "héllo\n", "utf-32-le", bom=True),
        ),
    ],
)
def test_a_bom_still_wins(data: bytes, expected: Decoded) -> None:
    assert decode(data) == expected


def test_magic_before_legacy_for_invalid_utf8() -> None:
    jpeg = b"\xff\xd8\xff\xe0JFIF more bytes \xe9\xe8"
    assert decode(jpeg) == Decoded("binary", None, None)
    assert decode(b"%PDF-1.7 valid utf-8\n").kind == "text"  # valid UTF-8 wins over magic


@pytest.mark.parametrize("data", [b"caf\xe9\n", b"caf\xe9 na\xefve\n", b"\xe9t\xe9"])
def test_short_latin1_cafe_is_cp1252(data: bytes) -> None:
    assert decode(data) == Decoded("text", data.decode("cp1252"), "cp1252")


def test_latin1_ending_in_a_possible_utf8_lead_byte_reads_as_cut_utf8() -> None:
    # The mostly-UTF-8 rule (PROTOCOL §4, encodings): a file whose only invalid bytes
    # are an incomplete sequence at its very end is UTF-8, and \xe9 can start one. The
    # price: a legacy file ending without a newline in such a byte reads as UTF-8.
    assert decode(b"caf\xe9") == Decoded("text", "caf\ufffd", "utf-8", replaced_bytes=1)


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
