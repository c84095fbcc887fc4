"""Mostly-UTF-8 text stays UTF-8 (PROTOCOL §4, encodings): a file that is valid UTF-8
apart from a few bytes reads as UTF-8, each bad byte shown as U+FFFD and counted in
``replacedBytes``; files without a valid multi-byte sequence keep the legacy detection."""

from __future__ import annotations

import codecs
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.content.cache import ContentCache
from readmany_daemon.content.decode import Decoded, decode
from readmany_daemon.content.reader import READ_CHUNK_BYTES, ReadOptions, read_file
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import to_builtins
from tests.helpers import answer, write_tree

GERMAN = "Grüße aus München. Die Straße ist schön, die Bäume blühen.\n" * 3
CHINESE = "这是一个中文文本文件\uff0c用于测试编码检测。\n" * 5

# --------------------------------------------------------------------------- decode


def test_german_text_with_one_latin1_byte_is_utf8() -> None:
    data = GERMAN.encode() + "Café am Ende.\n".encode("latin-1")
    got = decode(data)
    assert (got.kind, got.encoding, got.replaced_bytes) == ("text", "utf-8", 1)
    assert got.text == GERMAN + "Caf\ufffd am Ende.\n"


def test_chinese_text_with_one_stray_byte_is_utf8_not_binary() -> None:
    data = CHINESE.encode()
    data = data[:30] + b"\x80" + data[30:]  # between the 10th and 11th character
    got = decode(data)
    assert (got.kind, got.encoding, got.replaced_bytes) == ("text", "utf-8", 1)
    assert got.text == CHINESE[:10] + "\ufffd" + CHINESE[10:]


def test_log_cut_inside_its_last_character_is_utf8() -> None:
    log = "2024-01-01 INFO started ✓\n" * 10 + "last → ü"
    data = log.encode()[:-1]  # the second byte of ü is not written yet
    got = decode(data)
    assert (got.kind, got.encoding, got.replaced_bytes) == ("text", "utf-8", 1)
    assert got.text == log[:-1] + "\ufffd"


def test_ascii_log_cut_inside_its_only_multibyte_character_is_utf8() -> None:
    # No valid multi-byte sequence at all: only the incomplete end makes it UTF-8.
    data = b"plain ascii log line\n" * 10 + "caf€".encode()[:-1]
    got = decode(data)
    assert (got.kind, got.encoding, got.replaced_bytes) == ("text", "utf-8", 2)
    assert got.text == "plain ascii log line\n" * 10 + "caf\ufffd\ufffd"


def test_each_bad_byte_becomes_one_replacement_character() -> None:
    # E2 82 is one invalid sequence (a cut €) of two bytes: two U+FFFD, not one.
    raw = ("ü" * 40).encode() + "€".encode()[:2] + b"x"
    got = decode(raw)
    assert (got.encoding, got.replaced_bytes) == ("utf-8", 2)
    assert got.text == "ü" * 40 + "\ufffd\ufffdx"
    assert len(got.text) == 40 + 3


def test_ratio_one_invalid_sequence_per_sixteen_valid_multibyte() -> None:
    at_limit = ("é" * 16).encode() + b" \xff\n"
    got = decode(at_limit)
    assert (got.encoding, got.text, got.replaced_bytes) == ("utf-8", "é" * 16 + " \ufffd\n", 1)
    below = ("é" * 15).encode() + b" \xff\n"
    assert decode(below).encoding != "utf-8"
    # A cut end counts as one more invalid sequence once there are others.
    two = ("é" * 16).encode() + b" \xff " + "é".encode()[:1]
    assert decode(two).encoding != "utf-8"
    assert decode(("é" * 32).encode() + b" \xff " + "é".encode()[:1]).replaced_bytes == 2


def test_a_replacement_character_in_the_file_is_not_a_replaced_byte() -> None:
    data = ("�" * 20 + "ä" * 20).encode() + b"\xff\n"
    got = decode(data)
    assert (got.encoding, got.replaced_bytes) == ("utf-8", 1)
    assert got.text == "�" * 20 + "ä" * 20 + "\ufffd\n"


def test_utf8_bom_with_a_bad_byte() -> None:
    data = b"\xef\xbb\xbf" + GERMAN.encode() + b"\xe9\n"
    got = decode(data)
    assert (got.encoding, got.bom, got.replaced_bytes) == ("utf-8-sig", True, 1)
    assert got.text == GERMAN + "\ufffd\n"


def test_prefix_cut_inside_a_character_is_not_a_bad_byte() -> None:
    data = GERMAN.encode() + b"\xe9 " + "ü".encode()
    got = decode(data[:-1], complete=False)  # a prefix ending inside ü
    assert (got.encoding, got.replaced_bytes) == ("utf-8", 1)
    assert got.text == GERMAN + "\ufffd "


# --------------------------------------------------------------------------- reader


def test_prefix_read_replaces_and_counts_each_bad_byte(tmp_path: Path) -> None:
    # Lines of 1,000 "é" (2,001 bytes) after one ASCII byte: characters straddle the
    # 1 MiB chunk edge, which must cost nothing; one bad byte in line 3, one in line 600.
    line = "é" * 1000 + "\n"
    lines = [line] * 1200
    raw = [s.encode() for s in lines]
    raw[2] = raw[2][:10] + b"\xff" + raw[2][10:]
    raw[599] = raw[599][:10] + b"\xe9" + raw[599][10:]
    data = b"#" + b"".join(raw)
    assert len(data) > READ_CHUNK_BYTES + 100_000
    path = tmp_path / "big.txt"
    path.write_bytes(data)
    got = read_file(str(path), ReadOptions(max_file_bytes=1 << 19, offset=1, limit=700))
    assert not got.complete_text and got.window is not None
    assert (got.encoding, got.replaced_bytes) == ("utf-8", 2)
    expected = ["#" + line, *lines[1:700]]
    expected[2] = "é" * 5 + "\ufffd" + "é" * 995 + "\n"
    expected[599] = "é" * 5 + "\ufffd" + "é" * 995 + "\n"
    assert got.window.text == "".join(expected)
    assert got.total_lines == 1200


def test_prefix_read_of_valid_utf8_replaces_nothing(tmp_path: Path) -> None:
    line = "é" * 1000 + "\n"
    data = b"#" + (line * 1200).encode()
    path = tmp_path / "big.txt"
    path.write_bytes(data)
    got = read_file(str(path), ReadOptions(max_file_bytes=1 << 19, offset=1, limit=700))
    assert got.window is not None
    assert (got.encoding, got.replaced_bytes) == ("utf-8", 0)
    assert got.window.text == "#" + line * 700


# --------------------------------------------------------------------------- the wire


def _wire(ws: Workspace, **params: Any) -> dict[str, Any]:
    result = to_builtins(answer(ws, decode_read_params(params)))
    assert isinstance(result, dict)
    return json.loads(json.dumps(result))  # as a client sees it


def test_file_result_reports_replaced_bytes_and_utf8(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "de.txt": GERMAN.encode() + b"Caf\xe9\n",
            "ok.txt": GERMAN,
            "cut.log": ("→ " * 20).encode() + "→".encode()[:2],
        },
    )
    hour_ago = time.time() - 3600  # not racy: the cache keeps them
    for name in ("de.txt", "ok.txt", "cut.log"):
        os.utime(tmp_path / name, (hour_ago, hour_ago))
    ws = Workspace.open(str(tmp_path), Settings(), cache=ContentCache(1 << 20))
    for source in ("disk", "cache"):
        got = _wire(ws, paths=["de.txt", "ok.txt", "cut.log"])
        de, ok, cut = got["files"]
        assert (de["source"], de["encoding"], de["replacedBytes"]) == (source, "utf-8", 1)
        assert (cut["encoding"], cut["replacedBytes"]) == ("utf-8", 2)
        assert ok["encoding"] == "utf-8" and "replacedBytes" not in ok
        assert "Caf\ufffd\n" in got["llmContent"]
        assert ("→ " * 20) + "\ufffd\ufffd" in got["llmContent"]


# --------------------------------------------------------------- UTF-16/32 cut short

LOG = "2024-01-01 INFO started ✓ 𝄞\n" * 5 + "last line"


@pytest.mark.parametrize(
    ("codec", "bom"),
    [
        ("utf-16-le", codecs.BOM_UTF16_LE),
        ("utf-16-be", codecs.BOM_UTF16_BE),
        ("utf-32-le", codecs.BOM_UTF32_LE),
        ("utf-32-be", codecs.BOM_UTF32_BE),
    ],
)
def test_utf16_and_utf32_log_cut_inside_its_last_code_unit(codec: str, bom: bytes) -> None:
    # A log being written: the last code unit has only its first byte on disk. It
    # reads in its encoding, the cut character as one U+FFFD (issue 22, item 5).
    data = bom + (LOG + "!").encode(codec)
    unit = 4 if codec.startswith("utf-32") else 2
    cut = data[: len(data) - unit + 1]
    got = decode(cut)
    assert (got.kind, got.encoding, got.bom, got.replaced_bytes) == ("text", codec, True, 1)
    assert got.text == LOG + "\ufffd"
    # A prefix read still drops a character its end cuts: nothing was replaced.
    assert decode(cut, complete=False) == Decoded("text", LOG, codec, bom=True)


@pytest.mark.parametrize(
    ("codec", "bom"), [("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE)]
)
def test_utf16_cut_inside_a_surrogate_pair_is_one_character_replaced(
    codec: str, bom: bytes
) -> None:
    # 𝄞 is a surrogate pair: its high half is whole, its low half has one byte of two.
    # One character is cut: one U+FFFD, counted once (the U+FFFD the decoding made).
    data = bom + (LOG + "𝄞").encode(codec)
    got = decode(data[:-1])
    assert (got.kind, got.encoding, got.replaced_bytes) == ("text", codec, 1)
    assert got.text == LOG + "\ufffd"


@pytest.mark.parametrize("codec", ["utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("kept", [1, 2, 3])
def test_utf32_cut_anywhere_in_its_last_unit(codec: str, kept: int) -> None:
    bom = codecs.BOM_UTF32_LE if codec == "utf-32-le" else codecs.BOM_UTF32_BE
    data = bom + (LOG + "!").encode(codec)
    got = decode(data[: len(data) - 4 + kept])
    assert (got.kind, got.encoding, got.replaced_bytes) == ("text", codec, 1)
    assert got.text == LOG + "\ufffd"


def test_utf16_invalid_inside_stays_binary() -> None:
    # Only a cut end is excused: a lone low surrogate inside the text is not text.
    data = codecs.BOM_UTF16_LE + "abc".encode("utf-16-le") + b"\x00\xdc" + b"d\x00"
    assert decode(data).kind == "binary"


def test_file_result_of_a_cut_utf16_log(tmp_path: Path) -> None:
    data = codecs.BOM_UTF16_LE + (LOG + "!").encode("utf-16-le")
    write_tree(tmp_path, {"app.log": data[:-1]})
    ws = Workspace.open(str(tmp_path), Settings())
    got = _wire(ws, paths=["app.log"])
    (entry,) = got["files"]
    assert (entry["status"], entry["encoding"], entry["replacedBytes"]) == ("ok", "utf-16-le", 1)
    assert LOG + "\ufffd" in got["llmContent"]


def test_prefix_read_of_a_cut_utf16_log_over_max_file_bytes(tmp_path: Path) -> None:
    # Over maxFileBytes the file is read by chunks: the cut end is replaced and counted
    # there too, whichever chunk it falls in.
    body = ("line ✓ of a long log\n" * 60_000 + "last").encode("utf-16-be")
    path = tmp_path / "big.log"
    path.write_bytes(codecs.BOM_UTF16_BE + body + b"\x00")
    assert path.stat().st_size > READ_CHUNK_BYTES
    got = read_file(str(path), ReadOptions(max_file_bytes=1 << 19, offset=59_999, limit=5))
    assert got.window is not None
    assert (got.kind, got.encoding, got.replaced_bytes) == ("text", "utf-16-be", 1)
    assert got.window.text == "line ✓ of a long log\n" * 2 + "last\ufffd"
