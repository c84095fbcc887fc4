"""The request context: who asks, whether they still want the answer, and the engine jobs.

The engine runs in executor threads, one request per thread. ``Jobs.running(ctx)`` binds a
``RequestContext`` to the thread for the duration of one job and counts it; the overlay
lookup reads the asking connection from it (``current_context``) and ``checkpoint``
(every workspace's ``Workspace.checkpoint``, called by the engine once per item it loads)
raises ``Cancelled`` once ``$/cancelRequest`` set its ``cancel`` flag, so the engine stops
at its next file.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from readmany_daemon.errors import Cancelled


@dataclass(frozen=True)
class RequestContext:
    """Who is asking (``conn_id``) and whether they still want the answer (``cancel``)."""

    conn_id: int | None
    cancel: threading.Event = field(default_factory=threading.Event)


_local = threading.local()


def current_context() -> RequestContext | None:
    """The context of the request running on this thread, if any."""
    ctx: RequestContext | None = getattr(_local, "ctx", None)
    return ctx


def checkpoint() -> None:
    """Raise ``Cancelled`` when the request running on this thread was cancelled."""
    ctx = current_context()
    if ctx is not None and ctx.cancel.is_set():
        raise Cancelled("request cancelled")


class Jobs:
    """The engine jobs of one service: how many run now (``inflight``), how many were
    stopped by cancellation (``cancelled``), and when the last one started or ended
    (``last_call``, monotonic s; the background warm-up waits for quiet). Thread-safe."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.inflight = 0
        self.cancelled = 0
        self.last_call = 0.0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def running(self, ctx: RequestContext) -> Iterator[None]:
        """Run one job on this thread under ``ctx``: bound as the thread's context and
        counted in ``inflight`` until it ends; a ``Cancelled`` leaving it is counted."""
        _local.ctx = ctx
        with self._lock:
            self.inflight += 1
            self.last_call = time.monotonic()
        try:
            yield
        except Cancelled:
            with self._lock:
                self.cancelled += 1
            raise
        finally:
            with self._lock:
                self.inflight -= 1
                self.last_call = time.monotonic()
            _local.ctx = None

    def quiet_for(self, seconds: float, now: float) -> bool:
        """Whether no job runs and none ended within ``seconds`` before ``now``."""
        return self.inflight == 0 and now - self.last_call >= seconds
