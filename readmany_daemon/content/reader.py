"""The confined reader: one file read safely, decoded, and cut to the asked window.

The one concept here is reading a regular file without ever following a symbolic link
out of its folder: :func:`read_file` (by path, optionally confined :func:`beneath
<open_beneath>` a root), :func:`read_file_at` (one name in a folder held open by
:class:`FolderHandles`), and the prefix reads of files over ``max_file_bytes`` (decoded
chunk by chunk by :class:`~readmany_daemon.content.decode.StreamDecoder`, their lines
counted in the raw bytes by :class:`~readmany_daemon.content.lines.LineCounter`). The
result is a :class:`FileRead`; nothing raises for a problem with one file: it comes back
as data (``FileRead.code``, PROTOCOL §4). Only programming errors (an ``offset`` below 1,
a negative ``limit``) raise ``ValueError``.

Units: *bytes* are raw file bytes (``size``, ``max_file_bytes``, ``bytes_read``);
*characters* and *lines* are as in :mod:`readmany_daemon.content.lines`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections import OrderedDict
from typing import Final, Literal

import msgspec
from msgspec.structs import replace

from readmany_daemon.content.decode import StreamDecoder, decode, stream_codec
from readmany_daemon.content.lines import (
    LineCounter,
    Window,
    check_window_args,
    count_lines,
    count_lines_of,
    skip_lines,
    window,
    window_of,
)
from readmany_daemon.errors import Code
from readmany_daemon.racy import READ_FLAGS, StatKey, stat_key

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


def _not_a_file(mode: int) -> FileRead:
    what = _file_type(mode)
    hint = "; resolve links before reading" if stat.S_ISLNK(mode) else ""
    return FileRead(
        "error",
        code=Code.NOT_A_FILE,
        message=f"Not a regular file ({what}){hint}.",
    )


def _os_error(exc: OSError) -> FileRead:
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
        return _not_a_file(pre.st_mode)
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        return _os_error(exc)
    window_args = (offset, limit, max_chars, column)
    return _read_fd(fd, read_at, read.max_file_bytes, window_args, read.want_full, read.want_bytes)


#: ``(offset, limit, max_chars, column)`` of the window asked for (see :func:`window`).
_WindowArgs = tuple[int, int | None, int | None, int]


#: How many times a file that changed while it was read is read again (``_read_fd``).
_REREADS = 3


def _read_fd(
    fd: int,
    read_at: int,
    max_file_bytes: int,
    window_args: _WindowArgs,
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
            return _not_a_file(st.st_mode)
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
        return _os_error(exc)
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
        return _os_error(exc)
    except ValueError:  # embedded NUL in the path
        return FileRead("error", code=Code.FS_ERROR, message="Invalid path (NUL character).")
    if not stat.S_ISREG(pre.st_mode):
        return _not_a_file(pre.st_mode)
    try:
        if beneath is not None and abs_path.startswith(beneath.rstrip("/") + "/"):
            fd = open_beneath(beneath, abs_path[len(beneath.rstrip("/")) + 1 :], _OPEN_FLAGS)
        else:
            fd = os.open(abs_path, _OPEN_FLAGS)
    except OSError as exc:
        return _os_error(exc)
    window_args = (offset, limit, max_chars, column)
    return _read_fd(fd, read_at, read.max_file_bytes, window_args, read.want_full, read.want_bytes)


def _binary(
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


def _read_open_file(
    fd: int,
    st: os.stat_result,
    read_at: int,
    max_file_bytes: int,
    window_args: _WindowArgs,
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
        return _read_prefix(fd, base, window_args)
    data = _read_upto(fd, size)
    digest = hashlib.sha256(data).hexdigest()
    decoded = decode(data, complete=True)
    raw = data if want_bytes else None
    if decoded.text is None:
        return _binary(base, len(data), len(data), raw, digest)
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


class _PrefixTracker:
    """Collects decoded pieces and tells when they hold the whole asked window."""

    def __init__(
        self, offset: int, limit: int | None, max_chars: int | None, column: int = 1
    ) -> None:
        self._before = offset - 1  # newlines before the window's first line
        self._limit = limit
        # Characters past the first line's start that the window may need: those before
        # its column, then ``max_chars`` (and one more, to know whether it goes on).
        self._max_chars = None if max_chars is None else max_chars + column - 1
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
                at = skip_lines(piece, self._before - self._newlines, 0)
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


def _read_prefix(fd: int, base: FileRead, window_args: _WindowArgs) -> FileRead:
    """The over-``max_file_bytes`` path of :func:`read_file` (see there); ``base`` holds
    the ``fstat`` fields.

    At most :data:`SCAN_BYTES` are read, window search and newline count together, so
    the cost does not grow with the file (a 10 GB file answers as fast as a 64 MiB one).
    A window that does not start within them is ``too-large``; a file that goes on past
    them has ``total_lines=None`` (the window's ``next_offset`` is then always set)."""
    size = base.size or 0
    first = _read_upto(fd, min(READ_CHUNK_BYTES, size))
    got = len(first)
    eof = got >= size or got < min(READ_CHUNK_BYTES, size)
    sniff = decode(first, complete=eof)
    if sniff.text is None:
        return _binary(base, size, got)
    codec, bom_length = stream_codec(sniff)
    decoder = StreamDecoder(codec)
    counter = LineCounter(codec)
    hasher = hashlib.sha256(first)
    offset, limit, max_chars, column = window_args
    tracker = _PrefixTracker(offset, limit, max_chars, column)
    body = first[bom_length:]
    counter.feed(body)
    tracker.add(decoder.decode(body, eof))
    while not eof and not tracker.done and got < SCAN_BYTES:
        want = min(READ_CHUNK_BYTES, size - got)
        chunk = _read_upto(fd, want)
        got += len(chunk)
        eof = got >= size or len(chunk) < want
        hasher.update(chunk)
        counter.feed(chunk)
        tracker.add(decoder.decode(chunk, eof))
    text = tracker.text()
    partial = replace(
        base,
        kind="text",
        text=text,
        encoding=sniff.encoding,
        bom=sniff.bom,
        replaced_bytes=decoder.replaced_bytes,
    )
    if eof:
        return replace(
            partial,
            complete_text=True,
            total_lines=(line_count := count_lines(text)),
            window=window(text, offset, limit, max_chars, line_count, column),
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
        want = min(READ_CHUNK_BYTES, size - got)
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
        window=window_of(text, offset, limit, max_chars, total, False, column),
        bytes_read=got,
    )
