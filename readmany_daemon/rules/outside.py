"""The rule sources no watch covers: git's configuration files and the pattern files read
from outside the walked tree, with stat stamps that the freshness barrier checks.

A root's rules depend on files the watcher does not see: git's configuration
(``core.ignoreCase``, ``core.excludesFile``: system, global and repository files), the
file ``core.excludesFile`` names, and ``info/exclude`` of nested repositories (inside
``.git``, which is never walked). ``FileStamps`` keeps one stamp per such file, taken
before the file (or git, for the configuration) reads it, and ``changed()`` compares
them with the disk: a few ``stat`` calls per request (~2 µs each).

A stamp is the file's stat key (``racy.StatKey``), or ``None`` for a missing
file. A stamp taken within a timestamp tick of the file's last write is racy (git's rule,
``racy.is_racy``): a second write in the same tick may leave it unchanged. For such a
file the content's digest (``racy.file_sha256``) is kept too and compared on each check,
until a check finds the stamp no longer racy.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from readmany_daemon.racy import StatKey, file_sha256, is_racy, stat_key
from readmany_daemon.rules.git import RepoLocation

__all__ = ["FileStamps", "config_files"]

_Stamp = StatKey | None

#: A configuration file larger than this (bytes) is not digested when racy: it counts as
#: changed on every check until its stamp is no longer racy.
_MAX_DIGEST_BYTES = 1 << 20


def config_files(repo: RepoLocation | None) -> list[str]:
    """The configuration files git reads for a root in ``repo`` (``None``: outside a
    repository), as git-config(1) "FILES" lists them: the system file
    (``$GIT_CONFIG_SYSTEM``, else ``/etc/gitconfig``; none under
    ``GIT_CONFIG_NOSYSTEM``), the global ones (``$GIT_CONFIG_GLOBAL``, else
    ``$XDG_CONFIG_HOME/git/config`` or ``~/.config/git/config``, and ``~/.gitconfig``),
    then the repository's ``config`` (in ``$GIT_COMMON_DIR``) and ``config.worktree``.
    Absolute paths; files that do not exist are listed too (creating one is a change).
    Files pulled in by ``include``/``includeIf`` are not followed."""
    env = os.environ
    out: list[str] = []
    if env.get("GIT_CONFIG_NOSYSTEM", "").strip().lower() not in ("1", "true", "yes", "on"):
        out.append(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if "GIT_CONFIG_GLOBAL" in env:
        if env["GIT_CONFIG_GLOBAL"]:
            out.append(env["GIT_CONFIG_GLOBAL"])
    else:
        home = env.get("HOME", "")
        xdg = env.get("XDG_CONFIG_HOME", "")
        if xdg:
            out.append(os.path.join(xdg, "git", "config"))
        elif home:
            out.append(os.path.join(home, ".config", "git", "config"))
        if home:
            out.append(os.path.join(home, ".gitconfig"))
    if repo is not None:
        out.append(os.path.join(repo.commondir, "config"))
        out.append(os.path.join(repo.gitdir, "config.worktree"))
    return [p for p in out if os.path.isabs(p)]


class FileStamps:
    """Stat stamps of files (absolute paths) that decide a root's rules.

    ``stamp(path)`` records ``path`` as it is now (call it *before* reading the file);
    ``changed()`` tells whether any recorded file differs from its stamp (content too,
    for a racy stamp) and records them all afresh; ``forget()`` drops every stamp."""

    __slots__ = ("_stamps",)

    def __init__(self, paths: Iterable[str] = ()) -> None:
        #: path → (stamp, content digest when the stamp was racy, else None)
        self._stamps: dict[str, tuple[_Stamp, str | None]] = {}
        for path in paths:
            self.stamp(path)

    def __len__(self) -> int:
        return len(self._stamps)

    def stamp(self, path: str) -> None:
        """Record ``path``'s current stamp (and digest, when racy)."""
        self._stamps[path] = _take(path)

    def forget(self) -> None:
        """Drop every stamp (the files are read afresh, and stamped again, later)."""
        self._stamps.clear()

    def changed(self) -> bool:
        """Whether a recorded file was created, removed or changed since its stamp.
        Every file is stamped again (so a file whose write settled is trusted by stat
        after one more timestamp tick)."""
        changed = False
        stamps = self._stamps
        for path, (old, digest) in list(stamps.items()):
            now = _take(path)
            # an old stamp that was racy: compare the content (once more when the new
            # stamp is no longer racy; from then on the stamp alone vouches)
            if now[0] != old or (
                digest is not None and (now[1] if now[1] is not None else _digest(path)) != digest
            ):
                changed = True
            stamps[path] = now
        return changed


def _take(path: str) -> tuple[_Stamp, str | None]:
    """``(stamp, digest)`` of ``path`` now: the digest only when the stamp is racy."""
    now = time.time_ns()
    try:
        st = os.stat(path)
    except OSError:
        return None, None
    stamp = stat_key(st)
    if not is_racy(st.st_mtime_ns, now) and not is_racy(st.st_ctime_ns, now):
        return stamp, None
    return stamp, _digest(path)


def _digest(path: str) -> str:
    """``racy.file_sha256`` of ``path`` (links followed); ``""`` when unreadable; random
    hex digits when larger than ``_MAX_DIGEST_BYTES``: such a racy file counts as changed
    on every check."""
    try:
        got = file_sha256(path, _MAX_DIGEST_BYTES)
    except OSError:
        return ""
    if got is None:
        return os.urandom(16).hex()  # never equal: changed until no longer racy
    return got
