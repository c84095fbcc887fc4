"""Git-exact ignore rules for one workspace root, in four kinds that a request can switch.

Kinds, checked in this order (the first kind that hides a path explains it):

``deny``             ``.git`` (any file or folder of that name, at any depth, and all below
                     it) and ``Settings.deny_patterns``; always applies, tracked or not.
``ignore-file``      ``.readmanyignore`` and the other ``Settings.ignore_file_names``, layered
                     like ``.gitignore`` files (each relative to its folder, deeper files win);
                     applies to tracked files too (a tool ignore file is meant to hide them).
``gitignore``        nested ``.gitignore`` files, ``$GIT_COMMON_DIR/info/exclude`` and
                     ``core.excludesFile``; never hides a path git tracks.
``default-exclude``  ``Settings.default_excludes`` (gitignore syntax, relative to the root),
                     plus every folder holding a ``pyvenv.cfg`` (a virtualenv) or a
                     ``conda-meta/`` folder (a conda env); never hides a path git tracks.

Semantics follow git 2.39 ``dir.c`` and ``wildmatch.c`` (not only the gitignore doc):

* Lines: a UTF-8 BOM is skipped, ``\\r\\n`` ends a line like ``\\n``, lines starting with
  ``#`` are comments, trailing spaces are trimmed unless escaped with ``\\`` (tabs are
  kept), a NUL byte ends the line's pattern (C string), files over 100 MiB are skipped
  (``PATTERN_MAX_FILE_SIZE``), in-tree ignore files that are symlinks are not read
  (``O_NOFOLLOW``).
* ``!`` negates, a trailing ``/`` matches folders only (a symlink is not a folder), a pattern
  without ``/`` (after removing the trailing one) matches the basename at any depth,
  otherwise the path relative to the ignore file's folder (a leading ``/`` only anchors).
* Per path: the last matching line of a file wins; files in deeper folders win over
  shallower ones, then ``info/exclude``, then ``core.excludesFile``.
* A path below an excluded folder is excluded by that folder's rule, whatever deeper
  files or negations say (git's ``prep_exclude``); the ignore files inside an excluded
  folder are not even read.
* ``tracked`` comes from ``git ls-files -z --cached``; for a folder, "tracked" means it
  contains a tracked path (git's ``directory_exists_in_index``: such a folder is entered,
  its tracked files are shown, its untracked ones stay excluded).
* A root below the repository's top obeys the ignore files from the top down to it.
  Outside a repository ``.gitignore`` files (root and below) and ``core.excludesFile``
  still apply; there is no tracked set and no ``info/exclude``.
* Nested repositories (a folder below the root holding ``.git``): as ripgrep does, they are
  entered; inside, their own ``.gitignore`` files and ``info/exclude`` apply and the outer
  repository's ``.gitignore``/``info/exclude`` stop applying (ripgrep's ``ignore`` crate
  stops at the first parent with ``.git``); tool ignore files, default excludes, deny
  rules and ``core.excludesFile`` keep applying. The nested repository's tracked files
  (its own ``git ls-files``) are never hidden by ``gitignore``/``default-exclude``.

Matching runs on the "byte view" of names (``rules/wildmatch.py``); why the matching is a
port of git and not pathspec: ``rules/patterns.py``.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any

from readmany_daemon.rules import checks
from readmany_daemon.rules.files import MAX_PATTERN_FILE_BYTES, MAX_WARNINGS_PER_FILE, RuleFiles
from readmany_daemon.rules.frame import (
    K_DEFAULT,
    K_DENY,
    K_GIT,
    K_IGNORE_FILE,
    RESCUABLE,
    Excluded,
    Frame,
    State,
    last_match,
)
from readmany_daemon.rules.git import RepoLocation, TrackedSet
from readmany_daemon.rules.kinds import (
    ALL,
    DEFAULT_EXCLUDE,
    DENY,
    GITIGNORE,
    IGNORE_FILE,
    KIND_BITS,
    Filters,
    Verdict,
)
from readmany_daemon.rules.patterns import NameMatcher, PatternList
from readmany_daemon.rules.regex import compile_quick
from readmany_daemon.rules.repo import RepoFacts
from readmany_daemon.rules.wildmatch import byte_view, from_byte_view
from readmany_daemon.settings import Settings

__all__ = ["MAX_PATTERN_FILE_BYTES", "MAX_WARNINGS_PER_FILE", "Frame", "IgnoreRules"]


# --------------------------------------------------------------------------------------
# the rules object


class IgnoreRules:
    """All ignore rules for one workspace root.

    ``root``: absolute real path of the workspace folder. Paths given to methods are
    root-relative POSIX strings (``"pkg/a.py"``; never ``""`` for ``check``). Nothing here
    raises for bad ignore files; problems are appended to ``warnings`` (``"file:line:
    reason"`` strings, plus a line if git failed). Git is asked for two things only, the
    configuration and the tracked set (``facts``, a ``RepoFacts``: ``rules/repo.py``);
    the configuration is asked again when one of git's configuration files changed
    (``outside_changed``, called at the freshness barrier). The rule files are read and
    cached by ``files`` (a ``RuleFiles``: ``rules/files.py``). The rule engine itself
    never asks git for a verdict.

    Attributes: ``repo`` (``RepoLocation`` or ``None``), ``repo_top`` (its working tree
    top or ``None``), ``root_prefix`` (the root relative to ``repo_top``, byte view,
    ``""`` or ``"a/b/"``), ``warnings``, ``deny_list`` and ``default_list`` (the settings'
    pattern lists), ``facts`` and ``files``.
    """

    def __init__(self, root: str, settings: Settings, tracked: list[str] | None = None) -> None:
        # ``tracked``: the root's ``git ls-files -z --cached`` already read by the caller
        # (sorted as ``str``), so no git process is started for it (index/gitlist.py)
        self.root = root
        self.settings = settings
        self.warnings: list[str] = []
        self._load(tracked)

    def _load(self, tracked: list[str] | None) -> None:
        """Everything git and the rule files decide, read from scratch (``__init__``,
        ``reload``)."""
        root, settings = self.root, self.settings
        #: what git says: the repository, the tracked sets, the configuration
        self.facts = RepoFacts(root, self.warnings, tracked)
        loc = self.facts.repo
        self.repo: RepoLocation | None = loc
        self.repo_top: str | None = loc.top if loc else None
        top = loc.top if loc else root
        rel_top = os.path.relpath(root, top).replace(os.sep, "/") if loc else "."
        #: root's folder relative to the repository top (byte view), "" or "a/b/".
        self.root_prefix = "" if rel_top == "." else byte_view(rel_top) + "/"
        #: the same as a plain ``str`` (surrogate escapes, not byte view)
        self.root_prefix_str = "" if rel_top == "." else rel_top + "/"
        self._ignore_names: tuple[str, ...] = tuple(
            n for n in dict.fromkeys(settings.ignore_file_names) if n and "/" not in n
        )
        self._names_in_dir = frozenset((".gitignore", *self._ignore_names))
        self._special_files = frozenset((*self._names_in_dir, ".git", "pyvenv.cfg"))
        self._special_dirs = frozenset((".git", "conda-meta"))
        self._quick_cache: dict[tuple[PatternList, ...], tuple[Any, Any]] = {}
        self._matchers: dict[frozenset[PatternList], NameMatcher] = {}
        self._root_frames: dict[int, Frame] = {}
        #: kinds whose rules exclude the root or a folder above it (set by ``root_frame``
        #: for the kinds asked so far): such a root is read as named explicitly
        self.root_excluded = 0
        w = self.warnings
        self.deny_list = PatternList.from_patterns(
            settings.deny_patterns, "denyPatterns", self.root_prefix, DENY, w
        )
        self.default_list = PatternList.from_patterns(
            settings.default_excludes, "defaultExcludes", self.root_prefix, DEFAULT_EXCLUDE, w
        )
        #: the rule files read so far (ignore files, info/exclude, core.excludesFile)
        self.files = RuleFiles(
            top,
            self.root_prefix,
            self.facts,
            self._ignore_names,
            (self.deny_list, self.default_list),
        )

    def reload(self) -> None:
        """Read git's facts and the rule files afresh, as for a new root: the workspace
        folder was deleted and made again (a new clone, a repository made or removed
        there), so the repository it is in, its tracked set and its rule files may all
        differ from what was read. Warnings start empty again. The caller walks the root
        again (``Index.apply`` with ``RULES``)."""
        self.facts.collect()
        self.warnings.clear()
        self._load(None)

    # ---- git facts (``RepoFacts``) -----------------------------------------------------

    @property
    def tracked(self) -> TrackedSet | None:
        """The root repository's tracked set (``None`` outside a repository); its
        ``stamp`` is git's index file when it was read (see ``tracked_changed``)."""
        return self.facts.tracked

    def tracked_changed(self) -> bool:
        """Whether git's index file changed since the tracked set was read; if so the set
        is re-read (lazily) and True is returned (the caller re-evaluates verdicts)."""
        if not self.facts.tracked_changed():
            return False
        self._root_frames.clear()
        return True

    def is_tracked(self, rel: str) -> bool:
        """Whether git tracks ``rel`` (root-relative), in the root's repository or a
        nested one. Always False outside a repository."""
        return self.facts.tracks(rel, False)

    def has_tracked_under(self, rel_dir: str) -> bool:
        """Whether folder ``rel_dir`` (root-relative, ``""`` = root) contains a tracked
        path."""
        return self.facts.has_tracked_under(rel_dir)

    def outside_changed(self) -> bool:
        """Whether a rule source no watch covers changed since it was read: git's
        configuration files (``rules/outside.config_files``; git is asked again, and only
        a new ``core.ignoreCase`` or ``core.excludesFile`` value counts), the file
        ``core.excludesFile`` names, ``info/exclude`` (the root repository's and nested
        ones'). If so every cached rule file is dropped and True is returned: the caller
        walks the root again (``Index.apply`` with ``RULES``). Costs a few ``stat``
        calls; git runs only when a configuration file changed."""
        changed = self.facts.config_changed()
        if self.files.outside_changed():
            changed = True
        if changed:
            self.files.forget_all()
            self.forget_dir("")
        return changed

    @property
    def ignore_case(self) -> bool:
        """git's ``core.ignoreCase`` for this root (``RepoFacts.ignore_case``)."""
        return self.facts.ignore_case

    @property
    def excludes_file(self) -> str | None:
        """The ``core.excludesFile`` path git would use (``RepoFacts.excludes_file``)."""
        return self.facts.excludes_file

    # ---- frames ---------------------------------------------------------------------

    def root_frame(self, mask: int = 15) -> Frame:
        """The frame for the entries of the root folder, for the kinds in ``mask``.

        Lists above the root (from the repository top down) are included. A root that
        those rules exclude (itself or a folder above it, like a Python installed inside
        a git-managed ``~/.pyenv/versions/``) is taken as named explicitly, as a named
        path is read even when ignored: its entries are still judged by every pattern,
        the folder verdict is not applied, and a warning says so."""
        got = self._root_frames.get(mask)
        if got is not None:
            return got
        states: list[State] = [None, None, None, None]
        states[K_DENY] = (self.deny_list,)
        if mask & DEFAULT_EXCLUDE:
            states[K_DEFAULT] = (self.default_list,)
        for k, bit in ((K_IGNORE_FILE, IGNORE_FILE), (K_GIT, GITIGNORE)):
            if mask & bit:
                states[k] = self.down_to_root(bit)[0]
        frame = Frame((states[0], states[1], states[2], states[3]), self.tracked)
        self._root_frames[mask] = frame
        return frame

    def down_to_root(self, bit: int) -> tuple[tuple[PatternList, ...], Verdict | None]:
        """The lists of kind ``bit`` (``IGNORE_FILE`` or ``GITIGNORE``) for the root's
        entries, read from the repository top down to the root (deepest folder first,
        then for ``GITIGNORE`` ``info/exclude`` and ``core.excludesFile``), and the rule
        that excludes the first folder on the way (the root included) that they exclude,
        each folder checked as an entry of its parent first (git's ``prep_exclude``).
        Such a root is recorded in ``root_excluded`` with a warning: it is read as named
        explicitly."""
        lists = self.files.global_lists() if bit == GITIGNORE else ()
        lists = self.files.dir_lists(bit, "", None) + lists
        first: Verdict | None = None
        cur = ""
        for part in self.root_prefix[:-1].split("/") if self.root_prefix else ():
            path = cur + part
            hit = last_match(lists, path, part, True)
            if hit is not None and not hit[0].negated:
                verdict = hit[1].verdict(hit[0])
                first = first or verdict
                self.root_excluded |= bit
                note = (
                    f"the workspace root lies in {from_byte_view(path)}/, which "
                    f"{verdict.source} ignores; its files are listed "
                    "as if the root were named explicitly"
                )
                if note not in self.warnings:
                    self.warnings.append(note)
            cur = path + "/"
            lists = self.files.dir_lists(bit, cur, None) + lists
        return lists, first

    def enter(
        self,
        parent: Frame,
        rel_dir: str,
        excl_bits: int,
        files: Collection[str] | None,
        dirs: Collection[str] | None,
    ) -> tuple[Frame, int]:
        """The frame for the entries of folder ``rel_dir`` (root-relative, not ``""``),
        entered from ``parent`` (the frame of its parent's entries).

        ``excl_bits``: kinds that excluded ``rel_dir`` but kept it because it holds tracked
        paths (they switch to "everything untracked below is hidden"). ``files``/``dirs``:
        the folder's entry names if already listed (else the file system is probed).
        Returns ``(frame, hidden)``, ``hidden`` being the kinds that hide the folder itself
        found only now: a virtualenv/conda env for ``default-exclude`` (0 if the folder
        holds tracked paths, which then puts that kind in excluded mode)."""
        if (
            not excl_bits
            and files is not None
            and self._special_files.isdisjoint(files)
            and (dirs is None or self._special_dirs.isdisjoint(dirs))
        ):
            return parent, 0  # nothing in this folder changes the rules
        states = list(parent.states)
        tracked = parent.tracked
        changed = False
        for k in range(4):
            if excl_bits & KIND_BITS[k] and not isinstance(states[k], Excluded):
                states[k] = Excluded(rel_dir)
                changed = True
        hidden = 0
        if files is None:
            full = os.path.join(self.root, rel_dir)
            is_repo = os.path.lexists(os.path.join(full, ".git"))
        else:
            is_repo = ".git" in files or (dirs is not None and ".git" in dirs)
        top_dir = self.root_prefix + byte_view(rel_dir) + "/"
        st_if = states[K_IGNORE_FILE]
        if (
            isinstance(st_if, tuple)
            and self._ignore_names
            and (files is None or not self._names_in_dir.isdisjoint(files))
        ):
            new = self.files.dir_lists(IGNORE_FILE, top_dir, files)
            if new:
                states[K_IGNORE_FILE] = new + st_if
                changed = True
        st_git = states[K_GIT]
        if is_repo and st_git is not None:
            base = self.files.dir_lists(GITIGNORE, top_dir, files)
            states[K_GIT] = base + self.files.nested_globals(rel_dir)
            tracked = self.facts.nested_tracked.get(rel_dir, tracked)
            changed = True
        elif isinstance(st_git, tuple) and (files is None or ".gitignore" in files):
            new = self.files.dir_lists(GITIGNORE, top_dir, files)
            if new:
                states[K_GIT] = new + st_git
                changed = True
        elif is_repo:
            self.files.nested_globals(rel_dir)
            tracked = self.facts.nested_tracked.get(rel_dir, tracked)
            changed = True
        st_def = states[K_DEFAULT]
        if isinstance(st_def, tuple):
            full = os.path.join(self.root, rel_dir)
            if files is None:
                venv = os.path.isfile(os.path.join(full, "pyvenv.cfg")) or os.path.isdir(
                    os.path.join(full, "conda-meta")
                )
            else:
                venv = "pyvenv.cfg" in files or (dirs is not None and "conda-meta" in dirs)
            if venv:
                # a virtualenv / conda env: hidden unless it holds tracked paths, and in
                # both cases everything untracked below is hidden by default-exclude
                states[K_DEFAULT] = Excluded(rel_dir)
                changed = True
                if tracked is None or not tracked.has_under(rel_dir):
                    hidden |= DEFAULT_EXCLUDE
        if not changed:
            return parent, hidden
        return Frame((states[0], states[1], states[2], states[3]), tracked), hidden

    def name_matcher(self, lists: frozenset[PatternList]) -> NameMatcher:
        """The (cached) ``NameMatcher`` for a set of lists."""
        got = self._matchers.get(lists)
        if got is None:
            got = self._matchers[lists] = NameMatcher(lists)
        return got

    def quick(self, frame: Frame) -> tuple[Any, Any]:
        """``(paths_files, paths_dirs)``: multi-line regexes over newline-joined
        top-relative paths (byte view) for the positive patterns of the frame's lists that
        basename prefiltering cannot cover (``None`` when there are none); the others are
        prefiltered by ``NameMatcher.hits``. A match is only a candidate
        (``classify`` decides)."""
        if not frame._ready:
            key = frame.lists
            got = self._quick_cache.get(key)
            if got is None:
                got = (
                    compile_quick([q for lst in key for q in lst.quick_files]),
                    compile_quick([q for lst in key for q in lst.quick_dirs]),
                )
                self._quick_cache[key] = got
            frame._q = got
            frame._ready = True
        return frame._q

    def classify(self, frame: Frame, rel: str, name: str, is_dir: bool) -> tuple[int, int]:
        """Evaluate one entry precisely: ``(hidden, rescued)`` kind masks.

        ``hidden``: kinds that hide ``rel`` (after tracked rescue); ``rescued``: kinds
        whose patterns exclude ``rel`` but that keep it because it is tracked (a folder:
        holds tracked paths). ``rel`` is root-relative, ``name`` its basename."""
        hard, soft = self.classify_soft(frame, rel, name, is_dir)
        if soft and self.tracked_in(frame, rel, is_dir):
            return hard, soft
        return hard | soft, 0

    def classify_soft(self, frame: Frame, rel: str, name: str, is_dir: bool) -> tuple[int, int]:
        """Like ``classify`` without asking git: ``(hard, soft)`` where ``hard`` kinds hide
        ``rel`` whatever git tracks and ``soft`` kinds (gitignore, default-exclude) hide it
        unless it is tracked (see ``tracked_in``)."""
        hard = 0
        soft = 0
        path = self.root_prefix + byte_view(rel)
        bname = byte_view(name)
        for k, st in enumerate(frame.states):
            if st is None:
                continue
            if isinstance(st, Excluded):
                excluded = True
            else:
                hit = last_match(st, path, bname, is_dir)
                excluded = hit is not None and not hit[0].negated
            if excluded:
                bit = KIND_BITS[k]
                if bit & RESCUABLE:
                    soft |= bit
                else:
                    hard |= bit
        return hard, soft

    def tracked_ready(self, frame: Frame) -> bool:
        """Whether asking ``tracked_in`` for this frame would not wait for git."""
        t = frame.tracked
        return t is None or t.loaded

    def tracked_in(self, frame: Frame, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` is tracked in the frame's repository (a folder: holds a tracked
        path); waits for ``git ls-files`` the first time."""
        return self._tracked_in(frame, rel, is_dir)

    def _tracked_in(self, frame: Frame, rel: str, is_dir: bool) -> bool:
        t = frame.tracked
        if t is None:
            return False
        return t.has_under(rel) if is_dir else t.contains(rel)

    # ---- whole-path checks ------------------------------------------------------------

    def frame_for_dir(self, rel_dir: str, mask: int) -> tuple[Frame, int]:
        """The frame for the entries of ``rel_dir`` (root-relative, ``""`` = root) for the
        kinds in ``mask``, reached from the root with probes, and the kinds that hide
        ``rel_dir`` itself or a folder above it (after tracked rescue)."""
        frame = self.root_frame(mask)
        hidden = 0
        cur = ""
        for part in rel_dir.split("/") if rel_dir else ():
            path = cur + part
            h, r = self.classify(frame, path, part, True)
            if part == ".git":
                h |= DENY
            hidden |= h
            frame, venv = self.enter(frame, path, h | r, None, None)
            hidden |= venv
            cur = path + "/"
        return frame, hidden

    def check(self, rel: str, is_dir: bool, filters: Filters = ALL) -> Verdict | None:
        """Which rule hides ``rel`` (root-relative POSIX, not ``""``), or ``None``
        (``rules.checks.check``: the rules, their order and the tracked rescue)."""
        return checks.check(self, rel, is_dir, filters)

    def check_folders_first(self, rel: str, is_dir: bool, filters: Filters = ALL) -> Verdict | None:
        """``check`` of the shallowest folder above ``rel`` that it hides, else ``check``
        of ``rel``, in one walk down ``rel``'s folders (``rules.checks.check_folders_first``)."""
        return checks.check_folders_first(self, rel, is_dir, filters)

    # ---- maintenance ------------------------------------------------------------------

    def forget_dir(self, rel_dir: str) -> None:
        """Drop cached ignore files of ``rel_dir`` and below (root-relative, ``""`` = all),
        so the next walk re-reads them."""
        self.files.forget(rel_dir)
        self._quick_cache.clear()
        self._matchers.clear()
        self._root_frames.clear()

    def compact(self) -> None:
        """Drop walk-time caches (per-name prefilter memos; they rebuild on demand) and
        collect the git subprocesses' results."""
        self._matchers.clear()
        self.facts.collect()

    def ignore_files_hash(self) -> str:
        """Hex BLAKE2b over ``(source, content digest)`` of every rule source loaded so
        far (``RuleFiles.ignore_files_hash``, for snapshot validity)."""
        return self.files.ignore_files_hash()

    def errors(self) -> list[str]:
        """Warnings including git failures (``git ls-files``), after waiting for git."""
        out = list(self.warnings)
        if self.tracked is not None:
            self.tracked.wait()
            if self.tracked.error:
                out.append(self.tracked.error)
        return out
