"""The content cache: whole-file reads kept in memory while their stat holds.

The one concept here is :class:`ContentCache`, a thread-safe, byte-bounded LRU of
whole-file :class:`~readmany_daemon.content.reader.FileRead` results keyed by absolute
path, validated by the file's stat key and git's racy rule (:mod:`readmany_daemon.racy`).
Each entry also has a slot for values derived from its text (:meth:`ContentCache.derived`),
charged to the same byte budget and dropped with the entry.

Units: ``max_bytes``/``bytes_used`` are bytes of memory (``cacheBytes`` in the settings);
times are nanoseconds since the epoch.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, TypeVar, cast

import msgspec

from readmany_daemon.content.reader import FileRead
from readmany_daemon.racy import RACY_NS, StatKey, file_sha256, is_racy, stat_key

__all__ = ["DERIVED_MIN_CHARS", "JSON_BODY_MIN_CHARS", "ContentCache"]

T = TypeVar("T")

#: Texts shorter than this (characters) get no derived values: not worth it, and CPython
#: shares one object among equal short strings ("" and one-character ones), so the
#: identity of such a text does not name one entry.
DERIVED_MIN_CHARS: Final = 1024
#: The old name of :data:`DERIVED_MIN_CHARS`, from when the slot held only the JSON form.
JSON_BODY_MIN_CHARS: Final = DERIVED_MIN_CHARS


class _Entry(msgspec.Struct):
    loaded: FileRead
    key: StatKey
    cached_at_ns: int
    #: Bytes charged for this entry: :func:`_cost`, plus what :meth:`ContentCache.derived`
    #: added (its values' sizes, and any growth of the text's own size).
    cost: int
    #: Values derived from ``loaded.text`` (:meth:`ContentCache.derived`), by key; made
    #: on demand, ``None`` until the first one.
    derived: dict[str, object] | None = None
    #: Bytes of ``cost`` charged for the values in ``derived`` (their ``size``).
    derived_bytes: int = 0


#: Bytes charged per entry on top of its text and data (struct, key, dict slot).
_ENTRY_OVERHEAD: Final = 512


def _cost(loaded: FileRead) -> int:
    """Memory charged for ``loaded``: ``sys.getsizeof`` of its text (CPython stores a str
    in 1, 2 or 4 bytes a character, PEP 393, so ASCII text costs about its UTF-8 size),
    plus its raw ``data`` bytes, plus a fixed 512-byte overhead."""
    text = sys.getsizeof(loaded.text) if loaded.text is not None else 0
    data = len(loaded.data) if loaded.data is not None else 0
    return text + data + _ENTRY_OVERHEAD


class ContentCache:
    """A byte-bounded LRU of whole-file :class:`FileRead` results, keyed by absolute path.

    An entry holds while the file's stat key ``(size, mtime_ns, ino, ctime_ns)`` equals
    the one taken when it was read, *and* the entry is not racy. Racy rule
    (:func:`readmany_daemon.racy.is_racy`, after git's
    Documentation/technical/racy-git.txt): a file written within one timestamp tick of
    being read can change again without its stat changing, so an entry whose
    ``mtime_ns >= cached_at_ns - granularity_ns`` is never trusted. The ctime gets the
    same rule, applied as git applies its own: an entry whose ``ctime_ns`` is racy is
    stored, but :meth:`get` checks its bytes again (``racy.file_sha256``) before
    trusting it, then moves ``cached_at_ns`` up to that check. An edit that restores the
    mtime (``os.utime``, ``touch -r``) moves only the ctime, and a second such edit in
    the same ctime tick would leave the whole stat key unchanged. ``cached_at_ns`` is
    ``FileRead.read_at_ns`` (taken before the read, which is stricter than the time of
    :meth:`put`), or the clock at :meth:`put` if that is 0. ``granularity_ns`` defaults to
    :data:`~readmany_daemon.racy.RACY_NS`, 2 s: FAT's mtime resolution, the coarsest in
    common use; it also covers the lag of Linux's coarse file-time clock behind
    ``time.time_ns()``. Since both times are fixed
    once cached, a racy entry stays racy: :meth:`put` does not store it, and :meth:`get`
    checks again.

    Only whole reads are stored (``sha256`` set and the stat known): text, or binary
    verdicts. Size accounting (``bytes_used``, bytes) is :func:`_cost`: ``sys.getsizeof``
    of the text (about its UTF-8 size for ASCII), raw data, plus 512 bytes an entry, plus
    what :meth:`derived` keeps with it. An entry larger than
    ``max_bytes`` is not stored. All methods are thread-safe (one lock).
    """

    def __init__(
        self,
        max_bytes: int,
        *,
        granularity_ns: int = RACY_NS,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.max_bytes = max_bytes
        self.granularity_ns = granularity_ns
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        #: ``id(entry.loaded.text)`` → path, for :meth:`derived` (the entry holds the
        #: text, so an id here is never reused by another live string).
        self._by_text: dict[int, str] = {}
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        #: Token counts made ahead, by ``tokens.count_key`` of the text counted (the
        #: daemon's ``rank.ahead.AheadStore.count``; None: none): asked by the engine
        #: before it counts a text it keeps with an entry (``engine.budget.tokens_of``).
        self.stored_count: Callable[[bytes], int | None] | None = None

    @property
    def bytes_used(self) -> int:
        """Bytes charged for the stored entries (see :func:`_cost`)."""
        with self._lock:
            return self._bytes

    @property
    def hits(self) -> int:
        """:meth:`get` calls that returned an entry."""
        with self._lock:
            return self._hits

    @property
    def misses(self) -> int:
        """:meth:`get` calls that returned ``None`` (absent, stale or racy)."""
        with self._lock:
            return self._misses

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, path: object) -> bool:
        with self._lock:
            return path in self._entries

    def get(self, path: str, st: os.stat_result) -> FileRead | None:
        """The entry for ``path`` if ``st`` (a fresh ``stat``) matches it and it is not racy.

        A stale or racy entry is dropped. Counts a hit or a miss.
        """
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None and (
                entry.key != stat_key(st)
                or is_racy(entry.key.mtime_ns, entry.cached_at_ns, self.granularity_ns)
            ):
                self._drop(path)
                entry = None
            if entry is None:
                self._misses += 1
                return None
            if not is_racy(entry.key.ctime_ns, entry.cached_at_ns, self.granularity_ns):
                self._entries.move_to_end(path)
                self._hits += 1
                return entry.loaded
        # Racily clean by its ctime: the bytes decide (outside the lock: a read).
        checked_at = time.time_ns()
        try:
            checked = file_sha256(path, entry.key.size, follow=False, key=entry.key)
        except (OSError, ValueError):
            checked = None
        with self._lock:
            if self._entries.get(path) is not entry:
                self._misses += 1
                return None
            if checked is None or checked != entry.loaded.sha256:
                self._drop(path)
                self._misses += 1
                return None
            entry.cached_at_ns = max(entry.cached_at_ns, checked_at)
            self._entries.move_to_end(path)
            self._hits += 1
            return entry.loaded

    def put(self, path: str, loaded: FileRead) -> bool:
        """Store ``loaded`` for ``path``, evicting least recently used entries to fit.

        Returns whether it was stored: not for partial reads, errors, racy results or
        entries over ``max_bytes`` (any older entry for ``path`` is dropped then too).
        """
        key = loaded.stat_key()
        cached_at = loaded.read_at_ns or self._clock()
        with self._lock:
            self._drop(path)
            if key is None or loaded.kind == "error" or loaded.sha256 is None:
                return False
            if loaded.kind == "text" and not loaded.complete_text:
                return False
            if is_racy(key.mtime_ns, cached_at, self.granularity_ns):
                return False
            cost = _cost(loaded)
            if cost > self.max_bytes:
                return False
            self._entries[path] = _Entry(loaded, key, cached_at, cost)
            if loaded.text is not None and len(loaded.text) >= DERIVED_MIN_CHARS:
                self._by_text[id(loaded.text)] = path
            self._bytes += cost
            self._evict()
            return True

    def derived(
        self,
        text: str,
        key: str,
        make: Callable[[str], T | None],
        *,
        size: Callable[[T], int],
    ) -> T | None:
        """A value derived from ``text``, kept with the cache entry whose text it is.

        The slot: each entry holds at most one value per ``key`` (a short name of what
        was derived, e.g. a wire encoding or an outline), made by ``make(text)`` on the
        first call and returned as the same object afterwards. It lives exactly as long
        as the entry: dropped when the entry is invalidated, replaced, evicted, cleared or
        found stale, so a value is always derived from the file's current content.

        ``text`` must *be* (the same object as) the text of a stored entry and hold at
        least :data:`DERIVED_MIN_CHARS` characters; otherwise, or when ``make`` returns
        ``None`` (nothing to keep), this returns ``None`` and the caller derives it itself.

        Accounting: ``size(value)`` (bytes) is charged to ``bytes_used`` with the entry,
        plus the growth of ``sys.getsizeof(text)`` while ``make`` ran (CPython keeps the
        UTF-8 copy an encoder makes of a non-ASCII str on the str itself). That may evict
        older entries, or this one (the value is still returned). ``make`` runs outside
        the lock; when two threads make the same value at once, the first one is kept.
        """
        with self._lock:
            path = self._by_text.get(id(text))
            if path is None:
                return None
            entry = self._entries.get(path)
            if entry is None or entry.loaded.text is not text:
                return None
            if entry.derived is not None and key in entry.derived:
                return cast(T, entry.derived[key])
        value = make(text)
        if value is None:
            return None
        with self._lock:
            if self._entries.get(path) is entry and (
                entry.derived is None or key not in entry.derived
            ):
                if entry.derived is None:
                    entry.derived = {}
                entry.derived[key] = value
                value_bytes = size(value)
                # What the text is charged for now: its size when stored, plus any growth
                # charged by an earlier maker.
                data = entry.loaded.data
                charged = (
                    entry.cost
                    - _ENTRY_OVERHEAD
                    - (len(data) if data is not None else 0)
                    - entry.derived_bytes
                )
                extra = value_bytes + max(0, sys.getsizeof(text) - charged)
                entry.derived_bytes += value_bytes
                entry.cost += extra
                self._bytes += extra
                self._entries.move_to_end(path)
                self._evict()
        return value

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and self._entries:
            self._forget(*self._entries.popitem(last=False))

    def invalidate(self, path: str) -> bool:
        """Forget ``path``; returns whether an entry was there."""
        with self._lock:
            return self._drop(path)

    def clear(self) -> None:
        """Forget every entry (the hit and miss counters stay)."""
        with self._lock:
            self._entries.clear()
            self._by_text.clear()
            self._bytes = 0

    def _drop(self, path: str) -> bool:
        entry = self._entries.pop(path, None)
        if entry is None:
            return False
        self._forget(path, entry)
        return True

    def _forget(self, path: str, entry: _Entry) -> None:
        """Account for ``entry`` of ``path``, already removed from ``_entries``."""
        self._bytes -= entry.cost
        if entry.loaded.text is not None and self._by_text.get(id(entry.loaded.text)) == path:
            del self._by_text[id(entry.loaded.text)]
