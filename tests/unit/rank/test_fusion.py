"""The fusion's helpers (``rank/fusion.py``) answer as their plain forms: the order of
the scored files (``ranked_head``) and the path word each ``why`` names
(``path_words``), ties and duplicates included."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from readmany_daemon.rank.fusion import path_words, ranked_head

_PATHS = [f"{d}/{n}.py" for d in ("src/pool", "lib", "tests") for n in ("scope", "fixture", "x")]


def _plain_head(
    fused: Mapping[str, float], sizes: Mapping[str, int], exp: float, at: Mapping[str, int]
) -> list[str]:
    sized = {p: fused[p] / (sizes[p] / 4 + 200) ** exp for p in sizes if p in fused and p in at}
    ranked = sorted(sized, key=lambda p: (-sized[p], at[p]))
    rest = sorted((p for p in fused if p not in sized and p in at), key=lambda p: at[p])
    rest.sort(key=lambda p: fused[p], reverse=True)
    return ranked + rest


def _plainpath_words(
    paths: Sequence[str], names: Mapping[str, float], words: Sequence[str]
) -> dict[str, tuple[float, str]]:
    found = {p: [w for w in words if w in p.lower()] for p in paths if p in names}
    counts = {w: sum(1 for ws in found.values() if w in ws) for w in words}
    return {p: (names[p], min(ws, key=lambda w: counts[w])) for p, ws in found.items() if ws}


_SCORE = st.sampled_from([0.25, 0.5, 1.0, 2.0])  # few values: many ties


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(_PATHS), _SCORE),
    st.dictionaries(st.sampled_from(_PATHS), st.sampled_from([0, 10, 4000])),
    st.permutations(_PATHS),
    st.integers(0, len(_PATHS)),
)
def test_head_orders_as_its_plain_form(
    fused: dict[str, float], sizes: dict[str, int], order: list[str], kept: int
) -> None:
    at = {p: i for i, p in enumerate(order[:kept])}  # some scored files no candidate
    assert ranked_head(fused, sizes, 0.1, at) == _plain_head(fused, sizes, 0.1, at)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(_PATHS), unique=True),
    st.dictionaries(st.sampled_from(_PATHS), _SCORE),
    st.lists(st.sampled_from(["pool", "scope", "src", "py", "fixture", "zz"]), unique=True),
)
def test_path_words_name_the_rarest_word_as_the_plain_form(
    paths: list[str], names: dict[str, float], words: list[str]
) -> None:
    got = path_words(paths, names, words)
    want = _plainpath_words(paths, names, words)
    assert got == want and list(got) == list(want)
