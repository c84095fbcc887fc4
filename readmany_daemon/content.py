"""The load stage: bytes → text, line windows, a safe file reader and a stat-validated cache.

Everything here is a plain function over bytes or str, except :func:`read_file` (one
file, read safely) and :class:`ContentCache` (a small thread-safe LRU). Nothing raises for
a problem with one file: :func:`read_file` returns it as data (``Loaded.code``, PROTOCOL
§4). Only programming errors (an ``offset`` below 1, a negative ``limit``) raise
``ValueError``.

Units, used the same way throughout:

* *bytes* are raw file bytes (``size``, ``max_file_bytes``, ``bytes_read``);
* *characters* are Python ``str`` code points (``max_chars``, ``len(text)``);
* *lines* are counted by the "\\n" model of :func:`split_lines`; line numbers are
  1-based and inclusive (``offset``, ``line_start``, ``line_end``, ``next_offset``).

The decoding rules, in the order :func:`decode` applies them:

1. a byte-order mark picks UTF-32 LE/BE, UTF-8 or UTF-16 LE/BE (Unicode Standard §23.8;
   UTF-32 is tested before UTF-16 because ``FF FE 00 00`` starts with ``FF FE``);
2. valid UTF-8 without NUL bytes is text, reported ``"utf-8"`` (ASCII included);
3. a known binary signature (PNG, JPEG, GIF, PDF, ZIP, ELF, gzip, … as file(1) knows
   them) is binary;
4. NUL bytes mean binary (git's ``buffer_is_binary`` rule), unless the NULs sit in the
   odd (UTF-16LE) or even (UTF-16BE) positions of mostly-ASCII text: UTF-16 without a BOM;
5. more than 10 % control characters is binary;
6. otherwise charset-normalizer names a legacy encoding (its Python codec name, e.g.
   ``"cp1252"``, ``"cp1251"``, ``"cp932"``), with the Western tie-break of
   :func:`decode`; no candidate means binary.
"""

from __future__ import annotations

import codecs
import errno
import functools
import hashlib
import os
import re
import stat
import sys
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal

import msgspec
from msgspec.structs import replace

from .errors import Code

if TYPE_CHECKING:
    from charset_normalizer.models import CharsetMatch

__all__ = [
    "CHUNK_BYTES",
    "SCAN_BYTES",
    "ContentCache",
    "Decoded",
    "FolderHandles",
    "Loaded",
    "StatKey",
    "Window",
    "count_lines",
    "decode",
    "mime_for",
    "read_file",
    "read_file_at",
    "split_lines",
    "stat_key",
    "window",
]

#: Bytes read per ``os.read`` call for files over ``max_file_bytes`` (1 MiB; a multiple of
#: 4 so that UTF-16/32 code units never straddle a chunk edge).
CHUNK_BYTES: Final = 1 << 20

#: Bytes of a file over ``max_file_bytes`` read at most (window search and newline count
#: together; 64 MiB, ~30 ms from the page cache): a 10 GB log or sparse file answers at
#: once. Past it the line count is unknown (``total_lines=None``), and a window that does
#: not start within it is ``too-large``.
SCAN_BYTES: Final = 64 << 20

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
LoadKind = Literal["text", "binary", "error"]
#: ``(size, mtime_ns, ino, ctime_ns)``: what must be unchanged for cached content to hold.
StatKey = tuple[int, int, int, int]


# --------------------------------------------------------------------------- structs


class Decoded(msgspec.Struct, frozen=True):
    """What :func:`decode` made of some bytes.

    ``kind`` is ``"text"`` or ``"binary"``. For text, ``text`` is the decoded string with
    any byte-order mark removed and newlines untouched (``\\r\\n`` stays ``\\r\\n``), and
    ``encoding`` a Python codec name: ``"utf-8"``, ``"utf-8-sig"`` (UTF-8 with a BOM),
    ``"utf-16-le"``, ``"utf-16-be"``, ``"utf-32-le"``, ``"utf-32-be"`` or a legacy codec
    named by charset-normalizer. ``bom`` says whether a BOM preceded the text (always true
    for ``"utf-8-sig"``; for UTF-16/32 it tells the BOM form from the BOM-less one).
    ``encoding`` is ``None`` for binary, and for the undetermined text ``""`` that a prefix
    of fewer than 4 bytes which could still become a BOM decodes to.
    """

    kind: Kind
    text: str | None
    encoding: str | None
    bom: bool = False


class Window(msgspec.Struct):
    """A run of whole lines cut from a text by :func:`window` (a fresh, mutable value).

    * ``text``: the lines, newlines kept as in the file (the last line keeps its ``\\n``
      when it has one); ``len(text) <= max_chars`` characters.
    * ``line_start``: the requested ``offset`` (1-based).
    * ``line_end``: the last line included, even partially (1-based, inclusive);
      ``line_start - 1`` for an empty window.
    * ``total_lines``: lines in the whole file (:func:`count_lines`); ``None`` only for a
      window of a file too large to count (:data:`SCAN_BYTES`).
    * ``complete``: the window reached the end of the file and nothing was cut (true
      for ``offset > 1`` too: the caller knows it skipped lines).
    * ``next_offset``: the line to ask for next; ``None`` when nothing follows.
    * ``cut_line``: set when the first line alone was longer than ``max_chars`` and was
      cut at ``max_chars`` characters; ``next_offset`` then skips the rest of that line,
      since a line offset cannot resume inside a line.

    An ``offset`` past the end (``offset > max(total_lines, 1)``) gives ``text=""``,
    ``line_end=offset - 1``, ``complete=False`` and ``next_offset=None``: the caller
    reports it (e.g. "offset 300 is past the end: 250 lines").
    """

    text: str
    line_start: int
    line_end: int
    total_lines: int | None
    complete: bool
    next_offset: int | None
    cut_line: int | None


class Loaded(msgspec.Struct, frozen=True):
    """The result of :func:`read_file`; problems are data, never exceptions.

    * ``kind``: ``"text"``, ``"binary"`` or ``"error"``.
    * ``text``: decoded text (see :class:`Decoded`): the whole file when
      ``complete_text``, else a prefix starting at line 1 that covers the asked window.
    * ``complete_text``: ``text`` holds the whole file.
    * ``total_lines``: exact line count of the whole file (text only), even when only a
      prefix was decoded; ``None`` when the file goes on past :data:`SCAN_BYTES`.
    * ``window``: the window asked for by this call (``offset``/``limit``/``max_chars``)
      over the whole file; for a cached whole text, call :func:`window` again instead.
    * ``encoding``, ``bom``: as in :class:`Decoded`.
    * ``size`` (bytes), ``mtime_ns``, ``ino``, ``ctime_ns``: from the ``fstat`` of the
      opened descriptor; ``None`` when the file could not be opened.
    * ``code``: ``None`` for text; ``"binary"`` for binary; for errors one of
      ``not-found``, ``not-a-file``, ``permission-denied``, ``fs-error``, ``too-large``
      (:class:`~readmany_daemon.errors.Code`). PROTOCOL §4 gives the status: ``binary``
      and ``too-large`` are *skipped*, the others *error*.
    * ``message``: one line a person and a model understand, set with ``code``.
    * ``data``: the raw bytes, only with ``want_bytes=True`` (attachments).
    * ``sha256``: hex digest of the bytes read when the whole file was read, else ``None``.
    * ``bytes_read``: bytes read from disk (the line-counting scan included).
    * ``read_at_ns``: ``time.time_ns()`` taken before the ``fstat``, for the racy-entry
      rule of :class:`ContentCache`.
    """

    kind: LoadKind
    text: str | None = None
    complete_text: bool = False
    total_lines: int | None = None
    window: Window | None = None
    encoding: str | None = None
    bom: bool = False
    size: int | None = None
    mtime_ns: int | None = None
    ino: int | None = None
    ctime_ns: int | None = None
    code: str | None = None
    message: str | None = None
    data: bytes | None = None
    sha256: str | None = None
    bytes_read: int = 0
    read_at_ns: int = 0

    def stat_key(self) -> StatKey | None:
        """``(size, mtime_ns, ino, ctime_ns)`` of the ``fstat`` taken, or ``None`` if none."""
        if self.size is None or self.mtime_ns is None or self.ino is None:
            return None
        if self.ctime_ns is None:
            return None
        return (self.size, self.mtime_ns, self.ino, self.ctime_ns)


def stat_key(st: os.stat_result) -> StatKey:
    """``(st_size, st_mtime_ns, st_ino, st_ctime_ns)`` of a stat result (bytes, ns, -, ns)."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


# --------------------------------------------------------------------------- decoding

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
            if text is None:
                continue
            if (encoding == "utf-8-sig" and "\x00" in text) or (
                encoding != "utf-8-sig" and _looks_binary(text)
            ):
                return _BINARY
            return Decoded("text", text, encoding, bom=True)

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
    sample = data[:_SNIFF_BYTES]
    controls = len(sample) - len(sample.translate(None, _DELETE_CONTROL_BYTES))
    if controls > _CONTROL_RATIO * len(sample):
        return _BINARY
    return _decode_legacy(data, complete)


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


# --------------------------------------------------------------------------- lines


def split_lines(text: str, *, keepends: bool = False) -> list[str]:
    """Split ``text`` on ``"\\n"`` only; ``"\\r"`` stays inside lines.

    Unlike ``str.splitlines`` (which also splits on \\v, \\f, \\x1c-\\x1e, \\x85, U+2028,
    U+2029) this is the line model of editors, git and the line numbers in PROTOCOL §3. A
    final ``"\\n"`` ends the last line rather than starting an empty one:
    ``"" → []``, ``"a" → ["a"]``, ``"a\\n" → ["a"]``, ``"a\\n\\n" → ["a", ""]``. With
    ``keepends`` each line keeps its ``"\\n"``, so ``"".join(lines) == text``.
    """
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
        if keepends:
            return [p + "\n" for p in parts]
    elif keepends:
        return [p + "\n" for p in parts[:-1]] + [parts[-1]]
    return parts


def count_lines(text: str) -> int:
    """Lines in ``text`` by the :func:`split_lines` model (``"a\\nb"`` → 2, ``"a\\n"`` → 1)."""
    return text.count("\n") + (1 if text and text[-1] != "\n" else 0)


def _count_lines_of(data: bytes, text: str, encoding: str | None) -> int:
    """:func:`count_lines` of ``text``, decoded from ``data`` as ``encoding``: counted on
    the bytes for UTF-8 without a BOM (a ``0x0A`` byte is always a newline there, never
    part of another character; ``bytes.count`` is faster than ``str.count``), else on
    the text."""
    if encoding == "utf-8":
        return data.count(b"\n") + (1 if data and data[-1] != 0x0A else 0)
    return count_lines(text)


def _skip_lines(text: str, k: int, pos: int) -> int | None:
    """Index just after the ``k``-th ``"\\n"`` at or after ``pos`` (``pos`` for ``k=0``),
    or ``None`` when fewer follow. Skips blocks with ``str.count`` so that a far offset in
    a 20 MB text costs C-speed scans, not one Python step per line."""
    n = len(text)
    block = 1 << 16
    while k > 32:
        if pos >= n:
            return None
        end = min(pos + block, n)
        found = text.count("\n", pos, end)
        if found < k:
            k -= found
            pos = end
            block = min(block * 2, 1 << 20)
        elif block > 256:
            block //= 2
        else:
            break
    while k > 0:
        j = text.find("\n", pos)
        if j < 0:
            return None
        pos = j + 1
        k -= 1
    return pos


def _check_window_args(offset: int, limit: int | None, max_chars: int | None) -> None:
    if offset < 1:
        raise ValueError(f"offset must be >= 1 (1-based line number), got {offset}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 lines, got {limit}")
    if max_chars is not None and max_chars < 0:
        raise ValueError(f"max_chars must be >= 0 characters, got {max_chars}")


def _window(
    text: str,
    offset: int,
    limit: int | None,
    max_chars: int | None,
    total_lines: int | None,
    at_eof: bool,
) -> Window:
    """:func:`window` over ``text``, which is the whole file (``at_eof``) or a prefix of it
    that holds the whole window (``total_lines`` then counts the whole file, or is
    ``None`` when unknown: the file goes on, so ``next_offset`` follows any window)."""
    if total_lines is not None and offset > max(total_lines, 1):
        return Window("", offset, offset - 1, total_lines, False, None, None)
    n = len(text)
    if (
        at_eof
        and offset == 1
        and total_lines is not None
        and (limit is None or limit >= total_lines)
        and (max_chars is None or max_chars >= n)
    ):
        # The whole text: nothing to scan (a full read of a large tree is mostly these).
        return Window(text, 1, total_lines, total_lines, True, None, None)
    start = _skip_lines(text, offset - 1, 0)
    if start is None:
        start = n
    end = n
    if limit is not None:
        after = _skip_lines(text, limit, start)
        end = n if after is None else after
    cut_line: int | None = None
    if max_chars is not None and end - start > max_chars:
        newline = text.rfind("\n", start, start + max_chars)
        if newline >= 0:
            end = newline + 1
        elif max_chars == 0:
            end = start
        else:
            end = start + max_chars
            cut_line = offset
    body = text[start:end]
    included = body.count("\n") + (1 if body and body[-1] != "\n" else 0)
    line_end = offset - 1 + included
    next_offset = line_end + 1 if total_lines is None or line_end < total_lines else None
    complete = at_eof and end == n and cut_line is None
    return Window(body, offset, line_end, total_lines, complete, next_offset, cut_line)


def window(
    text: str,
    offset: int = 1,
    limit: int | None = None,
    max_chars: int | None = None,
    total_lines: int | None = None,
) -> Window:
    """Lines ``offset .. offset+limit-1`` of ``text`` (1-based, inclusive), cut to fit.

    ``limit`` is a line count (``None``: to the end), ``max_chars`` a character count
    (``None``: no cap; newlines count). The lines are cut at a line boundary so that
    ``len(result.text) <= max_chars`` (whole lines only), except when the first line
    alone is longer: then it is cut at ``max_chars`` characters and ``cut_line`` is its
    number. ``max_chars=0`` or ``limit=0`` give an empty window whose ``next_offset`` is
    ``offset``. Field meanings, and the past-the-end case, are on :class:`Window`.

    Cost: one ``str.count`` over ``text`` for ``total_lines`` (skipped when the caller
    passes ``total_lines``, which must then be ``count_lines(text)``) plus scans up to the
    window's end; the text is never split into lines, and a window that is the whole text
    costs nothing.

    Raises ``ValueError`` for ``offset < 1``, ``limit < 0`` or ``max_chars < 0``.
    """
    _check_window_args(offset, limit, max_chars)
    total = count_lines(text) if total_lines is None else total_lines
    return _window(text, offset, limit, max_chars, total, True)


# --------------------------------------------------------------------------- reading

_OPEN_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)

_IMAGE_AND_PDF_TYPES: Final[dict[str, str]] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".ico": "image/vnd.microsoft.icon",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".avif": "image/avif",
    ".heic": "image/heic",
    ".pdf": "application/pdf",
}


def mime_for(path: str) -> str | None:
    """The MIME type of an image or PDF, by extension (case-insensitive), else ``None``.

    Covers png, jpg/jpeg, gif, webp, bmp, ico, tif/tiff, avif, heic (IANA media types) and
    pdf (``application/pdf``). SVG is XML text and gets ``None``, as does everything else.
    """
    return _IMAGE_AND_PDF_TYPES.get(os.path.splitext(path)[1].lower())


def _file_type(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def _not_a_file(mode: int) -> Loaded:
    what = _file_type(mode)
    hint = "; resolve links before reading" if stat.S_ISLNK(mode) else ""
    return Loaded(
        "error",
        code=Code.NOT_A_FILE,
        message=f"Not a regular file ({what}){hint}.",
    )


def _os_error(exc: OSError) -> Loaded:
    """Map an ``OSError`` from stat/open/read to a per-file code (PROTOCOL §4)."""
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return Loaded("error", code=Code.NOT_FOUND, message="File not found.")
    if isinstance(exc, PermissionError):
        return Loaded("error", code=Code.PERMISSION_DENIED, message="Permission denied.")
    if isinstance(exc, IsADirectoryError):
        return Loaded("error", code=Code.NOT_A_FILE, message="Not a regular file (a directory).")
    if exc.errno == errno.ELOOP or exc.errno == getattr(errno, "EFTYPE", None):
        return Loaded(
            "error",
            code=Code.NOT_A_FILE,
            message="Not a regular file (a symbolic link); resolve links before reading.",
        )
    if exc.errno in (errno.ENXIO, errno.ENODEV):
        return Loaded("error", code=Code.NOT_A_FILE, message="Not a regular file (a device).")
    name = errno.errorcode.get(exc.errno or 0, "error")
    reason = exc.strerror or str(exc)
    return Loaded("error", code=Code.FS_ERROR, message=f"File system error: {reason} ({name}).")


def _read_upto(fd: int, n: int) -> bytes:
    """Read up to ``n`` bytes; fewer only at end of file."""
    parts: list[bytes] = []
    got = 0
    while got < n:
        part = os.read(fd, n - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


_DIR_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def open_beneath(root: str, rel: str, flags: int) -> int:
    """Open ``rel`` (a relative POSIX path without ``..``) below folder ``root`` one
    component at a time, each folder with ``O_DIRECTORY | O_NOFOLLOW`` relative to the
    one before (``dir_fd``), the last with ``flags`` (which should hold ``O_NOFOLLOW``).

    A path checked once (``realpath`` inside the root) can be changed before it is
    opened: a folder on the way swapped for a symbolic link to elsewhere would make a
    plain ``open`` read outside the root. Here a symbolic link anywhere on the way fails
    the open (``ELOOP``/``ENOTDIR``) instead, as ``openat2(RESOLVE_NO_SYMLINKS)`` does.
    Returns the descriptor; raises ``OSError``."""
    parts = [p for p in rel.split("/") if p]
    if not parts or ".." in parts:
        raise OSError(errno.EINVAL, "not a path below the root", rel)
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], flags, dir_fd=fd)
    finally:
        os.close(fd)


class FolderHandles:
    """Descriptors of folders below one real root folder, for the span of one request.

    Each folder is opened once, with ``O_DIRECTORY | O_NOFOLLOW`` relative to its parent's
    descriptor (``dir_fd``), so the chain from the root is checked as
    :func:`open_beneath` checks it, but a folder shared by many files costs one
    ``openat`` instead of one per component per file. At most ``limit`` descriptors stay
    open (least recently used closed first); :meth:`close` closes them all.

    A descriptor keeps naming the folder it opened even if that folder is renamed
    meanwhile (the request sees the tree as it was when it got there, as the
    ``real_dirs`` memo of the request stage does); a symbolic link swapped in for a folder
    before it is opened fails the open (``ELOOP``/``ENOTDIR``).
    """

    def __init__(self, root: str, limit: int = 64) -> None:
        if limit < 2:
            raise ValueError(f"limit must be >= 2 descriptors, got {limit}")
        self._root = root
        self._limit = limit
        self._fds: OrderedDict[str, int] = OrderedDict()

    def fd(self, rel_dir: str) -> int:
        """The descriptor of folder ``rel_dir`` (root-relative POSIX, normalized, ``""`` =
        the root), valid until the next call. Raises ``OSError`` (``ELOOP``/``ENOTDIR``
        for a symbolic link on the way, ``ENOENT``, ``EACCES``, ``EINVAL`` for ``..``)."""
        fd = self._fds.get(rel_dir)
        if fd is not None:
            self._fds.move_to_end(rel_dir)
            return fd
        names = rel_dir.split("/") if rel_dir else []
        if any(name in ("", ".", "..") for name in names):
            raise OSError(errno.EINVAL, "not a folder below the root", rel_dir)
        # Down from the deepest ancestor already open (a loop: folders can nest deeper
        # than Python's recursion limit).
        start = len(names) - 1
        while start >= 0 and "/".join(names[:start]) not in self._fds:
            start -= 1
        if start < 0:
            fd = self._keep("", os.open(self._root, _DIR_FLAGS))
            start = 0
        else:
            fd = self._fds["/".join(names[:start])]
            self._fds.move_to_end("/".join(names[:start]))
        for depth in range(start, len(names)):
            fd = self._keep(
                "/".join(names[: depth + 1]), os.open(names[depth], _DIR_FLAGS, dir_fd=fd)
            )
        return fd

    def _keep(self, rel_dir: str, fd: int) -> int:
        """Remember ``fd`` for ``rel_dir``, closing the least recently used beyond the
        limit (never ``fd`` itself, the most recent); returns ``fd``."""
        self._fds[rel_dir] = fd
        while len(self._fds) > self._limit:
            os.close(self._fds.popitem(last=False)[1])
        return fd

    def close(self) -> None:
        """Close every descriptor still open (safe to call more than once)."""
        while self._fds:
            os.close(self._fds.popitem()[1])

    def __enter__(self) -> FolderHandles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_file_at(
    dir_fd: int,
    name: str,
    pre: os.stat_result,
    *,
    max_file_bytes: int,
    offset: int = 1,
    limit: int | None = None,
    max_chars: int | None = None,
    want_full: bool = False,
    want_bytes: bool = False,
) -> Loaded:
    """:func:`read_file` for file ``name`` (one component) in the folder open as
    ``dir_fd`` (see :class:`FolderHandles`), whose ``lstat`` (``os.stat(name,
    dir_fd=dir_fd, follow_symlinks=False)``) the caller already holds as ``pre``.

    The same checks as :func:`read_file`: ``pre`` must be a regular file, the open uses
    ``O_NOFOLLOW | O_NONBLOCK`` and the opened descriptor is ``fstat``-ed again. Same
    result and errors."""
    _check_window_args(offset, limit, max_chars)
    read_at = time.time_ns()
    if not stat.S_ISREG(pre.st_mode):
        return _not_a_file(pre.st_mode)
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        return _os_error(exc)
    return _read_fd(fd, read_at, max_file_bytes, offset, limit, max_chars, want_full, want_bytes)


def _read_fd(
    fd: int,
    read_at: int,
    max_file_bytes: int,
    offset: int,
    limit: int | None,
    max_chars: int | None,
    want_full: bool,
    want_bytes: bool,
) -> Loaded:
    """``fstat`` the just-opened ``fd``, refuse anything but a regular file, read it; the
    descriptor is always closed."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return _not_a_file(st.st_mode)
        return _read_open_file(
            fd, st, read_at, max_file_bytes, offset, limit, max_chars, want_full, want_bytes
        )
    except OSError as exc:
        return _os_error(exc)
    finally:
        os.close(fd)


def read_file(
    abs_path: str,
    *,
    max_file_bytes: int,
    offset: int = 1,
    limit: int | None = None,
    max_chars: int | None = None,
    want_full: bool = False,
    want_bytes: bool = False,
    beneath: str | None = None,
) -> Loaded:
    """Read one regular file safely, decode it and cut the asked window.

    ``abs_path`` must be absolute and already free of symbolic links in its last
    component: the file is opened with ``O_NOFOLLOW``, so a symlink is *not-a-file*
    (resolve it first, e.g. with ``os.path.realpath`` checked against the workspace).
    With ``beneath`` (a real folder holding ``abs_path``) no component below it may be a
    symbolic link at the time of the open either (:func:`open_beneath`): a path swapped
    after it was checked gives ``fs-error``, never another file.
    Opening uses ``O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY`` (flags the
    platform lacks are left out). An ``lstat`` first refuses anything but a regular file
    without opening it (opening some devices has side effects); then the *opened*
    descriptor is ``fstat``-ed and checked again before any read, so a file swapped for a
    FIFO in between is refused too, and ``O_NONBLOCK`` keeps that open from blocking.

    All reads are consistent with that one ``fstat``: at most ``st_size`` bytes are read
    (a file growing meanwhile is read as it was; one shrinking gives what was there).

    * ``size <= max_file_bytes``: the whole file is read and decoded (``complete_text``,
      ``sha256`` set; ``data`` too with ``want_bytes``).
    * Larger files: with ``want_full`` or ``want_bytes``, or without any ``limit`` and
      ``max_chars``, the answer is ``code="too-large"`` with the size in the message.
      Otherwise 1 MiB chunks are read and decoded only as far as the window needs
      (encoding sniffed on the first chunk; later undecodable bytes become U+FFFD), and
      the rest is scanned for newlines without decoding (``b"\\n"`` for ASCII-compatible
      codecs, the aligned newline unit for UTF-16/32), so ``total_lines`` is exact.

    ``offset``/``limit``/``max_chars`` are as in :func:`window`; the result's ``window``
    is that window over the whole file. Errors come back as ``Loaded(kind="error")`` with
    a code (``not-found``, ``not-a-file``, ``permission-denied``, ``fs-error``,
    ``too-large``); binary content as ``kind="binary"``, ``code="binary"``.

    Raises ``ValueError`` only for invalid ``offset``/``limit``/``max_chars``.
    """
    _check_window_args(offset, limit, max_chars)
    read_at = time.time_ns()
    try:
        pre = os.lstat(abs_path)
    except OSError as exc:
        return _os_error(exc)
    except ValueError:  # embedded NUL in the path
        return Loaded("error", code=Code.FS_ERROR, message="Invalid path (NUL character).")
    if not stat.S_ISREG(pre.st_mode):
        return _not_a_file(pre.st_mode)
    try:
        if beneath is not None and abs_path.startswith(beneath.rstrip("/") + "/"):
            fd = open_beneath(beneath, abs_path[len(beneath.rstrip("/")) + 1 :], _OPEN_FLAGS)
        else:
            fd = os.open(abs_path, _OPEN_FLAGS)
    except OSError as exc:
        return _os_error(exc)
    return _read_fd(fd, read_at, max_file_bytes, offset, limit, max_chars, want_full, want_bytes)


def _read_open_file(
    fd: int,
    st: os.stat_result,
    read_at: int,
    max_file_bytes: int,
    offset: int,
    limit: int | None,
    max_chars: int | None,
    want_full: bool,
    want_bytes: bool,
) -> Loaded:
    """:func:`read_file` once ``fd`` is known to be a regular file described by ``st``."""
    size = st.st_size
    base = Loaded(
        "error",
        size=size,
        mtime_ns=st.st_mtime_ns,
        ino=st.st_ino,
        ctime_ns=st.st_ctime_ns,
        read_at_ns=read_at,
    )
    if size > max_file_bytes and (want_full or want_bytes or (limit is None and max_chars is None)):
        return replace(
            base,
            code=Code.TOO_LARGE,
            message=(
                f"File too large to read whole: {size} bytes (limit {max_file_bytes} bytes);"
                " ask for a line window (offset, limit) instead."
            ),
        )
    if size > max_file_bytes:
        return _read_prefix(fd, base, offset, limit, max_chars)
    data = _read_upto(fd, size)
    digest = hashlib.sha256(data).hexdigest()
    decoded = decode(data, complete=True)
    raw = data if want_bytes else None
    if decoded.text is None:
        return replace(
            base,
            kind="binary",
            code=Code.BINARY,
            message=f"Binary file ({len(data)} bytes); not shown as text.",
            data=raw,
            sha256=digest,
            bytes_read=len(data),
        )
    text = decoded.text
    return replace(
        base,
        kind="text",
        text=text,
        complete_text=True,
        total_lines=(line_count := _count_lines_of(data, text, decoded.encoding)),
        window=window(text, offset, limit, max_chars, line_count),
        encoding=decoded.encoding,
        bom=decoded.bom,
        data=raw,
        sha256=digest,
        bytes_read=len(data),
    )


class _PrefixTracker:
    """Collects decoded pieces and tells when they hold the whole asked window."""

    def __init__(self, offset: int, limit: int | None, max_chars: int | None) -> None:
        self._before = offset - 1  # newlines before the window's first line
        self._limit = limit
        self._max_chars = max_chars
        self._pieces: list[str] = []
        self._chars = 0
        self._newlines = 0
        self._start: int | None = 0 if offset == 1 else None
        self.done = False
        self._update()

    def add(self, piece: str) -> None:
        if piece:
            found = piece.count("\n")
            if self._start is None and self._newlines + found >= self._before:
                at = _skip_lines(piece, self._before - self._newlines, 0)
                self._start = self._chars + (at if at is not None else len(piece))
            self._newlines += found
            self._chars += len(piece)
            self._pieces.append(piece)
        self._update()

    def _update(self) -> None:
        if self._start is None:
            return
        if self._limit is not None and self._newlines >= self._before + self._limit:
            self.done = True
        if self._max_chars is not None and self._chars - self._start > self._max_chars:
            self.done = True

    @property
    def started(self) -> bool:
        """Whether the window's first line was reached (its start is in the pieces)."""
        return self._start is not None

    def text(self) -> str:
        return "".join(self._pieces)


@functools.cache
def _one_if(byte: int) -> bytes:
    """A ``bytes.translate`` table mapping ``byte`` to 1 and every other byte to 0."""
    return bytes(1 if i == byte else 0 for i in range(256))


def _count_units(buf: bytes, unit: bytes) -> int:
    """Occurrences of ``unit`` at offsets of ``buf`` aligned to ``len(unit)``.

    ``len(buf)`` is a multiple of ``len(unit)``. Each byte column is mapped to 0/1 and the
    columns are ANDed as big integers: C-speed, and a misaligned match (``0A 00`` across
    two UTF-16 units) is never counted.
    """
    width = len(unit)
    mask = -1
    for k in range(width):
        column = buf[k::width].translate(_one_if(unit[k]))
        mask &= int.from_bytes(column, "little")
    return mask.bit_count() if mask > 0 else 0


def _newline_unit(codec: str) -> bytes | None:
    """The encoded ``"\\n"`` when counting it in raw bytes is exact, else ``None``.

    UTF-16/32: the 2- or 4-byte unit, counted at aligned offsets. Codecs that encode
    ``"\\n"`` as ``b"\\n"`` are ASCII-compatible for newlines: in UTF-8 and in every
    Python legacy codec (single-byte, Shift-JIS, EUC, GBK/GB18030, Big5, ISO-2022) the
    byte 0x0A never occurs inside a multi-byte character. Others (EBCDIC) decode.
    """
    name = codecs.lookup(codec).name
    if name in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
        return "\n".encode(name)
    try:
        encoded = "\n".encode(codec)
    except UnicodeError:
        return None
    return encoded if encoded == b"\n" else None


class _LineCounter:
    """Counts lines (the :func:`split_lines` model) over a byte stream fed in chunks."""

    def __init__(self, codec: str) -> None:
        self._unit = _newline_unit(codec)
        self._decoder = (
            codecs.getincrementaldecoder(codec)("replace") if self._unit is None else None
        )
        self._count = 0
        self._carry = b""
        self._last = b""
        self._last_char = ""
        self._any = False

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self._any = True
        if self._decoder is not None:
            self._count_text(self._decoder.decode(chunk))
            return
        unit = self._unit
        assert unit is not None
        if len(unit) == 1:
            self._count += chunk.count(unit)
            self._last = chunk[-1:]
            return
        buf = self._carry + chunk if self._carry else chunk
        usable = len(buf) - len(buf) % len(unit)
        if usable:
            self._count += _count_units(buf[:usable], unit)
            self._last = buf[usable - len(unit) : usable]
        self._carry = buf[usable:]

    def _count_text(self, text: str) -> None:
        self._count += text.count("\n")
        if text:
            self._last_char = text[-1]

    def total(self) -> int:
        if self._decoder is not None:
            self._count_text(self._decoder.decode(b"", final=True))
            ends_with_newline = self._last_char == "\n"
        else:
            ends_with_newline = not self._carry and self._last == self._unit
        return self._count + (1 if self._any and not ends_with_newline else 0)


def _stream_codec(decoded: Decoded) -> tuple[str, int]:
    """``(codec, bom_length_in_bytes)`` to continue decoding after :func:`decode`."""
    encoding = decoded.encoding or "utf-8"
    if encoding == "utf-8-sig":
        return "utf-8", len(codecs.BOM_UTF8)
    if decoded.bom:
        return encoding, (4 if encoding.startswith("utf-32") else 2)
    return encoding, 0


def _read_prefix(
    fd: int, base: Loaded, offset: int, limit: int | None, max_chars: int | None
) -> Loaded:
    """The over-``max_file_bytes`` path of :func:`read_file` (see there); ``base`` holds
    the ``fstat`` fields.

    At most :data:`SCAN_BYTES` are read, window search and newline count together, so
    the cost does not grow with the file (a 10 GB file answers as fast as a 64 MiB one).
    A window that does not start within them is ``too-large``; a file that goes on past
    them has ``total_lines=None`` (the window's ``next_offset`` is then always set)."""
    size = base.size or 0
    first = _read_upto(fd, min(CHUNK_BYTES, size))
    got = len(first)
    eof = got >= size or got < min(CHUNK_BYTES, size)
    sniff = decode(first, complete=eof)
    if sniff.text is None:
        return replace(
            base,
            kind="binary",
            code=Code.BINARY,
            message=f"Binary file ({size} bytes); not shown as text.",
            bytes_read=got,
        )
    codec, bom_length = _stream_codec(sniff)
    decoder = codecs.getincrementaldecoder(codec)("replace")
    counter = _LineCounter(codec)
    hasher = hashlib.sha256(first)
    tracker = _PrefixTracker(offset, limit, max_chars)
    body = first[bom_length:]
    counter.feed(body)
    tracker.add(decoder.decode(body, final=eof))
    while not eof and not tracker.done and got < SCAN_BYTES:
        want = min(CHUNK_BYTES, size - got)
        chunk = _read_upto(fd, want)
        got += len(chunk)
        eof = got >= size or len(chunk) < want
        hasher.update(chunk)
        counter.feed(chunk)
        tracker.add(decoder.decode(chunk, final=eof))
    text = tracker.text()
    partial = replace(base, kind="text", text=text, encoding=sniff.encoding, bom=sniff.bom)
    if eof:
        return replace(
            partial,
            complete_text=True,
            total_lines=(line_count := count_lines(text)),
            window=window(text, offset, limit, max_chars, line_count),
            sha256=hasher.hexdigest(),
            bytes_read=got,
        )
    if not tracker.started:
        return replace(
            base,
            code=Code.TOO_LARGE,
            message=(
                f"File too large: {size} bytes, and line {offset} does not start within the"
                f" first {got} bytes read; ask for an earlier line window instead."
            ),
            bytes_read=got,
        )
    ended = False
    while got < size and got < SCAN_BYTES:
        want = min(CHUNK_BYTES, size - got)
        chunk = _read_upto(fd, want)
        got += len(chunk)
        counter.feed(chunk)
        if len(chunk) < want:
            ended = True  # the file shrank meanwhile: what was there is all there is
            break
    total = counter.total() if ended or got >= size else None
    return replace(
        partial,
        total_lines=total,
        window=_window(text, offset, limit, max_chars, total, False),
        bytes_read=got,
    )


# --------------------------------------------------------------------------- cache

#: Texts shorter than this (characters) get no kept JSON form: not worth it, and CPython
#: shares one object among equal short strings ("" and one-character ones).
JSON_BODY_MIN_CHARS: Final = 1024


class _Entry(msgspec.Struct):
    loaded: Loaded
    key: StatKey
    cached_at_ns: int
    cost: int
    #: ``loaded.text`` as a JSON string body (UTF-8, escaped, no quotes), made on demand.
    json_body: bytes | None = None


#: Bytes charged per entry on top of its text and data (struct, key, dict slot).
_ENTRY_OVERHEAD: Final = 512


def _cost(loaded: Loaded) -> int:
    """Memory charged for ``loaded``: ``sys.getsizeof`` of its text (CPython stores a str
    in 1, 2 or 4 bytes a character, PEP 393, so ASCII text costs about its UTF-8 size),
    plus its raw ``data`` bytes, plus a fixed 512-byte overhead."""
    text = sys.getsizeof(loaded.text) if loaded.text is not None else 0
    data = len(loaded.data) if loaded.data is not None else 0
    return text + data + _ENTRY_OVERHEAD


class ContentCache:
    """A byte-bounded LRU of whole-file :class:`Loaded` results, keyed by absolute path.

    An entry holds while the file's stat key ``(size, mtime_ns, ino, ctime_ns)`` equals
    the one taken when it was read, *and* the entry is not racy. Racy rule (git,
    Documentation/technical/racy-git.txt): a file written within one timestamp tick of
    being read can change again without its stat changing, so an entry whose
    ``mtime_ns >= cached_at_ns - granularity_ns`` is never trusted. ``cached_at_ns`` is
    ``Loaded.read_at_ns`` (taken before the read, which is stricter than the time of
    :meth:`put`), or the clock at :meth:`put` if that is 0. ``granularity_ns`` defaults to
    2 s: FAT's mtime resolution, the coarsest in common use; it also covers the lag of
    Linux's coarse file-time clock behind ``time.time_ns()``. Since both times are fixed
    once cached, a racy entry stays racy: :meth:`put` does not store it, and :meth:`get`
    checks again.

    Only whole reads are stored (``sha256`` set and the stat known): text, or binary
    verdicts. Size accounting (``bytes_used``, bytes) is :func:`_cost`: ``sys.getsizeof``
    of the text (about its UTF-8 size for ASCII), raw data, plus 512 bytes an entry, plus
    the JSON form of the text once :meth:`json_body` made it. An entry larger than
    ``max_bytes`` is not stored. All methods are thread-safe (one lock).
    """

    def __init__(
        self,
        max_bytes: int,
        *,
        granularity_ns: int = 2_000_000_000,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.max_bytes = max_bytes
        self.granularity_ns = granularity_ns
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        #: ``id(entry.loaded.text)`` → path, for :meth:`json_body` (the entry holds the
        #: text, so an id here is never reused by another live string).
        self._by_text: dict[int, str] = {}
        self._bytes = 0
        self._hits = 0
        self._misses = 0

    @property
    def bytes_used(self) -> int:
        """Bytes charged for the stored entries (see :func:`_cost`)."""
        with self._lock:
            return self._bytes

    @property
    def hits(self) -> int:
        """:meth:`get` calls that returned an entry."""
        with self._lock:
            return self._hits

    @property
    def misses(self) -> int:
        """:meth:`get` calls that returned ``None`` (absent, stale or racy)."""
        with self._lock:
            return self._misses

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, path: object) -> bool:
        with self._lock:
            return path in self._entries

    def _racy(self, mtime_ns: int, cached_at_ns: int) -> bool:
        return mtime_ns >= cached_at_ns - self.granularity_ns

    def get(self, path: str, st: os.stat_result) -> Loaded | None:
        """The entry for ``path`` if ``st`` (a fresh ``stat``) matches it and it is not racy.

        A stale or racy entry is dropped. Counts a hit or a miss.
        """
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None and (
                entry.key != stat_key(st) or self._racy(entry.key[1], entry.cached_at_ns)
            ):
                self._drop(path)
                entry = None
            if entry is None:
                self._misses += 1
                return None
            self._entries.move_to_end(path)
            self._hits += 1
            return entry.loaded

    def put(self, path: str, loaded: Loaded) -> bool:
        """Store ``loaded`` for ``path``, evicting least recently used entries to fit.

        Returns whether it was stored: not for partial reads, errors, racy results or
        entries over ``max_bytes`` (any older entry for ``path`` is dropped then too).
        """
        key = loaded.stat_key()
        cached_at = loaded.read_at_ns or self._clock()
        with self._lock:
            self._drop(path)
            if key is None or loaded.kind == "error" or loaded.sha256 is None:
                return False
            if loaded.kind == "text" and not loaded.complete_text:
                return False
            if self._racy(key[1], cached_at):
                return False
            cost = _cost(loaded)
            if cost > self.max_bytes:
                return False
            self._entries[path] = _Entry(loaded, key, cached_at, cost)
            if loaded.text is not None and len(loaded.text) >= JSON_BODY_MIN_CHARS:
                self._by_text[id(loaded.text)] = path
            self._bytes += cost
            self._evict()
            return True

    def json_body(self, text: str) -> bytes | None:
        """``text`` encoded as the body of a JSON string (UTF-8, escaped as
        ``msgspec.json`` escapes it, without the quotes) when ``text`` *is* (the same
        object as) the text of a stored entry and holds at least ``JSON_BODY_MIN_CHARS``
        characters, else ``None`` (the caller encodes it). Made on the first call and
        kept with the entry (charged to ``max_bytes``, with the UTF-8 copy the encoder
        leaves on a non-ASCII str), so a cached file sent again is not escaped again.
        ``None`` too for text JSON can't carry as UTF-8 (lone surrogates).
        """
        with self._lock:
            path = self._by_text.get(id(text))
            if path is None:
                return None
            entry = self._entries.get(path)
            if entry is None or entry.loaded.text is not text:
                return None
            if entry.json_body is not None:
                return entry.json_body
        try:
            body = msgspec.json.encode(text)[1:-1]
        except UnicodeEncodeError:
            return None
        with self._lock:
            if self._entries.get(path) is entry and entry.json_body is None:
                entry.json_body = body
                # A non-ASCII str keeps the UTF-8 copy the encoder made: its size grew.
                data = entry.loaded.data
                charged = entry.cost - _ENTRY_OVERHEAD - (len(data) if data is not None else 0)
                extra = len(body) + max(0, sys.getsizeof(text) - charged)
                entry.cost += extra
                self._bytes += extra
                self._entries.move_to_end(path)
                self._evict()
        return body

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and self._entries:
            self._forget(*self._entries.popitem(last=False))

    def invalidate(self, path: str) -> bool:
        """Forget ``path``; returns whether an entry was there."""
        with self._lock:
            return self._drop(path)

    def clear(self) -> None:
        """Forget every entry (the hit and miss counters stay)."""
        with self._lock:
            self._entries.clear()
            self._by_text.clear()
            self._bytes = 0

    def _drop(self, path: str) -> bool:
        entry = self._entries.pop(path, None)
        if entry is None:
            return False
        self._forget(path, entry)
        return True

    def _forget(self, path: str, entry: _Entry) -> None:
        """Account for ``entry`` of ``path``, already removed from ``_entries``."""
        self._bytes -= entry.cost
        if entry.loaded.text is not None and self._by_text.get(id(entry.loaded.text)) == path:
            del self._by_text[id(entry.loaded.text)]
