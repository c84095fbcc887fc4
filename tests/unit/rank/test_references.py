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
    live = {p: w for p, w in seeds.items() if p in tags and w > 0}
    if not sum(live.values()):
        return {}
    restart = {p: w / sum(live.values()) for p, w in live.items()}
    definers: dict[str, list[str]] = defaultdict(list)
    for path, name in ((p, n) for p, t in tags.items() for n in t.defines):
        definers[name].append(path)
    edges: dict[str, dict[str, float]] = {}
    for path, t in tags.items():
        out: dict[str, float] = defaultdict(float)
        for name in t.names - t.defines:
            if not definers.get(name):
                continue
            where = definers[name]
            weight = 1.0 / len(where)  # times 1.0 where a factor does not apply: exact
            for factor, applies in (
                (r.FOCUS_BOOST, name in focus_identifiers),
                (r.PRIVATE_FACTOR, name.startswith("_")),
                (r.COMMON_FACTOR, len(where) > r.COMMON_DEFINERS),
            ):
                weight *= factor if applies else 1.0
            for target in (w for w in where if w != path):
                out[target] += weight
        if sum(out.values()):
            edges[path] = dict(zip(out, (v / sum(out.values()) for v in out.values()), strict=True))
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
