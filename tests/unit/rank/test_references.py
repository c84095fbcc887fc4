"""The references signal's PageRank (``rank/references.py``) gives the very floats, in
the very order, of its plain form (each name looked up, each product written out): the
fusion's ties between equal files (copies of one file) depend on both."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from readmany_daemon.content.outline import Tags
from readmany_daemon.rank import references
from readmany_daemon.rank.references import pagerank


def _plain(
    tags: Mapping[str, Tags], seeds: Mapping[str, float], focus_identifiers: set[str]
) -> dict[str, float]:
    """PageRank as first written: the reference the optimized one must equal."""
    r = references
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
        for name in t.names - t.defines:
            where = definers.get(name)
            if not where:
                continue
            weight = 1.0 / len(where)
            if name in focus_identifiers:
                weight *= r.FOCUS_BOOST
            if name.startswith("_"):
                weight *= r.PRIVATE_FACTOR
            if len(where) > r.COMMON_DEFINERS:
                weight *= r.COMMON_FACTOR
            for target in where:
                if target != path:
                    out[target] += weight
        total = sum(out.values())
        if total:
            edges[path] = {k: v / total for k, v in out.items()}
    rank = dict(restart)
    for _ in range(r.ITERATIONS):
        nxt: dict[str, float] = {p: (1 - r.DAMPING) * w for p, w in restart.items()}
        dangling = 0.0
        for path, score in rank.items():
            out_edges = edges.get(path)
            if not out_edges:
                dangling += score
                continue
            for target, share in out_edges.items():
                nxt[target] = nxt.get(target, 0.0) + r.DAMPING * score * share
        for p, w in restart.items():
            nxt[p] = nxt.get(p, 0.0) + r.DAMPING * dangling * w
        rank = nxt
    return rank


_NAMES = st.sampled_from(["run", "_load", "parse", "fixture", "scope", "pool", "x", "y"])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([f"m{i}.py" for i in range(12)]),
        st.tuples(st.frozensets(_NAMES, max_size=4), st.frozensets(_NAMES, max_size=7)),
        max_size=12,
    ),
    st.dictionaries(st.sampled_from([f"m{i}.py" for i in range(14)]), st.floats(0, 2)),
    st.sets(_NAMES, max_size=3),
)
def test_pagerank_gives_the_floats_and_the_order_of_its_plain_form(
    graph: dict[str, tuple[frozenset[str], frozenset[str]]],
    seeds: dict[str, float],
    idents: set[str],
) -> None:
    tags = {p: Tags(defines=d, names=d | n) for p, (d, n) in graph.items()}
    got = pagerank(tags, seeds, idents)
    assert list(got.items()) == list(_plain(tags, seeds, idents).items())
