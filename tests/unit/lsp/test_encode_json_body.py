"""The JSON form kept with a cached text (``lsp.encode.cached_json_body``, in the slot of
``ContentCache.derived``): charged once, dropped with its entry, none for racy entries or
short texts.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import msgspec
import pytest

from readmany_daemon.content import cache as cache_mod
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.content.reader import FileRead as Loaded
from readmany_daemon.content.reader import ReadOptions, read_file
from readmany_daemon.lsp.encode import cached_json_body
from tests.read_paths import HOUR, MiB, put_files

# ---------------------------------------------------------- lsp.encode.cached_json_body


def loaded_for(tmp_path: Path, name: str, text: str) -> tuple[str, Loaded]:
    path = tmp_path / name
    put_files(tmp_path, {name: text})
    got = read_file(str(path), ReadOptions(max_file_bytes=16 * MiB))
    assert got.kind == "text" and got.complete_text and got.text == text
    return str(path), got


TRICKY = 'plain "quoted" back\\slash\ttab\nnew\r\n\x01\x1b[0m café \u2028 \U0001f600 </script>\n'


def test_json_body_is_the_json_form_of_the_very_stored_text(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, lo = loaded_for(tmp_path, "a.txt", TRICKY * 50)
    assert cache.put(path, lo)
    assert lo.text is not None
    body = cached_json_body(cache, lo.text)
    assert body == msgspec.json.encode(lo.text)[1:-1]
    assert json.loads(b'"' + body + b'"') == lo.text
    assert cached_json_body(cache, lo.text) is body  # kept, not made again
    equal = "".join(list(lo.text))
    assert equal == lo.text and equal is not lo.text
    assert cached_json_body(cache, equal) is None
    assert cached_json_body(cache, "not stored anywhere") is None


def test_json_body_is_charged_once_to_bytes_used(tmp_path: Path) -> None:
    cache = ContentCache(MiB)
    path, lo = loaded_for(tmp_path, "a.txt", TRICKY * 20)
    assert cache.put(path, lo) and lo.text is not None
    before = cache.bytes_used
    assert before == cache_mod._cost(lo)
    body = cached_json_body(cache, lo.text)
    assert body is not None and len(body) > len(lo.text)  # escapes and UTF-8 count
    # the JSON form, and the UTF-8 copy the encoder left on the (non-ASCII) str
    utf8_copy = len(lo.text.encode()) + 1
    assert not lo.text.isascii()
    assert cache.bytes_used == before + len(body) + utf8_copy
    cached_json_body(cache, lo.text)
    assert cache.bytes_used == before + len(body) + utf8_copy


@pytest.mark.parametrize("how", ["invalidate", "clear", "put-again", "evict", "stale-get"])
def test_json_body_goes_with_its_entry(tmp_path: Path, how: str) -> None:
    path, lo = loaded_for(tmp_path, "a.txt", "a" * 5000)
    other_path, other = loaded_for(tmp_path, "b.txt", "b" * 5000)
    cache = ContentCache(
        MiB if how != "evict" else cache_mod._cost(lo) + cache_mod._cost(other) - 1
    )
    assert cache.put(path, lo) and lo.text is not None
    assert cached_json_body(cache, lo.text) == b"a" * 5000
    if how == "invalidate":
        assert cache.invalidate(path)
    elif how == "clear":
        cache.clear()
    elif how == "put-again":
        again = read_file(path, ReadOptions(max_file_bytes=MiB))
        assert again.text == lo.text and again.text is not lo.text
        assert cache.put(path, again) and again.text is not None
        assert cached_json_body(cache, again.text) == b"a" * 5000
    elif how == "evict":
        assert cache.put(other_path, other)
        assert path not in cache
    else:
        os.utime(path, (time.time() - 10, time.time() - 10))
        assert cache.get(path, os.stat(path)) is None
    assert cached_json_body(cache, lo.text) is None
    expected = 0 if how in ("invalidate", "clear", "stale-get") else None
    if expected is not None:
        assert cache.bytes_used == expected
    if how == "put-again":
        assert cache.bytes_used == cache_mod._cost(lo) + 5000


def test_charging_a_json_body_evicts_older_entries(tmp_path: Path) -> None:
    a_path, a = loaded_for(tmp_path, "a.txt", "a" * 10_000)
    b_path, b = loaded_for(tmp_path, "b.txt", "b" * 10_000)
    cache = ContentCache(cache_mod._cost(a) + cache_mod._cost(b) + 100)
    assert cache.put(a_path, a) and cache.put(b_path, b) and b.text is not None
    assert len(cache) == 2
    body = cached_json_body(cache, b.text)
    assert body == b"b" * 10_000
    assert a_path not in cache and b_path in cache
    assert cache.bytes_used == cache_mod._cost(b) + len(body) <= cache.max_bytes
    assert cached_json_body(cache, b.text) is body


def test_a_json_body_too_big_for_the_cache_drops_its_own_entry(tmp_path: Path) -> None:
    path, lo = loaded_for(tmp_path, "a.txt", "x" * 10_000)
    cache = ContentCache(cache_mod._cost(lo) + 10)
    assert cache.put(path, lo) and lo.text is not None
    assert cached_json_body(cache, lo.text) == b"x" * 10_000  # still answered
    assert path not in cache and cache.bytes_used == 0
    assert cached_json_body(cache, lo.text) is None


def test_json_body_of_text_json_cannot_carry_is_none() -> None:
    now = time.time_ns()
    text = "lone \udc80 surrogate"
    lo = Loaded(
        "text",
        text=text,
        complete_text=True,
        size=20,
        mtime_ns=now - HOUR * 10**9,
        ino=1,
        ctime_ns=now - HOUR * 10**9,
        sha256="0" * 64,
        read_at_ns=now,
    )
    cache = ContentCache(MiB)
    assert cache.put("/x/surrogate.txt", lo)
    used = cache.bytes_used
    assert cached_json_body(cache, text) is None
    assert cache.bytes_used == used


def test_racy_entries_are_not_stored_so_have_no_json_body(tmp_path: Path) -> None:
    (tmp_path / "fresh.txt").write_text("y" * 5000)
    lo = read_file(str(tmp_path / "fresh.txt"), ReadOptions(max_file_bytes=MiB))
    cache = ContentCache(MiB)
    assert not cache.put(str(tmp_path / "fresh.txt"), lo)
    assert lo.text is not None and cached_json_body(cache, lo.text) is None
    relaxed = ContentCache(MiB, granularity_ns=0)
    assert relaxed.put(str(tmp_path / "fresh.txt"), lo)
    assert cached_json_body(relaxed, lo.text) == b"y" * 5000


def test_short_texts_get_no_json_body_even_when_entries_share_the_object(
    tmp_path: Path,
) -> None:
    """CPython shares one object among equal short strings; such texts are never given a
    kept JSON form (below ``JSON_BODY_MIN_CHARS``), so two entries can't share one."""
    p1, one = loaded_for(tmp_path, "one.txt", "x")
    p2, two = loaded_for(tmp_path, "two.txt", "x")
    assert one.text is two.text  # the same interned object
    cache = ContentCache(MiB)
    assert cache.put(p1, one) and cache.put(p2, two)
    assert one.text is not None and cached_json_body(cache, one.text) is None
    assert cache.invalidate(p2)
    assert p1 in cache and cached_json_body(cache, one.text) is None
    short = "y" * (cache_mod.JSON_BODY_MIN_CHARS - 1)
    p3, three = loaded_for(tmp_path, "three.txt", short)
    assert cache.put(p3, three) and three.text is not None
    assert cached_json_body(cache, three.text) is None
    p4, four = loaded_for(tmp_path, "four.txt", short + "y")
    assert cache.put(p4, four) and four.text is not None
    assert cached_json_body(cache, four.text) == b"y" * cache_mod.JSON_BODY_MIN_CHARS
