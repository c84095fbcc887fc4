"""How a root's ranking fuses its signals (``root.RootRanking``): each signal's scores
divided by its best (:func:`normalized`), weighted and summed (:func:`weighted_sum`), the
files a focus names put first (:func:`lead_named`), the sum divided by a size factor
and sorted (:func:`ranked_head`); and the path words ``why`` names (:func:`path_words`).
"""

from __future__ import annotations

import collections
import itertools
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Final

__all__ = [
    "Memo",
    "lead_named",
    "named_paths",
    "normalized",
    "path_words",
    "ranked_head",
    "weighted_sum",
    "within_root",
]


def path_words(
    paths: Sequence[str], names: Mapping[str, float], words: Sequence[str]
) -> dict[str, tuple[float, str]]:
    """For each of ``paths`` the names signal scores, the rarest focus word its path
    holds (``path: WORD`` in ``why``): the one found in the fewest of ``paths``."""
    found: dict[str, list[str]] = {}
    for p in filter(names.__contains__, paths):
        # the words a path holds, tested in C (``words`` are distinct: each path counts
        # once per word below)
        found[p] = list(filter(p.lower().__contains__, words))
    counts = collections.Counter(itertools.chain.from_iterable(found.values()))
    return {p: (names[p], min(ws, key=counts.__getitem__)) for p, ws in found.items() if ws}


def ranked_head(
    fused: Mapping[str, float],
    sizes: Mapping[str, int],
    size_exponent: float,
    at: Mapping[str, int],
) -> list[str]:
    """The scored candidates (``at``: each candidate's place), best first: the others
    keep the request's order after them."""
    # the few hundred sized files, not every scored one, are looked at (the sort below
    # gives the order, whatever the dict's)
    sized = {
        p: fused[p] / (sizes[p] / 4 + 200) ** size_exponent for p in sizes if p in fused and p in at
    }
    # the best few hundred by size-weighed score, then the other scored files; only the
    # scored files are sorted, the rest keep the request's order
    ranked = sorted(sized, key=lambda p: (-sized[p], at[p]))
    # by score, best first, ties in the request's order: two stable sorts by keys
    # looked up in C (as the key (-score, place), without a tuple per file)
    rest = sorted(
        filter(at.__contains__, itertools.filterfalse(sized.__contains__, fused)),
        key=at.__getitem__,
    )
    rest.sort(key=fused.__getitem__, reverse=True)
    return ranked + rest


def normalized(scores: Mapping[str, float]) -> dict[str, float]:
    """``scores`` divided by the largest (all in 0..1); ``{}`` when none is positive."""
    top = max(scores.values(), default=0.0)
    return {p: v / top for p, v in scores.items() if v > 0} if top > 0 else {}


#: ``weighted_sum``'s normalized parts: ``id(scores)`` -> (scores, normalized scores).
Memo = dict[int, tuple[Mapping[str, float], dict[str, float]]]


def weighted_sum(
    *parts: tuple[float, Mapping[str, float]], memo: Memo | None = None
) -> dict[str, float]:
    """The weighted sum of the ``normalized`` parts (``(weight, {path: score})``, summed
    in order); ``memo``: each part's scores and their normalized form by ``id`` (the
    scores held, so the id is not reused: the same signal's scores fused twice in one
    call are normalized once)."""
    out: dict[str, float] = {}
    for weight, scores in parts:
        if memo is None:
            norm = normalized(scores)
        else:
            got = memo.get(id(scores))
            if got is None or got[0] is not scores:
                got = memo[id(scores)] = (scores, normalized(scores))
            norm = got[1]
        if not out:  # 0.0 + x is x: every part's scores are positive
            out = {p: weight * v for p, v in norm.items()}
            continue
        get = out.get
        for p, v in norm.items():
            out[p] = get(p, 0.0) + weight * v
    return out


#: A path as a focus may name one: letters, digits and ``_ . / - @ +``; ``src/a.py:12``
#: gives ``src/a.py``.
_PATHLIKE: Final = re.compile(r"[\w.@+-]*/[\w./@+-]*|[\w@+-]+\.[\w.@+-]*\w")


def lead_named(fused: dict[str, float], named: Sequence[str]) -> None:
    """Put the files of ``named`` (a focus's :func:`named_paths`) before every other
    scored file in ``fused``, in their order, whatever their size."""
    if named:
        top = (max(fused.values(), default=0.0) + 1.0) * 1000.0
        for k, p in enumerate(named):
            fused[p] = top * (len(named) - k)


def named_paths(focus: str, cand: Mapping[str, int]) -> list[str]:
    """The candidates (root-relative paths) that ``focus`` names as they are (``./`` and
    trailing dots cut), in the focus's order, each once: a file the task names outranks
    what the words find (a path's words alone, ``src`` and ``pytest``, rank every file
    of the folder)."""
    out: dict[str, None] = {}
    for m in _PATHLIKE.finditer(focus):
        path = m.group(0).rstrip(".").removeprefix("./")
        if path in cand:
            out.setdefault(path, None)
    return list(out)


def within_root(focus: str, root: str) -> str:
    """``focus`` with the root's own place cut from the paths it names in the root: an
    absolute path (``/work/proj/src/a.py``) or a ``file:`` URI of one
    (``file:///work/proj/src/a.py``, ``file:/…``, ``file://localhost/…``, its
    percent-escapes decoded as RFC 8089 says) becomes the root-relative path
    (``src/a.py``), so that it names its file as a relative path does and the root's
    folders are no search words. ``root``: the root's absolute path, as the index knows
    it."""
    if "file:" in focus:
        focus = _FILE_URI.sub(lambda m: urllib.parse.unquote(m.group(1)), focus)
    prefix = root.rstrip("/") + "/"
    if prefix not in focus:
        return focus
    # only where a path starts (not ``/x/a/b`` for the root ``/a``)
    return re.sub(r"(?<![\w./@+%:-])" + re.escape(prefix), "", focus)


#: A ``file:`` URI of a local path (RFC 8089: ``file:///p``, ``file:/p``,
#: ``file://localhost/p``), up to a space, a quote or a bracket; group 1 its path.
_FILE_URI: Final = re.compile(r"\bfile:(?://(?:localhost)?)?(/[^\s<>\"'`()\[\]{}]*)")
