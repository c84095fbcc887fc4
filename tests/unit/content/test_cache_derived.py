"""The racy rule (``racy.is_racy``) and the per-entry derived-data slot of the content
cache (``ContentCache.derived``) beyond the JSON body it also holds."""

from __future__ import annotations

import os
import time
from pathlib import Path

from readmany_daemon.content.cache import ContentCache, _cost
from readmany_daemon.content.reader import FileRead, ReadOptions, read_file
from readmany_daemon.lsp.encode import cached_json_body
from readmany_daemon.racy import RACY_NS, is_racy

MiB = 1 << 20


def test_racy_rule_is_gits_with_a_two_second_tick() -> None:
    assert RACY_NS == 2_000_000_000
    at = 10 * RACY_NS
    assert is_racy(at - RACY_NS, at)  # within the tick
    assert is_racy(at + 1, at)  # written after the read started
    assert not is_racy(at - RACY_NS - 1, at)
    assert not is_racy(at - 2, at, granularity_ns=1) and is_racy(at - 1, at, granularity_ns=1)


def _stored(tmp_path: Path, name: str, text: str) -> tuple[str, FileRead]:
    path = tmp_path / name
    path.write_text(text)
    old = time.time() - 3600
    os.utime(path, (old, old))
    got = read_file(str(path), ReadOptions(max_file_bytes=MiB))
    assert got.text == text
    return str(path), got


def test_derived_values_are_kept_by_key_charged_and_dropped_with_the_entry(
    tmp_path: Path,
) -> None:
    cache = ContentCache(MiB)
    path, lo = _stored(tmp_path, "a.txt", "a\n" * 2000)
    assert cache.put(path, lo) and lo.text is not None
    made: list[str] = []

    def lines(text: str) -> list[int]:
        made.append("lines")
        return [len(t) for t in text.splitlines()]

    first = cache.derived(lo.text, "lines", lines, size=lambda v: 8 * len(v))
    assert first == [1] * 2000
    assert cache.derived(lo.text, "lines", lines, size=lambda v: 8 * len(v)) is first
    assert made == ["lines"]
    assert cache.bytes_used == _cost(lo) + 8 * 2000
    body = cached_json_body(cache, lo.text)  # a second key on the same entry
    assert body == b"a\\n" * 2000
    assert cache.bytes_used == _cost(lo) + 8 * 2000 + len(body)
    assert cache.derived(lo.text, "nothing", lambda t: None, size=len) is None
    assert cache.bytes_used == _cost(lo) + 8 * 2000 + len(body)
    assert cache.invalidate(path) and cache.bytes_used == 0
    assert cache.derived(lo.text, "lines", lines, size=len) is None
