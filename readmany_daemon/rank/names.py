"""The names signal over paths: which candidates' paths hold the focus's words.

One lower-case string of all candidates is searched once per word (``str.find`` runs in
C), so 100,000 paths cost a few milliseconds. A word counts by its rarity among the
candidates (``log(1 + N / n)``), doubled when it is in the file's name rather than a
folder's; a word in more than ``COMMON_SHARE`` of the paths (``src``, ``py``) counts
nothing.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Sequence
from typing import Final

__all__ = ["path_scores"]

COMMON_SHARE: Final = 0.25
#: A word in more paths than this tells little and costs the most: not looked at.
MAX_HITS: Final = 1_000


@functools.lru_cache(maxsize=2)
def _joined(candidates: tuple[str, ...]) -> tuple[str, list[int]]:
    """The lower-case paths joined by ``\n``, and where each starts (the last two
    candidate lists are kept: a warm request asks with the same)."""
    starts: list[int] = []
    at = 0
    for c in candidates:
        starts.append(at)
        at += len(c) + 1
    return "\n".join(candidates).lower(), starts


def path_scores(candidates: Sequence[str], words: Sequence[str]) -> dict[str, tuple[float, str]]:
    """``{path: (score, best word)}`` for the candidates whose path holds one of
    ``words`` (lower case), the best word being the rarest one it holds."""
    if not candidates or not words:
        return {}
    joined, starts = _joined(tuple(candidates))
    n = len(candidates)
    limit = min(MAX_HITS, max(1, int(n * COMMON_SHARE)))
    out: dict[str, tuple[float, str, float]] = {}
    for word in words:
        if joined.count(word) > limit * 2:
            continue
        hits: dict[int, bool] = {}
        pos = joined.find(word)
        while pos >= 0:
            i = bisect.bisect_right(starts, pos) - 1
            in_name = candidates[i].rfind("/") < pos - starts[i]
            hits[i] = hits.get(i, False) or in_name
            pos = joined.find(word, pos + len(word))
        if not hits or len(hits) > limit:
            continue
        weight = math.log(1 + n / len(hits))
        for i, in_name in hits.items():
            path = candidates[i]
            score = weight * (2.0 if in_name else 1.0)
            old = out.get(path)
            if old is None:
                out[path] = (score, word, weight)
            elif weight > old[2]:
                out[path] = (old[0] + score, word, weight)
            else:
                out[path] = (old[0] + score, old[1], old[2])
    return {p: (s, w) for p, (s, w, _) in out.items()}
