"""The cold one-shot ``readmany files`` (no patterns), seeded from git.

``Index.build(root, settings).files(filters)`` walks the whole tree and evaluates every
rule in Python; for the ``gitignore`` kind git computes the same answer in C (the index
is checked against git by tests/unit/rules/test_ignore_differential.py). So ``start``,
called before any heavy import (this module imports only ``os`` and ``rules/git.py``),
launches two git processes whose output goes to anonymous files (``memfd``), so git
works while Python imports:

* ``GIT_INDEX_FILE=<none> git -C ROOT ls-files -z --others --exclude-standard``: with no
  index every file counts as untracked, so git walks the tree and lists every file and
  symlink on disk that gitignore keeps (relative to the root, byte-sorted) and every
  nested repository, submodules included, as ``dir/`` without entering it;
* ``git -C ROOT ls-files -z --cached``: the tracked set (~20 ms), handed to
  ``IgnoreRules`` so that it starts no git of its own for it.

``GitSeededListing.files`` then applies the other kinds (``deny``, ``ignore-file``,
``default-exclude``) with the ``IgnoreRules`` machinery, level by level over folders: one
frame per folder (``enter``, given what it looks for in the folder: ignore files,
``.git``, and above untracked paths, the only ones they can hide, ``pyvenv.cfg`` and
``conda-meta``; probed with ``access``, never a listing), the per-level classifier the
index walk uses too (``rules/batch.py`` ``level_candidates``: a basename prefilter and path
regexes), and ``classify_soft`` for its candidates.
``default-exclude`` never hides a tracked path; a folder it excludes that holds tracked
paths hides the untracked ones below (git's ``prep_exclude``). In two passes:

1. the tracked paths, while git still walks;
2. git's listing: the untracked files it adds (their new folders walked from the nearest
   one pass 1 walked) and the tracked files it lacks, ``lstat``-ed with their folders:
   kept if a file or symlink below real folders (gitignore never hides a tracked path;
   these are ignored but tracked), handed to the engine if a folder now (an uninitialised
   submodule, a type change), dropped otherwise (deleted). A sorted diff finds both.

Nested repositories (git's ``dir/`` entries, folders holding a ``.git`` entry) go to the
engine: ``Index.expand_dir``, the full walk's code for one folder. The answer is git's
byte-sorted list minus the hidden files and folders (a folder is one range of it), plus
the tracked extras and the engine's parts. Kinds are independent (each hides by its own
lists and the tracked set), so a path is visible iff gitignore keeps it and no other
enabled kind hides it.

Falls back to ``Index.build(root, settings).files(filters)`` (``GitSeededListing.fallback``
says why) when ``--no-gitignore`` is given (git's answer would be wrong), git is absent
or fails, the root is not in a work tree (``rules.git.repo_location``, checked before git is
started: no git process runs for such a root), rules above a root
below the repository's top exclude it (the index reads such a root as named explicitly;
git lists nothing untracked there). ``--no-ignore-files`` and ``--no-default-excludes``
only drop a kind.

Known gap: a ``.git`` entry git does not take for a repository (an empty ``.git``
folder, a broken ``.git`` file) in a folder with no tracked path and no path git lists
below it: the index treats the folder as a nested repository (the outer ``.gitignore``
files stop applying there), this listing never looks inside.
``READMANY_GITLIST_TRACE=1`` prints phase times to stderr.
"""

from __future__ import annotations

import os

from readmany_daemon.rules.git import GitCall, git_env, repo_location

TYPE_CHECKING = False  # not typing's: importing typing here would delay git's start
if TYPE_CHECKING:
    from readmany_daemon.rules.kinds import Filters
    from readmany_daemon.settings import Settings

__all__ = ["NO_REPOSITORY", "GitSeededListing", "start"]

#: ``GitSeededListing.fallback`` for a root in no git work tree (found as git would, upward)
NO_REPOSITORY = "not in a repository"

#: an index file that cannot exist (its folder does not): git reads an empty index
_NO_INDEX = "/nonexistent-readmany-gitlist/index"
#: fsmonitor off: the answer comes from the disk, as the index's does. ``core.ignoreCase``
#: is left to the repository's configuration, which the rule engine reads too
#: (``IgnoreRules.ignore_case``): both fold the gitignore patterns' case or neither does.
_GIT_CONFIG = ("-c", "core.fsmonitor=false")

_TRACE = os.environ.get("READMANY_GITLIST_TRACE", "") not in ("", "0")
_T0 = 0.0


def _trace(what: str) -> None:
    import sys
    import time

    global _T0
    now = time.perf_counter()
    if not _T0:
        _T0 = now
    print(f"gitlist {1000 * (now - _T0):7.1f} ms  {what}", file=sys.stderr)


def start(root: str, gitignore: bool = True) -> GitSeededListing | None:
    """Start listing folder ``root`` with or without the ``gitignore`` kind: git starts
    now when it can help (the other kinds are applied by ``files``, whatever their
    filters). ``None`` when ``root`` is not an existing folder (the caller reports it)."""
    if _TRACE:
        _trace("start")
    real = os.path.realpath(root)
    if not os.path.isdir(real):
        return None
    if not gitignore:
        return GitSeededListing(real, "--no-gitignore")
    if repo_location(real) is None:
        # no git to ask: starting it would only cost a fork, an exec and a failure
        return GitSeededListing(real, NO_REPOSITORY)
    return GitSeededListing(real, None)


class GitSeededListing:
    """A listing in progress for ``root`` (absolute, real). Call ``files`` once."""

    def __init__(self, root: str, fallback: str | None) -> None:
        self.root = root
        #: why ``files`` fell back to the index walk (None: it did not, or not yet)
        self.fallback = fallback
        #: what the git-seeded listing did: paths git listed, tracked paths it did not list
        #: but that were kept, folders handed to the engine, folders and files hidden
        self.counts: dict[str, int] = {}
        #: what the listing could not see (folders it could not list), one line each;
        #: filled by ``files``
        self.warnings: list[str] = []
        self._others: GitCall | None = None
        self._tracked: GitCall | None = None
        if fallback is None and (
            not hasattr(os, "posix_spawnp") or os.path.lexists(os.path.dirname(_NO_INDEX))
        ):
            self.fallback = "git can't be started here"
        elif fallback is None:
            env = git_env()
            argv = [*_GIT_CONFIG, "ls-files", "-z"]
            no_index = {**env, "GIT_INDEX_FILE": _NO_INDEX}
            others = GitCall([*argv, "--others", "--exclude-standard"], root, no_index)
            self._others = others
            if others.start_error is None:
                self._tracked = GitCall([*argv, "--cached"], root, env)
            error = others.start_error or (self._tracked and self._tracked.start_error)
            if error is not None:
                self.fallback = f"git: {error}"
                self.close()

    def close(self) -> None:
        """Stop and reap git (idempotent)."""
        for call in (self._others, self._tracked):
            if call is not None:
                call.stop()
        self._others = self._tracked = None

    def files(self, settings: Settings, filters: Filters) -> list[str]:
        """``Index.build(root, settings).files(filters)``, byte for byte."""
        try:
            got = self._fast(settings, filters) if self._others is not None else None
        finally:
            self.close()
        if got is not None:
            if _TRACE:
                _trace(f"done: {len(got)} paths")
            return got
        from readmany_daemon.index.model import Index

        if _TRACE:
            _trace(f"fallback: {self.fallback}")
        index = Index.build(self.root, settings)
        listed = index.files(filters)
        self.warnings = list(index.warnings)
        return listed

    # ---- the git-seeded listing ----------------------------------------------------------

    def _fast(self, settings: Settings, filters: Filters) -> list[str] | None:
        if not filters.respect_gitignore:
            self.fallback = "--no-gitignore"
            return None
        assert self._others is not None and self._tracked is not None
        from readmany_daemon.rules.ignore import Frame, IgnoreRules
        from readmany_daemon.rules.kinds import DENY, GITIGNORE

        if _TRACE:
            _trace("imported")
        raw_tracked = self._tracked.output()
        if raw_tracked is None:
            self.fallback = f"git ls-files --cached failed (exit {self._tracked.rc})"
            return None
        tracked, tracked_plain = _split(raw_tracked)
        if not tracked_plain:
            tracked.sort()  # the order rules.git.TrackedSet keeps (str, not git's bytes)
        rules = IgnoreRules(self.root, settings, tracked)
        if rules.repo is None:
            self.fallback = NO_REPOSITORY
            return None
        if rules.root_prefix:
            rules.root_frame(DENY | GITIGNORE)
            if rules.root_excluded & GITIGNORE:
                self.fallback = "the root lies in a folder gitignore excludes"
                return None
        from readmany_daemon.index.gitplan import GitPlan

        plan = GitPlan(rules, filters, tracked)
        root_frame = Frame(rules.root_frame(filters.mask & ~GITIGNORE).states, None)
        plan.walk_tracked(root_frame)
        if _TRACE:
            _trace(f"tracked set walked ({len(tracked)} paths)")
        raw = self._others.output()
        if _TRACE:
            _trace("git ls-files --others done")
        if raw is None:
            self.fallback = f"git ls-files --others failed (exit {self._others.rc})"
            return None
        if self._others.err:
            # git skips what it cannot open or access (a folder deeper than PATH_MAX,
            # one without permission) with a warning and exit 0: the index walk names
            # those folders
            self.fallback = "git could not list every folder"
            return None
        listed: list[str]
        plain: bool
        if tracked_plain and raw == raw_tracked:  # nothing untracked, nothing tracked gone
            listed, plain = tracked, True
        else:
            listed, plain = _split(raw)
        has_repos = b"/\0" in raw
        if plan.add_listing(listed, plain and tracked_plain, has_repos):
            plan.walk_tracked(root_frame)  # venv markers above untracked paths: again
            plan.add_listing(listed, plain and tracked_plain, has_repos)
        if _TRACE:
            _trace("untracked paths walked")
        out = plan.result()
        self.counts = {
            "listed": len(plan.listed),
            "extra": len(plan.extra),
            "engine": len(plan.engine),
            "cut": len(set(plan.cut)),
            "dropped": len(plan.drop),
        }
        return out


def _split(raw: bytes) -> tuple[list[str], bool]:
    """NUL-terminated paths as ``str``, and whether they hold no surrogate escapes (then
    ``str`` order is git's byte order)."""
    if not raw:
        return [], True
    try:
        text = raw.decode("utf-8")
        plain = True
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "surrogateescape")
        plain = False
    paths = text.split("\0")
    if not paths[-1]:
        paths.pop()
    return paths, plain
