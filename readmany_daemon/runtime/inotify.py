"""watchdog's ``InotifyFD`` (Linux), with what the freshness barrier needs to skip its
cookie round trip when the kernel queue is empty, and the check that the installed
watchdog still has the shape this relies on.

The kernel queues an inotify event before the syscall that caused it returns
(inotify(7); fsnotify is called in the VFS path of the write, create, rename or close).
So when a barrier finds the instance's queue empty (``FIONREAD`` is 0) *and* watchdog
has handled every batch its reader read (the counters agree), every change that finished
before the barrier has reached the watcher's hint queue: no cookie is needed. Otherwise
the barrier falls back to its cookie (``watcher.Watcher.barrier``).

The counters: ``reads`` goes up on the reader thread when ``_check_inotify_fd`` says the
fd is readable, just before watchdog's ``os.read``; ``handled`` takes a value of
``reads`` once everything read up to that value has been handled. Two shapes of watchdog
are known:

- ``"batch"`` (watchdog 7.1.0): one thread reads a batch (``read_events``) and handles
  it whole before it reads again, so ``handled = reads`` when ``read_events`` is called;
- ``"queue"`` (watchdog 7.1.1): a reader thread puts raw buffers on ``_raw_queue`` (a
  ``SimpleQueue``) and a dispatcher thread (``InotifyFD-Dispatcher``) handles them. The
  queue is wrapped: ``put`` tags each buffer with ``reads`` at that moment (every read of
  the buffer was counted before it), and each ``get`` by the dispatcher first sets
  ``handled`` to the tag of the buffer it got before (handled whole by then).

A barrier reads ``FIONREAD`` first and the counters second: an event consumed by a read
before the barrier looked at the queue is counted in ``reads``, and ``handled`` reaches
that count only once it is handled.

Private names relied on: ``_check_inotify_fd`` (called by watchdog's reader with
``()`` or ``(timeout_ms)``: the override forwards whatever it gets), ``_inotify_fd``,
``read_events`` (batch) or ``_raw_queue`` with ``_dispatch_raw_buffers`` (queue).
``barrier_shape`` checks them once a process: their call signatures, and their behaviour
(a probe instance must see an event, count its read, and catch up). When one does not
fit, nothing of watchdog is overridden: plain ``InotifyFD`` is used and barriers use
cookies (``Shape.barrier == "cookie"``, ``Shape.reason`` says what did not fit).
``tests/unit/runtime/test_inotify.py`` checks the same against the installed watchdog.
"""

from __future__ import annotations

import fcntl
import inspect
import logging
import os
import struct
import tempfile
import termios
import threading
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from queue import SimpleQueue
from typing import Any

__all__ = [
    "WATCHDOG_PRIVATE_NAMES",
    "Shape",
    "barrier_shape",
    "check_shape",
    "death_cause",
    "inotify_fd_class",
    "log_shape",
    "max_user_watches",
    "queue_quiet",
    "reader_threads",
    "watchdog_version",
]

log = logging.getLogger(__name__)

#: The names of watchdog's ``InotifyFD`` this module relies on beyond its public API.
WATCHDOG_PRIVATE_NAMES = ("_check_inotify_fd", "_inotify_fd")
#: The call signatures of ``InotifyFD._check_inotify_fd`` known to fit, as the
#: parameters after ``self`` (name and default): watchdog 7.1.0 ``()``, 7.1.1
#: ``(timeout_ms=None)``.
KNOWN_CHECK_SIGNATURES: tuple[tuple[tuple[str, object], ...], ...] = ((), (("timeout_ms", None),))
#: Seconds the start-up probe waits for its event to be read and handled.
PROBE_TIMEOUT = 5.0

_IN_CREATE = 0x100


def max_user_watches() -> int | None:
    """``/proc/sys/fs/inotify/max_user_watches`` (Linux), or None."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", "rb") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def watchdog_version() -> str:
    """``"watchdog <version>"`` of the installed distribution (for reasons and logs)."""
    try:
        return f"watchdog {version('watchdog')}"
    except PackageNotFoundError:
        return "watchdog (version unknown)"


@dataclass(frozen=True)
class Shape:
    """What the barrier can rely on in the installed watchdog.

    ``cls``: the ``InotifyFD`` class to instantiate (the counting subclass, plain
    ``InotifyFD``, or None: no inotify, not Linux). ``barrier``: ``"quiet-queue"`` (the
    counting class fits), ``"cookie"`` (plain class) or ``"stat"`` (no inotify).
    ``reason``: ``""`` for ``quiet-queue``, else the package, its version and what did
    not fit (protocol §2 ``barrierReason``). ``mode``: ``"batch"``, ``"queue"`` or ``""``.
    """

    cls: Any
    barrier: str
    reason: str
    mode: str = ""


class _TaggedQueue:
    """Stands in for watchdog 7.1.1's ``_raw_queue`` (a ``SimpleQueue`` of bytes): ``put``
    on the reader thread tags a buffer with the reads counted so far; ``get``/
    ``get_nowait`` on the dispatcher thread mark the buffer got before as handled."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner
        self._q: SimpleQueue[tuple[int, Any]] = SimpleQueue()
        self._last = 0

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        self._q.put((self._owner.reads, item))

    def put_nowait(self, item: Any) -> None:
        self.put(item)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        owner = self._owner
        owner.handled = self._last  # the buffer got before was handled whole
        if owner.dispatcher is None:
            owner.dispatcher = threading.current_thread()
        tag, item = self._q.get(block, timeout)
        self._last = tag
        return item

    def get_nowait(self) -> Any:
        return self.get(False)

    def empty(self) -> bool:
        return self._q.empty()

    def qsize(self) -> int:
        return self._q.qsize()


def _counting_class(base: Any, mode: str) -> Any:
    """``base`` (watchdog's ``InotifyFD``) with the counters of the module docstring."""

    class CountingInotifyFD(base):  # type: ignore[misc]
        """``InotifyFD`` counting the reads of its reader thread and what was handled.
        Its reader thread never raises: what ends it is kept in ``died`` and logged."""

        def __init__(self) -> None:
            self.reads = 0
            self.handled = 0
            self.dispatcher: threading.Thread | None = None
            self.died: str | None = None
            super().__init__()
            #: watchdog's own state fits: an int fd, and (queue) a queue to wrap
            self.fits = isinstance(getattr(self, "_inotify_fd", None), int)
            if mode == "queue":
                raw = getattr(self, "_raw_queue", None)
                self.fits = self.fits and all(hasattr(raw, m) for m in ("put", "get", "get_nowait"))
                self._raw_queue = _TaggedQueue(self)

        def run(self) -> None:
            try:
                super().run()
            except Exception as exc:
                # Thread boundary: the watcher's next barrier finds this thread ended,
                # names ``died`` and restarts; the traceback goes to the log.
                self.died = f"{type(exc).__name__}: {exc}"
                log.warning("watchdog's inotify reader ended", exc_info=True)

        def _check_inotify_fd(self, *args: Any, **kwargs: Any) -> bool:
            # Forwards whatever watchdog's reader passes: a new parameter cannot end
            # the reader thread here.
            ready = bool(super()._check_inotify_fd(*args, **kwargs))
            if ready:
                self.reads += 1  # before watchdog's os.read of this batch
            return ready

        if mode == "batch":

            def read_events(self, *args: Any, **kwargs: Any) -> Any:
                self.handled = self.reads  # the batch before this call was handled whole
                return super().read_events(*args, **kwargs)

    return CountingInotifyFD


class _ProbeCallback:
    def __init__(self) -> None:
        self.seen = threading.Event()

    def on_event(self, event: Any) -> None:
        self.seen.set()

    def on_watch_deleted(self, wd: int) -> None:
        pass

    def on_queue_overflow(self) -> None:
        pass

    def on_events_lost(self) -> None:
        pass


def _probe(cls: Any, timeout: float) -> str:
    """Run an instance of counting class ``cls`` on a temporary folder: one file created
    must be seen, its read counted, and the counters must catch up (the queue quiet).
    Returns ``""`` or what did not fit."""
    with tempfile.TemporaryDirectory(prefix="readmany-probe-") as folder:
        fd = cls()
        callback = _ProbeCallback()
        try:
            if not fd.fits:
                return "InotifyFD has no _inotify_fd, or its _raw_queue is not a queue"
            fd.add_callback(os.fsencode(folder), _IN_CREATE, callback, 1)
            fd.start()
            with open(os.path.join(folder, "probe"), "wb"):
                pass
            if not callback.seen.wait(timeout):
                alive = "alive" if fd.is_alive() else "dead"
                return f"its reader thread ({alive}) did not deliver an event"
            pause = threading.Event()  # never set: a bounded wait between two looks
            for _ in range(int(timeout / 0.002)):
                if queue_quiet(fd):
                    break
                pause.wait(0.002)
            if fd.reads < 1:
                return "InotifyFD._check_inotify_fd is no longer called by its reader"
            if not queue_quiet(fd):
                return "the reader's handled batches cannot be counted (the queue never quiet)"
            if not all(alive for _, alive in reader_threads(fd)):
                return "its reader thread ended during the probe"
            return ""
        finally:
            fd.stop()
            fd.join(timeout)


def check_shape(base: Any, probe_timeout: float = PROBE_TIMEOUT) -> Shape:
    """The ``Shape`` of ``base`` (watchdog's ``InotifyFD``, or a class shaped like it):
    the call signature of ``_check_inotify_fd`` is one of ``KNOWN_CHECK_SIGNATURES``,
    ``_inotify_fd`` is set by ``__init__``, handled batches can be counted (``read_events``
    per batch, or ``_raw_queue`` with ``_dispatch_raw_buffers``), and a probe behaves
    (``_probe``). Never raises: anything that does not fit gives plain ``base`` and
    ``barrier == "cookie"``."""
    who = watchdog_version()

    def plain(what: str) -> Shape:
        return Shape(base, "cookie", f"{who}: {what}; using barrier cookies")

    check = getattr(base, "_check_inotify_fd", None)
    if check is None:
        return plain("InotifyFD has no _check_inotify_fd")
    try:
        params = list(inspect.signature(check).parameters.values())[1:]
    except (TypeError, ValueError):
        return plain("the signature of InotifyFD._check_inotify_fd cannot be read")
    got = tuple(
        (p.name, p.default if p.default is not inspect.Parameter.empty else ...) for p in params
    )
    if got not in KNOWN_CHECK_SIGNATURES or any(
        p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY) for p in params
    ):
        sig = "(" + ", ".join(p.name for p in params) + ")"
        return plain(f"InotifyFD._check_inotify_fd takes {sig}, not one of the known shapes")
    if hasattr(base, "_dispatch_raw_buffers"):
        mode = "queue"  # its _raw_queue is checked on the probe instance
    elif callable(getattr(base, "read_events", None)):
        mode = "batch"
    else:
        return plain("InotifyFD neither reads in batches nor through _raw_queue")
    cls = _counting_class(base, mode)
    try:
        problem = _probe(cls, probe_timeout)
    except OSError as exc:
        return Shape(None, "stat", f"{who}: cannot start inotify ({exc.strerror})")
    except Exception as exc:  # a shape check must not end the watcher: report it instead
        problem = f"the probe failed ({type(exc).__name__}: {exc})"
    if problem:
        return plain(problem)
    return Shape(cls, "quiet-queue", "", mode)


_shape_lock = threading.Lock()
_shape: Shape | None = None
_logged: set[tuple[str, str]] = set()


def barrier_shape() -> Shape:
    """The ``Shape`` of the installed watchdog, checked once a process (``check_shape``;
    the first call costs a probe, ~0.1 s with watchdog's import). ``cls`` None on other
    platforms or with an older watchdog."""
    global _shape
    with _shape_lock:
        if _shape is None:
            _shape = _find_shape()
        return _shape


def log_shape(shape: Shape) -> None:
    """Log the barrier ``shape`` gives, once a process for each barrier and reason: INFO
    for ``quiet-queue``, WARNING with the reason otherwise."""
    key = (shape.barrier, shape.reason)
    with _shape_lock:
        if key in _logged:
            return
        _logged.add(key)
    if shape.barrier == "quiet-queue":
        log.info("freshness barrier: quiet-queue (%s, %s)", watchdog_version(), shape.mode)
    else:
        log.warning("freshness barrier: %s (%s)", shape.barrier, shape.reason)


def _find_shape() -> Shape:
    try:
        from watchdog.observers.inotify_c import InotifyFD
    except (ImportError, OSError):  # not Linux (no libc inotify), or an older watchdog
        return Shape(None, "stat", f"{watchdog_version()}: no inotify on this system")
    if not hasattr(InotifyFD, "add_callback"):
        return Shape(None, "stat", f"{watchdog_version()}: InotifyFD has no add_callback")
    return check_shape(InotifyFD)


def inotify_fd_class() -> Any:
    """The ``InotifyFD`` class to use (``barrier_shape().cls``): counting, plain, or None."""
    return barrier_shape().cls


def death_cause(inotify: Any) -> str | None:
    """What ended the threads of ``inotify``, when known: the exception its reader ended
    with (the counting class keeps it), or the one watchdog 7.1.1 keeps from its
    dispatcher (``_dispatch_error``, read only for this message)."""
    died = getattr(inotify, "died", None)
    if died:
        return str(died)
    error = getattr(inotify, "_dispatch_error", None)
    return f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else None


def reader_threads(inotify: Any) -> list[tuple[str, bool]]:
    """``(name, alive)`` of the threads of a started ``inotify`` instance that events
    need: its reader, and (watchdog 7.1.1) its dispatcher once it has been seen."""
    out = [("watchdog's inotify reader", bool(inotify.is_alive()))]
    dispatcher = getattr(inotify, "dispatcher", None)
    if dispatcher is not None:
        out.append(("watchdog's inotify dispatcher", dispatcher.is_alive()))
    return out


def _pending_bytes(fd: int) -> int:
    """Bytes of events queued in inotify instance ``fd`` (``FIONREAD``); -1 on error."""
    try:
        got = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return -1
    value: int = struct.unpack("i", got)[0]
    return value


def queue_quiet(inotify: Any) -> bool:
    """Whether every event the kernel queued on ``inotify`` (a running instance of the
    counting class) before this call has been handled by watchdog; False when that is not
    known (plain ``InotifyFD``, a closed fd)."""
    fd = getattr(inotify, "_inotify_fd", None)
    if fd is None or not hasattr(inotify, "reads"):
        return False
    if _pending_bytes(fd) != 0:  # the queue first, the counters second (module doc)
        return False
    return bool(inotify.reads == inotify.handled)
