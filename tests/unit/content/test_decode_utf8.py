"""The one-call UTF-8 decode (``content.decode.decode`` over a file's whole bytes): valid
UTF-8 is UTF-8, invalid goes the legacy way, NUL means binary, a BOM still wins.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readmany_daemon.content import decode as decode_mod
from readmany_daemon.content.decode import Decoded, decode

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
