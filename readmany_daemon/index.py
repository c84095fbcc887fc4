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

How the walk stays fast (it is the cold path of ``readmany files``): folders are listed
level by level (breadth first) with ``os.scandir`` (d_type only; files are never stat'ed,
folders once for their mtime) and each level is classified in batches: every distinct
basename is matched once per set of pattern lists (``ignore.NameMatcher``, RE2 when many
patterns), path patterns run as one regex pass over the level's paths, and only the names
some positive pattern matched are evaluated precisely (``IgnoreRules.classify_soft``).
Verdicts that depend on git's tracked set wait until the end of the walk (``_settle``), so
``git ls-files`` runs beside the walk instead of in front of it. The cyclic GC is paused
during the walk. Memory is ~200 bytes per visible file at 100k files, the tracked set
(~90 bytes per tracked path) included: per folder, a tuple of names.

Keeping it current (``apply``, fed by ``watcher.py`` or by tests with scripted batches):
change hints ``(rel, kinds)`` are only hints, confirmed by ``lstat``/``scandir``. A
folder named by a hint is listed again one level (``_relist``), keeping the records of
sub-folders whose verdict did not change; a changed ignore file, ``.git`` or virtualenv
marker re-walks its folder's subtree; ``$GIT_COMMON_DIR/info/exclude`` re-walks the root;
a changed git index re-reads the tracked set and re-lists the folders on the way to each
path whose tracked state changed. Each batch bumps ``clock`` once and tells the listeners
which visible files changed or went (``add_listener``: the change log behind
``readMany/changedSince``) and which folders were walked or dropped
(``add_dir_listener``: the watcher's watches). ``verify``/``is_stale`` compare folder
mtimes with the records, with git's racy rule (``RACY_NS``): the stat route of PROTOCOL
§6 (``stat_checks``) and the reconcile after a restart. ``dump``/``restore`` turn the
records into plain data for ``snapshot.py`` and back, without a walk.

Paths are root-relative POSIX ``str`` (undecodable bytes as surrogate escapes, like
``os.fsdecode``); ``""`` is the root. Output order is byte order of the UTF-8/fs encoding.
Not thread-safe: the daemon makes every call holding the root's lock (``file_count`` and
``clock`` may be read without it).
"""

from __future__ import annotations

import gc
import heapq
import os
import re
import stat as _stat
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import Final, NamedTuple

from .ignore import (
    ALL,
    DEFAULT_EXCLUDE,
    DENY,
    KIND_BITS,
    KIND_NAMES,
    Filters,
    Frame,
    IgnoreRules,
    Verdict,
)
from .ignore import byte_view as _bv
from .settings import Settings

__all__ = [
    "CONTENT",
    "ENTRY",
    "FOLDER",
    "GIT_INDEX",
    "RACY_NS",
    "RULES",
    "TREE",
    "Applied",
    "Index",
    "IndexDump",
]

#: Change-hint kinds for ``Index.apply`` (bit flags; one hint may carry several).
ENTRY: Final = 1  # rel was created, deleted or renamed: its folder's listing changed
CONTENT: Final = 2  # rel's content or metadata changed (an ignore file: its rules did)
FOLDER: Final = 4  # list folder rel again (a vanished one: its parent)
TREE: Final = 8  # walk the subtree at rel again (re-reading its ignore files)
GIT_INDEX: Final = 16  # git's index file changed: the tracked set may have (rel unused)
RULES: Final = 32  # rules of the whole root changed ($GIT_COMMON_DIR/info/exclude)

#: A folder record whose mtime lies within this many ns of its listing is racy (see
#: ``Index.is_stale``): 2 s covers FAT's 2 s and ext3/HFS+'s 1 s mtime resolution and the
#: lag of Linux's coarse file-time clock behind ``time.time_ns()`` (one tick, ≤ 10 ms).
RACY_NS: Final = 2_000_000_000
#: Past this many paths whose tracked state changed at once (a checkout), the whole
#: root is walked again instead of re-listing the folders on the way to each.
RETRACK_LIMIT: Final = 5000

_DONE: Final = 0
_VANISHED: Final = 1
_RULES: Final = 2

_ALL_MASK: Final = 15
_EMPTY: Final[tuple[tuple[str, int], ...]] = ()
_fsencode = os.fsencode


def _sort_keys(keys: list[str]) -> None:
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


class _Delta:
    """What a change batch did so far (see ``Index._finish``)."""

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


def _under(rel: str, top: str) -> bool:
    """Whether ``rel`` is folder ``top`` or below it (``""`` holds everything)."""
    return not top or rel == top or rel.startswith(top + "/")


def _same_frame(a: Frame, b: Frame) -> bool:
    """Whether two frames apply the same rules: the same pattern lists (by identity:
    the rules cache them per file), the same excluded-kind markers, the same tracked
    set."""
    if a is b:
        return True
    if a.tracked is not b.tracked:
        return False
    for x, y in zip(a.states, b.states, strict=True):
        if x is y:
            continue
        if isinstance(x, tuple) and isinstance(y, tuple):
            if len(x) != len(y) or any(p is not q for p, q in zip(x, y, strict=True)):
                return False
        elif x is None or y is None or isinstance(x, tuple) or isinstance(y, tuple):
            return False
        if getattr(x, "rel", None) != getattr(y, "rel", None):  # two _Excl markers
            return False
    return True


def _subtree_of(records: dict[str, _Dir], rel_dir: str) -> dict[str, _Dir]:
    """The records of folder ``rel_dir`` and every walked folder below it."""
    out: dict[str, _Dir] = {}
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


def _files_of(records: dict[str, _Dir]) -> set[str]:
    """Every visible file of ``records`` (root-relative)."""
    out: set[str] = set()
    for d, rec in records.items():
        prefix = d + "/" if d else ""
        out.update(prefix + e for e in rec.entries if e[-1] != "/")
    return out


def _first_kind(mask: int) -> str:
    for bit in KIND_BITS:
        if mask & bit:
            return KIND_NAMES[bit]
    return "deny"


class _Dir:
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

    def same(self, other: _Dir) -> bool:
        return (
            self.entries == other.entries
            and self.hidden == other.hidden
            and self.pruned == other.pruned
            and self.excl == other.excl
        )


class Index:
    """The workspace model of one root (see the module docstring).

    ``root``: absolute real path; ``rules``: its ``IgnoreRules``; ``clock``: bumps by one
    whenever ``refresh`` finds a change; ``warnings``: unreadable folders (plus the rules'
    warnings in ``rules.warnings``); ``unlisted``: walked folders whose last listing
    failed, ``rel → (errno, reason)`` (see ``unlisted_under``).
    """

    def __init__(self, root: str, rules: IgnoreRules) -> None:
        self.root = root
        self.rules = rules
        self.clock = 0
        self.warnings: list[str] = []
        #: Walked folders that could not be listed (``EACCES``, ``EIO``, …): they look
        #: empty, so expansions say so (``unlisted_under``) and ``is_stale`` lists them
        #: again at every check (a ``chmod`` changes no folder mtime).
        self.unlisted: dict[str, tuple[int, str]] = {}
        #: When True, expansions first stat the folders they cover and re-list those that
        #: changed (the ``sync: "stat"`` route of PROTOCOL §6); set per request by the
        #: service, under the root's lock.
        self.stat_checks = False
        self._records: dict[str, _Dir] = {}
        self._nfiles = 0
        self._listeners: list[Callable[[int, str, bool], None]] = []
        self._dir_listeners: list[Callable[[list[str], list[str]], None]] = []
        names = [n for n in rules.settings.ignore_file_names if n and "/" not in n]
        #: names whose content decides the rules of their folder's subtree
        self._rule_files = frozenset((".gitignore", *names))
        #: names whose presence decides them (``.git``: a nested repository; a virtualenv)
        self._rule_names = self._rule_files | {".git", "pyvenv.cfg", "conda-meta"}

    # ---- building ---------------------------------------------------------------------

    @classmethod
    def build(cls, root: str, settings: Settings) -> Index:
        """Walk ``root`` once with pruning and return the index.

        Raises ``NotADirectoryError``/``FileNotFoundError`` if ``root`` is not a folder.
        """
        real = os.path.realpath(root)
        if not os.path.isdir(real):
            raise NotADirectoryError(f"not a folder: {root}")
        self = cls(real, IgnoreRules(real, settings))
        self._walk_into_records(
            "", self.rules.root_frame(_ALL_MASK), 0, os.stat(real).st_mtime_ns, None
        )
        self.rules.compact()
        self._count_files()
        return self

    def _walk(
        self,
        start: list[tuple[str, Frame, int, int, str | None]],
        records: dict[str, _Dir],
        levels: int = 0,
        rest: list[tuple[str, Frame, int, int, str | None]] | None = None,
    ) -> int:
        """Walk the subtrees of ``start`` items ``(rel, parent_frame, excl_bits, mtime,
        parent_key)`` level by level (breadth first), storing one record per walked folder
        in ``records``. The root is given as ``("", root_frame, 0, mtime, None)``.

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
            unlisted = self.unlisted
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
                            self._prune_child(records, par, rel.rpartition("/")[2], hidden_self)
                        elif not scanned and start_hidden == 0:
                            start_hidden = hidden_self
                        continue
                scanned.append((rel, frame, files, dirs, dirnames, m))
            cand_f, cand_d = self._batch_candidates(scanned)
            nxt: list[tuple[str, Frame, int, int, str | None]] = []
            classify = rules.classify_soft
            for rel, frame, files, dirs, dirnames, m in scanned:
                prefix = rel + "/" if rel else ""
                top = rp + _bv(prefix)
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
                    _sort_keys(visible)
                    records[rel] = _Dir(
                        tuple(visible), _EMPTY, _EMPTY, _EMPTY, m, frame, len(dirs), listed
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
                    elif every or (cf is not None and _bv(name) in cf):
                        h, soft = classify(frame, prefix + name, name, False)
                        if soft and not h:
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
                    if every or (cd is not None and _bv(name) in cd):
                        h, soft = classify(frame, prefix + name, name, True)
                        if soft and not h:
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
                _sort_keys(visible)
                records[rel] = _Dir(
                    tuple(visible),
                    tuple(hidden) if hidden else _EMPTY,
                    tuple(pruned) if pruned else _EMPTY,
                    tuple(excl) if excl else _EMPTY,
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
        self, pending: list[tuple[str, str, int, Frame, int]], records: dict[str, _Dir]
    ) -> None:
        """Apply git's tracked set to entries the walk hid only by soft kinds: a tracked
        file becomes visible, a folder holding tracked paths is walked (those kinds then
        hide everything untracked below it)."""
        rules = self.rules
        for rel, name, soft, frame, kind in pending:
            rec = records.get(rel)
            if rec is None:
                continue
            path = (rel + "/" if rel else "") + name
            if not rules.tracked_in(frame, path, kind < 0):
                continue
            if kind < 0:
                rec.pruned = tuple(x for x in rec.pruned if x[0] != name)
                keys = [*rec.entries, name + "/"]
                _sort_keys(keys)
                rec.entries = tuple(keys)
                rec.ndirs += 1
                rec.excl = (*rec.excl, (name, soft))
                try:
                    m = os.lstat(os.path.join(self.root, path)).st_mtime_ns
                except OSError:
                    m = 0
                self._walk([(path, frame, soft, m, rel)], records)
            else:
                rec.hidden = tuple(x for x in rec.hidden if x[0] != name)
                keys = [*rec.entries, name]
                _sort_keys(keys)
                rec.entries = tuple(keys)

    def _batch_candidates(
        self, scanned: list[tuple[str, Frame, list[str], list[os.DirEntry[str]], list[str], int]]
    ) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """For one level: ``{top-relative folder prefix (byte view): byte-view names}``
        that some positive pattern of the folder's frame may match, for files and for
        folders. Basenames are matched per pattern list, each distinct name once
        (``PatternList.name_hits``); path patterns that need the whole path run as one
        regex pass per frame over the level's paths."""
        rules = self.rules
        rp = rules.root_prefix_str
        groups: dict[int, tuple[Frame, list[int]]] = {}
        for i, item in enumerate(scanned):
            fr = item[1]
            if fr.excl_mask:
                continue
            g = groups.get(id(fr))
            if g is None:
                groups[id(fr)] = (fr, [i])
            else:
                g[1].append(i)
        cand_f: dict[str, set[str]] = {}
        cand_d: dict[str, set[str]] = {}
        if not groups:
            return cand_f, cand_d
        # distinct names per frame, and per pattern list (all frames share the root lists)
        per_group: list[tuple[Frame, list[int], set[str], set[str]]] = []
        all_f: set[str] = set()
        all_d: set[str] = set()
        for fr, idxs in groups.values():
            gf: set[str] = set()
            gd: set[str] = set()
            for i in idxs:
                gf.update(scanned[i][2])
                gd.update(scanned[i][4])
            all_f |= gf
            all_d |= gd
            per_group.append((fr, idxs, gf, gd))
        # lists active in every frame of the level (the root's, mostly) are matched once
        # over all the level's names; the others over their frames' names
        common = frozenset(per_group[0][0].lists).intersection(*(g[0].lists for g in per_group[1:]))
        cm = rules.name_matcher(common)
        common_f = cm.hits(all_f, False)
        common_d = cm.hits(all_d, True)
        for fr, idxs, gf, gd in per_group:
            hf, hd = common_f, common_d
            for lst in fr.lists:
                if lst in common:
                    continue
                m = rules.name_matcher(frozenset((lst,)))
                xf = m.hits(gf, False)
                xd = m.hits(gd, True)
                if xf:
                    hf = hf | xf
                if xd:
                    hd = hd | xd
            for i in idxs:
                item = scanned[i]
                files, dirnames = item[2], item[4]
                cf = hf.intersection(files) if hf and files and not hf.isdisjoint(files) else None
                cd = (
                    hd.intersection(dirnames)
                    if hd and dirnames and not hd.isdisjoint(dirnames)
                    else None
                )
                if cf or cd:
                    rel = item[0]
                    key2 = rules.root_prefix + _bv(rel + "/" if rel else "")
                    if cf:
                        cand_f.setdefault(key2, set()).update(_bv(n) for n in cf)
                    if cd:
                        cand_d.setdefault(key2, set()).update(_bv(n) for n in cd)
            pf, pd = rules.quick(fr)
            for path_rx, slot, out in ((pf, 2, cand_f), (pd, 4, cand_d)):
                if path_rx is None:
                    continue
                parts: list[str] = []
                count = 0
                for i in idxs:
                    item = scanned[i]
                    names: list[str] = item[2] if slot == 2 else item[4]
                    if not names:
                        continue
                    rel = item[0]
                    top = rp + (rel + "/" if rel else "")
                    parts.append(top + ("\n" + top).join(names))
                    count += len(names)
                if not parts:
                    continue
                blob = "\n".join(parts)
                if not blob.isascii():
                    blob = _bv(blob)
                lines = path_rx.findall(blob)
                if blob.count("\n") != count - 1:
                    lines.extend(_newline_names(scanned, idxs, slot, rules.root_prefix))
                for line in lines:
                    d, _, n = line.rpartition("/")
                    out.setdefault(d + "/" if d else "", set()).add(n)
        return cand_f, cand_d

    def _walk_into_records(
        self, rel: str, parent_frame: Frame, excl_bits: int, mtime: int, parent: str | None
    ) -> None:
        """Walk the subtree at ``rel`` with every kind into the index's records.

        The cyclic garbage collector is paused meanwhile: the walk allocates ~1 tracked
        object per folder and per level and frees none, so collections would only rescan
        a growing heap (about a tenth of the build time at 100k files)."""
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._walk([(rel, parent_frame, excl_bits, mtime, parent)], self._records)
        finally:
            if was_enabled:
                gc.enable()

    @staticmethod
    def _prune_child(records: dict[str, _Dir], parent: str, name: str, mask: int) -> None:
        prec = records[parent]
        key = name + "/"
        if key in prec.entries:
            prec.ndirs -= 1
        prec.entries = tuple(e for e in prec.entries if e != key)
        prec.excl = tuple(x for x in prec.excl if x[0] != name)
        prec.pruned = (*prec.pruned, (name, mask))

    # ---- on-demand walks (filters off) -------------------------------------------------

    def _restricted(self, frame: Frame, mask: int) -> Frame:
        if frame.mask & ~mask == 0:
            return frame
        states = tuple(st if KIND_BITS[k] & mask else None for k, st in enumerate(frame.states))
        return Frame((states[0], states[1], states[2], states[3]), frame.tracked)

    def _emit(
        self,
        records: dict[str, _Dir],
        rel: str,
        rec: _Dir,
        mask: int,
        recursive: bool,
        out: list[str],
        counter: Counter[str] | None,
        keep: Callable[[str], bool] | None,
    ) -> None:
        """Append the files of ``rec`` (folder ``rel``) visible under ``mask``, and with
        ``recursive`` those below it, in byte order. Folders pruned by kinds outside
        ``mask`` are walked on demand into a throw-away dict."""
        prefix = rel + "/" if rel else ""
        if mask == _ALL_MASK and counter is None and keep is None:
            entries = rec.entries
            if not rec.ndirs:
                out += [prefix + k for k in entries]
                return
            for key in entries:
                if key[-1] != "/":
                    out.append(prefix + key)
                elif recursive:
                    sub = prefix + key[:-1]
                    self._emit(records, sub, records[sub], mask, True, out, None, None)
            return
        keys = list(rec.entries)
        extra = False
        allowed: set[str] = set()
        for name, m in rec.hidden:
            if m & mask:
                if counter is not None and (keep is None or keep(prefix + name)):
                    counter[_first_kind(m & mask)] += 1
            else:
                keys.append(name)
                extra = True
        for name, m in rec.pruned:
            if m & mask:
                if (
                    counter is not None
                    and recursive
                    and (keep is None or keep(prefix + name + "/"))
                ):
                    counter[_first_kind(m & mask)] += 1
            elif recursive:
                keys.append(name + "/")
                allowed.add(name)
                extra = True
        if extra:
            _sort_keys(keys)
        for key in keys:
            if key[-1] != "/":
                path = prefix + key
                if keep is None or keep(path):
                    out.append(path)
                continue
            if not recursive:
                continue
            name = key[:-1]
            sub = prefix + name
            if keep is not None and not keep(sub + "/"):
                continue
            if name not in allowed:
                self._emit(records, sub, records[sub], mask, True, out, counter, keep)
                continue
            frame = self._restricted(rec.frame, mask)
            _, r = self.rules.classify(frame, sub, name, True)
            self._emit_free(sub, frame, r, mask, out, counter, keep)

    def _emit_free(
        self,
        rel: str,
        frame: Frame,
        excl_bits: int,
        mask: int,
        out: list[str],
        counter: Counter[str] | None,
        keep: Callable[[str], bool] | None,
    ) -> None:
        """Walk folder ``rel`` (entered from ``frame``) on demand with the kinds in
        ``mask`` and emit its files; nothing is kept."""
        self._forget_unwatched(rel)
        temp: dict[str, _Dir] = {}
        hidden_self = self._walk([(rel, frame, excl_bits & mask, 0, None)], temp)
        rec = temp.get(rel)
        if rec is None:
            if counter is not None and hidden_self & mask:
                counter[_first_kind(hidden_self & mask)] += 1
            return
        self._emit(temp, rel, rec, mask, True, out, counter, keep)

    # ---- queries ------------------------------------------------------------------------

    def files(self, filters: Filters = ALL) -> list[str]:
        """Every visible file (root-relative POSIX), sorted by bytes."""
        if filters.mask == _ALL_MASK:
            self._fresh("", True, None)
            # not cached: the list would cost ~90 bytes per file, a rebuild ~25 ms at 100k
            out: list[str] = []
            self._emit(self._records, "", self._records[""], _ALL_MASK, True, out, None, None)
            return out
        return self.expand_dir("", filters, True)

    def expand_dir(
        self, rel_dir: str, filters: Filters, recursive: bool, hidden: Counter[str] | None = None
    ) -> list[str]:
        """Visible files under folder ``rel_dir`` (``""`` = root), sorted by bytes;
        ``recursive=False``: only its own files. ``hidden`` (optional) gets, per kind name,
        how many paths under ``rel_dir`` the enabled kinds hid (a pruned folder counts
        once, under the first kind hiding it in the order deny, ignore-file, gitignore,
        default-exclude); if ``rel_dir`` itself is hidden it counts once and ``[]`` is
        returned. A missing folder gives ``[]``."""
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
        self._fresh(rel_dir, recursive, keep)
        rec = self._records.get(rel_dir)
        if rec is not None:
            self._emit(self._records, rel_dir, rec, mask, recursive, out, counter, keep)
            return
        full = os.path.join(self.root, rel_dir)
        if not rel_dir or not os.path.isdir(full) or os.path.islink(full):
            return
        self._forget_unwatched(rel_dir)
        parent, _, name = rel_dir.rpartition("/")
        pframe, above = self.rules.frame_for_dir(parent, mask)
        h, r = self.rules.classify(pframe, rel_dir, name, True)
        h |= above
        if name == ".git" or ".git" in rel_dir.split("/"):
            h |= DENY
        if h & mask:
            if counter is not None:
                counter[_first_kind(h & mask)] += 1
            return
        temp: dict[str, _Dir] = {}
        hidden_self = self._walk([(rel_dir, pframe, r & mask, 0, None)], temp)
        rec = temp.get(rel_dir)
        if rec is None:
            if counter is not None and hidden_self & mask:
                counter[_first_kind(hidden_self & mask)] += 1
            return
        self._emit(temp, rel_dir, rec, mask, recursive, out, counter, keep)

    def _forget_unwatched(self, rel: str) -> None:
        """Drop the rules' cached ignore files at and below the first folder on the way
        to ``rel`` that is not walked: nothing watches such folders, so an on-demand walk
        must read their ignore files afresh."""
        anc = rel
        top = rel
        while anc and anc not in self._records:
            top = anc
            anc = anc.rpartition("/")[0]
        if top not in self._records:
            self.rules.forget_dir(top)

    def hidden_counts(
        self,
        rel_dir: str = "",
        filters: Filters = ALL,
        recursive: bool = True,
        pattern: str | None = None,
    ) -> dict[str, int]:
        """``{kind: count}`` of paths the enabled kinds hid from an expansion of
        ``rel_dir`` (or of glob ``pattern`` when given); see ``expand_dir``. Cheaper: pass
        a ``Counter`` as ``hidden=`` to ``expand_dir``/``glob`` instead."""
        counter: Counter[str] = Counter()
        if pattern is not None:
            self.glob(pattern, filters, recursive, hidden=counter)
        else:
            self.expand_dir(rel_dir, filters, recursive, hidden=counter)
        return dict(counter)

    def glob(
        self,
        pattern: str,
        filters: Filters,
        recursive: bool = True,
        hidden: Counter[str] | None = None,
    ) -> list[str]:
        """Visible files matching glob ``pattern`` (PROTOCOL §3: ``*`` and ``?`` never
        cross ``/``, ``**`` does, ``[...]`` classes, ``{a,b}`` braces, dotfiles match,
        case-sensitive), sorted by bytes. ``recursive=False``: ``**`` acts as ``*``.
        ``hidden``: as for ``expand_dir`` (hidden files that match, and pruned folders
        the pattern could reach, count once each).

        Raises ``ValueError`` (readable message) for an empty, absolute or ``..``
        pattern, or one wcmatch rejects."""
        rx, start, seg_ok = _compile_glob(pattern, recursive)
        out: list[str] = []

        def keep(path: str) -> bool:
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
        self._fresh_path(rel)
        if rel in self._records:
            return True
        parent, _, name = rel.rpartition("/")
        rec = self._records.get(parent)
        if rec is not None and name in rec.entries:
            return False
        return None

    def contains(self, rel: str, filters: Filters = ALL) -> bool:
        """Whether ``rel`` is a visible file or folder under ``filters`` (``""`` = root)."""
        rel = rel.strip("/")
        if self.is_dir(rel) is not None or not rel:
            return True
        if filters.mask == _ALL_MASK:
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
        return self._nfiles

    def _count_files(self) -> None:
        self._nfiles = sum(len(rec.entries) - rec.ndirs for rec in self._records.values())

    def dir_mtime(self, rel_dir: str) -> int | None:
        """``st_mtime_ns`` recorded for walked folder ``rel_dir`` (read before listing it)."""
        rec = self._records.get(rel_dir)
        return rec.mtime if rec is not None else None

    def walked_dirs(self) -> list[str]:
        """Every walked (visible) folder, ``""`` first."""
        return list(self._records)

    def walks(self, rel_dir: str) -> bool:
        """Whether ``rel_dir`` is a walked (visible) folder, as the index holds it now
        (no stat checks)."""
        return rel_dir in self._records

    def dir_entries(self, rel_dir: str) -> tuple[str, ...]:
        """The visible entries of walked folder ``rel_dir`` (files, and sub-folders as
        ``"name/"``), byte-sorted, as the index holds them now; ``()`` if not walked."""
        rec = self._records.get(rel_dir)
        return rec.entries if rec is not None else ()

    def stat(self, rel: str) -> os.stat_result | None:
        """``lstat`` of ``rel`` now (files are not stat'ed by the walk), or ``None``."""
        try:
            return os.lstat(os.path.join(self.root, rel))
        except OSError:
            return None

    # ---- changes ----------------------------------------------------------------------

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
        records = self._records
        delta = _Delta()
        trees: set[str] = set()
        folders: dict[str, set[str]] = {}
        rule_files = self._rule_files
        rule_names = self._rule_names
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
            if not any(_under(rel, d) for d in done):
                done.append(self._retree(rel, delta))
        heap = [(_depth(d), d) for d in folders]
        heapq.heapify(heap)
        while heap:
            _, rel = heapq.heappop(heap)
            if rel not in records or rel in delta.fresh or any(_under(rel, d) for d in done):
                continue
            outcome = self._relist(rel, folders.get(rel) or None, delta)
            if outcome == _VANISHED:
                if not rel:
                    self._warn_once(f"the workspace folder {self.root} is gone")
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
        dirs = list(self._records) if rel_dirs is None else rel_dirs
        hints = [(d, FOLDER) for d in dirs if self.is_stale(d)]
        return self.apply(hints) if hints else Applied(self.clock, [], [], [], [])

    def recheck_markers(self) -> Applied:
        """Re-list the folders holding a sub-folder hidden only as a virtualenv or conda
        env whose marker (``pyvenv.cfg``, ``conda-meta/``) is gone. Such a folder is not
        walked, so not watched, and removing the marker changes no walked folder's
        mtime: the periodic reconcile calls this. Returns what changed."""
        hints: list[tuple[str, int]] = []
        classify = self.rules.classify
        for rel, rec in list(self._records.items()):
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
        return self.apply(hints) if hints else Applied(self.clock, [], [], [], [])

    def is_stale(self, rel_dir: str) -> bool:
        """Whether walked folder ``rel_dir`` must be listed again to be trusted: it is no
        folder any more, its ``st_mtime_ns`` differs from the record's (a folder's mtime
        changes whenever an entry is added, removed or renamed in it), or the record is
        racy: its mtime lies within ``RACY_NS`` of when it was listed, so a later change
        in the same timestamp tick would leave the mtime unchanged (git's racy rule,
        Documentation/technical/racy-git.txt). A folder not walked is not stale."""
        rec = self._records.get(rel_dir)
        if rec is None:
            return False
        if rel_dir in self.unlisted:
            return True  # listing failed last time: try again (a chmod moves no mtime)
        try:
            st = os.lstat(self.root + "/" + rel_dir if rel_dir else self.root)
        except OSError:
            return True
        if not _stat.S_ISDIR(st.st_mode):
            return True
        return st.st_mtime_ns != rec.mtime or rec.mtime >= rec.listed - RACY_NS

    def _fresh(self, rel_dir: str, recursive: bool, keep: Callable[[str], bool] | None) -> None:
        """With ``stat_checks`` on: verify the folders an expansion of ``rel_dir`` covers
        (its walked subtree, pruned by ``keep``; for a folder not walked, its nearest
        walked ancestor), so the expansion reflects every finished write."""
        if not self.stat_checks:
            return
        records = self._records
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

    def _fresh_path(self, rel: str) -> None:
        """With ``stat_checks`` on: verify the nearest walked folder holding ``rel`` (and
        ``rel`` itself when it is a walked folder)."""
        if not self.stat_checks:
            return
        anc = rel.rpartition("/")[0]
        while anc and anc not in self._records:
            anc = anc.rpartition("/")[0]
        self.verify([anc, rel] if rel in self._records else [anc])

    def _warn_once(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    @staticmethod
    def _unlisted_warning(rel: str, reason: str) -> str:
        return f"{rel or '.'}: not listed: {reason}"

    def _not_listed(self, rel: str, exc: OSError) -> None:
        """Record that folder ``rel`` could not be listed (a warning, once)."""
        reason = exc.strerror or str(exc)
        old = self.unlisted.get(rel)
        if old is not None and old[1] != reason:
            self._listed_again(rel)
        self.unlisted[rel] = (exc.errno or 0, reason)
        self._warn_once(self._unlisted_warning(rel, reason))

    def _listed_again(self, rel: str) -> None:
        """Folder ``rel`` was listed after a failure: forget the failure and its warning."""
        got = self.unlisted.pop(rel, None)
        if got is not None:
            message = self._unlisted_warning(rel, got[1])
            if message in self.warnings:
                self.warnings.remove(message)

    def unlisted_under(self, rel_dir: str, recursive: bool = True) -> list[tuple[str, int, str]]:
        """``(folder, errno, reason)`` for the walked folders at or below ``rel_dir``
        (only ``rel_dir`` itself when not ``recursive``) whose last listing failed, sorted:
        their files are unknown, so an expansion over them is incomplete and says so."""
        if not self.unlisted:
            return []
        out = []
        for rel, (err, reason) in self.unlisted.items():
            if rel not in self._records:
                continue  # gone, or not walked any more (hidden meanwhile)
            inside = rel == rel_dir or (recursive and (not rel_dir or _under(rel, rel_dir)))
            if inside:
                out.append((rel, err, reason))
        return sorted(out)

    def _retree(self, rel_dir: str, delta: _Delta) -> str:
        """Re-walk the subtree at ``rel_dir`` (normalized as ``refresh`` says) into
        ``delta``; returns the folder actually re-walked."""
        rel_dir = rel_dir.strip("/")
        records = self._records
        while rel_dir and rel_dir not in records:
            rel_dir = rel_dir.rpartition("/")[0]
        while rel_dir:
            full = os.path.join(self.root, rel_dir)
            if os.path.isdir(full) and not os.path.islink(full):
                break
            rel_dir = rel_dir.rpartition("/")[0]
            while rel_dir and rel_dir not in records:
                rel_dir = rel_dir.rpartition("/")[0]
        old = self._subtree(rel_dir)
        old_files = _files_of(old)
        for key in old:
            del records[key]
        self.rules.forget_dir(rel_dir)
        try:
            mtime = os.stat(os.path.join(self.root, rel_dir) if rel_dir else self.root).st_mtime_ns
        except OSError:
            mtime = 0
        if not rel_dir:
            self._walk_into_records("", self.rules.root_frame(_ALL_MASK), 0, mtime, None)
        else:
            parent, _, name = rel_dir.rpartition("/")
            prec = records[parent]
            h, r = self.rules.classify(prec.frame, rel_dir, name, True)
            if h:
                self._prune_child(records, parent, name, h)
            else:
                if dict(prec.excl).get(name, 0) != r:
                    prec.excl = tuple(x for x in prec.excl if x[0] != name) + (
                        ((name, r),) if r else ()
                    )
                self._walk_into_records(rel_dir, prec.frame, r, mtime, parent)
        new = self._subtree(rel_dir) if rel_dir in records or not rel_dir else {}
        new_files = _files_of(new)
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
        records = self._records
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
        temp: dict[str, _Dir] = {}
        rest: list[tuple[str, Frame, int, int, str | None]] = []
        self._walk([(rel, pframe, ex, st.st_mtime_ns, None)], temp, 1, rest)
        new = temp.get(rel)
        if new is None or not _same_frame(new.frame, old.frame):
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
                for key, rec in self._subtree_in(temp, sub).items():
                    records[key] = rec
            elif sub in items:
                todo.append(items[sub])
        if todo:
            self._walk(todo, records)
        for d in walk:
            walked = self._subtree(prefix + d)
            delta.added_dirs.update(walked)
            delta.fresh.update(walked)
            delta.changed |= _files_of(walked)
        return _DONE

    def _rule_marks(self, rec: _Dir) -> set[str]:
        """The names among ``rec``'s entries (visible or not) that shape rules."""
        marks = self._rule_names
        out = {e.rstrip("/") for e in rec.entries if e.rstrip("/") in marks}
        out.update(n for n, _ in rec.hidden if n in marks)
        out.update(n for n, _ in rec.pruned if n in marks)
        return out

    def _drop_subtree(self, rel: str, delta: _Delta) -> None:
        old = self._subtree(rel)
        delta.deleted |= _files_of(old)
        delta.removed_dirs.update(old)
        for key in old:
            del self._records[key]

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
        for rec in self._records.values():
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
        self._tracked_diff(set(before).symmetric_difference(after), trees, folders)

    def _tracked_diff(self, paths: set[str], trees: set[str], folders: dict[str, set[str]]) -> None:
        if len(paths) > RETRACK_LIMIT:
            trees.add("")
            return
        records = self._records
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
        by its state now), bump the clock and tell the listeners."""
        records = self._records
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
        removed = sorted(delta.removed_dirs)
        if delta.touched or changed or deleted:
            self.clock += 1
            self._count_files()
        gen = self.clock
        if changed or deleted:
            for fn in self._listeners:
                for path in changed:
                    fn(gen, path, False)
                for path in deleted:
                    fn(gen, path, True)
        if added or removed:
            added.sort(key=_depth)
            for dfn in self._dir_listeners:
                dfn(added, removed)
        return Applied(gen, changed, deleted, added, removed)

    # ---- snapshots -------------------------------------------------------------------

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
                0 if rec.mtime >= rec.listed - RACY_NS else rec.mtime,
                rec.ndirs,
            )
            for rel, rec in self._records.items()
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
        for rec in self._records.values():
            fr = rec.frame
            if id(fr) in seen:
                continue
            seen.add(id(fr))
            for lst in fr.lists:
                out[lst.source] = lst.digest
        return out

    @classmethod
    def restore(
        cls, root: str, settings: Settings, dump: IndexDump, listed: int, reconcile: bool = True
    ) -> tuple[Index | None, str]:
        """Rebuild an index from ``dump`` (see ``dump``) without walking: frames are
        derived from each folder's saved names, then the snapshot is reconciled with the
        disk: folders whose ignore files changed are re-walked, git's tracked-set changes
        re-evaluated, and (``reconcile``) every folder whose mtime changed or was racy
        is re-listed (``verify``; a caller that stats on request instead, until a
        watcher has verified the folders, may skip it). ``listed``: when the snapshot
        was taken (``time.time_ns()``).

        Returns ``(index, "")``, or ``(None, reason)`` when the dump cannot be used (a
        folder is missing, or rules outside the workspace changed): walk instead."""
        real = os.path.realpath(root)
        self = cls(real, IgnoreRules(real, settings))
        rules = self.rules
        by_rel = {d[0]: d for d in dump.dirs}
        if "" not in by_rel:
            return None, "no root folder in the snapshot"
        records = self._records
        folders: dict[str, set[str]] = {}
        # names that may change a folder's rules (as entries: "name" or "name/")
        marks = self._rule_names | {n + "/" for n in self._rule_names}
        enter = rules.enter
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            queue: deque[tuple[str, Frame]] = deque([("", rules.root_frame(_ALL_MASK))])
            while queue:
                rel, frame = queue.popleft()
                d = by_rel[rel]
                entries = d[1]
                ndirs = d[6]
                rec = _Dir(entries, d[2], d[3], d[4], d[5], frame, ndirs, listed)
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
                        return None, f"folder {sub!r} is missing from the snapshot"
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
                return None, f"rules outside the workspace changed ({label})"
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
                self._tracked_diff(set(current).symmetric_difference(before), trees, folders)
        self._count_files()
        if trees or folders:
            self.apply([(r, TREE) for r in trees] + [(r, FOLDER) for r in folders])
        if reconcile:
            self.verify()
        # (no rules.compact(): it would wait for ``git ls-files``, read only when needed)
        return self, ""

    def _subtree(self, rel_dir: str) -> dict[str, _Dir]:
        return _subtree_of(self._records, rel_dir)

    @staticmethod
    def _subtree_in(records: dict[str, _Dir], rel_dir: str) -> dict[str, _Dir]:
        return _subtree_of(records, rel_dir)


def _newline_names(
    scanned: list[tuple[str, Frame, list[str], list[os.DirEntry[str]], list[str], int]],
    idxs: list[int],
    slot: int,
    root_prefix: str,
) -> list[str]:
    """Top-relative byte-view paths of names containing a newline (always candidates)."""
    out: list[str] = []
    for i in idxs:
        item = scanned[i]
        rel = item[0]
        names: list[str] = item[2] if slot == 2 else item[4]
        for n in names:
            if "\n" in n:
                out.append(root_prefix + _bv((rel + "/" if rel else "") + n))
    return out


_GLOB_MAGIC: Final = frozenset("*?[]{}\\!")


def _compile_glob(
    pattern: str, recursive: bool
) -> tuple[re.Pattern[str], str, Callable[[str], bool]]:
    """``(regex over root-relative paths, literal start folder, could-contain test for a
    folder path)`` for a PROTOCOL §3 glob, via wcmatch."""
    from wcmatch import fnmatch as wfn
    from wcmatch import glob as wglob

    if not pattern or "\0" in pattern:
        raise ValueError("invalid glob pattern: empty")
    if pattern.startswith("/"):
        raise ValueError(f"invalid glob pattern {pattern!r}: absolute paths are not patterns")
    segs = pattern.split("/")
    if ".." in segs:
        raise ValueError(f"invalid glob pattern {pattern!r}: '..' is not allowed")
    flags = wglob.BRACE | wglob.DOTGLOB | wglob.CASE | wglob.FORCEUNIX
    if recursive:
        flags |= wglob.GLOBSTAR
    from wcmatch._wcparse import PatternLimitException

    try:
        inc, exc = wglob.translate(pattern, flags=flags)
    except (PatternLimitException, ValueError) as err:
        raise ValueError(f"invalid glob pattern {pattern!r}: {err}") from err
    if exc or not inc:
        raise ValueError(f"invalid glob pattern {pattern!r}")
    rx = re.compile("|".join(f"(?:{r})" for r in inc))
    start_parts: list[str] = []
    for seg in segs[:-1]:
        if not seg or _GLOB_MAGIC & set(seg):
            break
        start_parts.append(seg)
    start = "/".join(start_parts)
    fflags = wfn.BRACE | wfn.DOTMATCH | wfn.CASE | wfn.FORCEUNIX
    braced = "{" in pattern

    def could_contain(folder: str) -> bool:
        """Whether a path below ``folder`` could match (segment-wise; braces: yes)."""
        if braced:
            return True
        parts = folder.split("/")
        for i, part in enumerate(parts):
            if recursive and i < len(segs) and "**" in segs[i]:
                return True
            if i >= len(segs) - 1:
                return False
            seg = segs[i]
            if not wfn.fnmatch(part, seg, flags=fflags):
                return False
        return True

    return rx, start, could_contain
