"""The daemon-first backend of ``readmany mcp``: the shared daemon, else this process.

Answers come from the shared per-user daemon, asked the way the CLI asks it
(``route.ask_daemon``, a daemon of another version replaced) over one session kept
open from call to call (``route.DaemonLink``), so that the daemon keeps this MCP
session's change ledger beside its watcher's change log (PROTOCOL §4, "Stale files");
when none runs the call is answered in this process (``mcp/local.py``) and the daemon
is started in the background for the next one (``route.autostart``).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from readmany_daemon import route
from readmany_daemon.mcp.local import LocalBackend

if TYPE_CHECKING:
    from readmany_daemon.wire.cursor import ReadRequest


class DaemonBackend:
    """Asks the shared daemon as ``readmany read`` does (``route.ask_daemon``), and
    answers in process (``LocalBackend``) when it cannot, starting the daemon in the
    background for the next call (``route.autostart``; at most once per
    ``RESPAWN_AFTER`` s while it starts)."""

    RESPAWN_AFTER = 30.0

    def __init__(self, local: LocalBackend) -> None:
        self.local = local
        self._spawned_at: float | None = None
        self._lock = threading.Lock()
        #: The session kept with the daemon, one call at a time (``_link_lock``).
        self.link = route.DaemonLink()
        self._link_lock = threading.Lock()
        self.answered_by_daemon = 0

    def call(
        self, method: str, params: dict[str, Any], root: str, req: ReadRequest | None = None
    ) -> Any:
        """Answer ``method`` for ``root`` from the daemon (sent ``params``), else here
        (``req``: the decoded ``readMany/read`` request, when the caller has it)."""
        return self.ask(method, params, root, req)[0]

    def close(self) -> None:
        """End the kept session with the daemon (the daemon goes on)."""
        with self._link_lock:
            self.link.close()

    def ask(
        self, method: str, params: dict[str, Any], root: str, req: ReadRequest | None = None
    ) -> tuple[Any, int]:
        """``call``'s answer with the number of the kept daemon connection that gave it
        (``route.DaemonLink.number``; 0: answered in this process). Each new number is
        a new connection, whose ledger in the daemon starts empty."""
        with self._link_lock:
            asked = route.ask_daemon(root, method, params, no_daemon=False, link=self.link)
        if asked.answer is not None:
            self.answered_by_daemon += 1
            self.local.clear()
            return asked.answer, asked.link
        result = self.local.call(method, params, root, req)
        if asked.start_daemon:  # False when the daemon failed midway: it runs
            with self._lock:
                now = time.monotonic()
                due = self._spawned_at is None or now - self._spawned_at > self.RESPAWN_AFTER
                if due:
                    self._spawned_at = now
            if due:
                route.autostart()
        return result, 0
