"""The second half of the git-seeded listing (``index/gitlist.py``): the non-git rule
kinds (``deny``, ``ignore-file``, ``default-exclude``) applied to git's answer, level by
level over folders, and the sorted-list arithmetic that cuts hidden folders out of git's
byte-sorted listing.

Imported by ``GitSeededListing.files`` once git runs (``gitlist`` itself imports only
``os`` and ``rules/git.py``, so that git starts before any heavy import).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from readmany_daemon.rules.ignore import Frame, IgnoreRules
    from readmany_daemon.rules.kinds import Filters

__all__ = ["GitPlan"]

_S_IFMT = 0o170000
_S_IFDIR = 0o040000
_S_IFREG = 0o100000
_S_IFLNK = 0o120000


def _group(paths: list[str]) -> dict[str, list[str]]:
    """``{folder: [names]}`` (root-relative folders, ``""`` = the root)."""
    by_dir: dict[str, list[str]] = {}
    for p in paths:
        d, _, n = p.rpartition("/")
        lst = by_dir.get(d)
        if lst is None:
            by_dir[d] = [n]
        else:
            lst.append(n)
    return by_dir


def _children(dirs: set[str]) -> dict[str, list[str]]:
    children: dict[str, list[str]] = {}
    for d in dirs:
        if d:
            parent, _, name = d.rpartition("/")
            children.setdefault(parent, []).append(name)
    return children


_Level = list[tuple[str, "Frame"]]


class GitPlan:
    """The non-git kinds applied to git's answer, in two passes: the tracked paths (while
    git still walks for the others), then what git's walk adds or lacks."""

    def __init__(self, rules: IgnoreRules, filters: Filters, tracked: list[str]) -> None:
        from readmany_daemon.rules.kinds import DEFAULT_EXCLUDE, IGNORE_FILE

        self.rules = rules
        self.filters = filters
        self.tracked = tracked
        root = rules.root
        self.prefix = root if root.endswith("/") else root + "/"
        mask = filters.mask
        probe = [".git"]
        if mask & IGNORE_FILE:
            names = dict.fromkeys(rules.settings.ignore_file_names)
            probe += [n for n in names if n and "/" not in n]
        self.probe_names = probe
        self.venv = bool(mask & DEFAULT_EXCLUDE)
        #: tracked names per folder (deleted ones too) and the folder tree they make
        self.t_dir = _group(tracked)
        self.t_dirs = _closure(self.t_dir)
        self.t_children = _children(self.t_dirs)
        #: what IgnoreRules.enter looks for in a folder: ``(files, folders)``
        self.special: dict[str, tuple[list[str], list[str]]] = {}
        #: folders holding a ``.git`` entry, and the other folders the engine lists
        self.repos: set[str] = set()
        self._probe(self.t_dirs, False)
        self.listed: list[str] = []
        self.extra: list[str] = []
        self._reset()

    def _reset(self) -> None:
        #: frames of the visible folders walked
        self.frames: dict[str, Frame] = {}
        #: folders whose whole subtree is hidden or the engine's
        self.cut: list[str] = []
        self.cut_set: set[str] = set()
        #: hidden files
        self.drop: set[str] = set()
        #: folders the engine lists (reached, visible parent)
        self.engine: set[str] = set()

    def _probe(self, dirs: set[str] | list[str], venv: bool) -> bool:
        """Look for what ``IgnoreRules.enter`` looks for in each folder (venv markers
        with ``venv``): ``access`` (no exception when absent, the usual case), then
        ``lstat`` for the type. True if something new was found."""
        names = self.probe_names
        if venv and self.venv:
            names = [*names, "pyvenv.cfg", "conda-meta"]
        access = os.access
        lstat = os.lstat
        special = self.special
        found = False
        try:
            fd = os.open(self.rules.root, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return False
        try:
            for d in dirs:
                if not d:
                    continue  # the root's own rules are root_frame's
                files: list[str] = []
                folders: list[str] = []
                for n in names:
                    rel = d + "/" + n
                    if not access(rel, os.F_OK, dir_fd=fd, follow_symlinks=False):
                        continue
                    try:
                        fmt = lstat(rel, dir_fd=fd).st_mode & _S_IFMT
                    except OSError:
                        continue
                    if fmt == _S_IFDIR:
                        folders.append(n)
                    elif fmt in (_S_IFREG, _S_IFLNK):
                        files.append(n)
                if files or folders:
                    old = special.get(d)
                    if old is not None:
                        files = list(dict.fromkeys([*old[0], *files]))
                        folders = list(dict.fromkeys([*old[1], *folders]))
                        if len(files) == len(old[0]) and len(folders) == len(old[1]):
                            continue
                    special[d] = (files, folders)
                    found = True
                    if ".git" in files or ".git" in folders:
                        self.repos.add(d)
        finally:
            os.close(fd)
        return found

    # ---- pass 1: the tracked paths ---------------------------------------------------------

    def walk_tracked(self, root_frame: Frame) -> None:
        self._reset()
        self._walk([("", root_frame)], self.t_dir, None, self.t_children, self.repos)

    # ---- pass 2: git's listing ---------------------------------------------------------------

    def add_listing(self, listed: list[str], plain: bool, has_repos: bool) -> bool:
        """Take git's walk: the untracked files it lists are classified (new folders walked),
        the tracked ones it lacks checked on disk. True when a folder holding tracked paths
        proved a virtualenv above untracked paths: pass 1 must run again first."""
        repos: set[str] = set()
        if has_repos:
            entries = [p for p in listed if p.endswith("/")]
            repos.update(p[:-1] for p in entries)
            gone = set(entries)
            listed = [p for p in listed if p not in gone]
        self.listed = listed
        self.plain = plain
        untracked: list[str]
        extra: list[str]
        if listed is self.tracked:
            untracked, extra = [], []
        elif plain:
            untracked, extra = _sorted_diff(listed, self.tracked)
        else:
            eset = set(listed)
            untracked = sorted(eset.difference(self.tracked))
            extra = list(dict.fromkeys(p for p in self.tracked if p not in eset))
        as_dirs: set[str] = set()
        self.extra = self._check_tracked(extra, as_dirs)
        # a tracked path that is a folder now (a submodule, a type change): the engine's
        # when its folder is visible
        for p in as_dirs:
            if p.rpartition("/")[0] in self.frames:
                self.engine.add(p)
                self._cut(p)
        if not untracked and not repos:
            return False
        u_dir = _group(untracked)
        # folders new to pass 1 (only untracked paths below), and where they attach
        t_dirs = self.t_dirs
        new: set[str] = set()
        for d in (*u_dir, *repos):
            while d not in t_dirs and d not in new:
                new.add(d)
                d = d.rpartition("/")[0]
        if self.venv:
            # virtualenv markers matter above untracked paths only; for the folders pass 1
            # walked without looking for them, look now
            above = _closure(u_dir) & t_dirs
            if self._probe(above, True):
                return True
        new_dirs = new - repos
        self._probe(new_dirs, True)
        for d in new_dirs & self.repos:
            repos.add(d)
        u_set = {d: set(names) for d, names in u_dir.items()}
        children = _children(new)
        seeds = [
            (d, self.frames[d]) for d in dict.fromkeys([*u_dir, *children]) if d in self.frames
        ]
        self._walk(seeds, u_dir, u_set, children, repos)
        return False

    def _check_tracked(self, extra: list[str], as_dirs: set[str]) -> list[str]:
        """The tracked paths git did not list that are files or symlinks below real
        folders; those that are folders go to ``as_dirs``."""
        kept: list[str] = []
        lstat = os.lstat
        prefix = self.prefix
        real: set[str] = set()
        bad: set[str] = set()
        for p in extra:
            try:
                fmt = lstat(prefix + p).st_mode & _S_IFMT
            except OSError:
                continue  # gone
            if fmt != _S_IFDIR and fmt != _S_IFREG and fmt != _S_IFLNK:
                continue  # a FIFO, socket or device: the walk skips those
            # every folder above must be a real folder (a symlink is a file to the walk)
            up = p.rpartition("/")[0]
            ok = True
            while up and up not in real:
                if up in bad:
                    ok = False
                    break
                try:
                    is_dir = lstat(prefix + up).st_mode & _S_IFMT == _S_IFDIR
                except OSError:
                    is_dir = False
                if not is_dir:
                    bad.add(up)
                    ok = False
                    break
                real.add(up)
                up = up.rpartition("/")[0]
            if not ok:
                continue
            if fmt == _S_IFDIR:
                as_dirs.add(p)
            else:
                kept.append(p)
        return kept

    # ---- the level-by-level walk -------------------------------------------------------------

    def _cut(self, d: str) -> None:
        self.cut.append(d)
        self.cut_set.add(d)

    def _walk(
        self,
        level: _Level,
        by_dir: dict[str, list[str]],
        untracked: dict[str, set[str]] | None,
        children: dict[str, list[str]],
        repos: set[str],
    ) -> None:
        """Walk down from ``level`` (folders whose frames are known): classify the files
        ``by_dir`` names (``untracked``: per folder, the names git does not track; None:
        all tracked) and enter the folders ``children`` names, cutting hidden ones and
        handing ``repos`` to the engine. Frames of visible folders go to ``frames``."""
        from readmany_daemon.rules.batch import level_candidates

        rules = self.rules
        classify = rules.classify_soft
        enter = rules.enter
        has_tracked_under = rules.has_tracked_under
        special = self.special
        frames = self.frames
        drop = self.drop
        no_special: tuple[list[str], list[str]] = ([], [])
        empty: set[str] = set()
        none: tuple[str, ...] = ()
        for rel, fr in level:
            frames[rel] = fr
        while level:
            cands = level_candidates(
                rules,
                [(rel, fr, by_dir.get(rel, none), children.get(rel, none)) for rel, fr in level],
            )
            nxt: _Level = []
            for (rel, fr), (cf, cd) in zip(level, cands, strict=True):
                prefix = rel + "/" if rel else ""
                excl = bool(fr.excl_mask)  # default-exclude hides every untracked path here
                names = by_dir.get(rel)
                if names:
                    u = untracked.get(rel, empty) if untracked is not None else empty
                    if excl and u:
                        drop.update(prefix + n for n in u)
                    for n in cf or ():
                        hard, soft = classify(fr, prefix + n, n, False)
                        if hard or (soft and n in u):
                            drop.add(prefix + n)
                kids = children.get(rel)
                if not kids:
                    continue
                for n in kids:
                    sub = prefix + n
                    if sub in repos:
                        self._cut(sub)
                        self.engine.add(sub)
                        continue
                    bits = 0
                    if excl or (cd is not None and n in cd):
                        hard, soft = classify(fr, sub, n, True)
                        if hard:
                            self._cut(sub)
                            continue
                        if soft:
                            if not has_tracked_under(sub):
                                self._cut(sub)  # nothing tracked below: all hidden
                                continue
                            bits = soft  # tracked paths below: the untracked ones hidden
                    sp = special.get(sub)
                    if bits or sp is not None:
                        frame, _ = enter(fr, sub, bits, *(sp or no_special))
                    else:
                        frame = fr  # what enter gives a folder holding nothing it looks for
                    frames[sub] = frame
                    nxt.append((sub, frame))
            level = nxt

    # ---- the answer ------------------------------------------------------------------------

    def result(self) -> list[str]:
        """git's list minus what the walk dropped, plus the tracked extras and the
        engine's folders, in byte order."""
        listed = self.listed
        # engine folders below a hidden folder were not reached; cut ones nested in
        # other cut ones change nothing
        cut = sorted(self.cut_set, key=lambda d: d + "/")
        drop = self.drop
        kept = _cut_ranges(listed, cut) if self.plain else _cut_prefixes(listed, cut)
        if drop:
            kept = _without(kept, drop) if self.plain else [p for p in kept if p not in drop]
        extra = _cut_prefixes(self.extra, cut)
        if drop:
            extra = [p for p in extra if p not in drop]
        parts = [extra]
        if self.engine:
            from readmany_daemon.index.model import Index

            ix = Index(self.rules.root, self.rules)
            for sub in sorted(self.engine):
                if not _cut_prefixes([sub], [c for c in cut if c != sub]):
                    continue  # inside another cut folder
                parts.append(ix.expand_dir(sub, self.filters, True))
        if not any(parts):
            return kept
        out = kept + [p for part in parts for p in part]
        if self.plain and "".join(out).isascii():
            out.sort()
        else:
            out.sort(key=os.fsencode)
        return out


def _sorted_diff(a: list[str], b: list[str]) -> tuple[list[str], list[str]]:
    """``(only in a, only in b)`` for two lists sorted alike, ``a`` without duplicates,
    ``b`` maybe with (git lists an unmerged path once per stage); runs of equal items
    are skipped a block at a time (C-level list comparison)."""
    only_a: list[str] = []
    only_b: list[str] = []
    i = j = 0
    na, nb = len(a), len(b)
    step = 64
    while i < na and j < nb:
        x = a[i]
        y = b[j]
        if x == y:
            if i + step <= na and j + step <= nb and a[i : i + step] == b[j : j + step]:
                i += step
                j += step
            else:
                i += 1
                j += 1
        elif x < y:
            only_a.append(x)
            i += 1
        else:
            if not (j and b[j - 1] == y):
                only_b.append(y)
            j += 1
    only_a.extend(a[i:])
    while j < nb:
        y = b[j]
        if not (j and b[j - 1] == y):
            only_b.append(y)
        j += 1
    return only_a, only_b


def _closure(dirs: list[str] | set[str] | dict[str, Any]) -> set[str]:
    """``dirs`` and every folder above them, the root ``""`` included."""
    out: set[str] = {""}
    for d in dirs:
        while d not in out:
            out.add(d)
            d = d.rpartition("/")[0]
    return out


def _cut_ranges(paths: list[str], cut: list[str]) -> list[str]:
    """``paths`` (sorted) without those below the folders ``cut`` (sorted by ``d + "/"``):
    each folder's paths are one range of the sorted list."""
    if not cut:
        return paths
    import bisect

    out: list[str] = []
    pos = 0
    for d in cut:
        lo = bisect.bisect_left(paths, d + "/", pos)
        hi = bisect.bisect_left(paths, d + "0", lo)  # "0" follows "/"
        out.extend(paths[pos:lo])
        pos = max(pos, hi)
    out.extend(paths[pos:])
    return out


def _without(paths: list[str], drop: set[str]) -> list[str]:
    """``paths`` (sorted) without the members of ``drop``, found by bisection."""
    import bisect

    out: list[str] = []
    pos = 0
    for p in sorted(drop):
        i = bisect.bisect_left(paths, p, pos)
        if i < len(paths) and paths[i] == p:
            out.extend(paths[pos:i])
            pos = i + 1
    if not pos:
        return paths
    out.extend(paths[pos:])
    return out


def _cut_prefixes(paths: list[str], cut: list[str]) -> list[str]:
    if not cut or not paths:
        return paths
    prefixes = tuple(d + "/" for d in cut)
    return [p for p in paths if not p.startswith(prefixes)]
