"""The watch table of one root's inotify instance (``watcher.Watcher`` keeps one per
instance, and a new one when it restarts with a new instance).

Maps each watched walked folder (workspace-relative, ``""`` the root) to its watch
descriptor and back, the special folders (``"cookie"``, ``"git"``, ``"info"``) by watch
descriptor, and the walked folders that could not be watched. Thread-safe: every map is
changed under one lock, which the reader thread also takes to look a descriptor up.
"""

from __future__ import annotations

import errno
import itertools
import os
import threading
from collections.abc import Callable
from typing import Any

from readmany_daemon.index.records import FOLDER
from readmany_daemon.rules.git import RepoLocation

__all__ = ["COOKIE", "GIT", "INFO", "Owner", "WatchTable"]

COOKIE = "cookie"
GIT = "git"
INFO = "info"


#: What the table reports to (the ``Watcher``): ``(limit_hit(), queue_hints(hints),
#: degrade(message), warn(message))``: the watch limit was reached; change hints to queue
#: (called holding the table's lock); a folder cannot be watched for another reason; a
#: warning to keep.
Owner = tuple[
    Callable[[], None],
    Callable[[list[tuple[str, int]]], None],
    Callable[[str], None],
    Callable[[str], None],
]


class WatchTable:
    """The watches of one inotify instance ``fd`` (watchdog ``InotifyFD``) over folder
    ``root``, each added with mask ``mask`` and ``callback`` (a watchdog
    ``WatchCallback``). ``max_watches``: refuse folder watches past this count, as the
    kernel does past ``fs.inotify.max_user_watches`` (``ENOSPC``)."""

    def __init__(
        self, root: str, fd: Any, mask: int, callback: Any, owner: Owner, max_watches: int | None
    ) -> None:
        self.root = root
        self.fd = fd
        self._mask = mask
        self._callback = callback
        self._limit_hit, self._queue_hints, self._degrade, self._warn = owner
        self._max_watches = max_watches
        self._root_slash = root.rstrip("/") + "/"
        self.lock = threading.Lock()
        #: rel → wd << 32 | callback id (one int a folder: the maps cost ~12 B a file)
        self._by_rel: dict[str, int] = {}
        self._by_wd: dict[int, str] = {}
        self._special: dict[int, str] = {}  # wd → COOKIE | GIT | INFO
        self.unwatched: set[str] = set()
        self._cids = itertools.count(1)

    @property
    def watched(self) -> int:
        """How many workspace folders have a watch."""
        return len(self._by_rel)

    def lookup(self, wd: int) -> tuple[str | None, str | None]:
        """``(rel, special)`` of watch descriptor ``wd``: its folder, else its special
        kind, else ``(None, None)``."""
        with self.lock:
            rel = self._by_wd.get(wd)
            return rel, self._special.get(wd) if rel is None else None

    def drop(self, wd: int) -> tuple[str | None, str | None]:
        """Forget ``wd`` (the kernel dropped it); returns what ``lookup`` would have."""
        with self.lock:
            rel = self._by_wd.pop(wd, None)
            if rel is not None and self._by_rel.get(rel, -1) >> 32 == wd:
                del self._by_rel[rel]
            return rel, self._special.pop(wd, None)

    def has_special(self, kind: str) -> bool:
        """Whether a special folder of ``kind`` has its watch."""
        with self.lock:
            return kind in self._special.values()

    def add_specials(self, cookie_dir: str | None, repo: RepoLocation | None) -> bool:
        """Watch the special folders: ``cookie_dir`` (made if missing), git's folders of
        ``repo`` and its ``info/`` (those that exist now; a missing one is skipped without
        a warning). Returns whether the cookie folder is watched."""
        cookie_ok = False
        if cookie_dir is not None:
            try:
                os.makedirs(cookie_dir, mode=0o700, exist_ok=True)
                cookie_ok = self.add_special(cookie_dir, COOKIE)
            except OSError as exc:
                self._warn(f"no barrier cookies ({cookie_dir}: {exc.strerror})")
        # A git folder that is not there now (the root deleted, then recreated without
        # ``.git``) is not watched and not warned about: a root's warnings describe its
        # present state (issue 22, item 6), and a missing folder has nothing to watch.
        if repo is not None:
            if os.path.isdir(repo.gitdir):
                self.add_special(repo.gitdir, GIT)
            info = os.path.join(repo.commondir, "info")
            if os.path.isdir(info):
                self.add_special(info, INFO)
            if repo.commondir != repo.gitdir and os.path.isdir(repo.commondir):
                self.add_special(repo.commondir, GIT)
        return cookie_ok

    def add_special(self, path: str, kind: str) -> bool:
        """Watch absolute folder ``path`` as ``kind``; False (with a warning for an
        error) when it cannot be watched."""
        cid = next(self._cids)
        try:
            wd = self.fd.add_callback(os.fsencode(path), self._mask, self._callback, cid)
        except OSError as exc:
            if exc.errno != errno.EBADF:  # EBADF: the instance closed (the watcher stops)
                self._warn(f"cannot watch {path}: {exc.strerror}")
            return False
        if wd < 0:
            self.fd.remove_callbacks([(wd, cid)])
            return False
        with self.lock:
            self._special[wd] = kind
        return True

    def add(self, rel: str) -> None:
        """Watch walked folder ``rel`` (no-op when watched). A folder gone meanwhile is
        queued for a re-list; one that cannot be watched is kept in ``unwatched``."""
        with self.lock:
            if rel in self._by_rel:
                return
            if self._max_watches is not None and len(self._by_rel) >= self._max_watches:
                self.unwatched.add(rel)
                self._limit_hit()
                return
            cid = next(self._cids)
            path = self._root_slash + rel if rel else self.root
            try:
                wd = self.fd.add_callback(os.fsencode(path), self._mask, self._callback, cid)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    self.unwatched.add(rel)
                    self._limit_hit()
                elif exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    self._queue_hints([(rel, FOLDER)])  # gone meanwhile: re-list
                elif exc.errno == errno.EBADF:
                    pass  # the instance closed (the watcher stops, or restarts): not a fault
                elif exc.errno == errno.ENAMETOOLONG:
                    # past PATH_MAX: the walk could not list it either and warns so;
                    # stat-checked at each barrier, like a folder we may not read
                    self.unwatched.add(rel)
                else:
                    self.unwatched.add(rel)
                    self._degrade(f"cannot watch {rel or '.'}: {exc.strerror}")
                return
            if wd < 0:  # EACCES: watchdog returns -1 instead of raising
                self.fd.remove_callbacks([(wd, cid)])
                self.unwatched.add(rel)
                return
            other = self._by_wd.get(wd)
            if other is not None and other != rel:
                # The same folder known under another name (moved without our seeing
                # the old name go): that name is stale; re-list it.
                self._queue_hints([(other, FOLDER)])
            self._by_rel[rel] = wd << 32 | cid
            self._by_wd[wd] = rel
            self.unwatched.discard(rel)

    def remove(self, rel: str) -> None:
        """Stop watching walked folder ``rel`` (no-op when not watched)."""
        with self.lock:
            self.unwatched.discard(rel)
            got = self._by_rel.pop(rel, None)
            if got is None:
                return
            wd, cid = got >> 32, got & 0xFFFFFFFF
            if self._by_wd.get(wd) == rel:
                del self._by_wd[wd]
            self.fd.remove_callbacks([(wd, cid)])

    def reconcile(self, records: set[str]) -> None:
        """Make the watches follow ``records`` (the walked folders): drop the others,
        add the missing ones (those left unwatched first)."""
        with self.lock:
            extra = [rel for rel in self._by_rel if rel not in records]
            missing = [rel for rel in records if rel not in self._by_rel]
            self.unwatched.intersection_update(records)
        for rel in extra:
            self.remove(rel)
        if missing:
            retry = [rel for rel in missing if rel in self.unwatched] or missing
            for rel in retry:
                with self.lock:
                    self.unwatched.discard(rel)
                self.add(rel)
