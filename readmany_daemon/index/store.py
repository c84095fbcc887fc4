"""The index's one piece of mutable state: the folder records of a root and what is
kept beside them (the clock, the visible-file count, the listing failures, the warnings)
and the listeners told of every change.

The walker (``walk.py``) fills the records, the change applier (``changes.py``) keeps
them current and publishes each batch here, dump/restore (``dump.py``) reads and
rebuilds them, and ``Index`` (``model.py``) answers queries from them. The parts share
this store and nothing else, as ripgrep's ``ignore`` crate shares one ``Ignore`` matcher
between its walkers.
"""

from __future__ import annotations

from collections.abc import Callable

from readmany_daemon.index.records import Applied, DirRecord

__all__ = ["FolderRecords"]


class FolderRecords:
    """The folder records of one root and the state kept with them.

    ``dirs``: ``{rel: DirRecord}`` per walked folder (root-relative POSIX, ``""`` = the
    root, which is there once the root was walked); ``clock``: the generation, bumped by
    one per change batch that changed anything (``publish``); ``nfiles``: how many files
    are visible with every kind applied (``count_files``); ``warnings``: the index's
    warnings (unlisted folders, a vanished root), each once; ``unlisted``: walked folders
    whose last listing failed, ``rel → (errno, reason)``: they look empty, so expansions
    say so (``Index.unlisted_under``) and ``IndexChanges.is_stale`` lists them again at
    every check (a ``chmod`` changes no folder mtime)."""

    def __init__(self) -> None:
        self.dirs: dict[str, DirRecord] = {}
        self.clock = 0
        self.nfiles = 0
        self.warnings: list[str] = []
        self.unlisted: dict[str, tuple[int, str]] = {}
        self._listeners: list[Callable[[int, str, bool], None]] = []
        self._dir_listeners: list[Callable[[list[str], list[str]], None]] = []

    def add_listener(self, fn: Callable[[int, str, bool], None]) -> None:
        """Call ``fn(generation, rel, deleted)`` for every visible file that a change
        (``apply``, ``refresh``, ``verify``) added, changed (``deleted=False``) or removed
        (``deleted=True``), with the generation (``clock``) that change produced. Called
        on the thread making the change, after the index is consistent again."""
        self._listeners.append(fn)

    def add_dir_listener(self, fn: Callable[[list[str], list[str]], None]) -> None:
        """Call ``fn(added, removed)`` with the walked folders each change added and
        removed (a folder walked anew under the same name, e.g. replaced by another, is in
        both); the watcher keeps one watch per walked folder with it. ``removed`` is to
        be handled first."""
        self._dir_listeners.append(fn)

    def count_files(self) -> None:
        """Recount ``nfiles`` from the records (the files among their visible entries)."""
        self.nfiles = sum(len(rec.entries) - rec.ndirs for rec in self.dirs.values())

    def warn_once(self, message: str) -> None:
        """Add ``message`` to ``warnings`` unless it is there already."""
        if message not in self.warnings:
            self.warnings.append(message)

    def publish(
        self,
        touched: bool,
        changed: list[str],
        deleted: list[str],
        added: list[str],
        removed: list[str],
    ) -> Applied:
        """End one change batch: when anything changed (``touched``: a record did;
        ``changed``/``deleted``: visible files, root-relative) bump ``clock`` and recount
        the files, then tell the file listeners of ``changed`` and ``deleted`` and the
        folder listeners of the walked folders ``added`` (shallowest first) and ``removed``
        (sorted). Returns the batch as ``Applied`` with the generation after it."""
        if touched or changed or deleted:
            self.clock += 1
            self.count_files()
        gen = self.clock
        if changed or deleted:
            for fn in self._listeners:
                for path in changed:
                    fn(gen, path, False)
                for path in deleted:
                    fn(gen, path, True)
        if added or removed:
            for dfn in self._dir_listeners:
                dfn(added, removed)
        return Applied(gen, changed, deleted, added, removed)
