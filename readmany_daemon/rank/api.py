"""What the engine asks of a ranking, and what it gets back (issue: focus).

The engine hands a root's ranking the files a request matched (root-relative POSIX
paths), the ``focus`` text and the anchors (the files the request named explicitly);
it gets them back best first, each with a short reason. The ranking never adds or drops
a file: ``Ranked.order`` is a permutation of the candidates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

#: The signals a ranking fuses, in the order ``summary.ranking.signals`` lists them.
SIGNALS = ("content", "names", "references", "recency")

#: The longest ``why`` (characters), docs/protocol.md "Focus".
WHY_MAX_CHARS = 80


@dataclass(frozen=True)
class Ranked:
    """One ranking of a request's candidates.

    ``order``: every candidate exactly once, best first. ``why``: path -> a reason of at
    most ``WHY_MAX_CHARS`` characters (every candidate has one, possibly ``""``).
    ``signals``: the signals that ranked, a sub-sequence of ``SIGNALS`` (a signal not
    ready or switched off is absent). ``indexed_files``: files the full-text index holds;
    ``pending_files``: files whose part of the ranking is still to be made, those the
    full-text index has still to check and, in the daemon, those the reference graph
    takes whose tags are still to be parsed (0 once the ranking is complete: asking
    again then ranks the same).
    ``places``: ``order`` as the 0-based places of its paths in the candidates, when
    the ranking gives it (the engine then maps the order to its entries without a
    lookup by path per file); None otherwise.
    """

    order: Sequence[str]
    why: Mapping[str, str]
    signals: tuple[str, ...]
    indexed_files: int
    pending_files: int
    places: Sequence[int] | None = None


class Ranking(Protocol):
    """A root's ranking (``Workspace.ranking``)."""

    def rank(self, candidates: Sequence[str], focus: str, anchors: Sequence[str]) -> Ranked:
        """``candidates`` (root-relative paths, each once) best first for ``focus`` (1 to
        2,000 characters), seeded by ``anchors`` (a subset of the candidates). Waits at
        most 100 ms for an index being built; never raises for a file's problem (a file
        that cannot be read ranks last)."""
        ...
