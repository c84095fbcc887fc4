"""Unit tests of ``readmany_daemon.content.reader``: the safe reader.

Reader tests use real files under ``tmp_path``; races (a file growing or swapped for a
FIFO between two syscalls) are made deterministic by wrapping ``os.fstat``/``os.lstat``
for the duration of one call instead of sleeping.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from readmany_daemon.content import lines as lines_mod
from readmany_daemon.content import prefix as prefix_mod
from readmany_daemon.content import reader as reader_mod
from readmany_daemon.content.lines import LineCounter, count_lines, window
from readmany_daemon.content.reader import READ_CHUNK_BYTES as CHUNK_BYTES
from readmany_daemon.content.reader import ReadOptions, mime_for, read_file
from readmany_daemon.errors import Code

MiB = 1024 * 1024

# --------------------------------------------------------------------------- read_file


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_read_small_text_file(tmp_path: Path) -> None:
    data = "alpha\nbéta\r\ngamma".encode()
    path = write(tmp_path / "a.txt", data)
    got = read_file(path, ReadOptions(max_file_bytes=MiB, offset=2, limit=1))
    st_ = os.stat(path)
    assert got.kind == "text" and got.code is None
    assert got.text == "alpha\nbéta\r\ngamma" and got.complete_text
    assert got.total_lines == 3 and got.encoding == "utf-8" and not got.bom
    assert got.window is not None and got.window.text == "béta\r\n"
    assert (got.window.line_end, got.window.next_offset) == (2, 3)
    assert (got.size, got.mtime_ns, got.ino, got.ctime_ns) == (
        st_.st_size,
        st_.st_mtime_ns,
        st_.st_ino,
        st_.st_ctime_ns,
    )
    assert got.sha256 == hashlib.sha256(data).hexdigest()
    assert got.data is None and got.bytes_read == len(data)


def test_read_latin1_file(tmp_path: Path) -> None:
    path = write(tmp_path / "l.txt", b"caf\xe9 na\xefve r\xe9sum\xe9\n")
    got = read_file(path, ReadOptions(max_file_bytes=MiB))
    assert (got.text, got.encoding) == ("café naïve résumé\n", "cp1252")


def test_read_empty_file(tmp_path: Path) -> None:
    got = read_file(write(tmp_path / "e", b""), ReadOptions(max_file_bytes=MiB))
    assert (got.kind, got.text, got.total_lines, got.complete_text) == ("text", "", 0, True)


def test_read_binary_with_bytes_for_attachment(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    path = write(tmp_path / "logo.PNG", png)
    got = read_file(path, ReadOptions(max_file_bytes=MiB, want_bytes=True))
    assert (got.kind, got.code, got.text) == ("binary", Code.BINARY, None)
    assert got.data == png and got.sha256 == hashlib.sha256(png).hexdigest()
    assert got.message is not None and "Binary" in got.message
    assert read_file(path, ReadOptions(max_file_bytes=MiB)).data is None
    assert mime_for(path) == "image/png"


@pytest.mark.parametrize(
    ("name", "mime"),
    [
        ("a.png", "image/png"),
        ("a.jpg", "image/jpeg"),
        ("a.JPEG", "image/jpeg"),
        ("a.gif", "image/gif"),
        ("a.webp", "image/webp"),
        ("a.bmp", "image/bmp"),
        ("a.ico", "image/vnd.microsoft.icon"),
        ("a.tif", "image/tiff"),
        ("a.tiff", "image/tiff"),
        ("a.avif", "image/avif"),
        ("a.heic", "image/heic"),
        ("doc.pdf", "application/pdf"),
        ("icon.svg", None),
        ("main.py", None),
        ("Makefile", None),
    ],
)
def test_mime_for(name: str, mime: str | None) -> None:
    assert mime_for(f"/w/{name}") == mime


def test_not_found_and_not_a_directory(tmp_path: Path) -> None:
    got = read_file(str(tmp_path / "missing"), ReadOptions(max_file_bytes=MiB))
    assert (got.kind, got.code) == ("error", Code.NOT_FOUND)
    afile = write(tmp_path / "f", b"x")
    assert read_file(afile + "/below", ReadOptions(max_file_bytes=MiB)).code == Code.NOT_FOUND


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    got = read_file(str(tmp_path), ReadOptions(max_file_bytes=MiB))
    assert (got.kind, got.code) == ("error", Code.NOT_A_FILE)
    assert got.message is not None and "directory" in got.message


def test_fifo_is_not_a_file_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    got = read_file(str(fifo), ReadOptions(max_file_bytes=MiB))
    assert (got.code, time.monotonic() - started < 1) == (Code.NOT_A_FILE, True)
    assert got.message is not None and "FIFO" in got.message


def test_fifo_swapped_in_after_lstat_is_caught_by_fstat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lstat sees a regular file; it is replaced by a FIFO before open. O_NONBLOCK makes
    # the open return at once and the fstat of the descriptor refuses it before any read.
    target = tmp_path / "racy"
    target.write_text("regular\n")
    real_lstat = os.lstat

    def lstat_then_swap(path: str) -> os.stat_result:
        result = real_lstat(path)
        os.unlink(path)
        os.mkfifo(path)
        return result

    monkeypatch.setattr(os, "lstat", lstat_then_swap)
    got = read_file(str(target), ReadOptions(max_file_bytes=MiB))
    monkeypatch.undo()
    assert got.code == Code.NOT_A_FILE and got.message is not None and "FIFO" in got.message


def test_unix_socket_is_not_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        got = read_file(str(path), ReadOptions(max_file_bytes=MiB))
    assert got.code == Code.NOT_A_FILE and got.message is not None and "socket" in got.message


def test_dev_null_is_not_a_file() -> None:
    got = read_file("/dev/null", ReadOptions(max_file_bytes=MiB))
    assert (got.kind, got.code) == ("error", Code.NOT_A_FILE)


def test_symlink_is_refused_so_callers_resolve_first(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("content\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    got = read_file(str(link), ReadOptions(max_file_bytes=MiB))
    assert got.code == Code.NOT_A_FILE
    assert got.message is not None and "symbolic link" in got.message
    resolved = read_file(os.path.realpath(link), ReadOptions(max_file_bytes=MiB))
    assert resolved.text == "content\n"


def test_permission_denied(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not deny reads to root")
    path = tmp_path / "secret"
    path.write_text("x")
    path.chmod(0)
    try:
        got = read_file(str(path), ReadOptions(max_file_bytes=MiB))
    finally:
        path.chmod(0o600)
    assert (got.kind, got.code) == ("error", Code.PERMISSION_DENIED)


def test_invalid_window_arguments_raise(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="offset"):
        read_file(str(tmp_path / "x"), ReadOptions(max_file_bytes=1, offset=0))


def test_growing_file_is_read_as_its_fstat_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = b"one\ntwo\n"
    path = write(tmp_path / "log", original)
    real_fstat = os.fstat

    def fstat_then_append(fd: int) -> os.stat_result:
        result = real_fstat(fd)
        with open(path, "ab") as f:
            f.write(b"three\n")
        return result

    monkeypatch.setattr(os, "fstat", fstat_then_append)
    got = read_file(path, ReadOptions(max_file_bytes=MiB))
    monkeypatch.undo()
    # Each fstat sees a longer file: it is read again (at most 3 times), each read as
    # its fstat says, and the last one is answered: one whole version, never more.
    assert got.size == got.bytes_read == len(original) + 2 * 6
    assert got.text == "one\ntwo\nthree\nthree\n" and got.total_lines == 4
    assert got.sha256 == hashlib.sha256(got.text.encode()).hexdigest()
    assert os.path.getsize(path) == len(original) + 4 * 6  # one fstat more than reads


def test_shrinking_file_gives_what_was_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "log", b"one\ntwo\nthree\n")
    real_fstat = os.fstat

    def fstat_then_truncate(fd: int) -> os.stat_result:
        result = real_fstat(fd)
        os.truncate(path, 4)
        return result

    monkeypatch.setattr(os, "fstat", fstat_then_truncate)
    got = read_file(path, ReadOptions(max_file_bytes=MiB))
    monkeypatch.undo()
    # Read again once the change is seen: the answer is the file as it is now.
    assert got.size == 4 and got.bytes_read == 4
    assert got.text == "one\n"


# ----------------------------------------------------------------- files over the limit


@pytest.fixture(scope="module")
def big_utf8(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A 25 MB UTF-8 file of numbered lines of varying length (multi-byte characters
    land on chunk edges), without a final newline."""
    pads = ["é✓x" * (k * 7 % 40) for k in range(40)]
    text = "\n".join([f"{i:07d} {pads[i % 40]}" for i in range(1, 210_000)])
    assert 25 * MiB < len(text.encode()) < 26 * MiB
    path = tmp_path_factory.mktemp("big") / "big.txt"
    path.write_bytes(text.encode())
    yield str(path), text


def test_25_mb_file_window_reads_only_a_prefix(big_utf8: tuple[str, str]) -> None:
    path, text = big_utf8
    started = time.perf_counter()
    got = read_file(path, ReadOptions(max_file_bytes=20 * MiB, offset=1, limit=200))
    elapsed = time.perf_counter() - started
    assert got.kind == "text" and got.code is None
    assert got.size == os.path.getsize(path) > 20 * MiB
    assert not got.complete_text and got.sha256 is None
    assert got.text is not None and len(got.text) <= CHUNK_BYTES
    assert got.total_lines == count_lines(text)
    assert got.window == window(text, 1, 200)
    assert got.window is not None and got.window.next_offset == 201
    assert elapsed < 1.5


def test_25_mb_file_full_read_is_too_large(big_utf8: tuple[str, str]) -> None:
    path, _ = big_utf8
    for kwargs in ({"want_full": True}, {"want_bytes": True, "limit": 5}, {}):
        got = read_file(path, ReadOptions(max_file_bytes=20 * MiB, **kwargs))
        assert (got.kind, got.code, got.text) == ("error", Code.TOO_LARGE, None)
        assert got.message is not None and str(got.size) in got.message


@pytest.mark.parametrize(
    ("offset", "limit", "max_chars"),
    [
        (1, None, 20000),
        (150_000, 200, None),
        (209_990, 50, 20000),
        (5, 3, 10),
        (2, 1, 0),
    ],
)
def test_prefix_window_equals_whole_window(
    big_utf8: tuple[str, str], offset: int, limit: int | None, max_chars: int | None
) -> None:
    path, text = big_utf8
    got = read_file(
        path, ReadOptions(max_file_bytes=MiB, offset=offset, limit=limit, max_chars=max_chars)
    )
    assert got.window == window(text, offset, limit, max_chars)
    assert got.text is not None and text.startswith(got.text)


def test_prefix_read_past_the_end_reads_everything(tmp_path: Path) -> None:
    text = "".join(f"{i}\n" for i in range(300_000))
    path = write(tmp_path / "t", text.encode())
    got = read_file(path, ReadOptions(max_file_bytes=1000, offset=400_000, limit=10))
    assert got.complete_text and got.text == text
    assert got.sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert got.window == window(text, 400_000, 10)


@pytest.mark.parametrize(
    ("codec", "with_bom"),
    [
        ("utf-16-le", True),
        ("utf-16-be", True),
        ("utf-16-le", False),
        ("utf-16-be", False),
        ("utf-32-le", True),
        ("utf-32-be", True),
    ],
)
def test_prefix_read_counts_utf16_32_lines_aligned(
    tmp_path: Path, codec: str, with_bom: bool
) -> None:
    # U+0A0A then U+0100 encodes (LE) as 0A 0A 00 01: a misaligned "0A 00" that must
    # not count as a newline.
    line = "text \u0a0a\u0100 \u000a"
    text = ("plain ascii line for detection\n" * 200) + line * 200_000 + "tail"
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}.get(
        codec, codecs.BOM_UTF32_LE if codec == "utf-32-le" else codecs.BOM_UTF32_BE
    )
    data = (bom if with_bom else b"") + text.encode(codec)
    path = write(tmp_path / "u", data)
    got = read_file(path, ReadOptions(max_file_bytes=1000, offset=3, limit=2))
    assert (got.encoding, got.bom) == (codec, with_bom)
    assert not got.complete_text
    assert got.total_lines == count_lines(text) == 200 + 200_000 + 1
    assert got.window == window(text, 3, 2)


def test_prefix_read_of_legacy_text(tmp_path: Path) -> None:
    text = "café naïve résumé, déjà vu\n" * 200_000
    path = write(tmp_path / "l", text.encode("cp1252"))
    got = read_file(path, ReadOptions(max_file_bytes=MiB, offset=10, limit=3))
    assert got.encoding == "cp1252" and not got.complete_text
    assert got.total_lines == 200_000
    assert got.window == window(text, 10, 3)


def test_prefix_read_of_binary(tmp_path: Path) -> None:
    path = write(tmp_path / "b", b"\x7fELF" + bytes(3 * MiB))
    got = read_file(path, ReadOptions(max_file_bytes=MiB, limit=10))
    assert (got.kind, got.code, got.sha256) == ("binary", Code.BINARY, None)


def test_line_counter_ebcdic_fallback_and_chunk_edges() -> None:
    text = "abc\ndef\nghi"
    counter = LineCounter("cp037")
    data = text.encode("cp037")
    for i in range(len(data)):
        counter.feed(data[i : i + 1])
    assert counter.total() == 3
    utf16 = LineCounter("utf-16-le")
    encoded = "a\n\u0a0a\u0100\n".encode("utf-16-le")
    for i in range(0, len(encoded), 3):  # odd chunk sizes split code units
        utf16.feed(encoded[i : i + 3])
    assert utf16.total() == 2


def test_over_limit_file_is_read_no_further_than_scan_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 10 GB file must not be read (or counted) to its end: past SCAN_BYTES the line
    # count is unknown and a window starting further is too-large
    monkeypatch.setattr(prefix_mod, "SCAN_BYTES", 2 * reader_mod.READ_CHUNK_BYTES)
    path = tmp_path / "big.log"
    path.write_bytes(b"".join(b"line %07d\n" % i for i in range(1, 600_001)))  # 7.2 MB
    head = read_file(str(path), ReadOptions(max_file_bytes=1000, limit=3))
    assert head.kind == "text" and head.total_lines is None
    assert head.bytes_read == 2 * reader_mod.READ_CHUNK_BYTES
    assert head.window is not None and head.window.text == (
        "line 0000001\nline 0000002\nline 0000003\n"
    )
    assert head.window.next_offset == 4 and head.window.total_lines is None
    far = read_file(str(path), ReadOptions(max_file_bytes=1000, offset=500_000, limit=1))
    assert (far.kind, far.code) == ("error", Code.TOO_LARGE)
    assert far.bytes_read <= 2 * reader_mod.READ_CHUNK_BYTES + reader_mod.READ_CHUNK_BYTES
    # within the limit everything is as before: exact total
    small = read_file(str(path), ReadOptions(max_file_bytes=1000, offset=2, limit=1))
    assert small.window is not None and small.window.text == "line 0000002\n"


def test_read_beneath_refuses_a_link_anywhere_on_the_path(tmp_path: Path) -> None:
    """``beneath``: the path is opened one component at a time without following links,
    so a folder swapped for a link to elsewhere after the path was checked is refused
    (a plain open would read the other file)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "x.txt").write_text("inside\n")
    outside.mkdir()
    (outside / "x.txt").write_text("OUTSIDE\n")
    target = str(root / "sub" / "x.txt")
    read = ReadOptions(max_file_bytes=1 << 20)
    assert read_file(target, read, beneath=str(root)).text == "inside\n"
    (root / "sub").rename(root / "real")
    (root / "sub").symlink_to(outside)  # the swap: same path, now leading out
    assert read_file(target, read).text == "OUTSIDE\n"  # what it prevents
    got = read_file(target, read, beneath=str(root))
    assert got.kind == "error" and got.text is None, got
    (root / "deep" / "er").mkdir(parents=True)
    (root / "deep" / "er" / "y.txt").write_text("deep\n")
    deep = str(root / "deep" / "er" / "y.txt")
    assert read_file(deep, ReadOptions(max_file_bytes=1 << 20), beneath=str(root)).text == "deep\n"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"a",
        b"a\n",
        b"a\nb",
        b"\n\n",
        "caf\u00e9\nna\u00efve\n\U0001f600".encode(),
        codecs.BOM_UTF8,
        codecs.BOM_UTF8 + b"x\ny",
        "a\nb\n".encode("utf-16"),
        b"caf\xe9\r\nx",
    ],
)
def test_total_lines_counted_on_bytes_match_the_text(tmp_path: Path, data: bytes) -> None:
    """UTF-8 files count their lines on the bytes; every encoding must agree with
    ``count_lines`` over the decoded text."""
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    loaded = reader_mod.read_file(str(path), ReadOptions(max_file_bytes=1 << 20))
    assert loaded.kind == "text"
    assert loaded.text is not None
    assert loaded.total_lines == lines_mod.count_lines(loaded.text)
