"""The git facts the ignore rules of one workspace root rest on: where its repository is,
which paths git tracks (in it and in nested repositories), and the two configuration
values they read, ``core.excludesFile`` and ``core.ignoreCase``.

Git is asked in subprocesses started at construction (``rules/git.py`` ``GitCall``,
``TrackedSet``): ``git config -z --path --get-regexp`` for both keys at once (the root
repository's, applied to nested ones too, as git applies one setting per process) and
``git ls-files -z --cached`` (per nested repository too, when the walk finds one).
The configuration is asked again only when one of git's configuration files changed
(``config_changed``); the tracked set is read again when git's index file changed
(``tracked_changed``). ``IgnoreRules`` (``rules/ignore.py``) holds one ``RepoFacts``.
"""

from __future__ import annotations

import os
from typing import Final

from readmany_daemon.rules.git import GitCall, RepoLocation, TrackedSet, repo_location
from readmany_daemon.rules.outside import FileStamps, config_files

__all__ = ["RepoFacts", "git_bool"]

#: The configuration keys read from git (``git config --get-regexp``: lower-case names).
_CONFIG_KEYS: Final = r"^core\.(excludesfile|ignorecase)$"


class RepoFacts:
    """What git says about workspace root ``root`` (absolute real path).

    ``warnings``: the list git's failures are appended to (shared with the rules).
    ``tracked``: the root's ``git ls-files -z --cached`` already read by the caller
    (sorted as ``str``), so no git process is started for it (``index/gitlist.py``).

    Attributes: ``repo`` (``RepoLocation`` of the repository ``root`` is in, or ``None``
    outside one), ``tracked`` (the root repository's ``TrackedSet``, ``None`` outside a
    repository; its ``stamp`` is git's index file when it was read) and ``nested_tracked``
    (root-relative folder of a nested repository → its ``TrackedSet``). Paths given to
    methods are root-relative POSIX strings. Nothing raises: git failing or absent reads
    as no configuration and no tracked path."""

    def __init__(self, root: str, warnings: list[str], tracked: list[str] | None = None) -> None:
        self.root = root
        self.warnings = warnings
        loc = repo_location(root)
        self.repo: RepoLocation | None = loc
        #: git's configuration files, stamped before git reads them (``config_changed``)
        self._config_stamps = FileStamps(config_files(loc))
        #: ``core.excludesFile`` and ``core.ignoreCase`` in one process (``config``)
        self._config_call = GitCall(["config", "-z", "--path", "--get-regexp", _CONFIG_KEYS], root)
        self._config_values: dict[str, str] | None = None
        self.tracked: TrackedSet | None = (
            TrackedSet(root, "", warnings, tracked, self._git_index_stamp()) if loc else None
        )
        self.nested_tracked: dict[str, TrackedSet] = {}

    # ---- the tracked sets ---------------------------------------------------------------

    def _git_index_stamp(self) -> tuple[int, int] | None:
        """``(st_mtime_ns, st_size)`` of git's index file, ``None`` without one."""
        if self.repo is None:
            return None
        try:
            st = os.stat(os.path.join(self.repo.gitdir, "index"))
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def tracked_changed(self) -> bool:
        """Whether git's index file changed since the tracked set was read; if so the set
        is re-read (lazily), the nested repositories' sets are dropped (registered again
        by ``add_nested``) and True is returned."""
        stamp = self._git_index_stamp()
        if stamp == (self.tracked.stamp if self.tracked is not None else None):
            return False
        if self.repo is not None:
            self.tracked = TrackedSet(self.root, "", self.warnings, None, stamp)
        self.nested_tracked.clear()
        return True

    def add_nested(self, rel_dir: str) -> None:
        """Register the nested repository at root-relative folder ``rel_dir``: its
        ``git ls-files`` starts now, unless it was registered already."""
        if rel_dir not in self.nested_tracked:
            self.nested_tracked[rel_dir] = TrackedSet(
                os.path.join(self.root, rel_dir), rel_dir + "/", self.warnings
            )

    def tracked_for(self, rel: str) -> TrackedSet | None:
        """The tracked set of the repository ``rel`` lies in: the deepest nested one
        registered above it, else the root's (``None`` outside a repository)."""
        best = ""
        for d in self.nested_tracked:
            if rel.startswith(d + "/") and len(d) > len(best):
                best = d
        return self.nested_tracked[best] if best else self.tracked

    def tracks(self, rel: str, is_dir: bool) -> bool:
        """Whether git tracks file ``rel`` or, for a folder (``is_dir``), a path below it
        (git's ``directory_exists_in_index``), in the root's repository or a nested one.
        Always False outside a repository; waits for ``git ls-files`` the first time."""
        t = self.tracked_for(rel)
        if t is None:
            return False
        return t.has_under(rel) if is_dir else t.contains(rel)

    def has_tracked_under(self, rel_dir: str) -> bool:
        """Whether folder ``rel_dir`` (root-relative, ``""`` = root) contains a tracked
        path."""
        t = self.tracked_for(rel_dir + "/x")
        if t is None:
            return False
        if rel_dir == "":
            t.wait()
            return bool(t.sorted)
        return t.has_under(rel_dir)

    # ---- the configuration --------------------------------------------------------------

    def config(self) -> dict[str, str]:
        """The values git's configuration gives the keys of ``_CONFIG_KEYS`` (lower-case
        names; the last value of a key wins, as ``git config --get`` says; a key written
        without ``=`` reads ``"true"``); ``{}`` when git failed or is absent."""
        got = self._config_values
        if got is None:
            got = {}
            rc, out = self._config_call.result()
            if rc == 0:
                for entry in out.split(b"\0"):
                    key, sep, value = entry.partition(b"\n")
                    if key:  # a key written without "=" is a boolean true
                        got[os.fsdecode(key).lower()] = os.fsdecode(value) if sep else "true"
            self._config_values = got
        return got

    def config_changed(self) -> bool:
        """Whether one of git's configuration files (``rules/outside.config_files``)
        changed since it was stamped and git, asked again, gives ``core.ignoreCase`` or
        ``core.excludesFile`` a new value. Costs a few ``stat`` calls; git runs only
        when a configuration file changed."""
        if not self._config_stamps.changed():
            return False
        before = self.config()
        self._config_call = GitCall(
            ["config", "-z", "--path", "--get-regexp", _CONFIG_KEYS], self.root
        )
        self._config_values = None
        return self.config() != before

    @property
    def ignore_case(self) -> bool:
        """git's ``core.ignoreCase`` for this root: when true, the patterns of the
        ``gitignore`` kind (``.gitignore`` files, ``info/exclude``, ``core.excludesFile``)
        match without regard to the case of ASCII letters, as git's do. Tool ignore files,
        default excludes, deny patterns and a request's ``exclude`` stay case-sensitive."""
        value = self.config().get("core.ignorecase")
        return value is not None and git_bool(value)

    @property
    def excludes_file(self) -> str | None:
        """The ``core.excludesFile`` path git would use (its default
        ``$XDG_CONFIG_HOME/git/ignore`` or ``~/.config/git/ignore`` when unset)."""
        value = self.config().get("core.excludesfile")
        if value:
            return value
        xdg = os.environ.get("XDG_CONFIG_HOME")
        if xdg:
            return os.path.join(xdg, "git", "ignore")
        home = os.environ.get("HOME")
        return os.path.join(home, ".config", "git", "ignore") if home else None

    def collect(self) -> None:
        """Collect the git subprocesses' results (the configuration, the tracked set)."""
        self._config_call.result()
        if self.tracked is not None:
            self.tracked.fetch()


def git_bool(value: str) -> bool:
    """A configuration value read as git reads a boolean (``git_parse_maybe_bool``):
    ``true``/``yes``/``on`` or a non-zero number is true; anything else (``false``,
    ``no``, ``off``, ``0``, ``""``, a value git would refuse) is false."""
    v = value.strip().lower()
    if v in ("true", "yes", "on"):
        return True
    try:
        return int(v, 0) != 0
    except ValueError:
        return False
