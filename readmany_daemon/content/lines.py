"""Lines and line windows of a decoded text.

The one concept here is the line model (:func:`split_lines`: ``"\\n"`` only, 1-based,
inclusive) and the :class:`Window` of whole lines :func:`window` cuts from a text; and
the same count over raw bytes, for a file too large to decode whole
(:class:`LineCounter`).
Units: *characters* are Python ``str`` code points (``max_chars``, ``len(text)``);
*lines* are counted by the ``"\\n"`` model; line numbers are 1-based and inclusive
(``offset``, ``line_start``, ``line_end``, ``next_offset``). Only programming errors (an
``offset`` below 1, a negative ``limit``) raise ``ValueError``.
"""

from __future__ import annotations

import codecs
import functools

import msgspec

__all__ = ["LineCounter", "Window", "count_lines", "split_lines", "window"]


class Window(msgspec.Struct):
    """A run of whole lines cut from a text by :func:`window` (a fresh, mutable value).

    * ``text``: the lines, newlines kept as in the file (the last line keeps its ``\\n``
      when it has one); ``len(text) <= max_chars`` characters.
    * ``line_start``: the requested ``offset`` (1-based).
    * ``column``: the 1-based character of line ``line_start`` where ``text`` starts (the
      requested ``column``, or one past the line's last character when it asked for
      more than the line holds).
    * ``line_end``: the last line included, even partially (1-based, inclusive);
      ``line_start - 1`` for an empty window.
    * ``total_lines``: lines in the whole file (:func:`count_lines`); ``None`` only for a
      window of a file too large to count (:data:`.reader.SCAN_BYTES`).
    * ``complete``: the window reached the end of the file and nothing was cut (true
      for ``offset > 1`` too: the caller knows it skipped lines).
    * ``next_offset``: the line to ask for next; ``None`` when nothing follows.
    * ``cut_line``: the last line, when it is shown only in part: the first line alone
      was longer than ``max_chars``, or a line after whole lines is longer than
      ``max_chars`` (:func:`window`'s ``fill_long``); ``next_offset`` then skips the
      rest of that line.
    * ``next_column``: set with ``cut_line``: the 1-based character of that line where
      its rest starts; a window at ``offset=cut_line, column=next_column`` continues it
      with no character lost or repeated.

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
    column: int = 1
    next_column: int | None = None


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


def count_lines_of(data: bytes, text: str, encoding: str | None) -> int:
    """:func:`count_lines` of ``text``, decoded from ``data`` as ``encoding``: counted on
    the bytes for UTF-8 without a BOM (a ``0x0A`` byte is always a newline there, never
    part of another character; ``bytes.count`` is faster than ``str.count``), else on
    the text."""
    if encoding == "utf-8":
        return data.count(b"\n") + (1 if data and data[-1] != 0x0A else 0)
    return count_lines(text)


def skip_lines(text: str, k: int, pos: int) -> int | None:
    """Index just after the ``k``-th ``"\\n"`` at or after ``pos`` (``pos`` for ``k=0``),
    or ``None`` when fewer follow. Skips blocks with ``str.count`` so that a far offset in
    a 20 MB text costs C-speed scans, not one Python step per line."""
    n = len(text)
    # The first block fits about k lines of code (64 characters a line), so that a
    # window of a few hundred lines does not scan far past its end.
    block = min(1 << 16, max(1 << 12, k * 64))
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


def check_window_args(
    offset: int, limit: int | None, max_chars: int | None, column: int = 1
) -> None:
    """Raise ``ValueError`` unless ``offset`` ≥ 1 (1-based line), ``limit`` ≥ 0 lines,
    ``max_chars`` ≥ 0 characters (None: no bound) and ``column`` ≥ 1 (1-based
    character)."""
    if offset < 1:
        raise ValueError(f"offset must be >= 1 (1-based line number), got {offset}")
    if column < 1:
        raise ValueError(f"column must be >= 1 (1-based character), got {column}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 lines, got {limit}")
    if max_chars is not None and max_chars < 0:
        raise ValueError(f"max_chars must be >= 0 characters, got {max_chars}")


def window_of(
    text: str,
    offset: int,
    limit: int | None,
    max_chars: int | None,
    total_lines: int | None,
    at_eof: bool,
    column: int = 1,
    fill_long: bool = True,
) -> Window:
    """:func:`window` over ``text``, which is the whole file (``at_eof``) or a prefix of it
    that holds the whole window (``total_lines`` then counts the whole file, or is
    ``None`` when unknown: the file goes on, so ``next_offset`` follows any window).
    ``fill_long`` as in :func:`window`."""
    if total_lines is not None and offset > max(total_lines, 1):
        return Window("", offset, offset - 1, total_lines, False, None, None)
    n = len(text)
    if (
        at_eof
        and offset == 1
        and column == 1
        and total_lines is not None
        and (limit is None or limit >= total_lines)
        and (max_chars is None or max_chars >= n)
    ):
        # The whole text: nothing to scan (a full read of a large tree is mostly these).
        return Window(text, 1, total_lines, total_lines, True, None, None)
    start = skip_lines(text, offset - 1, 0)
    if start is None:
        start = n
    if column > 1:
        newline = text.find("\n", start)
        line_stop = n if newline < 0 else newline
        first = start
        start = min(start + column - 1, line_stop)
        column = start - first + 1
    end = n
    if limit is not None:
        after = skip_lines(text, limit, start)
        end = n if after is None else after
    cut_line: int | None = None
    next_column: int | None = None
    if max_chars is not None and end - start > max_chars:
        newline = text.rfind("\n", start, start + max_chars)
        if newline >= 0:
            end = newline + 1
            room = start + max_chars - end
            after = text.find("\n", end)
            # Its length with its newline (a lower bound when the text is a prefix that
            # stops inside it): a line that no window of max_chars could hold whole.
            long = (n if after < 0 else after + 1) - end > max_chars
            if fill_long and room > 0 and long:
                # The line after the whole lines is cut short here rather than left to
                # another window that would cut it anyway (a minified file's line 2).
                cut_line = offset + text.count("\n", start, end)
                next_column = room + 1
                end += room
        elif max_chars == 0:
            end = start
        else:
            end = start + max_chars
            cut_line = offset
            next_column = column + max_chars
    body = text[start:end]
    included = body.count("\n") + (1 if body and body[-1] != "\n" else 0)
    if column > 1 and not included and start == n > 0:
        included = 1  # the rest of the last line is empty: that line is done, not ahead
    line_end = offset - 1 + included
    next_offset = line_end + 1 if total_lines is None or line_end < total_lines else None
    complete = at_eof and end == n and cut_line is None
    return Window(
        body, offset, line_end, total_lines, complete, next_offset, cut_line, column, next_column
    )


def window(
    text: str,
    offset: int = 1,
    limit: int | None = None,
    max_chars: int | None = None,
    total_lines: int | None = None,
    column: int = 1,
    fill_long: bool = True,
) -> Window:
    """Lines ``offset .. offset+limit-1`` of ``text`` (1-based, inclusive), cut to fit.

    ``limit`` is a line count (``None``: to the end), ``max_chars`` a character count
    (``None``: no cap; newlines count). The lines are cut at a line boundary so that
    ``len(result.text) <= max_chars`` (whole lines only), except when the first line
    alone is longer: then it is cut at ``max_chars`` characters and ``cut_line`` is its
    number; and, with ``fill_long``, when the line after the whole lines that fit is
    itself longer than ``max_chars``, its newline included (no window of ``max_chars``
    could hold it whole): then the window goes on into it, up to ``max_chars``
    characters in all, and that line is ``cut_line`` (a minified file's short line 1,
    then as much of its huge line 2 as fits). The budget's re-cut passes
    ``fill_long=False``: it ends at a line boundary. ``max_chars=0`` or ``limit=0`` give
    an empty window whose ``next_offset`` is ``offset``. ``column`` (1-based, in
    characters) starts the window inside line ``offset``: the first line is that line
    from its ``column``-th character (from its end when it is shorter), and it counts
    as one line of ``limit``; a cut line gives ``next_column``, where the next window
    of it starts. Field meanings, and the past-the-end case, are on :class:`Window`.

    Cost: one ``str.count`` over ``text`` for ``total_lines`` (skipped when the caller
    passes ``total_lines``, which must then be ``count_lines(text)``) plus scans up to the
    window's end; the text is never split into lines, and a window that is the whole text
    costs nothing.

    Raises ``ValueError`` for ``offset < 1``, ``limit < 0``, ``max_chars < 0`` or
    ``column < 1``.
    """
    check_window_args(offset, limit, max_chars, column)
    total = count_lines(text) if total_lines is None else total_lines
    return window_of(text, offset, limit, max_chars, total, True, column, fill_long)


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


class LineCounter:
    """Counts lines (the :func:`split_lines` model) over a byte stream fed in chunks.

    For a file too large to decode whole: the bytes in ``codec`` (a Python codec name,
    as :func:`~readmany_daemon.content.prefix.stream_codec` gives) past any BOM, fed in
    file order by :meth:`feed`; :meth:`total` gives the line count of all of them. The
    newline is counted in the raw bytes when that is exact (:func:`_newline_unit`:
    UTF-8, UTF-16/32, ASCII-compatible legacy codecs); other codecs (EBCDIC) are decoded
    to count it. An unknown codec raises ``LookupError``.
    """

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
        """Count the newlines of ``chunk``, the next bytes of the stream (any length: a
        UTF-16/32 code unit cut by its end is completed by the next chunk)."""
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
        """Lines in the bytes fed so far, as :func:`count_lines` counts them in their
        text (a last line without a newline counts); call once, after the last chunk."""
        if self._decoder is not None:
            self._count_text(self._decoder.decode(b"", final=True))
            ends_with_newline = self._last_char == "\n"
        else:
            ends_with_newline = not self._carry and self._last == self._unit
        return self._count + (1 if self._any and not ends_with_newline else 0)
