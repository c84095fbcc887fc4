"""The stat key and the content digest of ``racy``: one of each, the same for every user.

The content cache, the ``changedSince`` stat snapshots and the stamps of git's
configuration files once each had their own key, two of them with the same four fields in
another order; these tests hold them to the one :class:`StatKey`, read by field name.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from readmany_daemon.content.reader import ReadOptions, read_file
from readmany_daemon.racy import StatKey, file_sha256, stat_key
from readmany_daemon.runtime.changelog import StatLog
from readmany_daemon.wire.replies import ChangedSinceResult

HOUR_NS = 3600 * 10**9


def _file(tmp_path: Path, name: str, data: bytes, mtime_ns: int | None = None) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return str(path)


def test_the_reader_and_the_changelog_key_one_stat_alike(tmp_path: Path) -> None:
    """Size and mtime far apart, so a key with its fields swapped cannot pass."""
    mtime = time.time_ns() - HOUR_NS
    path = _file(tmp_path, "a.txt", b"hello\n", mtime)
    st = os.stat(path)
    key = stat_key(st)
    assert key == StatKey(size=6, mtime_ns=mtime, ino=st.st_ino, ctime_ns=st.st_ctime_ns)
    assert read_file(path, ReadOptions(max_file_bytes=1 << 20)).stat_key() == key
    log = StatLog()
    got = log.changes("", "1:1", lambda rel: str(tmp_path / rel), lambda: ["a.txt"], 1 << 20)
    assert log._snapshots[got.clock].files["a.txt"] == key


def test_the_changelog_finds_racy_files_by_their_mtime(tmp_path: Path) -> None:
    """A file racy at the snapshot that could not be hashed (over ``max_bytes``) counts
    as changed; one an hour old does not. The racy test reads the key's mtime: its size
    (a few bytes) or its ctime (now, for both files) would give another answer."""
    _file(tmp_path, "fresh.txt", b"fresh\n")
    _file(tmp_path, "old.txt", b"old\n", time.time_ns() - HOUR_NS)
    log = StatLog()

    def changes(clock: str) -> ChangedSinceResult:
        listing = ["fresh.txt", "old.txt"]
        return log.changes(clock, "1:1", lambda rel: str(tmp_path / rel), lambda: listing, 0)

    base = changes("")
    assert base.is_fresh_instance
    again = changes(base.clock)
    assert (again.is_fresh_instance, again.changed, again.deleted) == (
        False,
        ["fresh.txt"],
        [],
    )


def test_file_sha256_is_the_sha256_of_the_bytes(tmp_path: Path) -> None:
    data = os.urandom(3 * (1 << 20) + 5)  # more than one read
    path = _file(tmp_path, "big.bin", data)
    assert file_sha256(path, len(data)) == hashlib.sha256(data).hexdigest()
    assert file_sha256(path, len(data) - 1) is None  # over the limit
    empty = _file(tmp_path, "empty", b"")
    assert file_sha256(empty, 0) == hashlib.sha256(b"").hexdigest()


def test_file_sha256_with_a_key_proves_the_same_file(tmp_path: Path) -> None:
    path = _file(tmp_path, "a.txt", b"hello\n", time.time_ns() - HOUR_NS)
    key = stat_key(os.stat(path))
    want = hashlib.sha256(b"hello\n").hexdigest()
    assert file_sha256(path, key.size, follow=False, key=key) == want
    other = key._replace(mtime_ns=key.mtime_ns + 1)
    assert file_sha256(path, key.size, follow=False, key=other) is None
    # The same stat but other bytes: the digest tells (what racy entries are checked for).
    Path(path).write_bytes(b"HELLO\n")
    os.utime(path, ns=(key.mtime_ns, key.mtime_ns))
    now = stat_key(os.stat(path))
    assert file_sha256(path, now.size, follow=False, key=now) != want


def test_file_sha256_follows_links_unless_told_not_to(tmp_path: Path) -> None:
    path = _file(tmp_path, "a.txt", b"x")
    link = tmp_path / "link"
    link.symlink_to(path)
    assert file_sha256(str(link), 1) == hashlib.sha256(b"x").hexdigest()
    with pytest.raises(OSError):
        file_sha256(str(link), 1, follow=False)
    with pytest.raises(OSError):
        file_sha256(str(tmp_path), 1)  # a folder
    with pytest.raises(OSError):
        file_sha256(str(tmp_path / "missing"), 1)
