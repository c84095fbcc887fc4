"""Did you mean: the visible paths closest to a path that does not exist (PROTOCOL §4).

Models often ask for a path one letter off (``src/helper.py`` for ``src/helpers.py``) or
one folder off (``src/utils/helpers.py`` for ``src/lib/helpers.py``, or a bare
``helpers.py``). :func:`closest` finds both kinds among the visible paths of the index
with rapidfuzz (the one module that imports it): a C pass of ``fuzz.ratio`` over the
whole paths, then (when that finds nothing close) a scan for paths that end in the same
file name, then a combined score over those few candidates. About 12 ms over 100,000
paths, where ``difflib`` takes seconds (``bench/bench_suggest.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rapidfuzz import fuzz, process

#: At most this many suggestions in a ``not-found`` message (issue: "at most three").
MAX_SUGGESTIONS: Final = 3
#: Whole-path ``fuzz.ratio`` (0-100) a path needs to be a candidate at all.
_PATH_CUTOFF: Final = 50.0
#: Combined score (0-100, see :func:`_score`) a candidate needs to be suggested.
_MIN_SCORE: Final = 60.0
#: A whole-path candidate scoring this much spares the scan for the same file name.
_SURE_SCORE: Final = 85.0
#: Candidates taken from each pass before the combined ranking.
_CANDIDATES: Final = 12


def _name(path: str) -> str:
    return path.rpartition("/")[2]


def _score(query: str, path: str) -> float:
    """Half the whole-path similarity, half the file-name similarity (``fuzz.ratio``,
    0-100): a path one letter off scores near 100 on both; one in another folder, or
    asked for by its bare name, keeps the file-name half."""
    return 0.5 * fuzz.ratio(query, path) + 0.5 * fuzz.ratio(_name(query), _name(path))


def closest(query: str, paths: Sequence[str], limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Up to ``limit`` of ``paths`` (root-relative POSIX paths) closest to ``query`` (the
    root-relative path asked for), best first; ties go to the shorter, then the
    byte-smaller path. ``[]`` when none is close (a combined score under 60 of 100).

    Cost: one rapidfuzz pass over ``paths``; when it finds nothing scoring 85 or more,
    one ``str.endswith`` scan for the same file name; Python scoring of at most 24
    candidates."""
    query = query.strip("/")
    if not query or not paths or limit <= 0:
        return []
    found = process.extract(
        query, paths, scorer=fuzz.ratio, limit=_CANDIDATES, score_cutoff=_PATH_CUTOFF
    )
    scored = {str(p): _score(query, str(p)) for p, _, _ in found}
    if max(scored.values(), default=0.0) < _SURE_SCORE:
        # Nothing close by whole path (a bare name, a path at another depth): the paths
        # with the same file name, wherever they are.
        name = _name(query)
        tail = "/" + name
        same_name = [p for p in paths if p.endswith(tail) or p == name]
        scored.update((p, _score(query, p)) for p in same_name[:_CANDIDATES])
    scored.pop(query, None)
    ranked = sorted(scored.items(), key=lambda ps: (-ps[1], len(ps[0]), ps[0]))
    return [p for p, score in ranked if score >= _MIN_SCORE][:limit]


def closest_symbols(query: str, names: Sequence[str], limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Up to ``limit`` of ``names`` (a file's symbol paths, ``"Config.load"``) closest to
    ``query`` (a symbol asked for and not found), best first, ties to the shorter name:
    half the whole-name similarity, half the last part's (``fuzz.ratio``, 0-100), so a
    bare ``load`` finds ``Config.load``; ``[]`` when none scores 60 or more (PROTOCOL §4,
    ``symbol-not-found``)."""

    def score(name: str) -> float:
        last = query.rpartition(".")[2]
        return 0.5 * fuzz.ratio(query, name) + 0.5 * fuzz.ratio(last, name.rpartition(".")[2])

    ranked = sorted({n: score(n) for n in names}.items(), key=lambda ns: (-ns[1], len(ns[0])))
    return [n for n, s in ranked if s >= _MIN_SCORE][:limit]


def did_you_mean(suggestions: Sequence[str]) -> str:
    """The clause added to a ``not-found`` message: ``"; did you mean: a.py, b/a.py?"``,
    or ``""`` for no suggestion."""
    if not suggestions:
        return ""
    return f"; did you mean: {', '.join(suggestions)}?"
