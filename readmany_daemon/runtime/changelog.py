"""The change log of one root: what changed after a clock, behind ``readMany/changedSince``."""

from __future__ import annotations

import threading
from collections import deque
from typing import TypedDict

#: Entries kept per root in the change log before the oldest are dropped (a client whose
#: clock is older than what was dropped gets ``isFreshInstance: true``).
CHANGE_LOG_LIMIT = 50_000


class Changes(TypedDict):
    """A ``readMany/changedSince`` result: the new ``clock`` and the paths that changed
    or were deleted after the asked clock; with ``isFreshInstance`` the clock could not
    be answered for and ``changed`` holds every visible file (Watchman's rule)."""

    clock: str
    isFreshInstance: bool
    changed: list[str]
    deleted: list[str]


class ChangeLog:
    """A bounded log of ``(generation, path, deleted)`` for one root. Thread-safe.

    The index calls ``record`` for every workspace-relative path whose visible state
    changed when it applies a change batch or a refresh, with the index generation
    (``index.clock``) that change produced. ``since(g)`` answers ``readMany/changedSince``
    for a clock of generation ``g``; ``None`` means the log cannot tell (never attached,
    or entries after ``g`` were dropped): the caller answers ``isFreshInstance: true``.
    """

    def __init__(self, limit: int = CHANGE_LOG_LIMIT) -> None:
        self._entries: deque[tuple[int, str, bool]] = deque(maxlen=limit)
        self._floor = -1  # generations <= floor may have lost entries
        self._lock = threading.Lock()
        self.attached = False

    def record(self, generation: int, rel: str, deleted: bool) -> None:
        """Note that ``rel`` changed (or was ``deleted``) in ``generation``."""
        with self._lock:
            if len(self._entries) == self._entries.maxlen:
                self._floor = max(self._floor, self._entries[0][0])
            self._entries.append((generation, rel, deleted))

    def since(self, generation: int) -> tuple[list[str], list[str]] | None:
        """``(changed, deleted)`` paths after ``generation`` (each sorted, a path in at
        most one list, by its last state), or None when the log cannot tell."""
        with self._lock:
            if not self.attached or generation < self._floor:
                return None
            last: dict[str, bool] = {}
            for gen, rel, deleted in self._entries:
                if gen > generation:
                    last[rel] = deleted
        changed = sorted(p for p, d in last.items() if not d)
        gone = sorted(p for p, d in last.items() if d)
        return changed, gone
