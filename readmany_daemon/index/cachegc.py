"""Bounding the cache folder (``snapshot.cache_dir()``: ``~/.cache/readmany``).

Each root read through a daemon leaves an ``index-<hash>.snap`` there (``snapshot.py``),
temporary roots included; without a bound the folder only grows (issue 22, item 6).

A root's files in the folder are its **group**: the snapshot ``index-<hash>.snap``, its
use mark ``index-<hash>.root`` (the root's path), and every other file whose name holds
that 32-digit ``<hash>``, which is how any other per-root file kept beside the snapshot
must be named so that it goes with it. A root's last use is its snapshot's mtime, set to
now whenever a client opens the root (``record_use``; the mark's mtime before the first
snapshot is written). ``sweep`` drops whole groups:

1. of roots that no longer exist (the path in the use mark, or in the snapshot itself
   for one written before use marks existed, is no folder);
2. of roots unused for ``MAX_UNUSED_SECONDS`` (30 days);
3. then, while the whole folder (every regular file in it, in bytes of ``st_size``)
   is over ``MAX_CACHE_BYTES`` (1 GiB), the least recently used group first.

Groups named in ``keep`` (the warm roots of the running daemon) are never dropped. The
daemon sweeps at start and every ``SWEEP_INTERVAL`` seconds (``runtime/service.py``);
docs/reliability.md says so for users.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import tempfile
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

__all__ = [
    "MAX_CACHE_BYTES",
    "MAX_UNUSED_SECONDS",
    "SWEEP_INTERVAL",
    "Dropped",
    "record_use",
    "snapshot_hash",
    "sweep",
]

log = logging.getLogger(__name__)

#: A root unused this long (seconds) loses its snapshot: 30 days.
MAX_UNUSED_SECONDS: Final = 30 * 24 * 3600
#: The cache folder is kept under this many bytes (1 GiB), least recently used first.
MAX_CACHE_BYTES: Final = 1 << 30
#: The daemon sweeps at start and then this often (seconds): once a day.
SWEEP_INTERVAL: Final = 24 * 3600

#: The use mark beside ``index-<hash>.snap``: ``index-<hash>.root``.
ROOT_SUFFIX: Final = ".root"

_SNAPSHOT = re.compile(r"index-([0-9a-f]{32})\.snap")
_MARK = re.compile(r"index-([0-9a-f]{32})\.root")
_HASH = re.compile(r"[0-9a-f]{32}")


def snapshot_hash(path: str) -> str | None:
    """The 32 hex digits of snapshot file ``path`` (``…/index-<hash>.snap``), else None."""
    m = _SNAPSHOT.fullmatch(os.path.basename(path))
    return m.group(1) if m else None


def record_use(snapshot_path: str, root: str) -> None:
    """Mark the root whose snapshot is ``snapshot_path`` as used now: the snapshot's
    mtime is set to now (when it exists), and its use mark ``index-<hash>.root``
    (holding ``root``, an absolute path, as file-system bytes) written when missing or
    different, else its mtime set to now too. Raises ``OSError`` (the caller logs it: a
    missing mark only makes the root look unused sooner)."""
    with contextlib.suppress(FileNotFoundError):
        os.utime(snapshot_path)
    mark = snapshot_path[: -len(".snap")] + ROOT_SUFFIX
    data = os.fsencode(root)
    try:
        with open(mark, "rb") as f:
            same = f.read(len(data) + 1) == data
    except FileNotFoundError:
        same = False
    if same:
        os.utime(mark)
        return
    folder = os.path.dirname(mark)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".index-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, mark)
    except BaseException:
        os.unlink(tmp)
        raise


@dataclass
class _Group:
    """One root's files in the cache folder (``hash``): name → (bytes, mtime in s)."""

    hash: str
    files: dict[str, tuple[int, float]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(size for size, _ in self.files.values())

    @property
    def last_used(self) -> float:
        """The snapshot's mtime, else (none written yet) the newest in the group."""
        snap = self.files.get(f"index-{self.hash}.snap")
        if snap is not None:
            return snap[1]
        return max((mtime for _, mtime in self.files.values()), default=0.0)


@dataclass(frozen=True)
class Dropped:
    """A group ``sweep`` removed: its ``hash``, the ``root`` (None when unknown), why
    (``"root gone"``, ``"unused"``, ``"over the size limit"``) and its size in bytes."""

    hash: str
    root: str | None
    reason: str
    size: int


class _Head(msgspec.Struct, rename="camel"):
    """The one field of a snapshot (``snapshot.Snapshot``) a sweep needs."""

    root: Any


def _root_of(folder: str, h: str, group: _Group) -> str | None:
    """The root of group ``h``: from its use mark, else from its snapshot (decoded for
    that one field), else None."""
    name = f"index-{h}{ROOT_SUFFIX}"
    if name in group.files:
        try:
            with open(os.path.join(folder, name), "rb") as f:
                return os.fsdecode(f.read())
        except OSError:
            return None
    name = f"index-{h}.snap"
    if name in group.files:
        try:
            with open(os.path.join(folder, name), "rb") as f:
                root = msgspec.msgpack.decode(f.read(), type=_Head).root
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None
        if isinstance(root, bytes):
            return os.fsdecode(root)
        return root if isinstance(root, str) else None
    return None


def _scan(folder: str) -> tuple[dict[str, _Group], int]:
    """The groups of ``folder`` by hash, and the bytes of its files in no group."""
    files: list[tuple[str, int, float]] = []
    with os.scandir(folder) as it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                files.append((e.name, st.st_size, st.st_mtime))
    groups: dict[str, _Group] = {}
    for name, _, _ in files:
        m = _SNAPSHOT.fullmatch(name) or _MARK.fullmatch(name)
        if m:
            groups.setdefault(m.group(1), _Group(m.group(1)))
    loose = 0
    for name, size, mtime in files:
        owner = next((h for h in _HASH.findall(name) if h in groups), None)
        if owner is None:
            loose += size
        else:
            groups[owner].files[name] = (size, mtime)
    return groups, loose


def _drop(folder: str, group: _Group) -> None:
    for name in group.files:
        try:
            os.unlink(os.path.join(folder, name))
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cache sweep: cannot remove %s: %s", os.path.join(folder, name), exc)


def sweep(
    folder: str,
    *,
    keep: Collection[str] = (),
    now: float | None = None,
    max_unused: float = MAX_UNUSED_SECONDS,
    max_bytes: int = MAX_CACHE_BYTES,
) -> list[Dropped]:
    """Drop the groups of ``folder`` (see the module docstring) of roots that no longer
    exist, of roots unused for ``max_unused`` seconds, then least recently used first
    while the folder holds more than ``max_bytes`` bytes; never those whose hash is in
    ``keep``. ``now``: seconds since the epoch (default: ``time.time()``). Returns what
    was dropped, in order; a missing folder drops nothing. Never raises for a file it
    cannot read or remove (logged)."""
    now = time.time() if now is None else now
    try:
        groups, loose = _scan(folder)
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("cache sweep: cannot list %s: %s", folder, exc)
        return []
    dropped: list[Dropped] = []
    kept: dict[str, _Group] = {}
    for h, group in groups.items():
        if h in keep:
            kept[h] = group
            continue
        root = _root_of(folder, h, group)
        if root is not None and not os.path.isdir(root):
            reason = "root gone"
        elif now - group.last_used > max_unused:
            reason = "unused"
        else:
            kept[h] = group
            continue
        _drop(folder, group)
        dropped.append(Dropped(h, root, reason, group.size))
    total = loose + sum(g.size for g in kept.values())
    for h, group in sorted(kept.items(), key=lambda item: item[1].last_used):
        if total <= max_bytes:
            break
        if h in keep:
            continue
        root = _root_of(folder, h, group)
        _drop(folder, group)
        total -= group.size
        dropped.append(Dropped(h, root, "over the size limit", group.size))
    return dropped
