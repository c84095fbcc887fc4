"""The cache folder stays bounded (``index/cachegc.py``, issue 22 item 6): snapshots of
roots that are gone or unused for 30 days are dropped with every per-root file beside
them, and the folder is kept under its byte limit, least recently used first."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import msgspec

from readmany_daemon.index import cachegc

DAY = 24 * 3600


def h(name: str) -> str:
    return hashlib.blake2b(name.encode(), digest_size=16).hexdigest()


def add_root(cache: Path, root: Path, *, size: int = 100, used: float | None = None) -> str:
    """A root's snapshot (``size`` bytes), its use mark and one other per-root file,
    all with mtime ``used`` (default now)."""
    digest = h(str(root))
    snap = cache / f"index-{digest}.snap"
    snap.write_bytes(b"s" * size)
    cachegc.record_use(str(snap), str(root))
    (cache / f"outline-{digest}.db").write_bytes(b"o")
    if used is not None:
        for p in cache.glob(f"*{digest}*"):
            os.utime(p, (used, used))
    return digest


def names(cache: Path) -> set[str]:
    return {p.name for p in cache.iterdir()}


def test_roots_gone_lose_their_files(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    alive, gone = tmp_path / "alive", tmp_path / "gone"
    alive.mkdir()
    gone.mkdir()
    a = add_root(cache, alive)
    g = add_root(cache, gone)
    gone.rmdir()
    dropped = cachegc.sweep(str(cache))
    assert [(d.hash, d.root, d.reason) for d in dropped] == [(g, str(gone), "root gone")]
    assert names(cache) == {f"index-{a}.snap", f"index-{a}.root", f"outline-{a}.db"}


def test_roots_unused_for_30_days_are_dropped(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    now = time.time()
    roots = [tmp_path / n for n in ("old", "recent")]
    for r in roots:
        r.mkdir()
    old = add_root(cache, roots[0], used=now - 31 * DAY)
    recent = add_root(cache, roots[1], used=now - 29 * DAY)
    dropped = cachegc.sweep(str(cache), now=now)
    assert [(d.hash, d.reason) for d in dropped] == [(old, "unused")]
    assert all(recent in n for n in names(cache))


def test_using_a_root_marks_it_recent(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    root = tmp_path / "r"
    root.mkdir()
    digest = add_root(cache, root, used=time.time() - 40 * DAY)
    cachegc.record_use(str(cache / f"index-{digest}.snap"), str(root))
    assert cachegc.sweep(str(cache)) == []


def test_last_use_is_the_snapshots_mtime(tmp_path: Path) -> None:
    """A snapshot whose mtime is 31 days old is unused, whatever the other files say."""
    cache = tmp_path / "cache"
    cache.mkdir()
    root = tmp_path / "r"
    root.mkdir()
    digest = add_root(cache, root)
    old = time.time() - 31 * DAY
    os.utime(cache / f"index-{digest}.snap", (old, old))
    assert [(d.hash, d.reason) for d in cachegc.sweep(str(cache))] == [(digest, "unused")]
    assert names(cache) == set()


def test_over_the_limit_least_recently_used_go_first(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    now = time.time()
    made = []
    for i in range(4):
        root = tmp_path / f"r{i}"
        root.mkdir()
        made.append(add_root(cache, root, size=1000, used=now - (4 - i) * DAY))
    (cache / "loose.tmp").write_bytes(b"x" * 500)  # no root's: counted, never dropped
    per_root = 1000 + 1 + len(str(tmp_path / "r0"))
    limit = 500 + 2 * per_root
    dropped = cachegc.sweep(str(cache), now=now, max_bytes=limit)
    assert [(d.hash, d.reason) for d in dropped] == [
        (made[0], "over the size limit"),
        (made[1], "over the size limit"),
    ]
    total = sum(p.stat().st_size for p in cache.iterdir())
    assert total <= limit
    assert "loose.tmp" in names(cache)


def test_kept_roots_are_never_dropped(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    root = tmp_path / "r"
    root.mkdir()
    digest = add_root(cache, root, size=5000, used=time.time() - 90 * DAY)
    root.rmdir()
    assert cachegc.sweep(str(cache), keep={digest}, max_bytes=10) == []
    assert f"index-{digest}.snap" in names(cache)


def test_a_snapshot_without_use_mark_is_judged_by_its_own_root(tmp_path: Path) -> None:
    """Snapshots written before use marks existed name their root inside."""
    cache = tmp_path / "cache"
    cache.mkdir()
    gone = tmp_path / "gone"
    digest = h("legacy")
    snap = cache / f"index-{digest}.snap"
    snap.write_bytes(msgspec.msgpack.encode({"format": 1, "version": "0", "root": str(gone)}))
    dropped = cachegc.sweep(str(cache))
    assert [(d.hash, d.root, d.reason) for d in dropped] == [(digest, str(gone), "root gone")]
    assert not snap.exists()


def test_a_missing_folder_drops_nothing(tmp_path: Path) -> None:
    assert cachegc.sweep(str(tmp_path / "none")) == []
