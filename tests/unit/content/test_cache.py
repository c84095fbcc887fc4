"""Unit tests of ``readmany_daemon.content.cache``: hits and misses by stat key, the racy
rule, what is refused, eviction by bytes and thread safety. Files are real files under
``tmp_path``, read with ``content.reader.read_file``.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from pathlib import Path

from readmany_daemon.content import cache as cache_mod
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.content.reader import FileRead as Loaded
from readmany_daemon.content.reader import ReadOptions, read_file
from tests.unit.content.test_reader import write

MiB = 1024 * 1024
HOUR_NS = 3600 * 10**9


# --------------------------------------------------------------------------- cache


def cached_file(tmp_path: Path, name: str, body: str, age_ns: int = HOUR_NS) -> tuple[str, Loaded]:
    """Write a file with an mtime ``age_ns`` in the past and read it whole."""
    path = write(tmp_path / name, body.encode())
    past = time.time_ns() - age_ns
    os.utime(path, ns=(past, past))
    return path, read_file(path, ReadOptions(max_file_bytes=MiB))


def test_cache_hit_then_miss_after_change(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, loaded = cached_file(tmp_path, "a", "hello\n")
    assert cache.get(path, os.stat(path)) is None
    assert cache.put(path, loaded)
    assert cache.get(path, os.stat(path)) is loaded
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)
    assert cache.bytes_used > 0
    with open(path, "a") as f:
        f.write("more\n")
    assert cache.get(path, os.stat(path)) is None
    assert (cache.hits, cache.misses, len(cache), cache.bytes_used) == (1, 2, 0, 0)


def test_cache_same_size_rewrite_with_old_mtime_is_caught_by_ctime(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, loaded = cached_file(tmp_path, "a", "hello\n")
    cache.put(path, loaded)
    before = os.stat(path)
    Path(path).write_text("HELLO\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert cache.get(path, os.stat(path)) is None


def test_cache_checks_the_bytes_of_an_entry_racy_by_its_ctime(tmp_path: Path) -> None:
    """An edit that restores the mtime moves only the ctime; two in one ctime tick leave
    the whole stat key as it was. An entry whose ctime is that recent is trusted only
    after its bytes are checked again (git's racily clean entries)."""
    cache = ContentCache(MiB)
    path, loaded = cached_file(tmp_path, "a", "hello\n")  # mtime old, ctime now
    assert cache.put(path, loaded)
    assert cache.get(path, os.stat(path)) is loaded  # the bytes are the same: a hit
    # The same stat key, other bytes: what a second edit in the same tick leaves.
    from msgspec.structs import replace

    stale = replace(loaded, text="HELLO\n", sha256=hashlib.sha256(b"HELLO\n").hexdigest())
    assert cache.put(path, stale)
    assert cache.get(path, os.stat(path)) is None
    assert path not in cache
    # Once the check is more than one tick after the ctime, the stat key is enough.
    aged = ContentCache(MiB, granularity_ns=0)
    assert aged.put(path, replace(stale, read_at_ns=time.time_ns()))
    assert aged.get(path, os.stat(path)) is not None


def test_cache_refuses_racy_entries(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path = write(tmp_path / "fresh", b"just written\n")
    loaded = read_file(path, ReadOptions(max_file_bytes=MiB))  # mtime within 2 s of the read
    assert not cache.put(path, loaded)
    assert cache.get(path, os.stat(path)) is None
    assert path not in cache


def test_racy_rule_uses_the_read_time_and_granularity() -> None:
    cache = ContentCache(MiB, granularity_ns=10**9)
    mtime = 5_000 * 10**9
    base = Loaded(
        "text",
        text="x",
        complete_text=True,
        size=1,
        mtime_ns=mtime,
        ino=1,
        ctime_ns=mtime,
        sha256="0" * 64,
    )
    from msgspec.structs import replace

    assert not cache.put("/racy", replace(base, read_at_ns=mtime + 10**9))  # mtime >= at - g
    assert cache.put("/clean", replace(base, read_at_ns=mtime + 10**9 + 1))
    clocked = ContentCache(MiB, granularity_ns=10**9, clock=lambda: mtime + 2 * 10**9)
    assert clocked.put("/no-read-time", base)  # read_at_ns 0: the clock at put counts


def test_cache_refuses_partial_and_error_results(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    big = write(tmp_path / "big", b"line\n" * 300_000)  # over one chunk
    old = time.time_ns() - HOUR_NS
    os.utime(big, ns=(old, old))
    partial = read_file(big, ReadOptions(max_file_bytes=1000, limit=5))
    assert not partial.complete_text and not cache.put(big, partial)
    missing = read_file(str(tmp_path / "none"), ReadOptions(max_file_bytes=1000))
    assert not cache.put(str(tmp_path / "none"), missing)
    assert len(cache) == 0 and cache.bytes_used == 0


def test_cache_lru_eviction_by_bytes(tmp_path: Path) -> None:
    body = "x" * 1000
    files = [cached_file(tmp_path, name, body) for name in ("a", "b", "c")]
    one = cache_mod._cost(files[0][1])
    cache = ContentCache(2 * one)
    (pa, la), (pb, lb), (pc, lc) = files
    assert cache.put(pa, la) and cache.put(pb, lb)
    assert cache.get(pa, os.stat(pa)) is la  # a is now the most recent
    assert cache.put(pc, lc)  # evicts b, the least recently used
    assert pb not in cache and pa in cache and pc in cache
    assert cache.bytes_used == 2 * one
    assert cache.invalidate(pa) and not cache.invalidate(pa)
    assert cache.bytes_used == one
    tiny = ContentCache(one - 1)
    assert not tiny.put(pa, la) and len(tiny) == 0


def test_cache_put_replaces_and_accounts(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, small = cached_file(tmp_path, "a", "x")
    cache.put(path, small)
    _, bigger = cached_file(tmp_path, "a", "y" * 5000)
    cache.put(path, bigger)
    assert len(cache) == 1 and cache.bytes_used == cache_mod._cost(bigger)
    cache.clear()
    assert len(cache) == 0 and cache.bytes_used == 0


def test_cache_is_thread_safe(tmp_path: Path) -> None:
    entries = [cached_file(tmp_path, f"f{i}", f"file {i}\n" * 50) for i in range(8)]
    stats = {p: os.stat(p) for p, _ in entries}
    cache = ContentCache(4 * cache_mod._cost(entries[0][1]))
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rnd = random.Random(seed)
        try:
            for _ in range(500):
                path, loaded = rnd.choice(entries)
                if rnd.random() < 0.5:
                    cache.put(path, loaded)
                else:
                    got = cache.get(path, stats[path])
                    assert got is None or got is loaded
        except AssertionError as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.bytes_used == sum(cache_mod._cost(loaded) for p, loaded in entries if p in cache)
    assert cache.bytes_used <= cache.max_bytes
    assert cache.hits + cache.misses > 0
