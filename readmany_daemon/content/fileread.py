"""What one file read gives (:class:`FileRead`), the read's limits in bytes, and the
per-file problems as data (PROTOCOL §4): the shared vocabulary of the confined reader
(``content/reader.py``) and its prefix read (``content/prefix.py``)."""

from __future__ import annotations

import errno
import os
import stat
from typing import Final, Literal

import msgspec
from msgspec.structs import replace

from readmany_daemon.content.lines import Window
from readmany_daemon.errors import Code
from readmany_daemon.racy import StatKey

__all__ = [
    "READ_CHUNK_BYTES",
    "SCAN_BYTES",
    "FileRead",
    "LoadKind",
    "WindowArgs",
    "binary_read",
    "not_a_file",
    "os_error",
    "read_upto",
]


#: Bytes read per ``os.read`` call for files over ``max_file_bytes`` (1 MiB; a multiple of
#: 4 so that UTF-16/32 code units never straddle a chunk edge).
READ_CHUNK_BYTES: Final = 1 << 20


#: Bytes of a file over ``max_file_bytes`` read at most (window search and newline count
#: together; 64 MiB, ~30 ms from the page cache): a 10 GB log or sparse file answers at
#: once. Past it the line count is unknown (``total_lines=None``), and a window that does
#: not start within it is ``too-large``.
SCAN_BYTES: Final = 64 << 20


LoadKind = Literal["text", "binary", "error"]


class FileRead(msgspec.Struct, frozen=True):
    """The result of :func:`read_file` (one file read); problems are data, never exceptions.

    (The engine's ``LoadedItem`` is an item after load and budget, built from one.)

    * ``kind``: ``"text"``, ``"binary"`` or ``"error"``.
    * ``text``: decoded text (see :class:`Decoded`): the whole file when
      ``complete_text``, else a prefix starting at line 1 that covers the asked window.
    * ``complete_text``: ``text`` holds the whole file.
    * ``total_lines``: exact line count of the whole file (text only), even when only a
      prefix was decoded; ``None`` when the file goes on past :data:`SCAN_BYTES`.
    * ``window``: the window asked for by this call (``offset``/``limit``/``max_chars``)
      over the whole file; for a cached whole text, call :func:`window` again instead.
    * ``encoding``, ``bom``: as in :class:`Decoded`.
    * ``replaced_bytes``: bytes that were not valid UTF-8 in UTF-8 text, each shown as
      one U+FFFD (:class:`Decoded`); of the whole file when ``complete_text``, else of the
      prefix decoded.
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
      rule of :class:`~readmany_daemon.content.cache.ContentCache`.
    """

    kind: LoadKind
    text: str | None = None
    complete_text: bool = False
    total_lines: int | None = None
    window: Window | None = None
    encoding: str | None = None
    bom: bool = False
    replaced_bytes: int = 0
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
        """The :class:`~readmany_daemon.racy.StatKey` of the ``fstat`` taken, or ``None``
        if none."""
        if self.size is None or self.mtime_ns is None or self.ino is None:
            return None
        if self.ctime_ns is None:
            return None
        return StatKey(self.size, self.mtime_ns, self.ino, self.ctime_ns)


def file_type(mode: int) -> str:
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


def not_a_file(mode: int) -> FileRead:
    what = file_type(mode)
    hint = "; resolve links before reading" if stat.S_ISLNK(mode) else ""
    return FileRead(
        "error",
        code=Code.NOT_A_FILE,
        message=f"Not a regular file ({what}){hint}.",
    )


def os_error(exc: OSError) -> FileRead:
    """Map an ``OSError`` from stat/open/read to a per-file code (PROTOCOL §4)."""
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return FileRead("error", code=Code.NOT_FOUND, message="File not found.")
    if isinstance(exc, PermissionError):
        return FileRead("error", code=Code.PERMISSION_DENIED, message="Permission denied.")
    if isinstance(exc, IsADirectoryError):
        return FileRead("error", code=Code.NOT_A_FILE, message="Not a regular file (a directory).")
    if exc.errno == errno.ELOOP or exc.errno == getattr(errno, "EFTYPE", None):
        return FileRead(
            "error",
            code=Code.NOT_A_FILE,
            message="Not a regular file (a symbolic link); resolve links before reading.",
        )
    if exc.errno in (errno.ENXIO, errno.ENODEV):
        return FileRead("error", code=Code.NOT_A_FILE, message="Not a regular file (a device).")
    name = errno.errorcode.get(exc.errno or 0, "error")
    reason = exc.strerror or str(exc)
    return FileRead("error", code=Code.FS_ERROR, message=f"File system error: {reason} ({name}).")


def read_upto(fd: int, n: int) -> bytes:
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


#: ``(offset, limit, max_chars, column)`` of the window asked for (see :func:`window`).
WindowArgs = tuple[int, int | None, int | None, int]


def binary_read(
    base: FileRead,
    size: int,
    bytes_read: int,
    data: bytes | None = None,
    sha256: str | None = None,
) -> FileRead:
    """The answer for a file whose bytes are not text (``kind`` and ``code``
    ``"binary"``, PROTOCOL §4: skipped): ``base`` (its ``fstat`` fields) with a message
    naming ``size`` bytes, ``bytes_read`` from disk, and for a whole read its ``data``
    (with ``want_bytes``) and ``sha256``."""
    return replace(
        base,
        kind="binary",
        code=Code.BINARY,
        message=f"Binary file ({size} bytes); not shown as text.",
        data=data,
        sha256=sha256,
        bytes_read=bytes_read,
    )
