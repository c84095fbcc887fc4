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
from typing import TypeVar, overload

__all__ = ["LazyOrder", "LazyPlaces", "LazyWhy", "with_tail"]


T = TypeVar("T")


class _Tailed(Sequence[T]):
    """``head``, then the items of :meth:`_tail` (one per candidate that ``keep``
    marks, a byte per candidate), made as a list only when read past ``head`` by index
    or slice; iterating reads the tail one by one. Read as a tuple: slices are tuples,
    and it equals a tuple or list of the same items."""

    def __init__(self, head: list[T], keep: bytearray) -> None:
        self._head, self._keep = head, keep
        self._all: list[T] | None = None

    def _tail(self) -> Iterator[T]:
        raise NotImplementedError

    def _whole(self) -> list[T]:
        if self._all is None:
            self._all = self._head + list(self._tail())
        return self._all

    @overload
    def __getitem__(self, k: int) -> T: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[T]: ...
    def __getitem__(self, k: int | slice) -> T | Sequence[T]:
        if isinstance(k, int):
            if self._all is None and 0 <= k < len(self._head):
                return self._head[k]
            return self._whole()[k]
        if self._all is None and self._in_head(k):
            return tuple(self._head[k])
        return tuple(self._whole()[k])

    def _in_head(self, k: slice) -> bool:
        """Whether ``k`` is a first part of the sequence within ``head``."""
        stop = k.stop
        return (
            k.start is None and k.step is None and stop is not None and 0 <= stop <= len(self._head)
        )

    def __iter__(self) -> Iterator[T]:
        if self._all is not None:
            return iter(self._all)
        return itertools.chain(self._head, self._tail())

    def __len__(self) -> int:
        return len(self._keep)

    def __eq__(self, other: object) -> bool:
        """Equal to a tuple or list of the same items (and another such sequence), as
        the tuple or list it stands for."""
        if isinstance(other, _Tailed | tuple | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class LazyOrder(_Tailed[str]):
    """The whole order of ``root._order``: ``head`` (the scored candidates, best first),
    then the other ``candidates`` in their order, those ``keep`` marks (a byte per
    candidate); the tail is made only when read past ``head`` (the engine maps the
    order by places, ``Ranked.places``). Read as a tuple: slices are tuples, and it
    equals a tuple of the same paths."""

    def __init__(self, head: list[str], candidates: Sequence[str], keep: bytearray) -> None:
        super().__init__(head, keep)
        self._candidates = candidates

    def _tail(self) -> Iterator[str]:
        return itertools.compress(self._candidates, self._keep)


class LazyPlaces(_Tailed[int]):
    """The places (0-based, among the candidates) of a :class:`LazyOrder`: ``first``,
    the places of its head, then those ``keep`` marks (a byte per candidate) in
    increasing order, made as ints only as far as they are read (iterating reads them
    one by one; the engine fills a page from the first few hundred of tens of
    thousands). Equals a list or tuple of the same places."""

    def _tail(self) -> Iterator[int]:
        return itertools.compress(range(len(self._keep)), self._keep)


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
