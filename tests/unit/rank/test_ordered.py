"""A ranking's order as the engine reads it (``rank/ordered.py``): the places of the
order are made only as far as they are read, and read as the list they stand for."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from readmany_daemon.engine.pack import Flat, Ordered
from readmany_daemon.rank.ordered import LazyPlaces, with_tail


def _eager(head: list[str], candidates: list[str]) -> list[int]:
    """The places as one list: the head's, then the others' in the candidates' order."""
    at = {p: i for i, p in enumerate(candidates)}
    first = [at[p] for p in head]
    return first + [i for i in range(len(candidates)) if i not in set(first)]


@given(st.integers(0, 60), st.data())
def test_places_read_as_the_list_of_the_head_then_the_others(n: int, data: st.DataObject) -> None:
    candidates = [f"f{i:03}.py" for i in range(n)]
    head = list(data.draw(st.permutations(candidates)))[: data.draw(st.integers(0, n))]
    order, places = with_tail(head, candidates, {p: i for i, p in enumerate(candidates)})
    eager = _eager(head, candidates)
    assert list(places) == eager
    assert places == eager and places == tuple(eager)
    assert len(places) == n
    assert [places[k] for k in range(n)] == eager
    assert list(places[1:4]) == eager[1:4]
    assert [candidates[j] for j in places] == list(order)


def test_reading_the_first_places_makes_no_int_for_the_others() -> None:
    candidates = [f"f{i:05}.py" for i in range(50_000)]
    at = {p: i for i, p in enumerate(candidates)}
    _, places = with_tail(["f00007.py", "f00003.py"], candidates, at)
    assert isinstance(places, LazyPlaces)
    assert list(itertools.islice(places, 5)) == [7, 3, 0, 1, 2]
    assert places[1] == 3
    assert places._all is None  # nothing made past what was read
    assert places[2] == 0  # past the head: made once, then read as a list
    assert places._all is not None and len(places._all) == 50_000


def test_an_ordered_page_keeps_the_order_it_is_given() -> None:
    candidates = [f"f{i:03}.py" for i in range(10)]
    _, places = with_tail(["f004.py"], candidates, {p: i for i, p in enumerate(candidates)})
    page = Ordered(Flat([(0, 10)]), places)
    assert page.order is places  # not copied: a page reads it only as far as it fills
    assert list(page) == [4, 0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert page[0] == 4
