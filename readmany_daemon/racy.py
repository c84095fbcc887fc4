"""Git's racy-timestamp rule: when a stat match cannot be trusted.

A file's stat data (size, mtime, inode, ctime) is a cheap proof that it did not change
since it was read or listed, except for a *racy* one: a file modified within one
timestamp tick of the moment it was read can be modified again in that same tick without
its mtime changing. Git calls such index entries "racily clean" and re-checks their
content (git's Documentation/technical/racy-git.txt: an entry whose mtime is not older
than the index file's own timestamp is racy). Here the rule is applied with a margin of
:data:`RACY_NS` instead of git's exact comparison, because the file system's tick may be
coarse and Linux's file-time clock lags behind ``time.time_ns()``.

The stat data compared is one :class:`StatKey`, and the content check is one digest,
:func:`file_sha256`, the same for every user (the content cache, the ``changedSince``
snapshots, the stamps of git's configuration files).

Units: every time here is nanoseconds since the epoch (``st_mtime_ns``,
``time.time_ns()``); sizes are bytes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Final, NamedTuple

__all__ = ["RACY_NS", "READ_FLAGS", "StatKey", "file_sha256", "is_racy", "stat_key"]

#: The timestamp tick assumed by the racy rule (ns): 2 s covers FAT's 2 s and ext3/HFS+'s
#: 1 s mtime resolution and the lag of Linux's coarse file-time clock behind
#: ``time.time_ns()`` (one tick, ≤ 10 ms).
RACY_NS: Final = 2_000_000_000

#: Bytes read per ``os.read`` call by :func:`file_sha256` (1 MiB).
_CHUNK_BYTES: Final = 1 << 20

#: ``os.open`` flags to read a file: read-only, never blocking on a FIFO, never becoming
#: its controlling terminal, closed across ``exec``, binary on Windows (flags the
#: platform lacks are left out). :func:`file_sha256` opens with them, and so does the
#: confined reader, adding ``O_NOFOLLOW``.
READ_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)


def is_racy(mtime_ns: int, cached_at_ns: int, granularity_ns: int = RACY_NS) -> bool:
    """Whether a stat match for a file (or folder) with mtime ``mtime_ns``, read or listed
    at ``cached_at_ns`` (taken *before* the read or listing), proves nothing: its mtime
    lies within ``granularity_ns`` of that moment (or after it), so a later change in the
    same tick could leave its stat unchanged. Such an entry must be checked again by
    content, whatever its stat says."""
    return mtime_ns >= cached_at_ns - granularity_ns


class StatKey(NamedTuple):
    """What must be unchanged for a file to count as unchanged by its stat: ``size``
    (bytes), ``mtime_ns`` and ``ctime_ns`` (ns since the epoch) and ``ino``; git's
    racy-git.txt compares the same fields (with the device and owner). Compared whole;
    read a field by its name, never by its position."""

    size: int
    mtime_ns: int
    ino: int
    ctime_ns: int


def stat_key(st: os.stat_result) -> StatKey:
    """The :class:`StatKey` of a stat result (``os.stat``, ``os.lstat`` or ``os.fstat``)."""
    return StatKey(st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def file_sha256(
    path: str, limit: int, *, follow: bool = True, key: StatKey | None = None
) -> str | None:
    """The SHA-256 (64 lower-case hex digits, FIPS 180-4) of the bytes of file ``path``:
    the content check of a racy entry, the only whole-file digest of the package.

    The file is read from its start to its end in 1 MiB chunks. ``None`` when it holds
    more than ``limit`` bytes (at most ``limit`` + 1 MiB are read). With ``key``, also
    ``None`` unless the opened file is a regular file whose ``fstat`` is ``key`` both
    before and after the read and exactly ``key.size`` bytes were read: a file changed
    meanwhile proves nothing. ``follow=False`` refuses a symbolic link as the last
    component (``O_NOFOLLOW``); the open never blocks on a FIFO (``O_NONBLOCK``).

    Raises ``OSError`` when the file cannot be opened or read (a folder, a missing file,
    a symbolic link with ``follow=False``), ``ValueError`` for a path with a NUL
    character.
    """
    flags = READ_FLAGS if follow else READ_FLAGS | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        if key is not None:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or stat_key(st) != key:
                return None
        digest = hashlib.sha256()
        got = 0
        while chunk := os.read(fd, _CHUNK_BYTES):
            got += len(chunk)
            if got > limit:
                return None
            digest.update(chunk)
        if key is not None and (got != key.size or stat_key(os.fstat(fd)) != key):
            return None
        return digest.hexdigest()
    finally:
        os.close(fd)
