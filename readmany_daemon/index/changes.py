"""Keeping an index current: change hints confirmed by ``lstat``/``scandir``,
re-listing, re-walking and the stat route.

Keeping it current (``apply``, fed by ``runtime/watcher.py`` or by tests with scripted batches):
change hints ``(rel, kinds)`` are only hints, confirmed by ``lstat``/``scandir``. A
folder named by a hint is listed again one level (``_relist``), keeping the records of
sub-folders whose verdict did not change; a changed ignore file, ``.git`` or virtualenv
marker re-walks its folder's subtree; ``$GIT_COMMON_DIR/info/exclude`` re-walks the root;
a changed git index re-reads the tracked set and re-lists the folders on the way to each
path whose tracked state changed. Each batch is published to the record store
(``store.py``), which bumps ``clock`` once and tells the listeners which visible files
changed or went (``add_listener``: the change log behind ``readMany/changedSince``) and
which folders were walked or dropped (``add_dir_listener``: the watcher's watches).
``verify``/``is_stale`` compare folder mtimes with the records, with git's racy rule
(``RACY_NS``): the stat route of PROTOCOL §6 (``fresh``, when ``Index.stat_checks`` is
on) and the reconcile after a restart.

``IndexChanges`` holds the store and the walker (``walk.py``) it re-walks with; it
owns no state of its own between batches.
"""

from __future__ import annotations

import errno
import heapq
import os
import stat as _stat
from collections.abc import Callable, Iterable
from typing import Final

from readmany_daemon.index.records import (
    ALL_MASK,
    CONTENT,
    ENTRY,
    FOLDER,
    GIT_INDEX,
    RULES,
    TREE,
    Applied,
    DirRecord,
    is_under,
    prune_child,
    subtree_of,
    visible_files,
)
from readmany_daemon.index.store import FolderRecords
from readmany_daemon.index.walk import IndexWalk
from readmany_daemon.racy import is_racy
from readmany_daemon.rules.frame import Frame, same_rules
from readmany_daemon.rules.kinds import DEFAULT_EXCLUDE

__all__ = ["RETRACK_LIMIT", "ROOT_GONE", "IndexChanges"]

#: The index warning of a root whose folder vanished (``str.format`` with the root); the
#: runtime drops it once the folder exists again (a root's warnings say what is true now).
ROOT_GONE: Final = "the workspace folder {} is gone"

#: Past this many paths whose tracked state changed at once (a checkout), the whole
#: root is walked again instead of re-listing the folders on the way to each.
RETRACK_LIMIT: Final = 5000

_DONE: Final = 0
_VANISHED: Final = 1
_RULES: Final = 2


class _Delta:
    """What a change batch did so far (see ``IndexChanges._finish``)."""

    __slots__ = ("added_dirs", "changed", "contents", "deleted", "fresh", "removed_dirs", "touched")

    def __init__(self) -> None:
        self.changed: set[str] = set()
        self.deleted: set[str] = set()
        self.contents: set[str] = set()
        self.added_dirs: set[str] = set()
        self.removed_dirs: set[str] = set()
        self.fresh: set[str] = set()  # folders walked in this batch
        self.touched = False


def _depth(rel: str) -> int:
    return rel.count("/") + 1 if rel else 0


class IndexChanges:
    """The change applier of one root: change batches (``apply``, ``refresh``,
    ``verify``, ``recheck_markers``) applied to the records of ``store`` with
    ``walker`` (whose ``root`` and ``rules`` it uses), each published to the store, and
    the stat checks of the ``sync: "stat"`` route (``fresh``, ``fresh_path``)."""

    def __init__(self, store: FolderRecords, walker: IndexWalk) -> None:
        self.store = store
        self.walker = walker
        self.root = walker.root
        self.rules = walker.rules

    def refresh(self, rel_dir: str = "") -> Applied:
        """Re-walk the subtree at ``rel_dir`` (re-reading its ignore files, so changed
        ignore files change the verdicts below). A folder not walked before refreshes its
        nearest walked ancestor; a vanished one its parent. A change of git's index file
        re-reads the tracked set and re-evaluates what it decides. ``clock`` bumps when
        anything listed changed."""
        return self.apply([(rel_dir.strip("/"), TREE), ("", GIT_INDEX)])

    def apply(self, changes: Iterable[tuple[str, int]]) -> Applied:
        """Apply one batch of change hints ``(rel, kinds)`` (``ENTRY``, ``CONTENT``,
        ``FOLDER``, ``TREE``, ``GIT_INDEX``, ``RULES``; see their docs). Hints are only
        hints: what changed is found by ``lstat`` and ``scandir``, so a hint for a path
        that did not change changes nothing, and one hint for a folder is enough for
        any number of changes of its entries.

        Per batch: global rules (``RULES``) re-walk everything; git's index (``GIT_INDEX``)
        re-reads the tracked set and re-lists the folders on the way to each path whose
        tracked state changed (more than ``RETRACK_LIMIT`` such paths: re-walk all);
        ``TREE`` folders and the folders of changed ignore files / ``.git`` /
        virtualenv markers are re-walked; the other folders named by ``ENTRY`` and
        ``FOLDER`` hints are re-listed one level, shallowest first, keeping the records
        of sub-folders whose verdict did not change (a vanished folder re-lists its
        parent). ``clock`` bumps once when anything changed; listeners are told.
        Returns what changed."""
        records = self.store.dirs
        delta = _Delta()
        trees: set[str] = set()
        folders: dict[str, set[str]] = {}
        rule_files = self.walker.rule_files
        rule_names = self.walker.rule_names
        git_index = rules_changed = False
        for rel, kind in changes:
            rel = rel.strip("/")
            if kind & RULES:
                rules_changed = True
            if kind & GIT_INDEX:
                git_index = True
            if kind & TREE:
                trees.add(rel)
            if kind & FOLDER:
                folders.setdefault(rel, set())
            if kind & (ENTRY | CONTENT) and rel:
                parent, _, name = rel.rpartition("/")
                if kind & ENTRY:
                    if name not in rule_names:
                        folders.setdefault(parent, set()).add(name)
                    elif parent in records:  # events below a hidden folder change nothing
                        trees.add(parent)
                if kind & CONTENT:
                    if name in rule_files and parent in records:
                        trees.add(parent)
                    delta.contents.add(rel)
        if rules_changed:
            self.rules.forget_dir("")
            trees = {""}
        if git_index:
            self._retrack(trees, folders)
        done: list[str] = []
        for rel in sorted(trees, key=_depth):
            if not any(is_under(rel, d) for d in done):
                done.append(self._retree(rel, delta))
        heap = [(_depth(d), d) for d in folders]
        heapq.heapify(heap)
        while heap:
            _, rel = heapq.heappop(heap)
            if rel not in records or rel in delta.fresh or any(is_under(rel, d) for d in done):
                continue
            outcome = self._relist(rel, folders.get(rel) or None, delta)
            if outcome == _VANISHED:
                if not rel:
                    self.store.warn_once(ROOT_GONE.format(self.root))
                    continue
                parent, _, name = rel.rpartition("/")
                folders.setdefault(parent, set()).add(name)
                heapq.heappush(heap, (_depth(parent), parent))
            elif outcome == _RULES:
                done.append(self._retree(rel, delta))
        return self._finish(delta)

    def verify(self, rel_dirs: Iterable[str] | None = None) -> Applied:
        """Stat walked folders (``rel_dirs``, default all) and re-list those that changed
        since they were listed (``is_stale``): the stat route of PROTOCOL §6 and the
        reconcile after a restart or a watcher gap. Returns what changed."""
        dirs = list(self.store.dirs) if rel_dirs is None else rel_dirs
        hints = [(d, FOLDER) for d in dirs if self.is_stale(d)]
        return self.apply(hints) if hints else Applied(self.store.clock, [], [], [], [])

    def recheck_markers(self) -> Applied:
        """Re-list the folders holding a sub-folder hidden only as a virtualenv or conda
        env whose marker (``pyvenv.cfg``, ``conda-meta/``) is gone. Such a folder is not
        walked, so not watched, and removing the marker changes no walked folder's
        mtime: the periodic reconcile calls this. Returns what changed."""
        hints: list[tuple[str, int]] = []
        classify = self.rules.classify
        for rel, rec in list(self.store.dirs.items()):
            prefix = rel + "/" if rel else ""
            for name, mask in rec.pruned:
                if mask != DEFAULT_EXCLUDE:
                    continue
                sub = self.root + "/" + prefix + name
                if os.path.isfile(sub + "/pyvenv.cfg") or os.path.isdir(sub + "/conda-meta"):
                    continue
                if classify(rec.frame, prefix + name, name, True)[0] & DEFAULT_EXCLUDE:
                    continue  # hidden by a pattern (node_modules/), not by a marker
                hints.append((prefix + name, ENTRY))
        return self.apply(hints) if hints else Applied(self.store.clock, [], [], [], [])

    def is_stale(self, rel_dir: str) -> bool:
        """Whether walked folder ``rel_dir`` must be listed again to be trusted: it is no
        folder any more, its ``st_mtime_ns`` differs from the record's (a folder's mtime
        changes whenever an entry is added, removed or renamed in it), or the record is
        racy: its mtime lies within ``RACY_NS`` of when it was listed, so a later change
        in the same timestamp tick would leave the mtime unchanged (git's racy rule,
        Documentation/technical/racy-git.txt). A folder not walked is not stale.

        A folder whose last listing failed is stale (listed again at every check: a
        ``chmod`` moves no mtime), except when its path was too long (``ENAMETOOLONG``,
        past ``PATH_MAX``): that fails the same way until an ancestor is renamed, and a
        rename changes the mtime of the folder holding that ancestor, which is re-listed
        and walks the moved subtree anew. Listing it again at every check instead is
        what made the watcher queue it without end (each retry re-walked it, and a
        folder just walked is checked once more)."""
        rec = self.store.dirs.get(rel_dir)
        if rec is None:
            return False
        failed = self.store.unlisted.get(rel_dir)
        if failed is not None:
            return failed[0] != errno.ENAMETOOLONG
        try:
            st = os.lstat(self.root + "/" + rel_dir if rel_dir else self.root)
        except OSError:
            return True
        if not _stat.S_ISDIR(st.st_mode):
            return True
        return st.st_mtime_ns != rec.mtime or is_racy(rec.mtime, rec.listed)

    def fresh(self, rel_dir: str, recursive: bool, keep: Callable[[str], bool] | None) -> None:
        """Verify the folders an expansion of ``rel_dir`` covers (its walked subtree, or
        with ``recursive`` False the folder alone; pruned by ``keep``, which is given
        ``"sub/"`` paths; for a folder not walked, its nearest walked ancestor), so the
        expansion reflects every finished write: the ``sync: "stat"`` route of PROTOCOL
        §6, called by ``Index`` while ``stat_checks`` is on."""
        records = self.store.dirs
        anc = rel_dir
        while anc and anc not in records:
            anc = anc.rpartition("/")[0]
        if anc != rel_dir:
            self.verify([anc])
            if rel_dir not in records:
                return
        if not recursive:
            self.verify([rel_dir])
            return
        dirs: list[str] = []
        stack = [rel_dir]
        while stack:
            d = stack.pop()
            rec = records.get(d)
            if rec is None:
                continue
            dirs.append(d)
            if not rec.ndirs:
                continue
            prefix = d + "/" if d else ""
            for e in rec.entries:
                if e[-1] == "/":
                    sub = prefix + e[:-1]
                    if keep is None or keep(sub + "/"):
                        stack.append(sub)
        self.verify(dirs)

    def fresh_path(self, rel: str) -> None:
        """Verify the nearest walked folder holding ``rel`` (and ``rel`` itself when it is
        a walked folder): ``fresh`` for one path."""
        records = self.store.dirs
        anc = rel.rpartition("/")[0]
        while anc and anc not in records:
            anc = anc.rpartition("/")[0]
        self.verify([anc, rel] if rel in records else [anc])

    def _retree(self, rel_dir: str, delta: _Delta) -> str:
        """Re-walk the subtree at ``rel_dir`` (normalized as ``refresh`` says) into
        ``delta``; returns the folder actually re-walked."""
        rel_dir = rel_dir.strip("/")
        records = self.store.dirs
        while rel_dir and rel_dir not in records:
            rel_dir = rel_dir.rpartition("/")[0]
        while rel_dir:
            full = os.path.join(self.root, rel_dir)
            if os.path.isdir(full) and not os.path.islink(full):
                break
            rel_dir = rel_dir.rpartition("/")[0]
            while rel_dir and rel_dir not in records:
                rel_dir = rel_dir.rpartition("/")[0]
        old = subtree_of(records, rel_dir)
        old_files = visible_files(old)
        for key in old:
            del records[key]
        self.rules.forget_dir(rel_dir)
        try:
            mtime = os.stat(os.path.join(self.root, rel_dir) if rel_dir else self.root).st_mtime_ns
        except OSError:
            mtime = 0
        if not rel_dir:
            self.walker.walk_into_records("", self.rules.root_frame(ALL_MASK), 0, mtime, None)
        else:
            parent, _, name = rel_dir.rpartition("/")
            prec = records[parent]
            h, r = self.rules.classify(prec.frame, rel_dir, name, True)
            if h:
                prune_child(records, parent, name, h)
            else:
                if dict(prec.excl).get(name, 0) != r:
                    prec.excl = tuple(x for x in prec.excl if x[0] != name) + (
                        ((name, r),) if r else ()
                    )
                self.walker.walk_into_records(rel_dir, prec.frame, r, mtime, parent)
        new = subtree_of(records, rel_dir) if rel_dir in records or not rel_dir else {}
        new_files = visible_files(new)
        delta.removed_dirs.update(k for k in old if k not in new)
        delta.added_dirs.update(k for k in new if k not in old)
        delta.fresh.update(new)
        delta.changed |= new_files - old_files
        delta.deleted |= old_files - new_files
        if set(old) != set(new) or any(not old[k].same(new[k]) for k in new):
            delta.touched = True
        self.rules.compact()
        return rel_dir

    def _relist(self, rel: str, names: set[str] | None, delta: _Delta) -> int:
        """List walked folder ``rel`` again (one level) into ``delta``. Sub-folders keep
        their records unless their verdict changed, they are new, or ``names`` (entries
        some event named) holds them (a folder replaced by another one under the same
        name). Returns ``_DONE``, ``_VANISHED`` (no folder there any more) or ``_RULES``
        (the folder's own rules changed: re-walk it)."""
        records = self.store.dirs
        old = records[rel]
        try:
            st = os.lstat(self.root + "/" + rel if rel else self.root)
        except OSError:
            return _VANISHED
        if not _stat.S_ISDIR(st.st_mode):
            return _VANISHED
        if rel:
            parent, _, pname = rel.rpartition("/")
            prec = records.get(parent)
            if prec is None:
                return _VANISHED
            pframe, ex = prec.frame, dict(prec.excl).get(pname, 0)
        else:
            pframe, ex = old.frame, 0
        temp: dict[str, DirRecord] = {}
        rest: list[tuple[str, Frame, int, int, str | None]] = []
        self.walker.walk([(rel, pframe, ex, st.st_mtime_ns, None)], temp, 1, rest)
        new = temp.get(rel)
        if new is None or not same_rules(new.frame, old.frame):
            return _RULES
        if self._rule_marks(old) != self._rule_marks(new):
            return _RULES  # an ignore file, .git or a marker came or went (the root's too)
        new.frame = old.frame
        prefix = rel + "/" if rel else ""
        old_dirs = {e[:-1] for e in old.entries if e[-1] == "/"} if old.ndirs else set()
        new_dirs = {e[:-1] for e in new.entries if e[-1] == "/"} if new.ndirs else set()
        old_ex = dict(old.excl)
        new_ex = dict(new.excl)
        walk: list[str] = []
        for d in old_dirs:
            if d not in new_dirs or old_ex.get(d, 0) != new_ex.get(d, 0) or (names and d in names):
                self._drop_subtree(prefix + d, delta)
                if d in new_dirs:
                    walk.append(d)
        walk.extend(new_dirs - old_dirs)
        old_files = {e for e in old.entries if e[-1] != "/"}
        new_files = {e for e in new.entries if e[-1] != "/"}
        delta.changed.update(prefix + f for f in new_files - old_files)
        delta.deleted.update(prefix + f for f in old_files - new_files)
        if names:
            delta.changed.update(prefix + f for f in names & new_files)
        if walk or not old.same(new):
            delta.touched = True
        records[rel] = new
        if not walk:
            return _DONE
        items = {item[0]: item for item in rest}
        todo: list[tuple[str, Frame, int, int, str | None]] = []
        for d in walk:
            sub = prefix + d
            if sub in temp:  # walked already (a tracked folder settled by _settle)
                for key, rec in subtree_of(temp, sub).items():
                    records[key] = rec
            elif sub in items:
                todo.append(items[sub])
        if todo:
            self.walker.walk(todo, records)
        for d in walk:
            walked = subtree_of(records, prefix + d)
            delta.added_dirs.update(walked)
            delta.fresh.update(walked)
            delta.changed |= visible_files(walked)
        return _DONE

    def _rule_marks(self, rec: DirRecord) -> set[str]:
        """The names among ``rec``'s entries (visible or not) that shape rules."""
        marks = self.walker.rule_names
        out = {e.rstrip("/") for e in rec.entries if e.rstrip("/") in marks}
        out.update(n for n, _ in rec.hidden if n in marks)
        out.update(n for n, _ in rec.pruned if n in marks)
        return out

    def _drop_subtree(self, rel: str, delta: _Delta) -> None:
        records = self.store.dirs
        old = subtree_of(records, rel)
        delta.deleted |= visible_files(old)
        delta.removed_dirs.update(old)
        for key in old:
            del records[key]

    def _retrack(self, trees: set[str], folders: dict[str, set[str]]) -> None:
        """Git's index changed (``git add``, ``git rm --cached``, checkout): re-read the
        tracked set and note which folders to re-list (every walked folder on the way to
        a path whose tracked state changed) or, past ``RETRACK_LIMIT`` paths, re-walk
        everything. Frames keep pointing at the tracked set: they are switched to the
        new one."""
        rules = self.rules
        old = rules.tracked
        if not rules.tracked_changed():
            return
        new = rules.tracked
        seen: set[int] = set()
        for rec in self.store.dirs.values():
            fr = rec.frame
            if id(fr) not in seen:
                seen.add(id(fr))
                if fr.tracked is old:
                    fr.tracked = new
        if old is None or new is None:
            trees.add("")
            return
        before = old.load()
        after = new.load()
        if before == after:
            return
        self.tracked_diff(set(before).symmetric_difference(after), trees, folders)

    def tracked_diff(self, paths: set[str], trees: set[str], folders: dict[str, set[str]]) -> None:
        """Note what to look at again for ``paths`` (root-relative) whose tracked state
        changed: each walked folder on the way to one goes into ``folders`` (to re-list,
        as ``apply``'s ``FOLDER`` hints), or, past ``RETRACK_LIMIT`` paths, the root into
        ``trees`` (to re-walk)."""
        if len(paths) > RETRACK_LIMIT:
            trees.add("")
            return
        records = self.store.dirs
        for p in paths:
            cur = ""
            folders.setdefault(cur, set())
            for part in p.split("/")[:-1]:
                nxt = cur + "/" + part if cur else part
                if nxt not in records:
                    break
                cur = nxt
                folders.setdefault(cur, set())

    def _finish(self, delta: _Delta) -> Applied:
        """Settle ``delta`` into the paths that changed and were deleted (a path counts
        by its state now) and publish them to the store (which bumps the clock and tells
        the listeners)."""
        records = self.store.dirs
        by_dir: dict[str, list[str]] = {}
        for path in delta.changed | delta.deleted | delta.contents:
            by_dir.setdefault(path.rpartition("/")[0], []).append(path)
        changed: list[str] = []
        deleted: list[str] = []
        for d, paths in by_dir.items():
            rec = records.get(d)
            names = {e for e in rec.entries if e[-1] != "/"} if rec is not None else set()
            for path in paths:
                if path.rpartition("/")[2] in names:
                    changed.append(path)
                elif path in delta.deleted:
                    deleted.append(path)
        added = [d for d in delta.added_dirs if d in records]
        added.sort(key=_depth)
        removed = sorted(delta.removed_dirs)
        return self.store.publish(delta.touched, changed, deleted, added, removed)
