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

Paths are root-relative POSIX ``str`` (undecodable bytes as surrogate escapes, like
``os.fsdecode``); ``""`` is the root. Output order is byte order of the UTF-8/fs encoding.
"""

from __future__ import annotations

import gc
import os
import re
from collections import Counter
from collections.abc import Callable
from typing import Final

from .ignore import (
    ALL,
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

__all__ = ["Index"]

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
    they hold tracked paths (those kinds hide everything untracked below)."""

    __slots__ = ("entries", "excl", "frame", "hidden", "mtime", "ndirs", "pruned")

    def __init__(
        self,
        entries: tuple[str, ...],
        hidden: tuple[tuple[str, int], ...],
        pruned: tuple[tuple[str, int], ...],
        excl: tuple[tuple[str, int], ...],
        mtime: int,
        frame: Frame,
        ndirs: int,
    ) -> None:
        self.ndirs = ndirs  # how many entries are folders
        self.entries = entries
        self.hidden = hidden
        self.pruned = pruned
        self.excl = excl
        self.mtime = mtime
        self.frame = frame

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
    warnings in ``rules.warnings``).
    """

    def __init__(self, root: str, rules: IgnoreRules) -> None:
        self.root = root
        self.rules = rules
        self.clock = 0
        self.warnings: list[str] = []
        self._records: dict[str, _Dir] = {}

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
        return self

    def _walk(
        self, start: list[tuple[str, Frame, int, int, str | None]], records: dict[str, _Dir]
    ) -> int:
        """Walk the subtrees of ``start`` items ``(rel, parent_frame, excl_bits, mtime,
        parent_key)`` level by level (breadth first), storing one record per walked folder
        in ``records``. The root is given as ``("", root_frame, 0, mtime, None)``.

        Each level is classified in batches: one regex pass per rule frame over all the
        level's names (``IgnoreRules.quick``), precise evaluation only for the names a
        positive pattern matched. Returns the kinds hiding the first start folder if it
        proved hidden itself (a virtualenv), else 0."""
        rules = self.rules
        root = self.root
        rp = rules.root_prefix
        enter = rules.enter
        scandir = os.scandir
        root_slash = root if root.endswith("/") else root + "/"
        pending: list[tuple[str, str, int, Frame, int]] = []
        start_hidden = 0
        level = start
        while level:
            scanned: list[tuple[str, Frame, list[str], list[os.DirEntry[str]], list[str], int]] = []
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
                except OSError as exc:
                    self.warnings.append(f"{rel or '.'}: not listed: {exc.strerror}")
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
                    records[rel] = _Dir(tuple(visible), _EMPTY, _EMPTY, _EMPTY, m, frame, len(dirs))
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
                )
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
        rec = self._records.get(rel_dir)
        if rec is not None:
            self._emit(self._records, rel_dir, rec, mask, recursive, out, counter, keep)
            return
        full = os.path.join(self.root, rel_dir)
        if not rel_dir or not os.path.isdir(full) or os.path.islink(full):
            return
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
        """How many files are visible with every kind applied."""
        return sum(len(rec.entries) - rec.ndirs for rec in self._records.values())

    def dir_mtime(self, rel_dir: str) -> int | None:
        """``st_mtime_ns`` recorded for walked folder ``rel_dir`` (read before listing it)."""
        rec = self._records.get(rel_dir)
        return rec.mtime if rec is not None else None

    def walked_dirs(self) -> list[str]:
        """Every walked (visible) folder, ``""`` first."""
        return list(self._records)

    def stat(self, rel: str) -> os.stat_result | None:
        """``lstat`` of ``rel`` now (files are not stat'ed by the walk), or ``None``."""
        try:
            return os.lstat(os.path.join(self.root, rel))
        except OSError:
            return None

    # ---- refresh ---------------------------------------------------------------------

    def refresh(self, rel_dir: str = "") -> None:
        """Re-walk the subtree at ``rel_dir`` (re-reading its ignore files, so changed
        ignore files change the verdicts below). A folder not walked before refreshes its
        nearest walked ancestor; a vanished one its parent. A change of git's index file
        re-reads the tracked set and re-walks everything. ``clock`` bumps when anything
        listed changed."""
        rel_dir = rel_dir.strip("/")
        if self.rules.tracked_changed():
            rel_dir = ""
        while rel_dir and rel_dir not in self._records:
            rel_dir = rel_dir.rpartition("/")[0]
        while rel_dir:
            full = os.path.join(self.root, rel_dir)
            if os.path.isdir(full) and not os.path.islink(full):
                break
            rel_dir = rel_dir.rpartition("/")[0]
            while rel_dir and rel_dir not in self._records:
                rel_dir = rel_dir.rpartition("/")[0]
        old = self._subtree(rel_dir)
        for key in old:
            del self._records[key]
        self.rules.forget_dir(rel_dir)
        try:
            mtime = os.stat(os.path.join(self.root, rel_dir) if rel_dir else self.root).st_mtime_ns
        except OSError:
            mtime = 0
        if not rel_dir:
            self._walk_into_records("", self.rules.root_frame(_ALL_MASK), 0, mtime, None)
        else:
            parent, _, name = rel_dir.rpartition("/")
            prec = self._records[parent]
            h, r = self.rules.classify(prec.frame, rel_dir, name, True)
            if h:
                self._prune_child(self._records, parent, name, h)
            else:
                self._walk_into_records(rel_dir, prec.frame, r, mtime, parent)
        new = self._subtree(rel_dir) if rel_dir in self._records or not rel_dir else {}
        changed = set(old) != set(new) or any(not old[k].same(new[k]) for k in new)
        if changed:
            self.clock += 1
        self.rules.compact()

    def _subtree(self, rel_dir: str) -> dict[str, _Dir]:
        out: dict[str, _Dir] = {}
        stack = [rel_dir]
        while stack:
            d = stack.pop()
            rec = self._records.get(d)
            if rec is None:
                continue
            out[d] = rec
            prefix = d + "/" if d else ""
            for e in rec.entries:
                if e[-1] == "/":
                    stack.append(prefix + e[:-1])
        return out


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
