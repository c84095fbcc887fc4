"""An index as plain data and back: ``dump`` for a snapshot (``snapshot.py`` writes it
to disk) and ``restore``, which rebuilds the records and frames without a walk and then
reconciles them with the disk.

``IndexSnapshots`` reads and fills the record store (``store.py``) and reconciles through
the change applier (``changes.py``); ``Index.restore`` (``model.py``) makes the index it
restores into.
"""

from __future__ import annotations

import gc
import os
from collections import deque

from readmany_daemon.index.changes import IndexChanges
from readmany_daemon.index.records import ALL_MASK, FOLDER, TREE, DirRecord, IndexDump
from readmany_daemon.index.store import FolderRecords
from readmany_daemon.racy import is_racy
from readmany_daemon.rules.ignore import Frame

__all__ = ["IndexSnapshots"]


class IndexSnapshots:
    """``dump``/``restore`` of the records of ``store`` (see the module docstring), with
    the rules, the walker's rule names and the change batches of ``changes``."""

    def __init__(self, store: FolderRecords, changes: IndexChanges) -> None:
        self.store = store
        self.changes = changes
        self.rules = changes.rules

    def dump(self) -> IndexDump:
        """The index as plain data for a snapshot (``snapshot.py``): per walked folder
        ``(rel, entries, hidden, pruned, excl, mtime, ndirs)`` (mtime 0 for a racy
        record, so a restore lists it again), the rule sources its frames use
        (``{label: digest}``), and the tracked paths it was evaluated with (None when
        git's answer was never needed). The tuples are immutable: encode them without
        the lock."""
        dirs = [
            (
                rel,
                rec.entries,
                rec.hidden,
                rec.pruned,
                rec.excl,
                0 if is_racy(rec.mtime, rec.listed) else rec.mtime,
                rec.ndirs,
            )
            for rel, rec in self.store.dirs.items()
        ]
        t = self.rules.tracked
        tracked = t.joined() if t is not None else None
        stamp = t.stamp if t is not None else None
        return IndexDump(dirs, self.rule_sources(), tracked, stamp)

    def rule_sources(self) -> dict[str, str]:
        """``{source label: content digest}`` of every pattern list the walked folders'
        frames use (ignore files, ``info/exclude``, ``core.excludesFile``, settings)."""
        out: dict[str, str] = {}
        seen: set[int] = set()
        rules = self.rules
        for lst in (rules.deny_list, rules.default_list):
            out[lst.source] = lst.digest
        for rec in self.store.dirs.values():
            fr = rec.frame
            if id(fr) in seen:
                continue
            seen.add(id(fr))
            for lst in fr.lists:
                out[lst.source] = lst.digest
        return out

    def restore(self, dump: IndexDump, listed: int, reconcile: bool = True) -> str:
        """Rebuild the records of the (empty) store from ``dump`` (see ``dump``) without
        walking: frames are derived from each folder's saved names, then the snapshot is
        reconciled with the disk: folders whose ignore files changed are re-walked, git's
        tracked-set changes re-evaluated, and (``reconcile``) every folder whose mtime
        changed or was racy is re-listed (``verify``; a caller that stats on request
        instead, until a watcher has verified the folders, may skip it). ``listed``: when
        the snapshot was taken (``time.time_ns()``).

        Returns ``""``, or the reason the dump cannot be used (a folder is missing, or
        rules outside the workspace changed): walk instead."""
        rules = self.rules
        changes = self.changes
        by_rel = {d[0]: d for d in dump.dirs}
        if "" not in by_rel:
            return "no root folder in the snapshot"
        records = self.store.dirs
        folders: dict[str, set[str]] = {}
        # names that may change a folder's rules (as entries: "name" or "name/")
        rule_names = changes.walker.rule_names
        marks = rule_names | {n + "/" for n in rule_names}
        enter = rules.enter
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            queue: deque[tuple[str, Frame]] = deque([("", rules.root_frame(ALL_MASK))])
            while queue:
                rel, frame = queue.popleft()
                d = by_rel[rel]
                entries = d[1]
                ndirs = d[6]
                rec = DirRecord(entries, d[2], d[3], d[4], d[5], frame, ndirs, listed)
                records[rel] = rec
                if not ndirs:
                    continue
                prefix = rel + "/" if rel else ""
                excl = dict(rec.excl) if rec.excl else None
                for e in entries:
                    if e[-1] != "/":
                        continue
                    name = e[:-1]
                    sub = prefix + name
                    child = by_rel.get(sub)
                    if child is None:
                        return f"folder {sub!r} is missing from the snapshot"
                    ex = excl.get(name, 0) if excl else 0
                    if not ex and marks.isdisjoint(child[1]) and not child[2] and not child[3]:
                        queue.append((sub, frame))  # nothing there changes the rules
                        continue
                    files = [f for f in child[1] if f[-1] != "/"]
                    files.extend(x[0] for x in child[2])
                    dirnames = [f[:-1] for f in child[1] if f[-1] == "/"]
                    dirnames.extend(x[0] for x in child[3])
                    sub_frame, hidden = enter(frame, sub, ex, files, dirnames)
                    if hidden:
                        folders.setdefault(rel, set()).add(name)
                    queue.append((sub, sub_frame))
        finally:
            if was_enabled:
                gc.enable()
        trees: set[str] = set()
        now = self.rule_sources()
        for label in set(now) | set(dump.sources):
            if now.get(label) == dump.sources.get(label):
                continue
            if os.path.isabs(label) or label in ("denyPatterns", "defaultExcludes"):
                return f"rules outside the workspace changed ({label})"
            rel = label.rpartition("/")[0]
            while rel and rel not in records:
                rel = rel.rpartition("/")[0]
            trees.add(rel)
        t = rules.tracked
        if dump.tracked is not None and t is not None and t.stamp != dump.stamp:
            current = list(t.load())
            before = dump.tracked
            if isinstance(before, str) and "\0".join(current) != before:
                before = before.split("\0") if before else []
            if not isinstance(before, str) and current != before:
                changes.tracked_diff(set(current).symmetric_difference(before), trees, folders)
        self.store.count_files()
        if trees or folders:
            changes.apply([(r, TREE) for r in trees] + [(r, FOLDER) for r in folders])
        if reconcile:
            changes.verify()
        # (no rules.compact(): it would wait for ``git ls-files``, read only when needed)
        return ""
