"""The recency signal: files changed in the working tree, or in the last commits.

Asked of git itself (``git status --porcelain``, ``git log --name-only``), three calls
started together in a thread of their own; remembered per key (``RootRanking`` gives the
index's clock, which a write moves, with :func:`git_stamp`, which a commit, a checkout,
a reset and staging move: they write only under ``.git``, which the index does not
list). A call waits for git at most ``WAIT_SECONDS`` in the daemon (``git status``
takes seconds on a 100,000-file tree), longer in process; until git answers,
the answer before stands (the files the index reported changed since count as changed
in the working tree: ``RootRanking`` adds them).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable
from typing import Final

from readmany_daemon.rules.git import GitCall, RepoLocation

__all__ = ["RECENT_COMMITS", "WAIT_SECONDS", "Recency", "git_stamp"]

#: How many commits back a change still counts.
RECENT_COMMITS: Final = 30
#: A commit (or a working tree) changing more files than this says nothing of a task
#: (an import, a reformat, a fresh unversioned tree): its files are left out.
MAX_CHANGED: Final = 500
#: How long a call waits for git (seconds).
WAIT_SECONDS: Final = 0.05


def git_stamp(location: RepoLocation | None) -> tuple[int, ...]:
    """What moves when git's ``HEAD``, its reflog, its index or the branch ``HEAD`` names
    change (a commit, a checkout, a reset, a merge, ``git add``): the ``(mtime_ns, size,
    inode)`` of each of those files of ``location`` (0s for one missing; a packed branch
    counts as missing), without calling git. ``()`` outside git."""
    if location is None:
        return ()
    names = [
        os.path.join(location.gitdir, "HEAD"),
        os.path.join(location.gitdir, "logs", "HEAD"),
        os.path.join(location.gitdir, "index"),
    ]
    try:
        with open(names[0], "rb") as f:
            head = f.read(4096)
    except OSError:
        head = b""
    if head.startswith(b"ref: "):
        ref = os.fsdecode(head[5:].strip())
        if ref.startswith("refs/") and ".." not in ref.split("/"):
            names.append(os.path.join(location.commondir, ref))
    out: list[int] = []
    for name in names:
        try:
            st = os.stat(name)
        except OSError:
            out.extend((0, 0, 0))
        else:
            out.extend((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)


class Recency:
    """The recent changes of the git work tree holding ``root`` (absolute); ``wait``:
    how long (seconds) a call waits for git (None: ``WAIT_SECONDS``, the daemon's)."""

    def __init__(self, root: str, wait: float | None = None) -> None:
        self.root = root
        self.wait = WAIT_SECONDS if wait is None else wait
        self._key: Hashable = object()
        #: The key whose git answer ``_ages`` is (None: none yet).
        self._answered: Hashable = None
        self._ages: dict[str, int] = {}
        self._lock = threading.Lock()
        self._running: threading.Thread | None = None

    def ages(self, key: Hashable, wait: float | None = None) -> tuple[dict[str, int], bool]:
        """``({root-relative path: age}, pending)``: age 0 for a file changed in the
        working tree or git's index (untracked files included), ``n`` for one the
        ``n``-th last commit changed (1 = HEAD), up to ``RECENT_COMMITS``; empty outside
        git. ``pending``: git's first answer was still to come when these ages were
        read (the same moment: ``pending`` read later could miss that they lack it).
        Asked again when ``key`` differs from the last call's; waits at most ``wait`` (None:
        the instance's own)."""
        with self._lock:
            running = self._running
            if key != self._key and running is None:
                self._key = key
                running = self._running = threading.Thread(
                    target=self._refresh, args=(key,), name="readmany-recency", daemon=True
                )
                running.start()
        if running is not None:
            running.join(self.wait if wait is None else wait)
        with self._lock:
            return self._ages, self._first_to_come()

    def settle(self, timeout: float) -> None:
        """Wait for git's answer in progress, at most ``timeout`` seconds."""
        with self._lock:
            running = self._running
        if running is not None:
            running.join(timeout)

    @property
    def pending(self) -> bool:
        """Whether git's first answer is still to come (git asked, not answered yet;
        False outside git once git said so)."""
        with self._lock:
            return self._first_to_come()

    def _first_to_come(self) -> bool:
        """Git asked and not answered yet (the lock held)."""
        return self._running is not None and self._answered is None

    @property
    def answered(self) -> Hashable:
        """The key whose git answer the ages are (git was asked once the key was
        current: the working tree's changes up to it are in them); None before git's
        status first answered (and always outside git)."""
        with self._lock:
            return self._answered

    def _refresh(self, key: Hashable) -> None:
        ages, status = self._read()
        with self._lock:
            self._ages = ages
            if status:
                self._answered = key
            self._running = None

    def _read(self) -> tuple[dict[str, int], bool]:
        """``(ages, status)``: ``status`` whether git's status of the working tree
        answered (False outside git, or when git failed)."""
        q = ["-c", "core.quotepath=off"]
        prefix_call = GitCall(["rev-parse", "--show-prefix"], self.root)
        status_call = GitCall(
            [*q, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", "."], self.root
        )
        log_call = GitCall(
            [
                *q,
                "log",
                f"-n{RECENT_COMMITS}",
                "--no-merges",
                "--format=format://",
                "--name-only",
                "--relative",
                "-z",
            ],
            self.root,
        )
        prefix = prefix_call.output()
        status = status_call.output()
        logged = log_call.output()
        if prefix is None:
            return {}, False
        top = os.fsdecode(prefix.strip())
        work: dict[str, int] = {}
        fields = (status or b"").split(b"\0")
        i = 0
        while i < len(fields):
            entry = fields[i]
            i += 1
            if len(entry) < 4:
                continue
            if entry[:1] in (b"R", b"C"):
                i += 1  # the rename's source follows
            path = os.fsdecode(entry[3:])
            if path.startswith(top):
                work[path[len(top) :]] = 0
        ages = work if len(work) <= MAX_CHANGED else {}
        commits: list[list[str]] = []
        for field in (logged or b"").split(b"\0"):
            for line in field.split(b"\n"):
                if line == b"//":
                    commits.append([])
                elif line and commits:
                    commits[-1].append(os.fsdecode(line))
        for age, names in enumerate(commits, 1):
            if len(names) <= MAX_CHANGED:
                for name in names:
                    ages.setdefault(name, age)
        return ages, status is not None
