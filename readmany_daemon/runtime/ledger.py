"""The change ledger of a session: which files it was given, and which changed since.

An MCP server session (one ``readmany mcp`` process) and an LSP connection each keep a
:class:`Ledger` (PROTOCOL §4, "Stale files"). A file is *given* when an answer delivers
it with content (``ok`` or ``partial``: windows, symbols and cursor pages included) or
answers it ``unchanged`` to a receipt; the ledger keeps its ``sha256`` as that answer
gave it. Each later read answer names the given files whose bytes no longer hash to that
``sha256`` (``modified``) or that are gone (``deleted``), once per change: the named
file's entry then holds its new ``sha256`` (a deleted one leaves the ledger). A file
delivered again in the same answer is not named; what it holds then becomes its entry.
Rewriting the same bytes changes the stat, not the ``sha256``: no change.

A check costs what changed, not what the ledger holds. Two kinds of entries:

- **Fed by a change log.** The read that gave the file ran behind the barrier of a
  watcher in state ``running`` (a cookie or a quiet queue, PROTOCOL §6), and the file
  was a visible regular file of the index with one link. The watcher sees every write
  to such a file (inotify reports a same-size write with the mtime put back; a stat
  compare may not) and the index records each one in the root's change log
  (``ChangeLog.touched_after``) with the generation it produced. The entry's root keeps
  a :class:`Mark`: the index generation taken right after a barrier, before any content
  was loaded. A later check reads only the paths the log recorded after that
  generation; a path it does not name did not change. A link elsewhere, a symbolic
  link's target or a hidden file would be reported under another name, or not at all:
  those are not fed.
- **Checked by stat** (no watcher, the stat route, ``sync`` other than ``auto``, the
  in-process MCP backend, a file the log would not report, and every entry of a root
  whose watcher degraded, restarted, overflowed or stopped since its mark, or whose log
  dropped that generation): a ``stat`` per entry, and the file hashed again
  (``racy.file_sha256``) only when its ``StatKey`` changed since it was last proved, or
  when that proof was racy (git's rule, ``racy.is_racy``, applied to the later of its
  mtime and ctime: a write restores an mtime but always sets the ctime). Such an entry
  is fed again once a check after a running watcher's barrier finds it coverable.

The notice, ``stale`` and their place in each format are ``runtime/stale.py``'s.
"""

from __future__ import annotations

import bisect
import os
import stat as stat_mod
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Final, NamedTuple

from readmany_daemon.racy import StatKey, file_sha256, is_racy, stat_key

if TYPE_CHECKING:
    from readmany_daemon.runtime.roots import RootEntry
    from readmany_daemon.runtime.watcher import Watcher

__all__ = ["MAX_ENTRIES", "Ledger", "Mark", "barrier_mark", "given_files"]

#: Entries a session's ledger keeps at most; past it the oldest given is dropped
#: (PROTOCOL §4, "Stale files").
MAX_ENTRIES: Final = 100_000
#: The most bytes hashed of one file (a larger one is ``modified``: no answer gave it).
_HASH_LIMIT: Final = 1 << 40

#: The statuses of a given file (PROTOCOL §4): delivered with content, or unchanged.
_GIVEN: Final = frozenset({"ok", "partial", "unchanged"})


class Mark(NamedTuple):
    """Where one root's change log stood at a read's barrier: the root (``entry``), the
    watcher that vouched (``watcher``, in state ``running``), the root's clock
    ``instance``, the watcher's ``gaps`` count, and ``generation``, the index generation
    (``Index.clock``) taken after the barrier and before any content was loaded."""

    entry: RootEntry
    watcher: Watcher
    instance: str
    gaps: int
    generation: int

    def same_log(self, other: Mark) -> bool:
        """Whether ``other`` is a position in the same change log: the same root,
        watcher, instance and gaps (the generations may differ)."""
        return self[:4] == other[:4]


def barrier_mark(entry: RootEntry, sync: str, stat_route: bool) -> Mark | None:
    """The :class:`Mark` of a read of ``entry`` (asked with ``sync``) right after its
    barrier (``Freshness.ensure``, which yielded ``stat_route``), or None when no
    running watcher's barrier vouched for it (the stat route, ``sync`` ``stat`` or
    ``none``, no watcher, a watcher starting, degraded or off). The caller holds the
    root's lock."""
    watcher = entry.watcher
    if sync != "auto" or stat_route or watcher is None:
        return None
    if watcher.state != "running" or watcher.root_lost:
        return None
    return Mark(entry, watcher, entry.ws.instance, watcher.gaps, entry.ws.index.clock)


#: A ``StatKey`` packed (size, mtime_ns, ino, ctime_ns): 32 bytes, not four ints.
_KEY: Final = struct.Struct("<QqQq")


def _packed(key: StatKey) -> bytes:
    """``key`` as the 32 bytes an entry keeps (compared whole, as ``StatKey`` is)."""
    return _KEY.pack(key.size, key.mtime_ns, key.ino, key.ctime_ns)


class _Entry(NamedTuple):
    """What the ledger holds of one given file: the ``sha256`` given (its 32-byte
    digest), the ``StatKey`` that last proved it (``_packed``; ``None``: not yet), when
    that proof began (ns since the epoch, ``time.time_ns()`` taken before the
    ``stat``), and ``seq``, the order it was given in (the oldest first). Compact: a
    session may hold 100,000."""

    sha256: bytes
    key: bytes | None
    proved_ns: int
    seq: int


class _Feed:
    """The entries of one root fed by its change log since ``generation``: their
    absolute ``paths``, and the :class:`Mark` whose watcher, instance and gaps must
    still hold for the log to be whole."""

    __slots__ = ("generation", "mark", "paths", "prefix")

    def __init__(self, mark: Mark) -> None:
        self.mark = mark
        self.generation = mark.generation
        self.prefix = mark.entry.ws.root.rstrip(os.sep) + os.sep
        self.paths: set[str] = set()

    def holds(self) -> bool:
        """Whether the log still holds every change since the mark: the same watcher,
        still ``running``, with no gap since, and the same clock instance."""
        mark = self.mark
        watcher = mark.watcher
        return (
            mark.entry.watcher is watcher
            and watcher.state == "running"
            and not watcher.root_lost
            and watcher.gaps == mark.gaps
            and mark.entry.ws.instance == mark.instance
        )

    def touched(self) -> tuple[set[str], int] | None:
        """The absolute paths the log recorded after ``generation``, with the
        generation up to which that is whole (every batch before the index's clock at
        the call), or None when the log cannot tell (``holds`` no longer)."""
        if not self.holds():
            return None
        entry = self.mark.entry
        whole = entry.ws.index.clock - 1  # the batch of ``clock`` may be in progress
        rels = entry.changelog.touched_after(self.generation)
        if rels is None or not self.holds():  # checked again: a reset swaps the log
            return None
        return {self.prefix + rel for rel in rels}, whole

    def coverable(self, path: str, st: os.stat_result | None) -> bool:
        """Whether the log reports every write of ``path`` (``st``: its ``stat`` now):
        a regular file with one link, visible in the index."""
        if st is None or not stat_mod.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return False
        if not path.startswith(self.prefix):
            return False
        parent, _, name = path[len(self.prefix) :].rpartition("/")
        entries = self.mark.entry.ws.index.dir_entries(parent)  # in byte order
        at = bisect.bisect_left(entries, name)  # code point order: byte order but escapes
        return (at < len(entries) and entries[at] == name) or name in entries


def _stat(path: str) -> os.stat_result | None:
    """``os.stat`` of ``path``, ``None`` when it names no file (any more)."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def given_files(files: Iterable[tuple[str, str, str | None]], root: str) -> dict[str, str]:
    """The files an answer gives (PROTOCOL §4: ``ok``, ``partial`` or ``unchanged``
    entries with a ``sha256``), as {absolute path: sha256}; ``files`` are the answer's
    ``files`` entries as (path, status, sha256), ``root`` the answer's root folder."""
    out: dict[str, str] = {}
    for path, status, sha in files:
        # A label with U+FFFD stands for bytes that are not UTF-8 (``wire_safe``): it
        # names no file to check again.
        if status in _GIVEN and sha and "\ufffd" not in path:
            out[os.path.join(root, path)] = sha.lower()
    return out


class Ledger:
    """One session's given files: {absolute path: sha256 given}, oldest first, at most
    ``max_entries``; each entry fed by its root's change log or checked by stat (see the
    module). Thread-safe: one lock around each :meth:`settle`."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        #: One feed per root (``id`` of its ``RootEntry``); every other entry is stat'ed.
        self._feeds: dict[int, _Feed] = {}
        self._by_stat: set[str] = set()
        self._seq = 0
        self._lock = threading.Lock()
        #: Entries stat'ed by the last check (for tests and the benchmark).
        self.last_stat_checks = 0

    def __len__(self) -> int:
        return len(self._entries)

    def holds_under(self, root: str) -> bool:
        """Whether an entry lies below folder ``root`` (absolute, real)."""
        prefix = root.rstrip("/") + "/"
        with self._lock:
            return any(path.startswith(prefix) for path in self._entries)

    def _changed(
        self, path: str, entry: _Entry, began: int
    ) -> tuple[str | None, os.stat_result | None]:
        """``"modified"``, ``"deleted"`` or ``None`` for one entry, with its ``stat``,
        updating it: a modified file's entry takes its new ``sha256`` (named once per
        change), a deleted one is dropped, a proved one keeps its ``sha256`` with the
        new proof."""
        st = _stat(path)
        if st is None:
            self._forget(path)
            return "deleted", None
        key = stat_key(st)
        packed = _packed(key)
        racy = is_racy(max(key.mtime_ns, key.ctime_ns), entry.proved_ns)
        if packed == entry.key and not racy:
            return None, st
        try:
            hexdigest = file_sha256(path, _HASH_LIMIT, key=key)
        except OSError:
            return None, st  # unreadable now (a folder, no permission): nothing to claim
        if hexdigest is None:
            return None, st  # changed while hashed: checked again next time
        sha = bytes.fromhex(hexdigest)
        sha = entry.sha256 if sha == entry.sha256 else sha
        self._entries[path] = entry._replace(sha256=sha, key=packed, proved_ns=began)
        return (None if sha == entry.sha256 else "modified"), st

    def _forget(self, path: str) -> None:
        """Drop ``path``'s entry, from whichever set checks it."""
        self._entries.pop(path, None)
        self._by_stat.discard(path)
        for feed in self._feeds.values():
            feed.paths.discard(path)

    def _recheck(
        self,
        paths: Iterable[str],
        skip: Mapping[str, str],
        began: int,
        out: dict[str, tuple[str, int]],
    ) -> Iterator[tuple[str, os.stat_result | None]]:
        """Check each of ``paths`` that has an entry (those in ``skip`` left alone) into
        ``out`` {path: (change, seq)}; yields (path, its ``stat``) for each not deleted."""
        for path in paths:
            entry = self._entries.get(path)
            if entry is None or path in skip:
                continue
            change, st = self._changed(path, entry, began)
            if change is not None:
                out[path] = (change, entry.seq)
            if change != "deleted":
                yield path, st

    def _check_feed(
        self, feed: _Feed, skip: Mapping[str, str], began: int, out: dict[str, tuple[str, int]]
    ) -> bool:
        """Check ``feed``'s entries the log names (``skip`` left alone) into ``out``
        {path: (change, seq)}; False when the log cannot tell (the caller stats them)."""
        got = feed.touched()
        if got is None:
            return False
        touched, whole = got
        for path, st in self._recheck(touched & feed.paths, skip, began, out):
            if not feed.coverable(path, st):
                feed.paths.discard(path)  # hidden now, or a link: the log may not report it
                self._by_stat.add(path)
        feed.generation = max(feed.generation, whole)
        return True

    def _check(self, skip: Mapping[str, str], mark: Mark | None) -> dict[str, tuple[str, int]]:
        """Every entry that changed since it was given or last named, as {absolute
        path: (change, the order it was given in)}; the paths in ``skip`` (given again
        now) are left alone. ``mark``: this read's, or None."""
        out: dict[str, tuple[str, int]] = {}
        began = time.time_ns()  # before every stat: a proof no later than its stat
        for key, feed in list(self._feeds.items()):
            if not self._check_feed(feed, skip, began, out):
                self._by_stat |= feed.paths  # the log lost track: stat them from now on
                del self._feeds[key]
            elif mark is not None and key == id(mark.entry) and feed.mark.same_log(mark):
                # This read's files were loaded after its barrier: what the log records
                # after it is looked at again at the next check.
                feed.generation = mark.generation
        own = self._feed_for(mark)
        self.last_stat_checks = len(self._by_stat)
        for path, st in self._recheck(list(self._by_stat), skip, began, out):
            if own is not None and own.coverable(path, st):
                self._by_stat.discard(path)  # proved after the barrier: the log from here
                own.paths.add(path)
        if not self._by_stat:
            self._by_stat = set()  # a set keeps its table when emptied: let it go
        return out

    def _feed_for(self, mark: Mark | None) -> _Feed | None:
        """The feed of ``mark``'s root, made anew when the last one's mark no longer
        holds (its entries are stat'ed then); None without a mark."""
        if mark is None:
            return None
        feed = self._feeds.get(id(mark.entry))
        if feed is not None and not feed.mark.same_log(mark):
            self._by_stat |= feed.paths  # another log now: the old one's entries are stat'ed
            feed = None
        if feed is None:
            feed = self._feeds[id(mark.entry)] = _Feed(mark)
        return feed

    def _record(self, given: Mapping[str, str], began_ns: int, mark: Mark | None) -> None:
        """Remember ``given`` ({absolute path: sha256}) as answered by a read that began
        at ``began_ns`` behind ``mark``: each is proved by the ``stat`` taken now, racy
        unless its ctime is older than the read (a write during the read is hashed at
        the next check), and fed by ``mark``'s log when coverable. A file given again
        with the same ``sha256`` and stat keeps its entry object and its place in the
        stale order (``seq``), and moves to the newest end of the bound: a long session
        given a large tree again and again allocates nothing lasting for it (objects
        made amid a large answer's short-lived ones would pin its memory).
        """
        own = self._feed_for(mark)
        entries = self._entries
        for path, hexdigest in given.items():
            try:
                sha = bytes.fromhex(hexdigest)
            except ValueError:
                continue  # no digest: nothing to compare with later
            st = _stat(path)
            key = None if st is None else _packed(stat_key(st))
            old = entries.get(path)
            if old is not None:
                entries.move_to_end(path)  # given again: the newest
            if old is None or old.sha256 != sha or old.key != key:
                self._seq += 1
                entries[path] = _Entry(sha, key, began_ns, self._seq)
            # else: the same bytes and stat as last given, and that proof still holds
            # (an older one is no less strict): no new object for a file given again
            if own is not None and own.coverable(path, st):
                if path not in own.paths:
                    self._move(path, own.paths)
            elif path not in self._by_stat:
                self._move(path, self._by_stat)
        while len(entries) > self.max_entries:
            path, _ = entries.popitem(last=False)
            self._forget(path)

    def _move(self, path: str, into: set[str]) -> None:
        """Make ``into`` (a feed's paths or the stat-checked set) the one set holding
        ``path``."""
        self._by_stat.discard(path)
        for feed in self._feeds.values():
            feed.paths.discard(path)
        into.add(path)

    def settle_apart(self, given: Mapping[str, str]) -> list[tuple[str, str]]:
        """For a read answered where another ledger keeps ``given`` (the daemon's
        connection, for an MCP session, PROTOCOL §4): this ledger's entries that changed
        since, as :meth:`settle` names them (``given`` left out), each by a ``stat``;
        the entries of ``given`` are then dropped here (the other ledger holds them)."""
        with self._lock:
            changed = self._check(given, None)
            for path in given:
                if path in self._entries:
                    self._forget(path)
        ranked = sorted(changed.items(), key=lambda item: item[1][1])
        return [(path, change) for path, (change, _seq) in ranked]

    def remember(self, given: Mapping[str, str], began_ns: int, named: Iterable[str]) -> None:
        """Keep what another ledger was told, unchecked (an MCP session's copy of its
        daemon connection's ledger, taken over by :meth:`adopt` when that connection is
        lost): the entries of ``named`` (absolute paths that ledger has just named)
        take the ``sha256`` their files hash to now, or leave when gone; then ``given``
        is recorded as :meth:`settle` records it, as of ``began_ns``."""
        with self._lock:
            began = time.time_ns()
            for path in named:
                entry = self._entries.get(path)
                if entry is not None and path not in given:
                    self._changed(path, entry._replace(key=None), began)
            self._record(given, began_ns, None)

    def adopt(self, other: Ledger) -> None:
        """Take ``other``'s entries (a copy of a lost connection's ledger), each checked
        by ``stat`` from now on as the newest given, oldest first; ``other`` is left
        empty. The bound holds (the oldest dropped)."""
        with self._lock, other._lock:
            for path, entry in other._entries.items():
                self._forget(path)
                self._seq += 1
                self._entries[path] = entry._replace(seq=self._seq)
                self._by_stat.add(path)
            other._entries.clear()
            other._by_stat.clear()
            other._feeds.clear()
            while len(self._entries) > self.max_entries:
                path, _ = self._entries.popitem(last=False)
                self._forget(path)

    def settle(
        self, given: Mapping[str, str], began_ns: int, mark: Mark | None = None
    ) -> list[tuple[str, str]]:
        """For one read answer: the given files that changed since (``given`` left
        out), oldest given first, as (absolute path, ``"modified"`` or ``"deleted"``);
        then ``given`` ({absolute path: sha256}, the answer's own,
        :func:`given_files`) remembered as of ``began_ns`` (``time.time_ns()`` taken
        before the read began). ``mark``: the read's :func:`barrier_mark` (None: no
        watcher vouched, or a read answered elsewhere)."""
        with self._lock:
            changed = self._check(given, mark)
            self._record(given, began_ns, mark)
        ranked = sorted(changed.items(), key=lambda item: item[1][1])
        return [(path, change) for path, (change, _seq) in ranked]
