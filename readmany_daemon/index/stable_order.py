"""The stable order of a root's files (PROTOCOL §3 ``order: "stable"``).

Provider prompt caches match a byte prefix, so ``order: "stable"`` lays files out in an
order kept per root: a file keeps its place while it is unchanged, and a changed or new
file goes last. The order is seeded oldest git change first (``git log``; files git
does not track follow, in path order; outside git, path order) and kept in the user's
cache folder beside the index snapshot (``index-<hash>.order``, named after the
snapshot's ``<hash>`` so that the cache sweep, ``cachegc.py``, drops it with the
snapshot: the next stable read seeds it again). Mode 0600 in a 0700 folder; never in
the workspace (``snapshot.cache_dir`` refuses a cache folder inside the root).

Format (msgspec MessagePack, ``_Stored``): ``format`` (``FORMAT``), ``next`` (the next
sequence number) and per path ``(path, seq, mark)``: a path's place is its ``seq``;
``mark`` is ``[st_size, st_mtime_ns, st_ino]`` when it was last seen (None: seeded, not
seen yet). A file whose mark differs is changed: it gets the next ``seq``. Writes are
atomic (a temp file in the same folder, ``os.replace``); a file that fails to decode is
seeded again.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence

import msgspec

from readmany_daemon.rules.git import GitCall

__all__ = [
    "FORMAT",
    "ORDER_SUFFIX",
    "Mark",
    "StableOrder",
    "git_last_changes",
    "git_seed",
    "order_path",
]

log = logging.getLogger(__name__)

#: Bumped whenever the layout or the meaning of a field changes.
FORMAT = 1

#: The order file beside ``index-<hash>.snap``: ``index-<hash>.order``.
ORDER_SUFFIX = ".order"

#: What tells a changed file: ``(st_size, st_mtime_ns, st_ino)``.
Mark = tuple[int, int, int]

#: The seed reads at most this many commits of ``git log`` (pytest-dev/pytest has
#: ~18,000: about 0.4 s); files no commit among them changed count as the oldest.
SEED_COMMITS = 50_000
#: Paths the order may gain (deleted files' included) past twice its size after the
#: last sweep before deleted files' paths are dropped (``StableOrder``).
PRUNE_SLACK = 1_000
#: Files that change at once are ordered by the last of at most this many commits
#: (``git_last_changes``, asked on the read that sees them: ~0.1 s on pytest-dev/pytest).
BATCH_COMMITS = 5_000
#: ``git_last_changes`` names at most this many paths to git.
PATHSPEC_FILES = 500


class _Stored(msgspec.Struct, array_like=True):
    format: int
    next: int
    paths: list[tuple[str, int, Mark | None]]


def order_path(snapshot_path: str) -> str:
    """The order file of the root whose index snapshot is ``snapshot_path``
    (``index-<hash>.snap`` → ``index-<hash>.order``)."""
    base = snapshot_path[: -len(".snap")] if snapshot_path.endswith(".snap") else snapshot_path
    return base + ORDER_SUFFIX


def git_seed(root: str) -> list[str]:
    """The files git tracks under ``root`` (root-relative), oldest last change first
    (``git log`` over the last ``SEED_COMMITS`` commits, the newest commit's time per
    path; paths the log does not name first, ties in path order); ``[]`` outside git or
    when git fails."""
    listed = GitCall(["-c", "core.quotepath=off", "ls-files", "-z", "--cached"], root).output()
    if not listed:
        return []
    tracked = sorted({os.fsdecode(p) for p in listed.split(b"\0") if p})
    changed = _last_changes(root, SEED_COMMITS)
    return sorted(tracked, key=lambda p: (changed.get(p, 0), p))


def git_last_changes(root: str, rels: Sequence[str]) -> dict[str, int]:
    """``{rel: committer time in seconds}`` of the newest commit among the last
    ``BATCH_COMMITS`` that changed each of ``rels`` (root-relative; a path no such commit
    changed is left out); ``{}`` outside git or when git fails. What orders the files that
    change at once (``StableOrder.places``), as the seed orders all of them."""
    if not rels:
        return {}
    # up to PATHSPEC_FILES paths as literal pathspecs (git prints only their commits);
    # more would crowd the command line: then every path, filtered here
    named = list(rels) if len(rels) <= PATHSPEC_FILES else []
    changed = _last_changes(root, BATCH_COMMITS, named)
    wanted = set(rels)
    return {rel: when for rel, when in changed.items() if rel in wanted}


def _last_changes(root: str, commits: int, paths: Sequence[str] = ()) -> dict[str, int]:
    """``{path: committer time}`` of the newest of the last ``commits`` commits that
    changed each path under ``root`` (``paths``: only those, literal pathspecs)."""
    logged = GitCall(
        [
            *(["--literal-pathspecs"] if paths else []),
            "-c",
            "core.quotepath=off",
            "log",
            f"--max-count={commits}",
            "--format=//%ct",
            "--name-only",
            "--no-renames",
            "--relative",
            "-z",
            *(["--", *paths] if paths else []),
        ],
        root,
    ).output()
    changed: dict[str, int] = {}
    when = 0
    for field in (logged or b"").split(b"\0"):
        for line in field.split(b"\n"):
            if line.startswith(b"//"):
                try:
                    when = int(line[2:])
                except ValueError:
                    when = 0
            elif line:
                changed.setdefault(os.fsdecode(line), when)
    return changed


class StableOrder:
    """The stable order of one root: ``path`` its file (None: kept in memory only),
    ``seed`` the function that lists the root's files oldest first (``git_seed``),
    ``last_changes`` the one that gives files' last change times (``git_last_changes``;
    None: files that change at once go in path order), ``exists`` whether a path is
    still a file of the root (None: paths are never dropped).

    Paths of deleted files are dropped (``exists``) when the order has grown past twice
    its size after the last such sweep plus ``PRUNE_SLACK``: a deleted file that comes
    back has a new mark, so it would go last anyway, and without the sweep the file
    grows with every rename for as long as the snapshot lives.

    Not thread-safe: the daemon calls it under the root's lock (``RootEntry.lock``);
    processes share the file by atomic replacement (the last writer wins, each a valid
    order)."""

    def __init__(
        self,
        path: str | None,
        seed: Callable[[], list[str]],
        last_changes: Callable[[Sequence[str]], Mapping[str, int]] | None = None,
        exists: Callable[[str], bool] | None = None,
    ) -> None:
        self.path = path
        self._seed = seed
        self._last_changes = last_changes
        self._exists = exists
        self._swept = 0  # paths in the order after the last sweep (or load, or seed)
        self._seq: dict[str, int] = {}
        self._mark: dict[str, Mark | None] = {}
        self._next = 0
        self._loaded: tuple[int, int, int] | None = None  # the file's stat when read
        self._seeded = False

    def _file_stamp(self) -> tuple[int, int, int] | None:
        if self.path is None:
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _refresh(self) -> None:
        """Read the file when another process (or a sweep) changed it since; seed when
        there is none."""
        stamp = self._file_stamp()
        if self._seeded and stamp == self._loaded:
            return
        self._seq, self._mark, self._next = {}, {}, 0
        if stamp is not None and self.path is not None:
            try:
                with open(self.path, "rb") as f:
                    stored = msgspec.msgpack.decode(f.read(), type=_Stored)
                if stored.format == FORMAT:
                    for rel, seq, mark in stored.paths:
                        self._seq[rel] = seq
                        self._mark[rel] = mark
                    self._next = stored.next
                    self._loaded, self._seeded = stamp, True
                    self._swept = min(self._swept or len(self._seq), len(self._seq))
                    return
            except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                log.info("seeding the stable order again: %s: %s", self.path, exc)
        for rel in self._seed():
            self._seq[rel] = self._next
            self._mark[rel] = None
            self._next += 1
        self._seeded = True
        self._loaded = None
        self._swept = len(self._seq)
        self._save()

    def places(self, rels: Sequence[str], marks: Sequence[Mark | None]) -> list[int]:
        """The places (sequence numbers, ascending = earlier) of ``rels``, whose current
        ``marks`` are given (None: no file to stat; it keeps its place). A path whose mark
        changed, or not in the order yet, goes last. Several at once: the changed ones
        oldest last change first (``last_changes``, as the seed; files it gives no time
        first), then the new ones; ties in path order. The order is saved when it
        changed."""
        self._refresh()
        moved = sorted(
            rel
            for rel, mark in zip(rels, marks, strict=True)
            if rel not in self._seq
            or (mark is not None and self._mark[rel] is not None and self._mark[rel] != mark)
        )
        if len(moved) > 1 and self._last_changes is not None:
            known = [rel for rel in moved if rel in self._seq]
            times = self._last_changes(known) if len(known) > 1 else {}
            moved.sort(key=lambda rel: (rel not in self._seq, times.get(rel, 0)))
        changed = bool(moved)
        for rel in moved:
            self._seq[rel] = self._next
            self._next += 1
        for rel, mark in zip(rels, marks, strict=True):
            if mark is not None and self._mark.get(rel) != mark:
                self._mark[rel] = mark
                changed = True
        places = [self._seq[rel] for rel in rels]
        if self._exists is not None and len(self._seq) > 2 * self._swept + PRUNE_SLACK:
            asked = set(rels)
            gone = [rel for rel in self._seq if rel not in asked and not self._exists(rel)]
            for rel in gone:
                del self._seq[rel]
                self._mark.pop(rel, None)
            self._swept = len(self._seq)
            changed = changed or bool(gone)
        if changed:
            self._save()
        return places

    def _save(self) -> None:
        if self.path is None:
            return
        stored = _Stored(
            FORMAT,
            self._next,
            [(rel, seq, self._mark.get(rel)) for rel, seq in self._seq.items()],
        )
        folder = os.path.dirname(self.path)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".order-")  # 0600
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(msgspec.msgpack.encode(stored))
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            log.warning("could not write the stable order %s: %s", self.path, exc)
            return
        self._loaded = self._file_stamp()
