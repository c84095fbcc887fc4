"""Opening below a root without following a symbolic link out of it: one path
(:func:`open_beneath`), or many files of a request through folder descriptors held open
(:class:`FolderHandles`). Used by the confined reader (``content/reader.py``)."""

from __future__ import annotations

import errno
import os
from collections import OrderedDict
from typing import Final

__all__ = ["FolderHandles", "open_beneath"]


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
