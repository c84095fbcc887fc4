"""The references signal: personalized PageRank over a graph of definitions and
references, as Aider's repo map ranks its tags (aider/repomap.py ``get_ranked_tags``).

Nodes are files; a file that names an identifier another file defines has an edge to
it. An edge's weight is ``1 / (files defining the name)``, times ``FOCUS_BOOST`` when the
focus names the identifier, times ``PRIVATE_FACTOR`` for a ``_private`` name, times
``COMMON_FACTOR`` for a name defined in more than ``COMMON_DEFINERS`` files (``__init__``).
The random surfer restarts at the seeds (the anchors, and the files defining an
identifier the focus names) and follows edges with probability ``DAMPING``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Final

from readmany_daemon.content.outline import Tags

__all__ = ["pagerank"]

DAMPING: Final = 0.85
ITERATIONS: Final = 30
FOCUS_BOOST: Final = 10.0
PRIVATE_FACTOR: Final = 0.1
COMMON_FACTOR: Final = 0.1
COMMON_DEFINERS: Final = 5


def pagerank(
    tags: Mapping[str, Tags], seeds: Mapping[str, float], focus_identifiers: set[str]
) -> dict[str, float]:
    """The PageRank of each file of ``tags`` (``{path: Tags}``), restarting at ``seeds``
    (``{path: weight}``, paths of ``tags``; none: no ranking, ``{}``). Scores sum to 1;
    a file nothing flows to gets only its restart share."""
    seed_total = sum(w for p, w in seeds.items() if p in tags and w > 0)
    if not seed_total:
        return {}
    restart = {p: w / seed_total for p, w in seeds.items() if p in tags and w > 0}
    definers: dict[str, list[str]] = defaultdict(list)
    for path, t in tags.items():
        for name in t.defines:
            definers[name].append(path)
    edges: dict[str, dict[str, float]] = {}
    for path, t in tags.items():
        out: dict[str, float] = defaultdict(float)
        # a definition site is no reference; the names no graphed file defines are
        # passed over in C (most of them), the others taken in the same order
        for name in filter(definers.__contains__, t.names - t.defines):
            where = definers[name]
            weight = 1.0 / len(where)
            if name in focus_identifiers:
                weight *= FOCUS_BOOST
            if name.startswith("_"):
                weight *= PRIVATE_FACTOR
            if len(where) > COMMON_DEFINERS:
                weight *= COMMON_FACTOR
            for target in where:
                if target != path:
                    out[target] += weight
        total = sum(out.values())
        if total:
            edges[path] = {k: v / total for k, v in out.items()}
    rank = dict(restart)
    for _ in range(ITERATIONS):
        nxt: dict[str, float] = {p: (1 - DAMPING) * w for p, w in restart.items()}
        dangling = 0.0
        get = nxt.get
        for path, score in rank.items():
            out_edges = edges.get(path)
            if not out_edges:
                dangling += score
                continue
            flow = DAMPING * score  # (DAMPING * score) * share: the same product
            for target, share in out_edges.items():
                nxt[target] = get(target, 0.0) + flow * share
        flow = DAMPING * dangling
        for p, w in restart.items():
            nxt[p] = get(p, 0.0) + flow * w
        rank = nxt
    return rank
