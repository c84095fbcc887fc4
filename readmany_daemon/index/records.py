"""Folder records of the index and the vocabulary of its changes: the change-hint kinds
(``ENTRY`` … ``RULES``), ``Applied`` (what one change did), ``IndexDump`` (an index as
plain data) and ``DirRecord`` (one walked folder; git's racy rule for its mtime is
``racy.is_racy``).

Paths are root-relative POSIX ``str`` (undecodable bytes as surrogate escapes, like
``os.fsdecode``); ``""`` is the root. Output order is byte order of the UTF-8/fs encoding.
"""

from __future__ import annotations

import os
from typing import Final, NamedTuple

from readmany_daemon.rules.ignore import Frame

__all__ = [
    "ALL_MASK",
    "CONTENT",
    "ENTRY",
    "FOLDER",
    "GIT_INDEX",
    "RULES",
    "TREE",
    "Applied",
    "DirRecord",
    "IndexDump",
    "is_under",
    "prune_child",
    "sort_keys",
    "subtree_of",
    "visible_files",
]

#: Change-hint kinds for ``Index.apply`` (bit flags; one hint may carry several).
ENTRY: Final = 1  # rel was created, deleted or renamed: its folder's listing changed
CONTENT: Final = 2  # rel's content or metadata changed (an ignore file: its rules did)
FOLDER: Final = 4  # list folder rel again (a vanished one: its parent)
TREE: Final = 8  # walk the subtree at rel again (re-reading its ignore files)
GIT_INDEX: Final = 16  # git's index file changed: the tracked set may have (rel unused)
RULES: Final = 32  # rules of the whole root changed ($GIT_COMMON_DIR/info/exclude)

#: every kind (``Filters().mask``)
ALL_MASK: Final = 15
_fsencode = os.fsencode


def sort_keys(keys: list[str]) -> None:
    """Sort names in byte order of their fs encoding (code point order equals UTF-8
    byte order except for surrogate escapes, so only those need encoding)."""
    if "".join(keys).isascii():
        keys.sort()
    else:
        keys.sort(key=_fsencode)


class Applied(NamedTuple):
    """What one change (``Index.apply``/``refresh``/``verify``) did: the ``generation``
    (``clock``) after it, the visible files it ``changed`` (added or modified) and
    ``deleted``, the walked folders it added and removed (root-relative POSIX)."""

    generation: int
    changed: list[str]
    deleted: list[str]
    added_dirs: list[str]
    removed_dirs: list[str]


class IndexDump(NamedTuple):
    """An index as plain data (``Index.dump``/``Index.restore``): ``dirs`` holds per
    walked folder ``(rel, entries, hidden, pruned, excl, mtime, ndirs)``, ``sources`` maps
    each rule source label to its content digest, ``tracked`` is git's tracked set the
    verdicts were made with (a list, or the same joined by NUL; None when they never
    needed it)."""

    dirs: list[
        tuple[
            str,
            tuple[str, ...],
            tuple[tuple[str, int], ...],
            tuple[tuple[str, int], ...],
            tuple[tuple[str, int], ...],
            int,
            int,
        ]
    ]
    sources: dict[str, str]
    tracked: list[str] | str | None
    #: ``(st_mtime_ns, st_size)`` of git's index file when ``tracked`` was read: an
    #: unchanged stamp spares the restore a wait for ``git ls-files``
    stamp: tuple[int, int] | None = None


def is_under(rel: str, top: str) -> bool:
    """Whether ``rel`` is folder ``top`` or below it (``""`` holds everything)."""
    return not top or rel == top or rel.startswith(top + "/")


def subtree_of(records: dict[str, DirRecord], rel_dir: str) -> dict[str, DirRecord]:
    """The records of folder ``rel_dir`` and every walked folder below it."""
    out: dict[str, DirRecord] = {}
    stack = [rel_dir]
    while stack:
        d = stack.pop()
        rec = records.get(d)
        if rec is None:
            continue
        out[d] = rec
        if not rec.ndirs:
            continue
        prefix = d + "/" if d else ""
        for e in rec.entries:
            if e[-1] == "/":
                stack.append(prefix + e[:-1])
    return out


def prune_child(records: dict[str, DirRecord], parent: str, name: str, mask: int) -> None:
    """Mark sub-folder ``name`` of walked folder ``parent`` (a key of ``records``) as
    pruned by the kinds ``mask``: out of the parent's visible entries and rescued folders,
    into its pruned ones. Its own records, if any, are the caller's to drop."""
    prec = records[parent]
    key = name + "/"
    if key in prec.entries:
        prec.ndirs -= 1
    prec.entries = tuple(e for e in prec.entries if e != key)
    prec.excl = tuple(x for x in prec.excl if x[0] != name)
    prec.pruned = (*prec.pruned, (name, mask))


class DirRecord:
    """One walked folder. ``entries``: visible files and ``"sub/"`` folders, byte-sorted;
    ``hidden``: ``(file name, kinds mask)``; ``pruned``: ``(folder name, kinds mask)``;
    ``mtime``: the folder's ``st_mtime_ns``; ``frame``: rules for its entries;
    ``excl``: ``(folder name, kinds mask)`` for visible sub-folders entered only because
    they hold tracked paths (those kinds hide everything untracked below); ``listed``:
    ``time.time_ns()`` taken before ``mtime`` was read (for the racy rule, see
    ``Index.is_stale``)."""

    __slots__ = ("entries", "excl", "frame", "hidden", "listed", "mtime", "ndirs", "pruned")

    def __init__(
        self,
        entries: tuple[str, ...],
        hidden: tuple[tuple[str, int], ...],
        pruned: tuple[tuple[str, int], ...],
        excl: tuple[tuple[str, int], ...],
        mtime: int,
        frame: Frame,
        ndirs: int,
        listed: int = 0,
    ) -> None:
        self.ndirs = ndirs  # how many entries are folders
        self.entries = entries
        self.hidden = hidden
        self.pruned = pruned
        self.excl = excl
        self.mtime = mtime
        self.frame = frame
        self.listed = listed

    def same(self, other: DirRecord) -> bool:
        """Whether ``other`` records the same listing and verdicts (entries, hidden, pruned,
        excluded, marks); mtimes are not compared."""
        return (
            self.entries == other.entries
            and self.hidden == other.hidden
            and self.pruned == other.pruned
            and self.excl == other.excl
        )


def visible_files(records: dict[str, DirRecord]) -> set[str]:
    """Every visible file of ``records`` (root-relative)."""
    out: set[str] = set()
    for d, rec in records.items():
        prefix = d + "/" if d else ""
        out.update(prefix + e for e in rec.entries if e[-1] != "/")
    return out
