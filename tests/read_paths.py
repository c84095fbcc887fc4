"""Helpers of the fast read paths' tests (``content/test_reader_folders.py``,
``lsp/test_encode_json_body.py``, ``engine/test_load_paths.py`` under tests/unit/):
descriptor counts, files dated back so no cache finds them racy, and a tree one file deep
below a chain of folders made without recursion.

Descriptor counts come from ``/proc/self/fd`` (Linux): a descriptor of ours is one whose
link names a folder below the test's tree, so other descriptors of the process (pytest's,
the interpreter's) never disturb a count.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

MiB = 1 << 20
#: Marks a module whose tests count descriptors: skipped where ``/proc/self/fd`` is missing.
NEEDS_PROC_FD = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="descriptor counts need /proc/self/fd"
)
#: How far back ``put_files`` dates the files it writes, in seconds.
HOUR = 3600


def fds_below(top: Path | str) -> dict[int, str]:
    """Open descriptors of this process naming ``top`` or a path below it."""
    top = os.path.realpath(top)
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own descriptor, closed by now
            continue
        if target == top or target.startswith(top + "/"):
            found[int(name)] = target
    return found


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def put_files(root: Path, files: Mapping[str, str | bytes], *, age: float = HOUR) -> None:
    """Write ``files`` and date them ``age`` seconds back (so no cache finds them racy)."""
    past = time.time() - age
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        os.utime(p, (past, past))


def deep_tree(root: Path, depth: int) -> str:
    """``a/a/…/a`` ``depth`` folders deep below ``root`` (made without recursion);
    returns the relative path."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("a", dir_fd=fd)
            nxt = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        out = os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"deep\n")
        os.close(out)
    finally:
        os.close(fd)
    return "/".join(["a"] * depth)


def remove_deep_tree(root: Path, depth: int) -> None:
    """Undo :func:`deep_tree` bottom-up (shutil.rmtree recurses once per level)."""
    path = root.joinpath(*(["a"] * depth))
    (path / "f.txt").unlink(missing_ok=True)
    for _ in range(depth):
        os.rmdir(path)
        path = path.parent


@contextlib.contextmanager
def deep_root(tmp_path: Path, depth: int) -> Iterator[tuple[Path, str]]:
    """A root holding ``f.txt`` ``depth`` folders down: ``(root, relative path)``;
    removed afterwards."""
    root = tmp_path / "deep"
    root.mkdir()
    rel = deep_tree(root, depth)
    try:
        yield root, rel
    finally:
        remove_deep_tree(root, depth)
