"""git, asked as little as possible: where a working tree's repository lives, the ONE
wrapper for git subprocesses, and the tracked set (``git ls-files -z --cached``).

Git is asked for three things only, each in a process started early and read later so
that it runs beside the caller's work: ``core.excludesFile`` with ``core.ignoreCase``
(one ``git config``), the tracked paths (per
repository, nested ones too) and, for the cold ``readmany files``, the untracked listing
(``index/gitlist.py``). The rule engine itself never asks git for a verdict.

This module is on the cold path of ``readmany files``: ``index/gitlist.py`` starts git
through it before any heavy import, so at import time it loads nothing beyond ``os``,
``bisect`` and ``collections.abc`` (``typing``, ``array``, ``threading`` and ``weakref``
are imported where first needed, after git has started).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Iterator, Sequence

TYPE_CHECKING = False  # not typing's: importing typing here would delay git's start
if TYPE_CHECKING:
    import array
    from typing import Any, Final, NamedTuple

__all__ = [
    "GIT_LOCATION_VARS",
    "GitCall",
    "PathTable",
    "RepoLocation",
    "TrackedSet",
    "git_env",
    "repo_location",
    "resolve_gitdir",
    "scratch_fd",
]

# --------------------------------------------------------------------------------------
# repository discovery

if TYPE_CHECKING:

    class RepoLocation(NamedTuple):
        """Where a working tree's repository lives: ``top`` (working tree top, absolute),
        ``gitdir`` (``.git`` folder, or where a ``.git`` file points), ``commondir`` (where
        ``info/exclude`` lives: ``gitdir/commondir`` for linked worktrees, else ``gitdir``)."""

        top: str
        gitdir: str
        commondir: str

else:  # the same class without importing typing (see the module docstring)
    from collections import namedtuple

    RepoLocation = namedtuple("RepoLocation", ["top", "gitdir", "commondir"])
    RepoLocation.__doc__ = """Where a working tree's repository lives: ``top`` (working
    tree top, absolute), ``gitdir`` (``.git`` folder, or where a ``.git`` file points),
    ``commondir`` (where ``info/exclude`` lives: ``gitdir/commondir`` for linked worktrees,
    else ``gitdir``)."""


def resolve_gitdir(dot_git: str) -> str | None:
    """The git dir for a ``.git`` entry: the folder itself, or the ``gitdir: PATH`` target
    of a ``.git`` file (relative to the file's folder), or ``None`` if it is neither."""
    if os.path.isdir(dot_git):
        return dot_git if os.path.exists(os.path.join(dot_git, "HEAD")) else None
    try:
        with open(dot_git, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    text = os.fsdecode(head).strip()
    if not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    if not os.path.isabs(target):
        target = os.path.join(os.path.dirname(dot_git), target)
    target = os.path.normpath(target)
    return target if os.path.isdir(target) else None


def common_dir(gitdir: str) -> str:
    """The common folder of git folder ``gitdir``: the main repository's ``.git`` for a
    linked worktree (the path in its ``commondir`` file, relative to ``gitdir``), else
    ``gitdir`` itself (git's ``$GIT_COMMON_DIR``; gitrepository-layout(5))."""
    try:
        with open(os.path.join(gitdir, "commondir"), "rb") as fh:
            rel = os.fsdecode(fh.read()).strip()
    except OSError:
        return gitdir
    return os.path.normpath(os.path.join(gitdir, rel)) if rel else gitdir


def repo_location(path: str) -> RepoLocation | None:
    """Find the repository containing ``path`` (absolute, real) as git's discovery does:
    the nearest folder upward holding a ``.git`` folder or ``.git`` file. Environment
    overrides (``GIT_DIR``, ``GIT_CEILING_DIRECTORIES``) are not honoured."""
    d = path
    while True:
        dot_git = os.path.join(d, ".git")
        if os.path.lexists(dot_git):
            gitdir = resolve_gitdir(dot_git)
            if gitdir is not None:
                return RepoLocation(d, gitdir, common_dir(gitdir))
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


# --------------------------------------------------------------------------------------
# git subprocesses

#: git's repository-location variables: dropped from git's environment so that git finds
#: the repository the way ``repo_location`` does.
GIT_LOCATION_VARS: Final = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_PREFIX",
    }
)


def git_env() -> dict[str, str]:
    """This process's environment for git: without ``GIT_LOCATION_VARS``, and with
    ``GIT_OPTIONAL_LOCKS=0`` (a read never takes git's index lock)."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCATION_VARS}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def scratch_fd() -> int:
    """An anonymous read-write file descriptor for a child's output (``memfd_create`` on
    Linux, else an unlinked temporary file)."""
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        try:
            fd: int = memfd("readmany-git", os.MFD_CLOEXEC)
            return fd
        except OSError:
            pass
    import tempfile

    fd, path = tempfile.mkstemp(prefix="readmany-git-")
    os.unlink(path)
    return fd


class GitCall:
    """A git subprocess started now and waited for later, so it runs beside the caller.

    Runs ``git -C cwd ARGS`` (``env``: default ``git_env()``). Its stdout and stderr go to
    anonymous files (``scratch_fd``), not pipes: nothing has to read while the caller
    holds the GIL, and an unread result leaks no pipe (``close``, or the garbage
    collector, reaps it). Spawned with ``posix_spawnp`` (no ``subprocess`` import: the
    cold listing starts git before its other imports). ``start_error`` is the ``OSError``
    if git could not be started."""

    __slots__ = (
        "__weakref__",
        "_done",
        "_finalizer",
        "_state",
        "args",
        "err",
        "error",
        "out",
        "rc",
        "start_error",
    )

    def __init__(self, args: list[str], cwd: str, env: dict[str, str] | None = None) -> None:
        self.args = args
        self.error: str | None = None
        self.start_error: OSError | None = None
        self.out = b""
        #: git's stderr once it exited (warnings too, with exit code 0)
        self.err = b""
        self.rc = -1
        self._done = False
        out = scratch_fd()
        err = scratch_fd()
        #: ``[pid (0 once reaped or never started), stdout fd, stderr fd]``, shared with
        #: the finalizer
        self._state = [0, out, err]
        try:
            self._state[0] = os.posix_spawnp(
                "git",
                ["git", "-C", cwd, *args],
                git_env() if env is None else env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, out, 1),
                    (os.POSIX_SPAWN_DUP2, err, 2),
                ],
            )
        except OSError as exc:
            self.start_error = exc
            self.error = f"git {' '.join(args)}: {exc}"
        import weakref  # after the spawn: git is already working

        # reap git and close the scratch files even if nobody asks for the result
        self._finalizer = weakref.finalize(self, _reap, self._state)

    @property
    def started(self) -> bool:
        """Whether git was started (else see ``start_error``)."""
        return self.start_error is None

    def result(self) -> tuple[int, bytes]:
        """``(exit code, stdout)``; ``(-1, b"")`` if git could not run (see ``error``).
        Exit codes other than 0 and 1 also set ``error`` (with git's stderr)."""
        if not self._done:
            state = self._state
            if not state[0]:  # git could not start
                self.close()
                return self.rc, self.out
            _, status = os.waitpid(state[0], 0)
            state[0] = 0
            self.rc = os.waitstatus_to_exitcode(status)
            self.out = _read_all(state[1])
            self.err = err = _read_all(state[2])
            if self.rc not in (0, 1):
                self.error = f"git {' '.join(self.args)}: {os.fsdecode(err).strip()[:300]}"
            self.close()
        return self.rc, self.out

    def output(self) -> bytes | None:
        """git's stdout once it exits, or None if it failed (exit code not 0)."""
        rc, out = self.result()
        return out if rc == 0 else None

    def close(self) -> None:
        """Wait for git (if started) and release the scratch files."""
        self._done = True
        self._finalizer()

    def stop(self) -> None:
        """Stop git if it still runs (the answer is not needed), reap it, free the files."""
        pid = self._state[0]
        if pid and not self._done:
            from contextlib import suppress

            with suppress(OSError):
                os.kill(pid, 15)
        self.close()


def _reap(state: list[int]) -> None:
    """Wait for the process ``state[0]`` (if any) and close the fds ``state[1:]``."""
    pid = state[0]
    if pid:
        state[0] = 0
        import contextlib

        with contextlib.suppress(ChildProcessError):  # ``result`` reaped it meanwhile
            os.waitpid(pid, 0)
    for fd in state[1:]:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    """Everything written to scratch file ``fd`` so far."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


# --------------------------------------------------------------------------------------
# the tracked set


class PathTable(Sequence[str]):
    """Paths sorted in the byte order of their UTF-8 (git's index order), packed into
    one ``bytes`` of NUL-terminated entries plus an ``array`` of start offsets: about
    ``len(path) + 4`` bytes per path where a ``list`` of ``str`` costs ~100 (the tracked
    set of a 100,000-file repository is most of an index's memory otherwise).

    Indexing gives ``str`` (undecodable bytes as surrogate escapes, like
    ``os.fsdecode``); :meth:`contains` and :meth:`has_under` bisect on bytes."""

    __slots__ = ("_blob", "_keys", "_starts")

    def __init__(self, blob: bytes = b"") -> None:
        """``blob``: NUL-terminated paths in byte order (``git ls-files -z`` output)."""
        import array

        if blob and not blob.endswith(b"\0"):
            blob += b"\0"
        self._blob = blob
        starts = array.array("I" if len(blob) < 1 << 32 else "Q", [0])
        find, append, pos = blob.find, starts.append, 0
        while (end := find(b"\0", pos)) >= 0:
            pos = end + 1
            append(pos)
        self._starts = starts
        self._keys = _PathKeys(blob, starts)

    @classmethod
    def of(cls, paths: Iterable[str]) -> PathTable:
        """A table of ``paths`` (any order; sorted here by their UTF-8 bytes)."""
        keys = sorted(p.encode("utf-8", "surrogateescape") for p in paths)
        return cls(b"".join(k + b"\0" for k in keys))

    def __len__(self) -> int:
        return len(self._starts) - 1

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._keys[i].decode("utf-8", "surrogateescape")

    def __iter__(self) -> Iterator[str]:
        blob = self._blob
        if not blob:
            return iter(())
        return (b.decode("utf-8", "surrogateescape") for b in blob[:-1].split(b"\0"))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PathTable):
            return self._blob == other._blob
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-style equality, as list

    def joined(self) -> str:
        """The paths joined by NUL (the snapshot's form)."""
        return self._blob[:-1].decode("utf-8", "surrogateescape")

    def contains(self, rel: str) -> bool:
        """Whether ``rel`` is one of the paths."""
        key = rel.encode("utf-8", "surrogateescape")
        keys = self._keys
        i = bisect.bisect_left(keys, key)
        return i < len(keys) and keys[i] == key

    def has_under(self, rel_dir: str) -> bool:
        """Whether ``rel_dir`` is one of the paths or a folder holding one."""
        key = rel_dir.encode("utf-8", "surrogateescape")
        keys = self._keys
        i = bisect.bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            return True
        key += b"/"
        i = bisect.bisect_left(keys, key, i)
        return i < len(keys) and keys[i].startswith(key)


class _PathKeys:
    """The bytes of each entry of a :class:`PathTable` (what ``bisect`` compares)."""

    __slots__ = ("_blob", "_starts")

    def __init__(self, blob: bytes, starts: array.array[int]) -> None:
        self._blob = blob
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts) - 1

    def __getitem__(self, i: int) -> bytes:
        if i < 0:
            i += len(self)
        return self._blob[self._starts[i] : self._starts[i + 1] - 1]


class TrackedSet:
    """The tracked paths of one repository, relative to the workspace root (``prefix`` is
    the repository's folder relative to the root, ``""`` or ``"sub/"``). Loaded lazily
    from ``git ls-files -z --cached`` (started at construction unless ``paths`` is given)
    into a :class:`PathTable`.

    ``stamp``: ``(st_mtime_ns, st_size)`` of git's index file when the set was asked for
    (``None`` if unknown); ``loaded``/``sorted``: whether git's answer is in and the table
    so far (empty until loaded, never waiting); ``load()`` waits for it; ``joined()`` is
    the loaded set in the snapshot's form. ``error``: why git failed, if it did."""

    def __init__(
        self,
        cwd: str,
        prefix: str,
        warnings: list[str],
        paths: list[str] | None = None,
        stamp: tuple[int, int] | None = None,
    ) -> None:
        import threading

        self.cwd = cwd
        self.prefix = prefix
        self.stamp = stamp
        self._warnings = warnings
        self._call: GitCall | None = (
            GitCall(["ls-files", "-z", "--cached"], cwd) if paths is None else None
        )
        self._lock = threading.Lock()
        self._loaded = paths is not None
        self._sorted: PathTable = PathTable.of(paths) if paths is not None else PathTable()
        self.error: str | None = None

    @property
    def loaded(self) -> bool:
        """Whether git's answer is in (asking ``contains``/``has_under`` would not wait)."""
        return self._loaded

    @property
    def sorted(self) -> PathTable:
        """The tracked paths as loaded so far (empty until ``loaded``; never waits)."""
        return self._sorted

    def joined(self) -> str | None:
        """The tracked paths joined by NUL (the snapshot's form), or ``None`` when git's
        answer was never needed (not loaded; never waits)."""
        return self._sorted.joined() if self._loaded else None

    def load(self) -> PathTable:
        """The tracked paths, waiting for ``git ls-files`` the first time."""
        return self._sorted if self._loaded else self._load()

    def _load(self) -> PathTable:
        with self._lock:
            if self._loaded:
                return self._sorted
            call = self._call
            self._call = None
            assert call is not None
            rc, out = call.result()
            table = PathTable()
            if rc != 0:
                self.error = call.error or f"git ls-files failed in {self.cwd}"
                self._warnings.append(f"{self.error} (no tracked set: tracked files may be hidden)")
            elif out:
                if self.prefix:
                    prefix = self.prefix.encode("utf-8", "surrogateescape")
                    out = b"".join(prefix + p + b"\0" for p in out.rstrip(b"\0").split(b"\0"))
                # git lists in byte order: the table's order
                table = PathTable(out)
            self._sorted = table
            self._loaded = True
            return table

    def fetch(self) -> None:
        """Wait for ``git ls-files`` and keep its raw output (decoded on first use)."""
        call = self._call
        if call is not None and not self._loaded:
            call.result()

    def contains(self, rel: str) -> bool:
        """Whether ``rel`` (root-relative) is tracked."""
        table = self._sorted if self._loaded else self._load()
        return table.contains(rel)

    def has_under(self, rel_dir: str) -> bool:
        """Whether folder ``rel_dir`` holds a tracked path (or is itself a tracked
        gitlink, i.e. a submodule)."""
        table = self._sorted if self._loaded else self._load()
        return table.has_under(rel_dir)

    def wait(self) -> None:
        """Finish loading (for callers that want errors reported now)."""
        if not self._loaded:
            self._load()
