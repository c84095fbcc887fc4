"""Off Linux (macOS FSEvents, Windows ReadDirectoryChangesW): a recursive watchdog
``Observer`` over a root, with change events only, feeding the same hints as the inotify
watches of ``watcher.Watcher``. No cookie barrier there: freshness uses the stat route.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from readmany_daemon.index.model import Index
from readmany_daemon.index.records import CONTENT, ENTRY, GIT_INDEX, RULES

__all__ = ["start_observer"]


def start_observer(root: str, index: Index, push: Callable[[list[tuple[str, int]]], None]) -> Any:
    """Start and return a watchdog ``Observer`` over folder ``root`` (recursive) and git's
    folder of ``index``'s repository, calling ``push(hints)`` with ``(rel, kinds)`` hints
    (``ENTRY`` for a created, deleted or moved entry, ``CONTENT`` for a file written,
    ``GIT_INDEX``, ``RULES``) on watchdog's thread. Raises ``OSError`` when it cannot start."""
    from watchdog.events import (
        DirCreatedEvent,
        DirDeletedEvent,
        DirMovedEvent,
        FileClosedEvent,
        FileCreatedEvent,
        FileDeletedEvent,
        FileModifiedEvent,
        FileMovedEvent,
        FileSystemEvent,
        FileSystemEventHandler,
    )
    from watchdog.observers import Observer

    root_slash = root.rstrip("/") + "/"
    repo = index.rules.repo
    gitdir = os.path.realpath(repo.gitdir) if repo is not None else None
    info = os.path.join(os.path.realpath(repo.commondir), "info") if repo else None

    def observed(path: str, event: Any) -> None:
        if gitdir is not None and (path == gitdir or path.startswith(gitdir + os.sep)):
            if path[len(gitdir) + 1 :] == "index":
                push([("", GIT_INDEX)])
            return
        if info is not None and path == os.path.join(info, "exclude"):
            push([("", RULES)])
            return
        if not path.startswith(root_slash):
            return
        rel = path[len(root_slash) :].replace(os.sep, "/")
        if rel == ".git" or rel.startswith(".git/") or "/.git/" in rel:
            return
        if event.event_type in ("created", "deleted", "moved"):
            push([(rel, ENTRY)])
        elif not event.is_directory:
            push([(rel, CONTENT)])

    class Handler(FileSystemEventHandler):
        def dispatch(self, event: FileSystemEvent) -> None:
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                if raw:
                    observed(os.fsdecode(raw), event)

    observer = Observer()
    kinds: list[type[FileSystemEvent]] = [
        FileCreatedEvent,
        DirCreatedEvent,
        FileDeletedEvent,
        DirDeletedEvent,
        FileMovedEvent,
        DirMovedEvent,
        FileModifiedEvent,
        FileClosedEvent,
    ]
    handler = Handler()
    observer.schedule(handler, root, recursive=True, event_filter=kinds)
    if gitdir is not None and not gitdir.startswith(root_slash):
        observer.schedule(handler, gitdir, recursive=False, event_filter=kinds)
    observer.start()
    return observer
