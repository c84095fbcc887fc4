"""Unit tests of ``readmany_daemon.content.decode``: encodings, byte-order marks, legacy
tie-breaks, binary signatures, and decoding every prefix of a text.
"""

from __future__ import annotations

import codecs
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readmany_daemon.content.decode import Decoded, decode

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
