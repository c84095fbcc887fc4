"""A ranking's answer as the engine reads it, made only as far as it is read.

A warm ranking of a broad glob has tens of thousands of candidates, most of which no
signal scores; the engine maps the order to its entries by place (``Ranked.places``) and
lists a few hundred entries at most. So the unscored tail of the order (as paths) and
each ``why`` are made when first read: :class:`LazyOrder`, :class:`LazyPlaces`,
:func:`with_tail`, :class:`LazyWhy`.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import overload

__all__ = ["LazyOrder", "LazyPlaces", "LazyWhy", "with_tail"]


class LazyOrder(Sequence[str]):
    """The whole order of ``root._order``: ``head`` (the scored candidates, best first),
    then the other ``candidates`` in their order, those ``keep`` marks (a byte per
    candidate); the tail is made only when read past ``head`` (the engine maps the
    order by places, ``Ranked.places``). Read as a tuple: slices are tuples, and it
    equals a tuple of the same paths."""

    def __init__(self, head: list[str], candidates: Sequence[str], keep: bytearray) -> None:
        self._head, self._candidates, self._keep = head, candidates, keep
        self._all: list[str] | None = None

    def _whole(self) -> list[str]:
        if self._all is None:
            self._all = self._head + list(itertools.compress(self._candidates, self._keep))
        return self._all

    @overload
    def __getitem__(self, k: int) -> str: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[str]: ...
    def __getitem__(self, k: int | slice) -> str | Sequence[str]:
        if isinstance(k, int):
            return self._whole()[k]
        if self._all is None and self._in_head(k):
            return tuple(self._head[k])
        return tuple(self._whole()[k])

    def __eq__(self, other: object) -> bool:
        """Equal to a tuple or list of the same paths (and another order), as the
        tuple the ranking's order was."""
        if isinstance(other, LazyOrder | tuple | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def _in_head(self, k: slice) -> bool:
        """Whether ``k`` is a first part of the order within ``head``."""
        stop = k.stop
        return (
            k.start is None and k.step is None and stop is not None and 0 <= stop <= len(self._head)
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self._whole())

    def __len__(self) -> int:
        return len(self._candidates)


class LazyPlaces(Sequence[int]):
    """The places (0-based, among the candidates) of a :class:`LazyOrder`: ``first``,
    the places of its head, then those ``keep`` marks (a byte per candidate) in
    increasing order, made as ints only as far as they are read (iterating reads them
    one by one; the engine fills a page from the first few hundred of tens of
    thousands). Equals a list or tuple of the same places."""

    def __init__(self, first: list[int], keep: bytearray) -> None:
        self._first, self._keep = first, keep
        self._all: list[int] | None = None

    def _whole(self) -> list[int]:
        if self._all is None:
            self._all = self._first + list(itertools.compress(range(len(self._keep)), self._keep))
        return self._all

    @overload
    def __getitem__(self, k: int) -> int: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[int]: ...
    def __getitem__(self, k: int | slice) -> int | Sequence[int]:
        if isinstance(k, int) and self._all is None and 0 <= k < len(self._first):
            return self._first[k]
        return self._whole()[k]

    def __iter__(self) -> Iterator[int]:
        if self._all is not None:
            return iter(self._all)
        tail = itertools.compress(range(len(self._keep)), self._keep)
        return itertools.chain(self._first, tail)

    def __len__(self) -> int:
        return len(self._keep)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyPlaces | tuple | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def with_tail(
    head: list[str], candidates: Sequence[str], at: Mapping[str, int]
) -> tuple[LazyOrder, LazyPlaces]:
    """The whole order of ``root._order`` (``head``, the scored candidates best first,
    then the others in the candidates' order) as paths and as 0-based places among
    ``candidates`` (each once; ``at`` their places): the others are picked by a mask of
    places, in C, with no lookup per path, and made (as paths, as places) only when
    read past the head."""
    first = list(map(at.__getitem__, head))
    keep = bytearray(b"\x01") * len(candidates)
    collections.deque(map(keep.__setitem__, first, itertools.repeat(0)), maxlen=0)
    return LazyOrder(head, candidates, keep), LazyPlaces(first, keep)


class LazyWhy(Mapping[str, str]):
    """``why`` by path for the ``paths`` (the first ``WHY_FILES`` of the order), each
    made by ``make`` when first asked (an answer lists a few hundred at most); ``""``
    for any other path."""

    def __init__(self, paths: Sequence[str], make: Callable[[str], str]) -> None:
        self._paths = paths
        self._top = frozenset(paths)
        self._make = make
        self._made: dict[str, str] = {}

    def __getitem__(self, key: str) -> str:
        got = self._made.get(key)
        if got is None:
            got = self._made[key] = self._make(key) if key in self._top else ""
        return got

    def __contains__(self, key: object) -> bool:
        return key in self._top

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)
