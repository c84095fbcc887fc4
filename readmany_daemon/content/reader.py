"""The confined reader: one file read safely, decoded, and cut to the asked window.

The one concept here is reading a regular file without ever following a symbolic link
out of its folder: :func:`read_file` (by path, optionally confined :func:`beneath
<readmany_daemon.content.confined.open_beneath>` a root) and :func:`read_file_at` (one
name in a folder held open by :class:`~readmany_daemon.content.confined.FolderHandles`);
files over ``max_file_bytes`` are read as a prefix (``content/prefix.py``). The
result is a :class:`FileRead`; nothing raises for a problem with one file: it comes back
as data (``FileRead.code``, PROTOCOL §4). Only programming errors (an ``offset`` below 1,
a negative ``limit``) raise ``ValueError``.

Units: *bytes* are raw file bytes (``size``, ``max_file_bytes``, ``bytes_read``);
*characters* and *lines* are as in :mod:`readmany_daemon.content.lines`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from typing import Final

import msgspec
from msgspec.structs import replace

from readmany_daemon.content.confined import FolderHandles, open_beneath
from readmany_daemon.content.decode import decode
from readmany_daemon.content.fileread import (
    READ_CHUNK_BYTES,
    SCAN_BYTES,
    FileRead,
    LoadKind,
    WindowArgs,
    binary_read,
    not_a_file,
    os_error,
    read_upto,
)
from readmany_daemon.content.lines import check_window_args, count_lines_of, window
from readmany_daemon.content.prefix import read_prefix
from readmany_daemon.errors import Code
from readmany_daemon.racy import READ_FLAGS, stat_key

__all__ = [
    "READ_CHUNK_BYTES",
    "SCAN_BYTES",
    "FileRead",
    "FolderHandles",
    "LoadKind",
    "ReadOptions",
    "mime_for",
    "open_beneath",
    "read_file",
    "read_file_at",
]


_OPEN_FLAGS: Final = READ_FLAGS | getattr(os, "O_NOFOLLOW", 0)

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


class ReadOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How one file is read (:func:`read_file`, :func:`read_file_at`).

    ``max_file_bytes``: files larger (in bytes) are read as a prefix, or refused
    ``too-large`` when the whole file is wanted (``want_full``, ``want_bytes``).
    ``offset`` (1-based line), ``limit`` (lines), ``max_chars`` (characters) and
    ``column`` (1-based character of line ``offset``) are the window asked for, as in
    :func:`content.lines.window` (None: no cap). ``want_full``: the whole text is
    wanted (``preferFullRead`` with no window); ``want_bytes``: the raw bytes too (an
    image or PDF to attach). PROTOCOL §3-§4 give the request fields these come from."""

    max_file_bytes: int
    offset: int = 1
    limit: int | None = None
    max_chars: int | None = None
    want_full: bool = False
    want_bytes: bool = False
    column: int = 1


def read_file_at(dir_fd: int, name: str, pre: os.stat_result, read: ReadOptions) -> FileRead:
    """:func:`read_file` for file ``name`` (one component) in the folder open as
    ``dir_fd`` (see :class:`FolderHandles`), whose ``lstat`` (``os.stat(name,
    dir_fd=dir_fd, follow_symlinks=False)``) the caller already holds as ``pre``.

    The same checks as :func:`read_file`: ``pre`` must be a regular file, the open uses
    ``O_NOFOLLOW | O_NONBLOCK`` and the opened descriptor is ``fstat``-ed again. Same
    result and errors."""
    offset, limit, max_chars, column = read.offset, read.limit, read.max_chars, read.column
    check_window_args(offset, limit, max_chars, column)
    read_at = time.time_ns()
    if not stat.S_ISREG(pre.st_mode):
        return not_a_file(pre.st_mode)
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        return os_error(exc)
    window_args = (offset, limit, max_chars, column)
    return _read_fd(fd, read_at, read.max_file_bytes, window_args, read.want_full, read.want_bytes)


#: How many times a file that changed while it was read is read again (``_read_fd``).
_REREADS = 3


def _read_fd(
    fd: int,
    read_at: int,
    max_file_bytes: int,
    window_args: WindowArgs,
    want_full: bool,
    want_bytes: bool,
) -> FileRead:
    """``fstat`` the just-opened ``fd``, refuse anything but a regular file, read it; the
    descriptor is always closed.

    A file changed while it was read (its size, mtime or ctime differ after the read:
    a writer truncating it in place can even leave zeros in what a concurrent read
    copies) is read again, up to ``_REREADS`` times, so an answer shows one version of
    it and a text file being rewritten is never taken for a binary one."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return not_a_file(st.st_mode)
        for _ in range(_REREADS):
            got = _read_open_file(
                fd, st, read_at, max_file_bytes, window_args, want_full, want_bytes
            )
            after = os.fstat(fd)
            if stat_key(after) == stat_key(st):
                return got
            st = after
            os.lseek(fd, 0, os.SEEK_SET)
        return got
    except OSError as exc:
        return os_error(exc)
    finally:
        os.close(fd)


def read_file(abs_path: str, read: ReadOptions, *, beneath: str | None = None) -> FileRead:
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
    ``read`` (:class:`ReadOptions`) says how:

    * ``size <= max_file_bytes``: the whole file is read and decoded (``complete_text``,
      ``sha256`` set; ``data`` too with ``want_bytes``).
    * Larger files: with ``want_full`` or ``want_bytes``, or without any ``limit`` and
      ``max_chars``, the answer is ``code="too-large"`` with the size in the message.
      Otherwise 1 MiB chunks are read and decoded only as far as the window needs
      (encoding sniffed on the first chunk; later undecodable bytes become U+FFFD, one
      per byte in UTF-8 text, counted in ``replaced_bytes``), and
      the rest is scanned for newlines without decoding (``b"\\n"`` for ASCII-compatible
      codecs, the aligned newline unit for UTF-16/32), so ``total_lines`` is exact.

    ``offset``/``limit``/``max_chars``/``column`` are as in :func:`window`; the result's ``window``
    is that window over the whole file. Errors come back as ``FileRead(kind="error")`` with
    a code (``not-found``, ``not-a-file``, ``permission-denied``, ``fs-error``,
    ``too-large``); binary content as ``kind="binary"``, ``code="binary"``.

    Raises ``ValueError`` only for invalid ``offset``/``limit``/``max_chars``/``column``.
    """
    offset, limit, max_chars, column = read.offset, read.limit, read.max_chars, read.column
    check_window_args(offset, limit, max_chars, column)
    read_at = time.time_ns()
    try:
        pre = os.lstat(abs_path)
    except OSError as exc:
        return os_error(exc)
    except ValueError:  # embedded NUL in the path
        return FileRead("error", code=Code.FS_ERROR, message="Invalid path (NUL character).")
    if not stat.S_ISREG(pre.st_mode):
        return not_a_file(pre.st_mode)
    try:
        if beneath is not None and abs_path.startswith(beneath.rstrip("/") + "/"):
            fd = open_beneath(beneath, abs_path[len(beneath.rstrip("/")) + 1 :], _OPEN_FLAGS)
        else:
            fd = os.open(abs_path, _OPEN_FLAGS)
    except OSError as exc:
        return os_error(exc)
    window_args = (offset, limit, max_chars, column)
    return _read_fd(fd, read_at, read.max_file_bytes, window_args, read.want_full, read.want_bytes)


def _read_open_file(
    fd: int,
    st: os.stat_result,
    read_at: int,
    max_file_bytes: int,
    window_args: WindowArgs,
    want_full: bool,
    want_bytes: bool,
) -> FileRead:
    """:func:`read_file` once ``fd`` is known to be a regular file described by ``st``."""
    offset, limit, max_chars, column = window_args
    size = st.st_size
    base = FileRead(
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
        return read_prefix(fd, base, window_args)
    data = read_upto(fd, size)
    digest = hashlib.sha256(data).hexdigest()
    decoded = decode(data, complete=True)
    raw = data if want_bytes else None
    if decoded.text is None:
        return binary_read(base, len(data), len(data), raw, digest)
    text = decoded.text
    return replace(
        base,
        kind="text",
        text=text,
        complete_text=True,
        total_lines=(line_count := count_lines_of(data, text, decoded.encoding)),
        window=window(text, offset, limit, max_chars, line_count, column),
        encoding=decoded.encoding,
        bom=decoded.bom,
        replaced_bytes=decoded.replaced_bytes,
        data=raw,
        sha256=digest,
        bytes_read=len(data),
    )
