"""The in-memory model of one workspace root: one walk with pruning, then listing, glob
and folder expansion from memory.

The walk applies every rule kind and never enters a folder any kind hides (a folder
holding git-tracked paths is entered when only ``gitignore``/``default-exclude`` hide it;
its untracked entries stay hidden). Symlinks are entries (as ``git ls-files`` lists them),
never followed; sockets, FIFOs and devices are skipped (git skips them too). Per walked
folder it keeps: the visible entries (files, and sub-folders as ``"name/"``) sorted by
bytes, the hidden files and the pruned sub-folders each with the kinds that hide them, the
folder's ``st_mtime_ns`` (read before listing it) and the rule frame of its entries.

A request that turns a kind off gets, in addition, what only that kind hid: hidden files
of walked folders come from memory, pruned folders are walked on demand (applying the
remaining kinds and the ignore files found inside) and nothing of that is kept.

Paths are root-relative POSIX ``str`` (undecodable bytes as surrogate escapes, like
``os.fsdecode``); ``""`` is the root. Output order is byte order of the UTF-8/fs encoding.
Not thread-safe: the daemon makes every call holding the root's lock (``file_count`` and
``clock`` may be read without it).

``Index`` is the query front. It holds the parts, each a class with its own job, that
share one record store (ripgrep's ``ignore`` crate is the model: parts with narrow
interfaces around one matcher):

- ``store.py``: ``FolderRecords``, the records (``records.py``: folder records, change
  kinds), clock, file count, listing failures, warnings and listeners;
- ``walk.py``: ``IndexWalk``, the walker, which fills records;
- ``changes.py``: ``IndexChanges``, the change applier, which keeps them current;
- ``dump.py``: ``IndexSnapshots``, dump/restore for ``snapshot.py``;
- ``listing.py``: ``Listing``, the visible paths of the records under a mask of kinds,
  with on-demand walks of what only a kind turned off hid.

``gitlist.py`` is the cold git-seeded listing, beside the index.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterable

from readmany_daemon.index.changes import IndexChanges
from readmany_daemon.index.dump import IndexSnapshots
from readmany_daemon.index.listing import FOLDER, Listing, first_kind, merged_hidden
from readmany_daemon.index.records import (
    ALL_MASK,
    Applied,
    IndexDump,
    is_under,
)
from readmany_daemon.index.store import FolderRecords
from readmany_daemon.index.walk import IndexWalk
from readmany_daemon.paths import nfc
from readmany_daemon.rules.glob import compile_glob
from readmany_daemon.rules.ignore import IgnoreRules
from readmany_daemon.rules.kinds import ALL, DENY, Filters, Verdict
from readmany_daemon.settings import Settings

__all__ = ["FOLDER", "Index", "merged_hidden"]


class Index:
    """The workspace model of one root (see the module docstring): the query front over
    its parts ``store`` (``FolderRecords``), ``walker`` (``IndexWalk``), ``changes``
    (``IndexChanges``), ``snapshots`` (``IndexSnapshots``) and ``listing`` (``Listing``).

    ``root``: absolute real path; ``rules``: its ``IgnoreRules``; ``clock``: bumps by one
    whenever ``refresh`` finds a change; ``warnings``: unreadable folders (plus the rules'
    warnings in ``rules.warnings``); ``unlisted``: walked folders whose last listing
    failed, ``rel → (errno, reason)`` (see ``unlisted_under``); ``stat_checks``: when True,
    expansions first stat the folders they cover and re-list those that changed (the
    ``sync: "stat"`` route of PROTOCOL §6); set per request by the service, under the
    root's lock.

    ``Index(root, rules)`` is an index with nothing walked yet (an expansion walks on
    demand); ``build`` walks the root, ``restore`` rebuilds it from a snapshot.
    ``opened_ns``: ``time.time_ns()`` when it was made, before any listing (a file
    written since may be newer than what the index knows of it: the watcher's start).
    """

    def __init__(self, root: str, rules: IgnoreRules) -> None:
        self.opened_ns = time.time_ns()
        self.root = root
        self.rules = rules
        self.stat_checks = False
        self.store = FolderRecords()
        self.walker = IndexWalk(root, rules, self.store)
        self.changes = IndexChanges(self.store, self.walker)
        self.snapshots = IndexSnapshots(self.store, self.changes)
        self.listing = Listing(root, rules, self.store, self.walker)

    @classmethod
    def build(cls, root: str, settings: Settings) -> Index:
        """Walk ``root`` once with pruning and return the index.

        Raises ``NotADirectoryError``/``FileNotFoundError`` if ``root`` is not a folder.
        """
        real = os.path.realpath(root)
        if not os.path.isdir(real):
            raise NotADirectoryError(f"not a folder: {root}")
        self = cls(real, IgnoreRules(real, settings))
        self.walker.walk_into_records(
            "", self.rules.root_frame(ALL_MASK), 0, os.stat(real).st_mtime_ns, None
        )
        self.rules.compact()
        self.store.count_files()
        return self

    @classmethod
    def restore(
        cls, root: str, settings: Settings, dump: IndexDump, listed: int, reconcile: bool = True
    ) -> tuple[Index | None, str]:
        """Rebuild the index of ``root`` from ``dump`` without walking, then reconcile it
        with the disk (``IndexSnapshots.restore``; ``listed``: when the snapshot was
        taken, ``time.time_ns()``; ``reconcile`` False skips re-listing changed folders).

        Returns ``(index, "")``, or ``(None, reason)`` when the dump cannot be used (a
        folder is missing, or rules outside the workspace changed): walk instead."""
        real = os.path.realpath(root)
        self = cls(real, IgnoreRules(real, settings))
        reason = self.snapshots.restore(dump, listed, reconcile)
        return (None, reason) if reason else (self, "")

    # ---- the parts' faces ---------------------------------------------------------------

    @property
    def clock(self) -> int:
        """The generation: bumps by one per change batch that changed anything."""
        return self.store.clock

    @property
    def warnings(self) -> list[str]:
        """The index's warnings (``FolderRecords.warnings``; the list itself, which the
        runtime edits in place)."""
        return self.store.warnings

    @property
    def unlisted(self) -> dict[str, tuple[int, str]]:
        """Walked folders whose last listing failed: ``rel → (errno, reason)``."""
        return self.store.unlisted

    def add_listener(self, fn: Callable[[int, str, bool], None]) -> None:
        """``FolderRecords.add_listener``: ``fn(generation, rel, deleted)`` per visible
        file each change added, changed or removed."""
        self.store.add_listener(fn)

    def add_dir_listener(self, fn: Callable[[list[str], list[str]], None]) -> None:
        """``FolderRecords.add_dir_listener``: ``fn(added, removed)`` with the walked
        folders each change added and removed."""
        self.store.add_dir_listener(fn)

    def apply(self, changes: Iterable[tuple[str, int]]) -> Applied:
        """Apply one batch of change hints ``(rel, kinds)`` (``IndexChanges.apply``)."""
        return self.changes.apply(changes)

    def refresh(self, rel_dir: str = "") -> Applied:
        """Re-walk the subtree at ``rel_dir`` (``IndexChanges.refresh``)."""
        return self.changes.refresh(rel_dir)

    def verify(self, rel_dirs: Iterable[str] | None = None) -> Applied:
        """Re-list the walked folders (``rel_dirs``, default all) that changed since they
        were listed (``IndexChanges.verify``)."""
        return self.changes.verify(rel_dirs)

    def recheck_markers(self) -> Applied:
        """Re-list the folders whose virtualenv markers went (``IndexChanges.recheck_markers``)."""
        return self.changes.recheck_markers()

    def is_stale(self, rel_dir: str) -> bool:
        """Whether walked folder ``rel_dir`` must be listed again (``IndexChanges.is_stale``)."""
        return self.changes.is_stale(rel_dir)

    def dump(self) -> IndexDump:
        """The index as plain data for a snapshot (``IndexSnapshots.dump``)."""
        return self.snapshots.dump()

    def rule_sources(self) -> dict[str, str]:
        """``{source label: content digest}`` of the pattern lists in use
        (``IndexSnapshots.rule_sources``)."""
        return self.snapshots.rule_sources()

    # ---- queries ------------------------------------------------------------------------

    def files(self, filters: Filters = ALL) -> list[str]:
        """Every visible file (root-relative POSIX), sorted by bytes."""
        if filters.mask == ALL_MASK:
            if self.stat_checks:
                self.changes.fresh("", True, None)
            # not cached: the list would cost ~90 bytes per file, a rebuild ~25 ms at 100k
            out: list[str] = []
            records = self.store.dirs
            self.listing.emit(records, "", records[""], ALL_MASK, True, out, None, None)
            return out
        return self.expand_dir("", filters, True)

    def expand_dir(
        self, rel_dir: str, filters: Filters, recursive: bool, hidden: Counter[str] | None = None
    ) -> list[str]:
        """Visible files under folder ``rel_dir`` (``""`` = root), sorted by bytes;
        ``recursive=False``: only its own files. ``hidden`` (optional) gets, per kind name,
        how many files under ``rel_dir`` the enabled kinds hid, and under the kind's
        name and :data:`FOLDER` (``"gitignore/"``) the pruned folders, not entered (a
        pruned folder counts once, under the first kind hiding it in the order deny,
        ignore-file, gitignore, default-exclude); if ``rel_dir`` itself is hidden it
        counts once as a folder and ``[]`` is returned. A missing folder gives ``[]``."""
        rel_dir = rel_dir.strip("/")
        out: list[str] = []
        self._expand(rel_dir, filters.mask, recursive, out, hidden, None)
        return out

    def _expand(
        self,
        rel_dir: str,
        mask: int,
        recursive: bool,
        out: list[str],
        counter: Counter[str] | None,
        keep: Callable[[str], bool] | None,
    ) -> None:
        if self.stat_checks:
            self.changes.fresh(rel_dir, recursive, keep)
        records = self.store.dirs
        rec = records.get(rel_dir)
        if rec is not None:
            self.listing.emit(records, rel_dir, rec, mask, recursive, out, counter, keep)
            return
        full = os.path.join(self.root, rel_dir)
        if not rel_dir or not os.path.isdir(full) or os.path.islink(full):
            return
        self.listing.forget_unwatched(rel_dir)
        parent, _, name = rel_dir.rpartition("/")
        pframe, above = self.rules.frame_for_dir(parent, mask)
        h, r = self.rules.classify(pframe, rel_dir, name, True)
        h |= above
        if name == ".git" or ".git" in rel_dir.split("/"):
            h |= DENY
        if h & mask:
            if counter is not None:
                counter[first_kind(h & mask) + FOLDER] += 1
            return
        self.listing.walk_emit(rel_dir, pframe, r & mask, mask, recursive, out, counter, keep)

    def hidden_counts(
        self,
        rel_dir: str = "",
        filters: Filters = ALL,
        recursive: bool = True,
        pattern: str | None = None,
    ) -> dict[str, int]:
        """``{kind: count}`` of paths the enabled kinds hid from an expansion of
        ``rel_dir`` (or of glob ``pattern`` when given), files and pruned folders
        together (:func:`merged_hidden`); see ``expand_dir``. Cheaper: pass a
        ``Counter`` as ``hidden=`` to ``expand_dir``/``glob`` instead."""
        counter: Counter[str] = Counter()
        if pattern is not None:
            self.glob(pattern, filters, recursive, hidden=counter)
        else:
            self.expand_dir(rel_dir, filters, recursive, hidden=counter)
        return merged_hidden(counter)

    def glob(
        self,
        pattern: str,
        filters: Filters,
        recursive: bool = True,
        hidden: Counter[str] | None = None,
    ) -> list[str]:
        """Visible files matching glob ``pattern`` (PROTOCOL §3: ``*`` and ``?`` never
        cross ``/``, ``**`` does, ``[...]`` classes, ``{a,b}`` braces, dotfiles match,
        case-sensitive; NFC and NFD spellings of a name match alike, the paths keep
        their on-disk spelling), sorted by bytes. ``recursive=False``: ``**`` acts as ``*``.
        ``hidden``: as for ``expand_dir`` (hidden files that match, and pruned folders
        the pattern could reach, count once each).

        Raises ``ValueError`` (readable message) for an empty, absolute or ``..``
        pattern, or one wcmatch rejects."""
        rx, start, seg_ok = compile_glob(nfc(pattern), recursive)
        if not start.isascii():
            # a literal folder may be spelled in either form on disk, or both (two
            # folders): start above its first non-ASCII name; ``keep`` prunes the rest
            parts = start.split("/")
            start = "/".join(parts[: next(i for i, p in enumerate(parts) if not p.isascii())])
        out: list[str] = []

        def keep(path: str) -> bool:
            if not path.isascii():
                path = nfc(path)  # either form matches (the pattern is NFC)
            if path.endswith("/"):
                return seg_ok(path[:-1])
            return rx.fullmatch(path) is not None

        self._expand(start, filters.mask, True, out, hidden, keep)
        return out

    def explain(self, rel: str, filters: Filters = ALL) -> Verdict | None:
        """Which rule hides ``rel`` under ``filters`` (any path: inside pruned folders, or
        not existing), or ``None`` if it is visible (or would be)."""
        rel = rel.strip("/")
        if not rel:
            return None
        isdir = self.is_dir(rel)
        if isdir is None:
            full = os.path.join(self.root, rel)
            isdir = os.path.isdir(full) and not os.path.islink(full)
        return self.rules.check(rel, isdir, filters)

    def is_dir(self, rel: str) -> bool | None:
        """True for a walked (visible) folder, False for a visible file, ``None`` for a
        path the index does not show (hidden, or absent)."""
        rel = rel.strip("/")
        if self.stat_checks:
            self.changes.fresh_path(rel)
        records = self.store.dirs
        if rel in records:
            return True
        parent, _, name = rel.rpartition("/")
        rec = records.get(parent)
        if rec is not None and name in rec.entries:
            return False
        return None

    def contains(self, rel: str, filters: Filters = ALL) -> bool:
        """Whether ``rel`` is a visible file or folder under ``filters`` (``""`` = root)."""
        rel = rel.strip("/")
        if self.is_dir(rel) is not None or not rel:
            return True
        if filters.mask == ALL_MASK:
            return False
        full = os.path.join(self.root, rel)
        if not os.path.lexists(full):
            return False
        isdir = os.path.isdir(full) and not os.path.islink(full)
        return self.rules.check(rel, isdir, filters) is None

    @property
    def file_count(self) -> int:
        """How many files are visible with every kind applied (kept up to date by every
        change, so reading it needs no lock)."""
        return self.store.nfiles

    def dir_mtime(self, rel_dir: str) -> int | None:
        """``st_mtime_ns`` recorded for walked folder ``rel_dir`` (read before listing it)."""
        rec = self.store.dirs.get(rel_dir)
        return rec.mtime if rec is not None else None

    def walked_dirs(self) -> list[str]:
        """Every walked (visible) folder, ``""`` first."""
        return list(self.store.dirs)

    def walks(self, rel_dir: str) -> bool:
        """Whether ``rel_dir`` is a walked (visible) folder, as the index holds it now
        (no stat checks)."""
        return rel_dir in self.store.dirs

    def dir_entries(self, rel_dir: str) -> tuple[str, ...]:
        """The visible entries of walked folder ``rel_dir`` (files, and sub-folders as
        ``"name/"``), byte-sorted, as the index holds them now; ``()`` if not walked."""
        rec = self.store.dirs.get(rel_dir)
        return rec.entries if rec is not None else ()

    def stat(self, rel: str) -> os.stat_result | None:
        """``lstat`` of ``rel`` now (files are not stat'ed by the walk), or ``None``."""
        try:
            return os.lstat(os.path.join(self.root, rel))
        except OSError:
            return None

    def unlisted_under(self, rel_dir: str, recursive: bool = True) -> list[tuple[str, int, str]]:
        """``(folder, errno, reason)`` for the walked folders at or below ``rel_dir``
        (only ``rel_dir`` itself when not ``recursive``) whose last listing failed, sorted:
        their files are unknown, so an expansion over them is incomplete and says so."""
        if not self.unlisted:
            return []
        out = []
        for rel, (err, reason) in self.unlisted.items():
            if rel not in self.store.dirs:
                continue  # gone, or not walked any more (hidden meanwhile)
            inside = rel == rel_dir or (recursive and (not rel_dir or is_under(rel, rel_dir)))
            if inside:
                out.append((rel, err, reason))
        return sorted(out)
