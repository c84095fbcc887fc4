"""Unit tests for ``readmany_daemon.content``: decoding, line windows, the safe reader, the cache.

Reader tests use real files under ``tmp_path``; races (a file growing or swapped for a
FIFO between two syscalls) are made deterministic by wrapping ``os.fstat``/``os.lstat``
for the duration of one call instead of sleeping.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import random
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readmany_daemon.content import cache as cache_mod
from readmany_daemon.content import lines as lines_mod
from readmany_daemon.content import reader
from readmany_daemon.content import reader as reader_mod
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.content.decode import Decoded, decode
from readmany_daemon.content.lines import count_lines, split_lines, window
from readmany_daemon.content.reader import READ_CHUNK_BYTES as CHUNK_BYTES
from readmany_daemon.content.reader import FileRead as Loaded
from readmany_daemon.content.reader import mime_for, read_file
from readmany_daemon.errors import Code

MiB = 1024 * 1024
HOUR_NS = 3600 * 10**9

# --------------------------------------------------------------------------- decode


def test_latin1_cafe_is_read_with_every_character_intact() -> None:
    # charset-normalizer's best guess here is cp1250, which turns ï into ď.
    got = decode(b"caf\xe9 na\xefve r\xe9sum\xe9\n")
    assert got == Decoded("text", "café naïve résumé\n", "cp1252")


@pytest.mark.parametrize(
    ("sample", "encoding"),
    [
        ("Grüße aus München, schöne Straße\n", "cp1252"),
        ("El niño comió piñata y jalapeño, ¿verdad?\n", "cp1252"),
        ("Price: 10€ — “quoted” text…\n", "cp1252"),
        # evidence against the Western reading keeps the detector's choice
        ("Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig.\n", "cp1250"),
        ("Příliš žluťoučký kůň úpěl ďábelské ódy.\n", "cp1250"),
        ("Съешь же ещё этих мягких французских булок, да выпей чаю.\n", "cp1251"),
        ("Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.\n", "cp1253"),
    ],
)
def test_legacy_tie_break(sample: str, encoding: str) -> None:
    got = decode(sample.encode(encoding))
    assert got.kind == "text"
    assert got.text == sample
    assert got.encoding == encoding


def test_cp1251_russian() -> None:
    text = "Привет, мир! Это проверка кодировки windows-1251.\n Вторая строка.\n"
    got = decode(text.encode("cp1251"))
    assert (got.kind, got.text, got.encoding) == ("text", text, "cp1251")


def test_shift_jis_japanese() -> None:
    text = "こんにちは、世界。これはテストです。\n日本語のファイル。\n"
    got = decode(text.encode("shift_jis"))
    assert got.kind == "text"
    assert got.text == text
    assert got.encoding is not None
    assert codecs.lookup(got.encoding).name in {"cp932", "shift_jis"}


def test_shift_jis_prefix_cut_inside_a_character_stays_shift_jis() -> None:
    text = "日本語のテキストです。\n" * 50
    data = text.encode("shift_jis")
    cut = data[:-2]  # drops "\n" and the trail byte of the last "。": ends on a lead byte
    got = decode(cut, complete=False)
    assert got.kind == "text"
    assert got.text == text[:-2]


def test_utf8_character_spanning_bytes_1023_and_1024() -> None:
    data = b"a" * 1023 + "é".encode() + b" and more\n"
    prefix = data[:1024]
    assert prefix[-1:] == b"\xc3"
    got = decode(prefix, complete=False)
    assert got == Decoded("text", "a" * 1023, "utf-8")
    whole = decode(data)
    assert whole == Decoded("text", "a" * 1023 + "é and more\n", "utf-8")


def test_utf8_invalid_prefix_end_is_not_excused() -> None:
    # \xff can never start a UTF-8 sequence: not a cut character, so not UTF-8.
    assert decode(b"abc\xff", complete=False).encoding != "utf-8"


@pytest.mark.parametrize(
    ("codec", "bom", "encoding"),
    [
        ("utf-16-le", codecs.BOM_UTF16_LE, "utf-16-le"),
        ("utf-16-be", codecs.BOM_UTF16_BE, "utf-16-be"),
        ("utf-32-le", codecs.BOM_UTF32_LE, "utf-32-le"),
        ("utf-32-be", codecs.BOM_UTF32_BE, "utf-32-be"),
        ("utf-8", codecs.BOM_UTF8, "utf-8-sig"),
    ],
)
def test_bom_encodings(codec: str, bom: bytes, encoding: str) -> None:
    text = "héllo wörld\r\nline two ✓ 𝄞\n"
    got = decode(bom + text.encode(codec))
    assert got == Decoded("text", text, encoding, bom=True)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom(codec: str) -> None:
    text = "def main():\n    print('héllo')\n"
    got = decode(text.encode(codec))
    assert got == Decoded("text", text, codec, bom=False)
    half = text.encode(codec)[:11]  # odd length: half a code unit at the end
    cut = decode(half, complete=False)
    assert cut == Decoded("text", text[:5], codec)


def test_empty_file_is_text() -> None:
    assert decode(b"") == Decoded("text", "", "utf-8")


def test_mixed_newlines_are_kept() -> None:
    text = "a\r\nb\nc\rd\r\n"
    assert decode(text.encode()).text == text


def test_utf8_with_nul_is_binary_but_controls_alone_are_not() -> None:
    assert decode(b"abc\x00def\n").kind == "binary"
    assert decode(b"\x01\x02\x03\x04 still valid utf-8\n").kind == "text"


def test_legacy_text_starting_like_a_short_signature_is_text() -> None:
    # "BM" starts BMP files; the rule only trusts signatures that cannot start a sentence.
    got = decode("BMW Händler in München\n".encode("cp1252"))
    assert (got.kind, got.text) == ("text", "BMW Händler in München\n")


def test_ascii_that_merely_starts_like_pdf_is_text() -> None:
    # Valid NUL-free UTF-8 is never binary, even with a binary signature in front.
    assert decode(b"%PDF- is how a PDF starts\n").kind == "text"


@pytest.mark.parametrize(
    "header",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00",
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
        b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00>\x00",
        b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
        b"GIF89a\x01\x00\x01\x00\x80\x00\x00",
        b"PK\x03\x04\x14\x00\x00\x00\x08\x00",
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03",
    ],
    ids=["png", "pdf", "elf", "jpeg", "gif", "zip", "gzip"],
)
def test_binary_signatures(header: bytes) -> None:
    assert decode(header) == Decoded("binary", None, None)
    assert decode(header, complete=False).kind == "binary"


@pytest.mark.parametrize("seed", range(5))
def test_random_bytes_are_binary(seed: int) -> None:
    rnd = random.Random(seed)
    with_nul = rnd.randbytes(4096)
    without_nul = bytes(rnd.randrange(1, 256) for _ in range(4096))
    assert decode(with_nul).kind == "binary"
    assert decode(without_nul).kind == "binary"
    assert decode(without_nul[:1000], complete=False).kind == "binary"


def test_short_bom_prefix_is_undetermined() -> None:
    assert decode(b"\xff\xfe", complete=False) == Decoded("text", "", None)
    assert decode(b"\xef\xbb", complete=False) == Decoded("text", "", None)
    assert decode(b"\xff\xfe", complete=True) == Decoded("text", "", "utf-16-le", bom=True)


_PRINTABLE = st.characters(exclude_categories=("Cc", "Cs"), exclude_characters="\ufeff")
_TEXT = st.text(st.one_of(_PRINTABLE, st.sampled_from("\n\t\r")), max_size=40)


@settings(max_examples=150, deadline=None)
@given(text=_TEXT)
def test_utf8_round_trip_at_every_prefix(text: str) -> None:
    data = text.encode("utf-8")
    assert decode(data) == Decoded("text", text, "utf-8")
    for k in range(len(data) + 1):
        got = decode(data[:k], complete=False)
        assert got.kind == "text"
        assert got.text is not None and text.startswith(got.text)
        assert len(got.text.encode("utf-8")) >= k - 3


@settings(max_examples=100, deadline=None)
@given(text=_TEXT, codec=st.sampled_from(["utf-16-le", "utf-16-be"]))
def test_utf16_with_bom_round_trip_at_every_prefix(text: str, codec: str) -> None:
    bom = codecs.BOM_UTF16_LE if codec == "utf-16-le" else codecs.BOM_UTF16_BE
    data = bom + text.encode(codec)
    assert decode(data) == Decoded("text", text, codec, bom=True)
    for k in range(len(data) + 1):
        got = decode(data[:k], complete=False)
        assert got.kind == "text", k
        assert got.text is not None and text.startswith(got.text)
        # at most one half unit plus one pending high surrogate is held back
        assert len(got.text.encode(codec)) >= k - 2 - 3


_ASCII_TEXT = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyz ABC(){}=+-_.,;:'\"0123456789\n\t"), min_size=1
)


@settings(max_examples=100, deadline=None)
@given(text=_ASCII_TEXT, codec=st.sampled_from(["utf-16-le", "utf-16-be"]))
def test_utf16_without_bom_round_trip_at_every_prefix(text: str, codec: str) -> None:
    data = text.encode(codec)
    assert decode(data) == Decoded("text", text, codec)
    for k in range(len(data) + 1):
        got = decode(data[:k], complete=False)
        assert got.kind == "text", k
        assert got.text is not None and text.startswith(got.text)
        if k >= 2:  # b"\x00" alone could still become a UTF-32BE BOM: undetermined
            assert got.encoding == codec
            assert 2 * len(got.text) >= k - 1  # at most half a code unit held back


# --------------------------------------------------------------------------- lines


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("a\nb", ["a", "b"]),
        ("a\n\n", ["a", ""]),
        ("\n", [""]),
        ("a\r\nb\r", ["a\r", "b\r"]),
        ("v\x0bf\x0cs\x1cn\x85l\u2028p\u2029e", ["v\x0bf\x0cs\x1cn\x85l\u2028p\u2029e"]),
    ],
)
def test_split_lines_only_on_newline(text: str, lines: list[str]) -> None:
    assert split_lines(text) == lines
    assert count_lines(text) == len(lines)
    assert "".join(split_lines(text, keepends=True)) == text


TEN = "".join(f"line {i}\n" for i in range(1, 11))


def test_window_basic_range() -> None:
    w = window(TEN, offset=3, limit=2)
    assert w.text == "line 3\nline 4\n"
    assert (w.line_start, w.line_end, w.total_lines) == (3, 4, 10)
    assert (w.complete, w.next_offset, w.cut_line) == (False, 5, None)


def test_window_to_end_is_complete() -> None:
    w = window(TEN, offset=9)
    assert w.text == "line 9\nline 10\n"
    assert (w.line_end, w.complete, w.next_offset) == (10, True, None)
    whole = window(TEN)
    assert whole.text == TEN and whole.complete


def test_window_max_chars_cuts_at_line_boundary() -> None:
    w = window(TEN, offset=1, limit=5, max_chars=20)  # "line 1\n" is 7 characters
    assert w.text == "line 1\nline 2\n"
    assert (w.line_end, w.next_offset, w.cut_line, w.complete) == (2, 3, None, False)
    exact = window(TEN, max_chars=21)
    assert exact.text == "line 1\nline 2\nline 3\n"


def test_window_first_line_longer_than_max_chars_is_cut() -> None:
    text = "x" * 50 + "\nshort\n"
    w = window(text, max_chars=10)
    assert w.text == "x" * 10
    assert (w.line_end, w.cut_line, w.next_offset, w.complete) == (1, 1, 2, False)
    last = window("y" * 30, max_chars=10)
    assert (last.text, last.cut_line, last.next_offset, last.complete) == ("y" * 10, 1, None, False)


def test_window_keeps_crlf_and_last_line_without_newline() -> None:
    text = "a\r\nb\r\nc"
    assert window(text, offset=2).text == "b\r\nc"
    assert window(text, offset=1, limit=1).text == "a\r\n"
    assert window(text, offset=3).line_end == 3


def test_window_past_end_and_empty() -> None:
    past = window(TEN, offset=12)
    assert (past.text, past.line_end, past.complete, past.next_offset) == ("", 11, False, None)
    assert window("a\n", offset=2).complete is False
    empty = window("")
    assert (empty.text, empty.line_end, empty.total_lines, empty.complete) == ("", 0, 0, True)
    assert empty.next_offset is None
    assert window("", offset=2).complete is False


def test_window_zero_limit_or_chars_is_empty() -> None:
    for w in (window(TEN, offset=4, limit=0), window(TEN, offset=4, max_chars=0)):
        assert (w.text, w.line_end, w.next_offset, w.cut_line) == ("", 3, 4, None)


@pytest.mark.parametrize(
    "kwargs", [{"offset": 0}, {"offset": -1}, {"limit": -1}, {"max_chars": -5}]
)
def test_window_rejects_bad_arguments(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        window(TEN, **kwargs)


def test_window_is_fast_on_20_mb() -> None:
    line = "x" * 79 + "\n"
    text = line * (20 * MiB // len(line))
    started = time.perf_counter()
    head = window(text, offset=1, limit=200, max_chars=20000)
    far = window(text, offset=200_000, limit=200)
    elapsed = time.perf_counter() - started
    assert head.text == line * 200 and head.next_offset == 201
    assert far.text == line * 200 and far.line_end == 200_199
    assert head.total_lines == far.total_lines == len(text) // len(line)
    assert elapsed < 0.5


_LINES_TEXT = st.text(st.sampled_from("ab\r\n\n\né✓"), max_size=60)


@settings(max_examples=300, deadline=None)
@given(
    text=_LINES_TEXT,
    offset=st.integers(1, 20),
    limit=st.none() | st.integers(0, 8),
    max_chars=st.none() | st.integers(0, 25),
)
def test_window_properties(
    text: str, offset: int, limit: int | None, max_chars: int | None
) -> None:
    lines = split_lines(text, keepends=True)
    w = window(text, offset, limit, max_chars)
    assert w.total_lines == len(lines) == count_lines(text)
    assert w.line_start == offset
    past_end = offset > max(len(lines), 1)
    if max_chars is not None:
        assert len(w.text) <= max_chars
    if limit is not None:
        assert w.line_end - offset + 1 <= limit
    if w.cut_line is None:
        assert w.text == "".join(lines[offset - 1 : w.line_end])
    else:
        # The last line shown is cut: the first line alone, or a line after whole
        # lines that no window of max_chars could hold whole.
        assert w.cut_line == w.line_end
        assert max_chars is not None and len(w.text) == max_chars
        whole = "".join(lines[offset - 1 : w.cut_line - 1])
        cut = lines[w.cut_line - 1]
        assert w.text.startswith(whole) and cut.startswith(w.text[len(whole) :])
        assert len(cut) > max_chars and len(w.text) > len(whole)
    if past_end:
        assert (w.text, w.next_offset, w.complete) == ("", None, False)
    else:
        assert w.complete == (w.line_end == len(lines) and w.cut_line is None)
        expected_next = w.line_end + 1 if w.line_end < len(lines) else None
        assert w.next_offset == expected_next


@settings(max_examples=200, deadline=None)
@given(text=_LINES_TEXT, limit=st.integers(1, 5), max_chars=st.none() | st.integers(1, 25))
def test_following_next_offset_reads_everything_once(
    text: str, limit: int, max_chars: int | None
) -> None:
    lines = split_lines(text, keepends=True)
    pieces: list[str] = []
    offset: int | None = 1
    steps = 0
    while offset is not None:
        w = window(text, offset, limit, max_chars)
        # a cut line (the window's last) stands for the whole line here
        pieces.append(w.text if w.cut_line is None else "".join(lines[offset - 1 : w.cut_line]))
        assert w.next_offset is None or w.next_offset > offset
        offset = w.next_offset
        steps += 1
        assert steps <= len(lines) + 1
    assert "".join(pieces) == text


# --------------------------------------------------------------------------- read_file


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_read_small_text_file(tmp_path: Path) -> None:
    data = "alpha\nbéta\r\ngamma".encode()
    path = write(tmp_path / "a.txt", data)
    got = read_file(path, max_file_bytes=MiB, offset=2, limit=1)
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
    got = read_file(path, max_file_bytes=MiB)
    assert (got.text, got.encoding) == ("café naïve résumé\n", "cp1252")


def test_read_empty_file(tmp_path: Path) -> None:
    got = read_file(write(tmp_path / "e", b""), max_file_bytes=MiB)
    assert (got.kind, got.text, got.total_lines, got.complete_text) == ("text", "", 0, True)


def test_read_binary_with_bytes_for_attachment(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    path = write(tmp_path / "logo.PNG", png)
    got = read_file(path, max_file_bytes=MiB, want_bytes=True)
    assert (got.kind, got.code, got.text) == ("binary", Code.BINARY, None)
    assert got.data == png and got.sha256 == hashlib.sha256(png).hexdigest()
    assert got.message is not None and "Binary" in got.message
    assert read_file(path, max_file_bytes=MiB).data is None
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
    got = read_file(str(tmp_path / "missing"), max_file_bytes=MiB)
    assert (got.kind, got.code) == ("error", Code.NOT_FOUND)
    afile = write(tmp_path / "f", b"x")
    assert read_file(afile + "/below", max_file_bytes=MiB).code == Code.NOT_FOUND


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    got = read_file(str(tmp_path), max_file_bytes=MiB)
    assert (got.kind, got.code) == ("error", Code.NOT_A_FILE)
    assert got.message is not None and "directory" in got.message


def test_fifo_is_not_a_file_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    got = read_file(str(fifo), max_file_bytes=MiB)
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
    got = read_file(str(target), max_file_bytes=MiB)
    monkeypatch.undo()
    assert got.code == Code.NOT_A_FILE and got.message is not None and "FIFO" in got.message


def test_unix_socket_is_not_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        got = read_file(str(path), max_file_bytes=MiB)
    assert got.code == Code.NOT_A_FILE and got.message is not None and "socket" in got.message


def test_dev_null_is_not_a_file() -> None:
    got = read_file("/dev/null", max_file_bytes=MiB)
    assert (got.kind, got.code) == ("error", Code.NOT_A_FILE)


def test_symlink_is_refused_so_callers_resolve_first(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("content\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    got = read_file(str(link), max_file_bytes=MiB)
    assert got.code == Code.NOT_A_FILE
    assert got.message is not None and "symbolic link" in got.message
    resolved = read_file(os.path.realpath(link), max_file_bytes=MiB)
    assert resolved.text == "content\n"


def test_permission_denied(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not deny reads to root")
    path = tmp_path / "secret"
    path.write_text("x")
    path.chmod(0)
    try:
        got = read_file(str(path), max_file_bytes=MiB)
    finally:
        path.chmod(0o600)
    assert (got.kind, got.code) == ("error", Code.PERMISSION_DENIED)


def test_invalid_window_arguments_raise(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="offset"):
        read_file(str(tmp_path / "x"), max_file_bytes=1, offset=0)


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
    got = read_file(path, max_file_bytes=MiB)
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
    got = read_file(path, max_file_bytes=MiB)
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
    got = read_file(path, max_file_bytes=20 * MiB, offset=1, limit=200)
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
        got = read_file(path, max_file_bytes=20 * MiB, **kwargs)
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
    got = read_file(path, max_file_bytes=MiB, offset=offset, limit=limit, max_chars=max_chars)
    assert got.window == window(text, offset, limit, max_chars)
    assert got.text is not None and text.startswith(got.text)


def test_prefix_read_past_the_end_reads_everything(tmp_path: Path) -> None:
    text = "".join(f"{i}\n" for i in range(300_000))
    path = write(tmp_path / "t", text.encode())
    got = read_file(path, max_file_bytes=1000, offset=400_000, limit=10)
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
    got = read_file(path, max_file_bytes=1000, offset=3, limit=2)
    assert (got.encoding, got.bom) == (codec, with_bom)
    assert not got.complete_text
    assert got.total_lines == count_lines(text) == 200 + 200_000 + 1
    assert got.window == window(text, 3, 2)


def test_prefix_read_of_legacy_text(tmp_path: Path) -> None:
    text = "café naïve résumé, déjà vu\n" * 200_000
    path = write(tmp_path / "l", text.encode("cp1252"))
    got = read_file(path, max_file_bytes=MiB, offset=10, limit=3)
    assert got.encoding == "cp1252" and not got.complete_text
    assert got.total_lines == 200_000
    assert got.window == window(text, 10, 3)


def test_prefix_read_of_binary(tmp_path: Path) -> None:
    path = write(tmp_path / "b", b"\x7fELF" + bytes(3 * MiB))
    got = read_file(path, max_file_bytes=MiB, limit=10)
    assert (got.kind, got.code, got.sha256) == ("binary", Code.BINARY, None)


def test_line_counter_ebcdic_fallback_and_chunk_edges() -> None:
    text = "abc\ndef\nghi"
    counter = reader_mod._LineCounter("cp037")
    data = text.encode("cp037")
    for i in range(len(data)):
        counter.feed(data[i : i + 1])
    assert counter.total() == 3
    utf16 = reader_mod._LineCounter("utf-16-le")
    encoded = "a\n\u0a0a\u0100\n".encode("utf-16-le")
    for i in range(0, len(encoded), 3):  # odd chunk sizes split code units
        utf16.feed(encoded[i : i + 3])
    assert utf16.total() == 2


# --------------------------------------------------------------------------- cache


def cached_file(tmp_path: Path, name: str, body: str, age_ns: int = HOUR_NS) -> tuple[str, Loaded]:
    """Write a file with an mtime ``age_ns`` in the past and read it whole."""
    path = write(tmp_path / name, body.encode())
    past = time.time_ns() - age_ns
    os.utime(path, ns=(past, past))
    return path, read_file(path, max_file_bytes=MiB)


def test_cache_hit_then_miss_after_change(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, loaded = cached_file(tmp_path, "a", "hello\n")
    assert cache.get(path, os.stat(path)) is None
    assert cache.put(path, loaded)
    assert cache.get(path, os.stat(path)) is loaded
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)
    assert cache.bytes_used > 0
    with open(path, "a") as f:
        f.write("more\n")
    assert cache.get(path, os.stat(path)) is None
    assert (cache.hits, cache.misses, len(cache), cache.bytes_used) == (1, 2, 0, 0)


def test_cache_same_size_rewrite_with_old_mtime_is_caught_by_ctime(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, loaded = cached_file(tmp_path, "a", "hello\n")
    cache.put(path, loaded)
    before = os.stat(path)
    Path(path).write_text("HELLO\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert cache.get(path, os.stat(path)) is None


def test_cache_checks_the_bytes_of_an_entry_racy_by_its_ctime(tmp_path: Path) -> None:
    """An edit that restores the mtime moves only the ctime; two in one ctime tick leave
    the whole stat key as it was. An entry whose ctime is that recent is trusted only
    after its bytes are checked again (git's racily clean entries)."""
    cache = ContentCache(MiB)
    path, loaded = cached_file(tmp_path, "a", "hello\n")  # mtime old, ctime now
    assert cache.put(path, loaded)
    assert cache.get(path, os.stat(path)) is loaded  # the bytes are the same: a hit
    # The same stat key, other bytes: what a second edit in the same tick leaves.
    from msgspec.structs import replace

    stale = replace(loaded, text="HELLO\n", sha256=hashlib.sha256(b"HELLO\n").hexdigest())
    assert cache.put(path, stale)
    assert cache.get(path, os.stat(path)) is None
    assert path not in cache
    # Once the check is more than one tick after the ctime, the stat key is enough.
    aged = ContentCache(MiB, granularity_ns=0)
    assert aged.put(path, replace(stale, read_at_ns=time.time_ns()))
    assert aged.get(path, os.stat(path)) is not None


def test_cache_refuses_racy_entries(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path = write(tmp_path / "fresh", b"just written\n")
    loaded = read_file(path, max_file_bytes=MiB)  # mtime within 2 s of the read
    assert not cache.put(path, loaded)
    assert cache.get(path, os.stat(path)) is None
    assert path not in cache


def test_racy_rule_uses_the_read_time_and_granularity() -> None:
    cache = ContentCache(MiB, granularity_ns=10**9)
    mtime = 5_000 * 10**9
    base = Loaded(
        "text",
        text="x",
        complete_text=True,
        size=1,
        mtime_ns=mtime,
        ino=1,
        ctime_ns=mtime,
        sha256="0" * 64,
    )
    from msgspec.structs import replace

    assert not cache.put("/racy", replace(base, read_at_ns=mtime + 10**9))  # mtime >= at - g
    assert cache.put("/clean", replace(base, read_at_ns=mtime + 10**9 + 1))
    clocked = ContentCache(MiB, granularity_ns=10**9, clock=lambda: mtime + 2 * 10**9)
    assert clocked.put("/no-read-time", base)  # read_at_ns 0: the clock at put counts


def test_cache_refuses_partial_and_error_results(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    big = write(tmp_path / "big", b"line\n" * 300_000)  # over one chunk
    old = time.time_ns() - HOUR_NS
    os.utime(big, ns=(old, old))
    partial = read_file(big, max_file_bytes=1000, limit=5)
    assert not partial.complete_text and not cache.put(big, partial)
    missing = read_file(str(tmp_path / "none"), max_file_bytes=1000)
    assert not cache.put(str(tmp_path / "none"), missing)
    assert len(cache) == 0 and cache.bytes_used == 0


def test_cache_lru_eviction_by_bytes(tmp_path: Path) -> None:
    body = "x" * 1000
    files = [cached_file(tmp_path, name, body) for name in ("a", "b", "c")]
    one = cache_mod._cost(files[0][1])
    cache = ContentCache(2 * one)
    (pa, la), (pb, lb), (pc, lc) = files
    assert cache.put(pa, la) and cache.put(pb, lb)
    assert cache.get(pa, os.stat(pa)) is la  # a is now the most recent
    assert cache.put(pc, lc)  # evicts b, the least recently used
    assert pb not in cache and pa in cache and pc in cache
    assert cache.bytes_used == 2 * one
    assert cache.invalidate(pa) and not cache.invalidate(pa)
    assert cache.bytes_used == one
    tiny = ContentCache(one - 1)
    assert not tiny.put(pa, la) and len(tiny) == 0


def test_cache_put_replaces_and_accounts(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, small = cached_file(tmp_path, "a", "x")
    cache.put(path, small)
    _, bigger = cached_file(tmp_path, "a", "y" * 5000)
    cache.put(path, bigger)
    assert len(cache) == 1 and cache.bytes_used == cache_mod._cost(bigger)
    cache.clear()
    assert len(cache) == 0 and cache.bytes_used == 0


def test_cache_is_thread_safe(tmp_path: Path) -> None:
    entries = [cached_file(tmp_path, f"f{i}", f"file {i}\n" * 50) for i in range(8)]
    stats = {p: os.stat(p) for p, _ in entries}
    cache = ContentCache(4 * cache_mod._cost(entries[0][1]))
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rnd = random.Random(seed)
        try:
            for _ in range(500):
                path, loaded = rnd.choice(entries)
                if rnd.random() < 0.5:
                    cache.put(path, loaded)
                else:
                    got = cache.get(path, stats[path])
                    assert got is None or got is loaded
        except AssertionError as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.bytes_used == sum(cache_mod._cost(loaded) for p, loaded in entries if p in cache)
    assert cache.bytes_used <= cache.max_bytes
    assert cache.hits + cache.misses > 0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(st.sampled_from("ab\n\r\u00e9"), max_size=200))
def test_decode_then_window_never_loses_characters(text: str) -> None:
    data = text.encode("utf-8")
    got = decode(data)
    assert got.text == text
    assert window(got.text).text == text


def test_over_limit_file_is_read_no_further_than_scan_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 10 GB file must not be read (or counted) to its end: past SCAN_BYTES the line
    # count is unknown and a window starting further is too-large
    monkeypatch.setattr(reader, "SCAN_BYTES", 2 * reader_mod.READ_CHUNK_BYTES)
    path = tmp_path / "big.log"
    path.write_bytes(b"".join(b"line %07d\n" % i for i in range(1, 600_001)))  # 7.2 MB
    head = read_file(str(path), max_file_bytes=1000, limit=3)
    assert head.kind == "text" and head.total_lines is None
    assert head.bytes_read == 2 * reader_mod.READ_CHUNK_BYTES
    assert head.window is not None and head.window.text == (
        "line 0000001\nline 0000002\nline 0000003\n"
    )
    assert head.window.next_offset == 4 and head.window.total_lines is None
    far = read_file(str(path), max_file_bytes=1000, offset=500_000, limit=1)
    assert (far.kind, far.code) == ("error", Code.TOO_LARGE)
    assert far.bytes_read <= 2 * reader_mod.READ_CHUNK_BYTES + reader_mod.READ_CHUNK_BYTES
    # within the limit everything is as before: exact total
    small = read_file(str(path), max_file_bytes=1000, offset=2, limit=1)
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
    assert read_file(target, max_file_bytes=1 << 20, beneath=str(root)).text == "inside\n"
    (root / "sub").rename(root / "real")
    (root / "sub").symlink_to(outside)  # the swap: same path, now leading out
    assert read_file(target, max_file_bytes=1 << 20).text == "OUTSIDE\n"  # what it prevents
    got = read_file(target, max_file_bytes=1 << 20, beneath=str(root))
    assert got.kind == "error" and got.text is None, got
    (root / "deep" / "er").mkdir(parents=True)
    (root / "deep" / "er" / "y.txt").write_text("deep\n")
    deep = str(root / "deep" / "er" / "y.txt")
    assert read_file(deep, max_file_bytes=1 << 20, beneath=str(root)).text == "deep\n"


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
    loaded = reader_mod.read_file(str(path), max_file_bytes=1 << 20)
    assert loaded.kind == "text"
    assert loaded.text is not None
    assert loaded.total_lines == lines_mod.count_lines(loaded.text)
