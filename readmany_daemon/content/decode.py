"""Bytes → text: byte-order marks, UTF-8/16/32, binary sniffing, legacy encodings.

The one concept here is :func:`decode` and its result :class:`Decoded` (the incremental
decoder that goes on decoding a file chunk by chunk once :func:`decode` has named the
encoding of its first chunk is ``content/prefix.py``'s ``StreamDecoder``); this is the
only module that imports charset-normalizer (lazily: only legacy files need it,
and the one-shot CLI stays light). Nothing raises for a problem with the data.

The decoding rules, in the order :func:`decode` applies them:

1. a byte-order mark picks UTF-32 LE/BE, UTF-8 or UTF-16 LE/BE (Unicode Standard §23.8;
   UTF-32 is tested before UTF-16 because ``FF FE 00 00`` starts with ``FF FE``); in
   UTF-16/32 after a BOM, an incomplete character at the very end of complete data (a
   log cut in its last code unit) is one U+FFFD, counted once in
   ``Decoded.replaced_bytes`` (:func:`_cut_tail`);
2. valid UTF-8 without NUL bytes is text, reported ``"utf-8"`` (ASCII included);
3. a known binary signature (PNG, JPEG, GIF, PDF, ZIP, ELF, gzip, … as file(1) knows
   them) is binary;
4. NUL bytes mean binary (git's ``buffer_is_binary`` rule), unless the NULs sit in the
   odd (UTF-16LE) or even (UTF-16BE) positions of mostly-ASCII text: UTF-16 without a BOM;
5. mostly-UTF-8 text is UTF-8 (:func:`_mostly_utf8`): at least one valid multi-byte
   sequence and at most one invalid sequence per 16 valid multi-byte ones, or no invalid
   bytes but an incomplete sequence at the very end; each invalid byte becomes U+FFFD
   and is counted in ``Decoded.replaced_bytes``;
6. more than 10 % control characters is binary;
7. otherwise charset-normalizer names a legacy encoding (its Python codec name, e.g.
   ``"cp1252"``, ``"cp1251"``, ``"cp932"``), with the Western tie-break of
   :func:`decode`; no candidate means binary.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from typing import TYPE_CHECKING, Final, Literal

import msgspec

if TYPE_CHECKING:
    from charset_normalizer.models import CharsetMatch

__all__ = ["Decoded", "Kind", "decode", "replace_escapes"]

#: Bytes (or characters) examined by the control-character and UTF-16 heuristics.
_SNIFF_BYTES: Final = 8192

#: Bytes handed to charset-normalizer; the rest is decoded with the codec it picks.
_DETECT_BYTES: Final = 1 << 20

#: More than this fraction of control characters makes a sample binary.
_CONTROL_RATIO: Final = 0.10

#: The Western legacy encoding preferred on a tie (WHATWG Encoding Standard: the
#: fallback for unlabeled legacy documents in Western locales is windows-1252).
_WESTERN: Final = "cp1252"

Kind = Literal["text", "binary"]


class Decoded(msgspec.Struct, frozen=True):
    """What :func:`decode` made of some bytes.

    ``kind`` is ``"text"`` or ``"binary"``. For text, ``text`` is the decoded string with
    any byte-order mark removed and newlines untouched (``\\r\\n`` stays ``\\r\\n``), and
    ``encoding`` a Python codec name: ``"utf-8"``, ``"utf-8-sig"`` (UTF-8 with a BOM),
    ``"utf-16-le"``, ``"utf-16-be"``, ``"utf-32-le"``, ``"utf-32-be"`` or a legacy codec
    named by charset-normalizer. ``bom`` says whether a BOM preceded the text (always true
    for ``"utf-8-sig"``; for UTF-16/32 it tells the BOM form from the BOM-less one).
    ``encoding`` is ``None`` for binary, and for the undetermined text ``""`` that a prefix
    of fewer than 4 bytes which could still become a BOM decodes to. ``replaced_bytes``
    counts the bytes of mostly-UTF-8 text (rule 5) that were not valid UTF-8, each shown
    as one U+FFFD, plus 1 for the incomplete last character of UTF-16/32 text after a
    BOM (rule 1), shown as one U+FFFD: the U+FFFD the decoding made; 0 for every other
    result.
    """

    kind: Kind
    text: str | None
    encoding: str | None
    bom: bool = False
    replaced_bytes: int = 0


_BINARY: Final = Decoded("binary", None, None)

#: Byte-order marks, longest first where one is a prefix of another (Unicode §23.8).
_BOMS: Final[tuple[tuple[bytes, str], ...]] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

#: Leading signatures of binary formats (as listed by file(1)'s magic database and the
#: formats' own specifications). Consulted only for data that is not valid NUL-free
#: UTF-8, so a text file that merely starts like one of these is still text. Signatures
#: short enough to begin a legacy-encoded sentence ("MZ", "BM" for BMP, a bare "ID3") are
#: left out: those formats hold NUL bytes anyway, which rule 4 catches.
_MAGIC: Final[tuple[bytes, ...]] = (
    b"\x89PNG\r\n\x1a\n",  # PNG
    b"\xff\xd8\xff",  # JPEG
    b"GIF87a",
    b"GIF89a",
    b"%PDF-",
    b"PK\x03\x04",  # ZIP, jar, docx, …
    b"PK\x05\x06",  # empty ZIP
    b"PK\x07\x08",  # spanned ZIP
    b"\x7fELF",
    b"\x1f\x8b",  # gzip
    *(b"BZh%d1AY&SY" % level for level in range(1, 10)),  # bzip2
    b"\xfd7zXZ\x00",  # xz
    b"\x28\xb5\x2f\xfd",  # zstd
    b"7z\xbc\xaf\x27\x1c",  # 7-Zip
    b"Rar!\x1a\x07",  # RAR
    b"\xca\xfe\xba\xbe",  # Mach-O fat / Java class
    b"\xfe\xed\xfa\xce",  # Mach-O 32 BE
    b"\xfe\xed\xfa\xcf",  # Mach-O 64 BE
    b"\xce\xfa\xed\xfe",  # Mach-O 32 LE
    b"\xcf\xfa\xed\xfe",  # Mach-O 64 LE
    b"\x00asm",  # WebAssembly
    b"SQLite format 3\x00",
    b"OggS\x00",
    b"fLaC",
    b"ID3\x02",  # MP3 with an ID3v2.2-2.4 tag
    b"ID3\x03",
    b"ID3\x04",
    b"wOFF",
    b"wOF2",
    b"II*\x00",  # TIFF LE
    b"MM\x00*",  # TIFF BE
    b"\x00\x00\x01\x00",  # ICO
)

#: Control characters that mark binary content: C0 except \b \t \n \v \f \r and ESC
#: (backspace overstrike in man pages, ANSI colours in logs), DEL, and C1.
_CONTROL_CODES: Final = frozenset(
    [*range(0x00, 0x08), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F, *range(0x80, 0xA0)]
)
_DELETE_CONTROL_CHARS: Final = dict.fromkeys(_CONTROL_CODES)
_DELETE_CONTROL_BYTES: Final = bytes(c for c in _CONTROL_CODES if c < 0x80)

_NON_ASCII: Final = re.compile(r"[^\x00-\x7f]")

#: Mostly-UTF-8 text: at most one invalid sequence per this many valid multi-byte ones.
_VALID_PER_INVALID: Final = 16

#: The bytes of ASCII, deleted to count the others.
_ASCII_BYTES: Final = bytes(range(0x80))

#: U+FFFD in UTF-8: a replacement character that was in the file, not made by decoding.
_REPLACEMENT_UTF8: Final = "\ufffd".encode()

#: What the ``surrogateescape`` error handler makes of the bytes 0x80-0xFF (PEP 383): a
#: decoded UTF-8 text holds such lone surrogates for no other reason.
_ESCAPES: Final = re.compile("[\udc80-\udcff]")


def _strict(data: bytes, codec: str, complete: bool) -> str | None:
    """Decode strictly; with ``complete=False`` an incomplete trailing sequence is dropped.

    Returns ``None`` when ``data`` holds an invalid sequence. Uses the codec's incremental
    decoder, which buffers (and here discards) a character cut by the end of a prefix.
    """
    decoder = codecs.getincrementaldecoder(codec)("strict")
    try:
        return decoder.decode(data, final=complete)
    except UnicodeDecodeError:
        return None


def _cut_tail(body: bytes, codec: str) -> tuple[str | None, int]:
    """Rule 1b of :func:`decode`: ``body`` (after a UTF-16/32 BOM) valid in ``codec``
    but for an incomplete character at its very end (a log cut while it is written: the
    last code unit short of a byte or more, or a surrogate pair short of its low half).
    Returns the text with that character as one U+FFFD, and 1: the cut end counts once
    in ``replaced_bytes`` however many of its bytes are there (1 of a UTF-16 code unit;
    1-3 of a UTF-32 one; 3 of a surrogate pair), so that ``replaced_bytes`` stays the
    number of U+FFFD the decoding made, as in UTF-8; ``(None, 0)`` when anything else is
    invalid."""
    decoder = codecs.getincrementaldecoder(codec)("strict")
    try:
        text: str = decoder.decode(body, final=False)
    except UnicodeDecodeError:
        return None, 0
    pending, _ = decoder.getstate()
    if not pending:
        return None, 0
    return text + "\ufffd", 1


def _looks_binary(text: str) -> bool:
    """True when ``text`` holds U+0000 or more than 10 % control characters (first 8 KiB)."""
    if "\x00" in text:
        return True
    sample = text[:_SNIFF_BYTES]
    if not sample:
        return False
    controls = len(sample) - len(sample.translate(_DELETE_CONTROL_CHARS))
    return controls > _CONTROL_RATIO * len(sample)


def _bomless_utf16(data: bytes) -> str | None:
    """``"utf-16-le"``/``"utf-16-be"`` when NULs fall in one parity of mostly-ASCII text.

    Rule: in the first 8 KiB, at least half of the 2-byte units have a NUL high byte (the
    odd byte for LE, the even one for BE) and at most a tenth a NUL low byte. ASCII and
    Latin-1 text in UTF-16 looks like that; UTF-16 text in other scripts without a BOM
    is not recognised and ends up binary (it has NULs but no such pattern).
    """
    sample = data[:_SNIFF_BYTES]
    units = len(sample) // 2
    if units == 0:
        return None
    even_nuls = sample[0 : 2 * units : 2].count(0)
    odd_nuls = sample[1 : 2 * units : 2].count(0)
    if 2 * odd_nuls >= units and 10 * even_nuls <= units:
        return "utf-16-le"
    if 2 * even_nuls >= units and 10 * odd_nuls <= units:
        return "utf-16-be"
    return None


def _is_bom_prefix(data: bytes) -> bool:
    """True when ``data`` is a proper prefix of some BOM (so a longer prefix could be one)."""
    return any(len(bom) > len(data) and bom.startswith(data) for bom, _ in _BOMS)


def decode(data: bytes, *, complete: bool = True) -> Decoded:
    """Decide whether ``data`` is text, and decode it.

    ``data`` is the whole file (``complete=True``) or a prefix of it (``complete=False``):
    then a multi-byte character cut by the end of ``data`` is dropped from ``text`` and
    never makes the data binary or legacy. The rules and their order are in the module
    docstring; in short: BOM → UTF-8 → binary signatures → NUL (UTF-16 without BOM, or
    binary) → control characters → legacy encodings → binary. Valid UTF-8 is never binary
    unless it has NUL bytes. Empty data is text ``""`` reported ``"utf-8"``.

    Legacy tie-break (charset-normalizer often cannot tell single-byte Latin code pages
    apart on short texts, e.g. it reads ``caf\\xe9 na\\xefve`` as cp1250 ``naďve``):
    when its best guess is not cp1252 and

    * the data also decodes strictly as cp1252,
    * the best guess reads as Latin script (at least half of its non-ASCII letters are
      LATIN letters, or it has none: a choice between Latin code pages, not between
      scripts, so Cyrillic, Greek or CJK guesses are never overridden), and
    * the cp1252 reading has no more *suspect characters* than the best guess, where a
      suspect character is a C1 control or a non-ASCII non-letter between two letters
      (cp1252 reads Polish ``Zażółć`` as ``Za¿ó³æ``: two suspects, so cp1250 wins),

    then cp1252 is chosen: the detector had no evidence against the Western reading,
    and cp1252 is the WHATWG fallback for legacy Western text. cp1252 is also reported
    whenever it gives the same string as the best guess (latin_1 text without
    C1 controls, for instance), and when the detector has no evidence at all (no
    language coherence, and three or more candidates score exactly as its best guess, as
    on a few bytes such as ``caf\xe9``). Same-byte-pattern ambiguities (Hungarian ``ő`` vs ``õ``,
    Turkish ``ş`` vs ``þ``) therefore resolve to the Western reading. The detector's
    UTF-16/32 guesses are never taken (this data has no NUL bytes, rule 4).

    Raises nothing.
    """
    if not data:
        return Decoded("text", "", "utf-8" if complete else None)
    if not complete and _is_bom_prefix(data):
        return Decoded("text", "", None)

    for bom, encoding in _BOMS:
        if data.startswith(bom):
            codec = "utf-8" if encoding == "utf-8-sig" else encoding
            text = _strict(data[len(bom) :], codec, complete)
            replaced = 0
            if text is None and complete and encoding != "utf-8-sig":
                text, replaced = _cut_tail(data[len(bom) :], codec)
            if text is None:
                continue
            if (encoding == "utf-8-sig" and "\x00" in text) or (
                encoding != "utf-8-sig" and _looks_binary(text)
            ):
                return _BINARY
            return Decoded("text", text, encoding, bom=True, replaced_bytes=replaced)

    has_nul = b"\x00" in data
    if not has_nul:
        if complete:  # the plain decode: no incremental decoder to build per file
            try:
                return Decoded("text", data.decode("utf-8"), "utf-8")
            except UnicodeDecodeError:
                pass
        else:
            text = _strict(data, "utf-8", complete)
            if text is not None:
                return Decoded("text", text, "utf-8")
    if data.startswith(_MAGIC):
        return _BINARY
    if has_nul:
        utf16 = _bomless_utf16(data)
        if utf16 is not None:
            text = _strict(data, utf16, complete)
            if text is not None and not _looks_binary(text):
                return Decoded("text", text, utf16)
        return _BINARY
    mostly = _mostly_utf8(data, complete)
    if mostly is not None:
        return mostly
    sample = data[:_SNIFF_BYTES]
    controls = len(sample) - len(sample.translate(None, _DELETE_CONTROL_BYTES))
    if controls > _CONTROL_RATIO * len(sample):
        return _BINARY
    return _decode_legacy(data, complete)


def replace_escapes(text: str) -> tuple[str, int]:
    """``text`` decoded from UTF-8 with the ``surrogateescape`` error handler, with each
    escaped byte (one lone surrogate per invalid byte, PEP 383) shown as U+FFFD; and how
    many there were. Text without escapes is returned as is."""
    return _ESCAPES.subn("\ufffd", text)


def _mostly_utf8(data: bytes, complete: bool) -> Decoded | None:
    """Rule 5 of :func:`decode`: NUL-free ``data`` that is not valid UTF-8 but mostly is.

    An *invalid sequence* is a maximal subpart of an ill-formed sequence (Unicode Standard
    §3.9, "U+FFFD Substitution of Maximal Subparts"; what Python's decoder reports as one
    error): ``\xe9`` in ``caf\xe9 au lait``, ``\xe2\x82`` before an ASCII byte. The data
    is UTF-8 when it holds at least one valid multi-byte sequence and at most one invalid
    sequence per 16 of those, counting an incomplete sequence at the very end of complete
    data as one invalid sequence; or when its only invalid bytes are such an incomplete
    sequence (a log cut in the middle of its last character). In a prefix
    (``complete=False``) a sequence cut at the end is dropped, as for valid UTF-8.

    Each invalid *byte* becomes one U+FFFD (not one per invalid sequence, as Python's
    ``"replace"`` handler does), so ``replaced_bytes`` is the count of bytes not shown
    and every other character keeps its place. A UTF-8 BOM is removed and reported
    (``"utf-8-sig"``). ``None`` when the rule does not hold. Cost, only for data the
    strict decode refused: one C-speed decode and counts; when accepted, one encode to
    count the bad bytes, and only when an invalid sequence is longer than one byte a
    second decode that marks each byte.
    """
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    body = data[skip:] if skip else data
    replaced, used = codecs.utf_8_decode(body, "replace", False)
    tail = len(body) - used  # an incomplete sequence at the end (at most 3 bytes)
    cut_end = complete and tail > 0
    invalid = replaced.count("\ufffd") - body.count(_REPLACEMENT_UTF8)
    # The bytes of the incomplete tail are all non-ASCII (0x80-0xFF).
    ascii_count = len(body) - len(body.translate(None, _ASCII_BYTES))
    multibyte = len(replaced) - ascii_count - invalid
    only_cut_end = invalid == 0 and cut_end
    few_invalid = multibyte >= 1 and _VALID_PER_INVALID * (invalid + cut_end) <= multibyte
    if not (only_cut_end or few_invalid):
        return None
    text, bad = replaced, invalid
    if invalid:
        # ``replaced`` has one U+FFFD per invalid sequence; the bytes they stand for are
        # those its valid characters do not account for (a U+FFFD in the file is 3).
        bad = used - (len(replaced.encode()) - 3 * invalid)
        if bad != invalid:  # a sequence of two or three bytes: one U+FFFD per byte
            escaped, _ = codecs.utf_8_decode(body, "surrogateescape", False)
            text, bad = replace_escapes(escaped)
    if cut_end:
        text += "\ufffd" * tail
        bad += tail
    encoding = "utf-8-sig" if skip else "utf-8"
    return Decoded("text", text, encoding, bom=bool(skip), replaced_bytes=bad)


def _cut_after_newline(data: bytes) -> bytes:
    """``data`` up to and including its last ``b"\\n"`` (all of it when there is none)."""
    cut = data.rfind(b"\n")
    return data[: cut + 1] if cut >= 0 else data


def _detection_samples(data: bytes, complete: bool) -> list[bytes]:
    """Samples for charset-normalizer, in the order tried.

    The first 1 MiB, cut after its last newline when ``data`` goes on, so that no
    multi-byte character is split (in every ASCII-compatible legacy codec 0x0A is only
    ever a newline); without a newline, that MiB minus 0-3 trailing bytes (4 bytes is the
    longest legacy character, GB18030). Last, when the sample is not all of ``data``,
    ``data`` itself (cut after its last newline if it is a prefix): for files whose bytes
    past the first MiB do not fit the codec the sample suggested.
    """
    if complete and len(data) <= _DETECT_BYTES:
        return [data]
    head = data[:_DETECT_BYTES]
    cut = head.rfind(b"\n")
    if cut >= 0:
        samples = [head[: cut + 1]]
    else:
        samples = [head[: len(head) - k] for k in range(4) if len(head) > k]
    whole = data if complete else _cut_after_newline(data)
    if len(whole) > len(samples[0]):
        samples.append(whole)
    return samples


def _decode_legacy(data: bytes, complete: bool) -> Decoded:
    """Decode non-UTF-8 text through charset-normalizer plus the Western tie-break."""
    # Imported here: only legacy files need it, and the one-shot CLI should stay light.
    from charset_normalizer import from_bytes

    for sample in _detection_samples(data, complete):
        # UTF-16/32 without a BOM is known by its NUL bytes (rule 4), and this data
        # has none: such a guess from the detector is a misreading of a few bytes.
        matches = [m for m in from_bytes(sample) if not m.encoding.startswith(("utf_16", "utf_32"))]
        if not matches:
            continue
        best = matches[0]
        ties = sum(1 for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence))
        for encoding in dict.fromkeys((_prefer_western(sample, best, ties), best.encoding)):
            text = _strict(data, encoding, complete)
            if text is not None:
                return _BINARY if _looks_binary(text) else Decoded("text", text, encoding)
    return _BINARY


#: Candidates scoring exactly as the best one from which the detector is said to have no
#: evidence (see :func:`decode`).
_NO_EVIDENCE_TIES: Final = 3


def _prefer_western(sample: bytes, best: CharsetMatch, ties: int = 1) -> str:
    """The codec for ``sample``: the detector's ``best`` (``ties`` candidates scored as
    it did), or cp1252 on the tie of :func:`decode`."""
    encoding: str = best.encoding
    if encoding == _WESTERN:
        return encoding
    western = _strict(sample, _WESTERN, True)
    if western is None:
        return encoding
    guessed = str(best)
    if western == guessed:
        return _WESTERN
    if ties >= _NO_EVIDENCE_TIES and best.coherence == 0.0:
        return _WESTERN  # no evidence for any candidate (a few bytes): the fallback
    if not _mostly_latin(guessed):
        return encoding
    if _suspects(western) <= _suspects(guessed):
        return _WESTERN
    return encoding


def _mostly_latin(text: str) -> bool:
    """At least half of the non-ASCII letters (first 64 Ki characters) are LATIN letters."""
    letters = latin = 0
    for match in _NON_ASCII.finditer(text, 0, 1 << 16):
        char = match.group()
        if char.isalpha():
            letters += 1
            if unicodedata.name(char, "").startswith("LATIN"):
                latin += 1
    return 2 * latin >= letters


def _suspects(text: str) -> int:
    """C1 controls plus non-ASCII non-letters flanked by letters (first 64 Ki characters)."""
    count = 0
    limit = min(len(text), 1 << 16)
    for match in _NON_ASCII.finditer(text, 0, limit):
        char = match.group()
        if "\x80" <= char <= "\x9f":
            count += 1
        elif not char.isalpha() and not char.isspace():
            i = match.start()
            if 0 < i < len(text) - 1 and text[i - 1].isalpha() and text[i + 1].isalpha():
                count += 1
    return count
