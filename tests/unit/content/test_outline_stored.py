"""``outline`` asks a store of outlines made ahead (``OutlineCache.stored``, the daemon's
``rank.ahead.AheadStore``) before it makes one, by ``outline_key`` of the text: memory
first, then the store, then tree-sitter; and ``set_parse_clock`` moves the parse time
limits onto another clock."""

from __future__ import annotations

import time

from readmany_daemon.content import outline as outline_mod
from readmany_daemon.content.outline import Outline, OutlineCache, outline, outline_key

TEXT = "def alpha():\n    return 1\n"


def test_a_stored_outline_is_taken_before_one_is_made_and_kept_in_memory() -> None:
    asked: list[bytes] = []
    planted = Outline("python", reason="planted")

    def stored(key: bytes) -> Outline | None:
        asked.append(key)
        return planted

    cache = OutlineCache()
    cache.stored = stored
    assert outline(TEXT, "a.py", cache=cache) is planted
    assert asked == [outline_key(TEXT.encode(), "python")]
    assert outline(TEXT, "a.py", cache=cache) is planted  # from memory now
    assert len(asked) == 1
    # without a cache, the store is asked too; a miss makes the outline
    assert outline(TEXT, "a.py", stored=lambda _key: None).symbols[0].name == "alpha"
    assert outline(TEXT, "a.py", stored=stored) is planted


def test_the_key_tells_texts_and_languages_apart() -> None:
    key = outline_key(TEXT.encode(), "python")
    assert len(key) == 16
    assert key != outline_key(TEXT.encode(), "ruby")
    assert key != outline_key((TEXT + "\n").encode(), "python")


def test_the_parse_limits_count_on_the_clock_set() -> None:
    ticks = iter(range(0, 10**9, 1000))  # each look: 1,000 s later than the last
    try:
        outline_mod.set_parse_clock(lambda: float(next(ticks)))
        assert (outline(TEXT * 50, "a.py").reason or "").startswith("too slow to parse")
    finally:
        outline_mod.set_parse_clock(time.perf_counter)
    assert outline(TEXT * 50, "a.py").reason is None
