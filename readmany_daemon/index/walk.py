"""The walk that fills an index's folder records: breadth first, with pruning, each
level classified in batches.

The walk applies every rule kind and never enters a folder any kind hides (a folder
holding git-tracked paths is entered when only ``gitignore``/``default-exclude`` hide it;
its untracked entries stay hidden). Symlinks are entries (as ``git ls-files`` lists them),
never followed; sockets, FIFOs and devices are skipped (git skips them too). Per walked
folder it keeps: the visible entries (files, and sub-folders as ``"name/"``) sorted by
bytes, the hidden files and the pruned sub-folders each with the kinds that hide them, the
folder's ``st_mtime_ns`` (read before listing it) and the rule frame of its entries.

How the walk stays fast (it is the cold path of ``readmany files``): folders are listed
level by level (breadth first) with ``os.scandir`` (d_type only; files are never stat'ed,
folders once for their mtime) and each level is classified in batches: every distinct
basename is matched once per set of pattern lists (``rules.patterns.NameMatcher``, RE2 when many
patterns), path patterns run as one regex pass over the level's paths, and only the names
some positive pattern matched are evaluated precisely (``IgnoreRules.classify_soft``).
Verdicts that depend on git's tracked set wait until the end of the walk (``_settle``), so
``git ls-files`` runs beside the walk instead of in front of it. The cyclic GC is paused
during the walk. Memory is ~200 bytes per visible file at 100k files, the tracked set
(~90 bytes per tracked path) included: per folder, a tuple of names.

The walk stays on one thread. ``os.scandir`` releases the GIL around each ``readdir``
entry, not once per folder, so two threads listing at once hand the GIL to each other at
every entry: a two-thread walk of the 100k corpus took 1.5x the wall time and CPU of a
one-thread walk (``bench/bench_coldlist.py`` measures both in every run).

``IndexWalk`` is the walker: it holds the rules and the record store (``store.py``),
walks into the store's records or into a throw-away dict (on-demand walks, re-listings),
and notes in the store the folders it could not list. ``IndexChanges`` (``changes.py``)
keeps the records current and ``Index`` (``model.py``) answers queries from them.
"""

from __future__ import annotations

import gc
import os
import time
from typing import Final

from readmany_daemon.index.records import DirRecord, prune_child, sort_keys
from readmany_daemon.index.store import FolderRecords
from readmany_daemon.rules.batch import LevelItem, level_candidates
from readmany_daemon.rules.ignore import Frame, IgnoreRules
from readmany_daemon.rules.kinds import DENY
from readmany_daemon.rules.wildmatch import byte_view

__all__ = ["IndexWalk"]

_NO_MARKS: Final[tuple[tuple[str, int], ...]] = ()


def unlisted_warning(rel: str, reason: str) -> str:
    """The warning for walked folder ``rel`` (root-relative, ``""`` = the root) that could
    not be listed for ``reason`` (the OS error's text): ``<folder>: not listed: <reason>``
    (PROTOCOL §3, "Depth"), as the root's status warnings, ``readMany/files``' ``warnings``
    and ``readmany files``' stderr give it."""
    return f"{rel or '.'}: not listed: {reason}"


class IndexWalk:
    """The walker of one root (see the module docstring): ``root`` (absolute real path),
    its ``rules`` and the ``store`` whose records ``walk_into_records`` fills and whose
    ``unlisted``/``warnings`` every walk keeps (a folder that could not be listed)."""

    def __init__(self, root: str, rules: IgnoreRules, store: FolderRecords) -> None:
        self.root = root
        self.rules = rules
        self.store = store
        names = [n for n in rules.settings.ignore_file_names if n and "/" not in n]
        #: names whose content decides the rules of their folder's subtree
        self.rule_files = frozenset((".gitignore", *names))
        #: names whose presence decides them (``.git``: a nested repository; a virtualenv)
        self.rule_names = self.rule_files | {".git", "pyvenv.cfg", "conda-meta"}

    def walk(
        self,
        start: list[tuple[str, Frame, int, int, str | None]],
        records: dict[str, DirRecord],
        levels: int = 0,
        rest: list[tuple[str, Frame, int, int, str | None]] | None = None,
    ) -> int:
        """Walk the subtrees of ``start`` items ``(rel, parent_frame, excl_bits, mtime,
        parent_key)`` level by level (breadth first), storing one record per walked folder
        in ``records`` (the store's ``dirs``, or a throw-away dict). The root is given as
        ``("", root_frame, 0, mtime, None)``. A folder that cannot be listed raises
        nothing: it is recorded empty and noted in the store's ``unlisted``.

        Each level is classified in batches: one regex pass per rule frame over all the
        level's names (``IgnoreRules.quick``), precise evaluation only for the names a
        positive pattern matched. Returns the kinds hiding the first start folder if it
        proved hidden itself (a virtualenv), else 0. ``levels`` > 0 stops after that many
        levels; the sub-folders not walked then are appended to ``rest`` (start items)."""
        rules = self.rules
        root = self.root
        rp = rules.root_prefix
        enter = rules.enter
        scandir = os.scandir
        root_slash = root if root.endswith("/") else root + "/"
        pending: list[tuple[str, str, int, Frame, int]] = []
        start_hidden = 0
        level = start
        listed = time.time_ns()  # before any folder's mtime is read (racy rule)
        depth = 0
        while level:
            scanned: list[tuple[str, Frame, list[str], list[os.DirEntry[str]], list[str], int]] = []
            unlisted = self.store.unlisted
            for rel, pframe, ex, m, par in level:
                files: list[str] = []
                dirs: list[os.DirEntry[str]] = []
                try:
                    with scandir(root_slash + rel if rel else root) as it:
                        for e in it:
                            if e.is_dir(follow_symlinks=False):
                                dirs.append(e)
                            elif e.is_file(follow_symlinks=False) or e.is_symlink():
                                files.append(e.name)
                    if unlisted and rel in unlisted:
                        self._listed_again(rel)
                except OSError as exc:  # what was listed before a failure is kept
                    self._not_listed(rel, exc)
                dirnames = [e.name for e in dirs]
                if not rel:
                    frame = pframe
                else:
                    frame, hidden_self = enter(pframe, rel, ex, files, dirnames)
                    if hidden_self:
                        if par is not None and par in records:
                            prune_child(records, par, rel.rpartition("/")[2], hidden_self)
                        elif not scanned and start_hidden == 0:
                            start_hidden = hidden_self
                        continue
                scanned.append((rel, frame, files, dirs, dirnames, m))
            cand_f, cand_d = self._batch_candidates(scanned)
            nxt: list[tuple[str, Frame, int, int, str | None]] = []
            classify = rules.classify_soft
            for rel, frame, files, dirs, dirnames, m in scanned:
                prefix = rel + "/" if rel else ""
                top = rp + byte_view(prefix)
                cf = cand_f.get(top)
                cd = cand_d.get(top)
                if (
                    cf is None
                    and cd is None
                    and not frame.excl_mask
                    and ".git" not in files
                    and ".git" not in dirnames
                ):
                    visible = files + [n + "/" for n in dirnames]
                    sort_keys(visible)
                    records[rel] = DirRecord(
                        tuple(visible), _NO_MARKS, _NO_MARKS, _NO_MARKS, m, frame, len(dirs), listed
                    )
                    for e in dirs:
                        try:
                            cm = e.stat(follow_symlinks=False).st_mtime_ns
                        except OSError:
                            cm = 0
                        nxt.append((prefix + e.name, frame, 0, cm, rel))
                    continue
                every = bool(frame.excl_mask)
                n_before = len(nxt)
                hidden: list[tuple[str, int]] = []
                pruned: list[tuple[str, int]] = []
                excl: list[tuple[str, int]] = []
                visible = []
                # "soft" verdicts (gitignore/default-exclude, void for tracked paths) are
                # settled now if git's answer is in, else after the walk (_settle), so
                # the walk never waits for ``git ls-files``
                ready = rules.tracked_ready(frame)
                for name in files:
                    if name == ".git":
                        hidden.append((name, DENY))
                    elif every or (cf is not None and byte_view(name) in cf):
                        h, soft = classify(frame, prefix + name, name, False)
                        if soft:
                            if not ready:
                                pending.append((rel, name, soft, frame, 0))
                            elif rules.tracked_in(frame, prefix + name, False):
                                soft = 0
                        if h | soft:
                            hidden.append((name, h | soft))
                        else:
                            visible.append(name)
                    else:
                        visible.append(name)
                for e in dirs:
                    name = e.name
                    r = 0
                    if name == ".git":
                        pruned.append((name, DENY))
                        continue
                    if every or (cd is not None and byte_view(name) in cd):
                        h, soft = classify(frame, prefix + name, name, True)
                        if soft:
                            if not ready:
                                pending.append((rel, name, soft, frame, -1))
                            elif rules.tracked_in(frame, prefix + name, True):
                                r, soft = soft, 0
                        if h | soft:
                            pruned.append((name, h | soft))
                            continue
                        if r:
                            excl.append((name, r))
                    visible.append(name + "/")
                    try:
                        cm = e.stat(follow_symlinks=False).st_mtime_ns
                    except OSError:
                        cm = 0
                    nxt.append((prefix + name, frame, r, cm, rel))
                sort_keys(visible)
                records[rel] = DirRecord(
                    tuple(visible),
                    tuple(hidden) if hidden else _NO_MARKS,
                    tuple(pruned) if pruned else _NO_MARKS,
                    tuple(excl) if excl else _NO_MARKS,
                    m,
                    frame,
                    len(nxt) - n_before,
                    listed,
                )
            depth += 1
            if levels and depth >= levels:
                if rest is not None:
                    rest.extend(nxt)
                break
            level = nxt
        if pending:
            self._settle(pending, records)
        return start_hidden

    def _settle(
        self, pending: list[tuple[str, str, int, Frame, int]], records: dict[str, DirRecord]
    ) -> None:
        """Apply git's tracked set to entries the walk hid by soft kinds: a tracked
        file becomes visible, a folder holding tracked paths is walked (those kinds then
        hide everything untracked below it); one a hard kind hides too stays hidden by
        that kind alone, so a request that turns the hard kind off sees it, as
        ``IgnoreRules.check`` does."""
        rules = self.rules
        for rel, name, soft, frame, kind in pending:
            rec = records.get(rel)
            if rec is None:
                continue
            path = (rel + "/" if rel else "") + name
            if not rules.tracked_in(frame, path, kind < 0):
                continue
            marks = rec.pruned if kind < 0 else rec.hidden
            hard = next((m for n, m in marks if n == name), 0) & ~soft
            if hard:  # a kind that hides tracked paths too still hides it: only drop ``soft``
                kept = tuple((n, hard if n == name else m) for n, m in marks)
                if kind < 0:
                    rec.pruned = kept
                else:
                    rec.hidden = kept
                continue
            if kind < 0:
                rec.pruned = tuple(x for x in rec.pruned if x[0] != name)
                keys = [*rec.entries, name + "/"]
                sort_keys(keys)
                rec.entries = tuple(keys)
                rec.ndirs += 1
                rec.excl = (*rec.excl, (name, soft))
                try:
                    m = os.lstat(os.path.join(self.root, path)).st_mtime_ns
                except OSError:
                    m = 0
                self.walk([(path, frame, soft, m, rel)], records)
            else:
                rec.hidden = tuple(x for x in rec.hidden if x[0] != name)
                keys = [*rec.entries, name]
                sort_keys(keys)
                rec.entries = tuple(keys)

    def _batch_candidates(
        self, scanned: list[tuple[str, Frame, list[str], list[os.DirEntry[str]], list[str], int]]
    ) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """For one level: ``{top-relative folder prefix (byte view): byte-view names}``
        that some positive pattern of the folder's frame may match, for files and for
        folders (``rules.batch.level_candidates``, the classifier the cold listing uses
        too). Folders whose frame excludes a kind are left out: all their entries are
        evaluated."""
        rules = self.rules
        level: list[LevelItem] = [
            (item[0], item[1], item[2], item[4]) for item in scanned if not item[1].excl_mask
        ]
        cand_f: dict[str, set[str]] = {}
        cand_d: dict[str, set[str]] = {}
        for (rel, _, _, _), (cf, cd) in zip(level, level_candidates(rules, level), strict=True):
            if cf is None and cd is None:
                continue
            key = rules.root_prefix + byte_view(rel + "/" if rel else "")
            if cf:
                cand_f[key] = {byte_view(n) for n in cf}
            if cd:
                cand_d[key] = {byte_view(n) for n in cd}
        return cand_f, cand_d

    def walk_into_records(
        self, rel: str, parent_frame: Frame, excl_bits: int, mtime: int, parent: str | None
    ) -> None:
        """Walk the subtree at ``rel`` (root-relative; entered from ``parent_frame``, the
        kinds ``excl_bits`` excluding it, its ``st_mtime_ns`` read before; ``parent``: its
        parent folder's key, None for the root) with every kind into the store's records.

        The cyclic garbage collector is paused meanwhile: the walk allocates ~1 tracked
        object per folder and per level and frees none, so collections would only rescan
        a growing heap (about a tenth of the build time at 100k files)."""
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            self.walk([(rel, parent_frame, excl_bits, mtime, parent)], self.store.dirs)
        finally:
            if was_enabled:
                gc.enable()

    def _not_listed(self, rel: str, exc: OSError) -> None:
        """Record that folder ``rel`` could not be listed (a warning, once)."""
        reason = exc.strerror or str(exc)
        store = self.store
        old = store.unlisted.get(rel)
        if old is not None and old[1] != reason:
            self._listed_again(rel)
        store.unlisted[rel] = (exc.errno or 0, reason)
        store.warn_once(unlisted_warning(rel, reason))

    def _listed_again(self, rel: str) -> None:
        """Folder ``rel`` was listed after a failure: forget the failure and its warning."""
        warnings = self.store.warnings
        got = self.store.unlisted.pop(rel, None)
        if got is not None:
            message = unlisted_warning(rel, got[1])
            if message in warnings:
                warnings.remove(message)
