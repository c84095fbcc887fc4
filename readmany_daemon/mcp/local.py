"""The in-process backend of ``readmany mcp``: answers without the daemon.

``LocalBackend`` keeps one long-lived ``Workspace`` per root (one content cache for all),
kept fresh without a watcher by stat checks (``_Freshness``, PROTOCOL §6's stat route),
and answers ``readMany/changedSince`` from per-file stat snapshots (``_Snapshot``), so
that in-place edits are seen without a watcher. It answers under ``--no-daemon`` (or
``READMANY_NO_DAEMON``), and whenever the daemon cannot (``mcp/backend.py``).

This is the MCP's own freshness implementation, kept apart here until it is merged with
the runtime's (``service.py``).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import stat as stat_mod
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from readmany_daemon.errors import RootNotFound

log = logging.getLogger("readmany.mcp")

#: Mtime granularity assumed by the stat checks (as ``content.ContentCache``: FAT's 2 s,
#: which also covers the lag of Linux's coarse file-time clock).
RACY_NS = 2_000_000_000

#: Snapshots kept per root for ``changed_since`` answered in this process.
SNAPSHOTS_KEPT = 4


def _under_any(rel: str, tops: set[str]) -> bool:
    """Whether folder ``rel`` is one of ``tops`` or below one (``""`` is the root)."""
    while True:
        if rel in tops:
            return True
        if not rel:
            return False
        rel = rel.rpartition("/")[0]


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


class _Freshness:
    """Keeps a long-lived in-process index current without a watcher (PROTOCOL §6, the
    stat route). Before each request (``sync``) a walked folder is re-walked when its
    ignore files changed, or when the index says it is stale (``Index.is_stale``: its
    mtime differs from the one recorded when it was listed, or it is racy). A change of
    git's index file re-walks everything. File contents need nothing here: the content
    cache is validated by stat.

    ``known`` maps each walked folder to its ignore-file stamps; ``baseline`` records
    the folders a request walked."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.names = (".gitignore", *ws.settings.ignore_file_names)
        self.known: dict[str, tuple[Any, ...]] = {}

    def _ignore_stamp(self, rel_dir: str) -> tuple[Any, ...]:
        base = self.ws.abspath(rel_dir)
        out: list[Any] = []
        for name in self.names:
            try:
                out.append((name, *_stat_key(os.stat(os.path.join(base, name)))))
            except OSError:
                continue
        return tuple(out)

    def _stale(self, index: Any, rel: str) -> bool:
        stamp = self.known.get(rel)
        if stamp is None:
            return True  # listed before we could stamp it: trust it no further
        if stamp != self._ignore_stamp(rel):
            return True
        return bool(index.is_stale(rel))

    def sync(self) -> None:
        """Before a request: re-walk what changed since it was listed."""
        ws = self.ws
        if not ws.has_index:
            return  # not walked yet: its first walk will be fresh
        index = ws.index
        index.stat_checks = True  # the index's own stat route for the request's expansions
        stale = [rel for rel in index.walked_dirs() if self._stale(index, rel)]
        if index.rules.tracked_changed():
            stale = [""]
        if not stale:
            return
        done: set[str] = set()
        for rel in sorted(stale, key=lambda r: (r.count("/"), r)):
            if not _under_any(rel, done):
                index.refresh(rel)
                done.add(rel)
        for sub in index.walked_dirs():
            if _under_any(sub, done):
                self.known[sub] = self._ignore_stamp(sub)

    def baseline(self) -> None:
        """After a request: note the folders it walked."""
        if self.ws.has_index:
            for rel in self.ws.index.walked_dirs():
                if rel not in self.known:
                    self.known[rel] = self._ignore_stamp(rel)


@dataclass
class _Snapshot:
    taken_ns: int
    files: dict[str, tuple[int, int, int, int]]
    digests: dict[str, str] = field(default_factory=dict)  # racy files: sha256 of content


@dataclass
class _LocalRoot:
    ws: Any
    fresh: _Freshness
    lock: threading.Lock = field(default_factory=threading.Lock)
    snapshots: OrderedDict[str, _Snapshot] = field(default_factory=OrderedDict)
    minted: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


def _digest(path: str, limit: int) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
                limit -= len(chunk)
                if limit < 0:
                    return None
    except OSError:
        return None
    return h.hexdigest()


class LocalBackend:
    """Answers in this process: one long-lived ``Workspace`` per root, sharing one
    content cache; each root's requests run one at a time (its lock)."""

    def __init__(self) -> None:
        from readmany_daemon.content import ContentCache
        from readmany_daemon.settings import load_settings

        self.settings, warnings = load_settings()
        for w in warnings:
            log.warning("%s", w)
        self.cache = ContentCache(self.settings.cache_bytes)
        self._roots: dict[str, _LocalRoot] = {}
        self._lock = threading.Lock()

    def _root(self, path: str) -> _LocalRoot:
        from readmany_daemon.workspace import Workspace

        with self._lock:
            lr = self._roots.get(path)
            if lr is None:
                try:
                    ws = Workspace.open(path, self.settings, cache=self.cache)
                except OSError as exc:
                    raise RootNotFound(f"invalid params: $.root: {exc}", "$.root") from None
                lr = self._roots[path] = _LocalRoot(ws, _Freshness(ws))
            return lr

    def clear(self) -> None:
        """Forget every workspace (the daemon answers now)."""
        with self._lock:
            self._roots.clear()

    def read(self, params: dict[str, Any], root: str) -> Any:
        from readmany_daemon import request
        from readmany_daemon.messages import decode_read_params, to_builtins

        decoded = decode_read_params(params)
        lr = self._root(root)
        with lr.lock:
            if decoded.sync != "none":
                lr.fresh.sync()
            answer = request.answer(lr.ws, decoded)
            lr.fresh.baseline()
        return to_builtins(answer)

    def files(self, params: dict[str, Any], root: str) -> Any:
        from readmany_daemon import request
        from readmany_daemon.messages import decode_files_params, to_builtins

        decoded = decode_files_params(params)
        lr = self._root(root)
        with lr.lock:
            lr.fresh.sync()
            answer = request.list_files(lr.ws, decoded)
            lr.fresh.baseline()
        return to_builtins(answer)

    def changed_since(self, params: dict[str, Any], root: str) -> Any:
        """``readMany/changedSince`` without a watcher: a stat snapshot of every visible
        file per clock handed out (the last ``SNAPSHOTS_KEPT``), compared with a new
        one. Racy files (modified within ``RACY_NS`` of a snapshot) are compared by
        content hash, so a change in the same timestamp tick is not missed."""
        from readmany_daemon import request
        from readmany_daemon.ignore import Filters

        clock = params.get("clock") or ""
        lr = self._root(root)
        with lr.lock:
            ws = lr.ws
            lr.fresh.sync()
            started = time.time_ns()
            paths = request.list_paths(ws, [], Filters(True, True, True))
            lr.fresh.baseline()
            snap = _Snapshot(started, {})
            for rel in paths:
                try:
                    st = os.lstat(ws.abspath(rel))
                except OSError:
                    continue  # deleted since the index listed it
                snap.files[rel] = _stat_key(st)
                if st.st_mtime_ns >= started - RACY_NS and stat_mod.S_ISREG(st.st_mode):
                    digest = _digest(ws.abspath(rel), self.settings.max_file_bytes)
                    if digest is not None:
                        snap.digests[rel] = digest
            old = lr.snapshots.get(clock)
            if old is None:
                changed, deleted = list(snap.files), []
            else:

                def digest_now(p: str) -> str | None:
                    # A file racy in ``old`` but no longer racy now has no digest in
                    # ``snap``: hash it now, or an unchanged file would count as changed.
                    got = snap.digests.get(p)
                    return got if got is not None else _digest(ws.abspath(p), limit)

                limit = self.settings.max_file_bytes
                changed = [
                    p
                    for p, key in snap.files.items()
                    if old.files.get(p) != key
                    or (p in old.digests and old.digests[p] != digest_now(p))
                    or (p not in old.digests and key[0] >= old.taken_ns - RACY_NS)
                ]
                deleted = sorted(
                    (p for p in old.files if p not in snap.files),
                    key=lambda p: p.encode("utf-8", "surrogateescape"),
                )
            new_clock = f"{ws.clock()}.{next(lr.minted)}"
            lr.snapshots[new_clock] = snap
            while len(lr.snapshots) > SNAPSHOTS_KEPT:
                lr.snapshots.popitem(last=False)
        return {
            "clock": new_clock,
            "isFreshInstance": old is None,
            "changed": changed,
            "deleted": deleted,
        }

    def call(self, method: str, params: dict[str, Any], root: str) -> Any:
        if method == "readMany/read":
            return self.read(params, root)
        if method == "readMany/files":
            return self.files(params, root)
        return self.changed_since(params, root)
