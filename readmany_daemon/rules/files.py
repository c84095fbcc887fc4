"""The rule files of one workspace root, read and cached: ``.gitignore`` and the tool
ignore files (``Settings.ignore_file_names``) per folder, ``info/exclude`` (the root
repository's and each nested one's) and ``core.excludesFile``.

Reading follows git 2.39 ``dir.c`` (``add_patterns``): files over 100 MiB are skipped
(``PATTERN_MAX_FILE_SIZE``), in-tree ignore files that are symlinks are not read
(``O_NOFOLLOW``), a missing file is no rule and no warning; the lines are parsed by
``PatternList.from_bytes`` (``rules/patterns.py``). The files outside the walked tree
(``info/exclude``, ``core.excludesFile``) are stamped when read, since no watch sees them
change (``outside_changed``). ``IgnoreRules`` (``rules/ignore.py``) holds one
``RuleFiles`` and layers its lists into frames; this is ripgrep's builder half
(``GitignoreBuilder``), the frames its matcher half.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from typing import Final

from readmany_daemon.rules.git import common_dir, resolve_gitdir
from readmany_daemon.rules.kinds import GITIGNORE
from readmany_daemon.rules.outside import FileStamps
from readmany_daemon.rules.patterns import PatternList
from readmany_daemon.rules.repo import RepoFacts
from readmany_daemon.rules.wildmatch import byte_view, from_byte_view

__all__ = ["MAX_PATTERN_FILE_BYTES", "MAX_WARNINGS_PER_FILE", "RuleFiles"]

#: git's ``PATTERN_MAX_FILE_SIZE`` (dir.c): larger pattern files are skipped whole.
MAX_PATTERN_FILE_BYTES: Final = 100 * 1024 * 1024
#: Problem lines listed per ignore file (``file:line: reason``); the rest are counted in
#: one more warning, so that a broken or generated file cannot flood ``readMany/status``.
MAX_WARNINGS_PER_FILE: Final = 20


class RuleFiles:
    """The rule files of a workspace root (``facts.root``, absolute real path), read on
    demand.

    ``top``: the repository's working tree top (``root`` outside a repository);
    ``root_prefix``: the root relative to ``top`` (byte view, ``""`` or ``"a/b/"``);
    ``facts``: the root's git facts (its ``root``; ``core.ignoreCase`` folds the
    ``gitignore`` kind's patterns, ``core.excludesFile`` names a file, nested
    repositories are registered);
    ``names``: the tool ignore file names; ``settings_lists``: the pattern lists from the
    settings (deny patterns, default excludes), sources too. Folders are given
    top-relative in byte view (``""`` or ``"a/b/"``). Nothing raises for a bad or
    unreadable file: problems are appended to ``warnings`` (``"file:line: reason"``)."""

    def __init__(
        self,
        top: str,
        root_prefix: str,
        facts: RepoFacts,
        names: tuple[str, ...],
        settings_lists: tuple[PatternList, ...],
    ) -> None:
        self.facts = facts
        self.root = facts.root
        #: the rules' warnings (the list ``facts`` appends git's failures to)
        self.warnings: list[str] = facts.warnings
        self.top = top
        self.root_prefix = root_prefix
        self._file_warnings: set[str] = set()  # what ``_read_list`` added (re-reads: once)
        self.names = names
        self.settings_lists = settings_lists
        #: the pattern files read from outside the walked tree (``outside_changed``)
        self._outside = FileStamps()
        self._lists: dict[tuple[int, str], tuple[PatternList, ...]] = {}
        self._nested: dict[str, tuple[PatternList, ...]] = {}  # root-rel dir -> its info/exclude
        self._global_lists: tuple[PatternList, ...] | None = None
        self._excludes_list: PatternList | None = None

    def _label(self, abspath: str) -> str:
        """Workspace-relative POSIX label for a file inside the root, else absolute."""
        rel = os.path.relpath(abspath, self.root)
        if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
            return abspath
        return rel.replace(os.sep, "/")

    def _read_list(self, abspath: str, base: str, kind: int, nofollow: bool) -> PatternList | None:
        """Read one ignore file (``None`` when absent or unreadable, with a warning for
        anything but "missing")."""
        if not nofollow:  # outside the walked tree: no watch sees it change
            self._outside.stamp(abspath)
        flags = os.O_RDONLY | (os.O_NOFOLLOW if nofollow else 0)
        try:
            fd = os.open(abspath, flags)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        except OSError as exc:
            self.warnings.append(f"{self._label(abspath)}: not read: {exc.strerror}")
            return None
        # labelled only once there is a file: most probes find none, and the label costs
        # a relpath, in the depth of the folder
        label = self._label(abspath)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size > MAX_PATTERN_FILE_BYTES:
                self.warnings.append(
                    f"{label}: ignoring excessively large pattern file ({st.st_size} bytes)"
                )
                return None
            chunks: list[bytes] = []
            total = 0
            while True:
                chunk = os.read(fd, max(st.st_size - total, 0) + 65536)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > MAX_PATTERN_FILE_BYTES:
                    self.warnings.append(f"{label}: ignoring excessively large pattern file")
                    return None
            data = b"".join(chunks)
        except OSError as exc:
            self.warnings.append(f"{label}: not read: {exc.strerror}")
            return None
        finally:
            os.close(fd)
        found: list[str] = []
        fold = kind == GITIGNORE and self.facts.ignore_case
        lst = PatternList.from_bytes(data, label, base, kind, found, fold)
        if len(found) > MAX_WARNINGS_PER_FILE:
            more = len(found) - MAX_WARNINGS_PER_FILE
            found[MAX_WARNINGS_PER_FILE:] = [f"{label}: {more} more problem lines not listed"]
        for w in found:  # re-reads: once (a set: a file's warnings are not re-scanned)
            if w not in self._file_warnings:
                self._file_warnings.add(w)
                self.warnings.append(w)
        return lst

    def dir_lists(
        self, kind: int, top_rel_dir: str, present: Collection[str] | None
    ) -> tuple[PatternList, ...]:
        """The lists of ``kind`` (``GITIGNORE``: ``.gitignore``, else the tool ignore
        files) found in one folder (``top_rel_dir`` byte view, ``""`` or ``"a/b/"``),
        winning one first. ``present``: the folder's file names if known (saves the
        probes)."""
        key = (kind, top_rel_dir)
        got = self._lists.get(key)
        if got is not None:
            return got
        names = (".gitignore",) if kind == GITIGNORE else self.names
        folder = os.path.join(self.top, from_byte_view(top_rel_dir)) if top_rel_dir else self.top
        found: list[PatternList] = []
        for name in names:
            if present is not None and name not in present:
                continue
            lst = self._read_list(os.path.join(folder, name), top_rel_dir, kind, nofollow=True)
            if lst is not None:
                found.append(lst)  # empty lists too: their content still counts for the hash
        found.reverse()  # later names in Settings.ignore_file_names win
        got = tuple(lst for lst in found if lst.patterns)
        self._lists[key] = got
        if len(got) != len(found):
            self._lists[(kind | 0x100, top_rel_dir)] = tuple(found)  # empty ones, for hashing
        return got

    def global_lists(self) -> tuple[PatternList, ...]:
        """``info/exclude`` (in a repository) then ``core.excludesFile``, in git's
        precedence order (``last_matching_pattern_from_lists`` scans EXC_FILE backwards)."""
        if self._global_lists is None:
            out: list[PatternList] = []
            repo = self.facts.repo
            if repo is not None:
                lst = self._read_list(
                    os.path.join(repo.commondir, "info", "exclude"), "", GITIGNORE, False
                )
                if lst is not None:
                    out.append(lst)
            xf = self.facts.excludes_file
            self._excludes_list = None
            if xf:
                self._excludes_list = self._read_list(xf, "", GITIGNORE, False)
                if self._excludes_list is not None:
                    out.append(self._excludes_list)
            self._global_lists = tuple(out)
        return self._global_lists

    def nested_globals(self, rel_dir: str) -> tuple[PatternList, ...]:
        """For a nested repository at root-relative ``rel_dir``: its own ``info/exclude``
        then ``core.excludesFile``. Registers its tracked set (``RepoFacts.add_nested``)."""
        got = self._nested.get(rel_dir)
        if got is None:
            self.global_lists()
            lists: list[PatternList] = []
            gitdir = resolve_gitdir(os.path.join(self.root, rel_dir, ".git"))
            if gitdir is not None:
                common = common_dir(gitdir)
                base = self.root_prefix + byte_view(rel_dir) + "/"
                lst = self._read_list(
                    os.path.join(common, "info", "exclude"), base, GITIGNORE, False
                )
                if lst is not None:
                    lists.append(lst)
                self.facts.add_nested(rel_dir)
            if self._excludes_list is not None:
                lists.append(self._excludes_list)
            got = tuple(lists)
            self._nested[rel_dir] = got
        return got

    def forget(self, rel_dir: str) -> None:
        """Drop the cached files of root-relative folder ``rel_dir`` and below (``""``:
        the root's, ``info/exclude`` and ``core.excludesFile`` too)."""
        top_dir = self.root_prefix + (byte_view(rel_dir) + "/" if rel_dir else "")
        for lkey in [k for k in self._lists if k[1].startswith(top_dir)]:
            del self._lists[lkey]
        for nkey in [
            k for k in self._nested if not rel_dir or k == rel_dir or k.startswith(rel_dir + "/")
        ]:
            del self._nested[nkey]
        if not rel_dir:
            self._global_lists = None

    def outside_changed(self) -> bool:
        """Whether a file read from outside the walked tree (``info/exclude``,
        ``core.excludesFile``) changed since it was read (a few ``stat`` calls)."""
        return self._outside.changed()

    def forget_all(self) -> None:
        """Drop every cached file, those above the root too (``core.ignoreCase`` folds
        them all), and the stamps of the files outside the walked tree."""
        self._lists.clear()
        self._nested.clear()
        self._outside.forget()
        self.forget("")

    def loaded_lists(self) -> list[PatternList]:
        """Every rule source loaded so far (settings lists, ignore files, info/exclude,
        core.excludesFile), including empty files."""
        seen: dict[int, PatternList] = {}
        for lst in (*self.settings_lists, *(self._global_lists or ())):
            seen[id(lst)] = lst
        for lists in (*self._lists.values(), *self._nested.values()):
            for lst in lists:
                seen[id(lst)] = lst
        return list(seen.values())

    def ignore_files_hash(self) -> str:
        """Hex BLAKE2b over ``(source, content digest)`` of every rule source loaded so
        far, sorted by source (for snapshot validity)."""
        import hashlib

        h = hashlib.blake2b(digest_size=16)
        for src, dig in sorted((lst.source, lst.digest) for lst in self.loaded_lists()):
            h.update(os.fsencode(src) + b"\0" + dig.encode() + b"\n")
        return h.hexdigest()
