"""The watchdog internals ``readmany_daemon.runtime.inotify`` relies on, checked against
the installed watchdog: that they exist, how they are called (the parameters watchdog's
reader passes to ``_check_inotify_fd``, against the signatures the override knows), and
that they are still called (a read is counted, and what was read is marked handled,
through ``read_events`` in 7.1.0 or the ``_raw_queue`` of 7.1.1). An upgrade that
changes one fails here, naming it, instead of ending the reader thread or silently
turning every freshness barrier into a cookie round trip."""

from __future__ import annotations

import inspect
import os
import sys
import threading
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.runtime.inotify import (
    KNOWN_CHECK_SIGNATURES,
    WATCHDOG_PRIVATE_NAMES,
    barrier_shape,
    check_shape,
    inotify_fd_class,
    queue_quiet,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
WATCHDOG = f"watchdog {version('watchdog')}"


def _base() -> Any:
    from watchdog.observers.inotify_c import InotifyFD

    return InotifyFD


@pytest.mark.parametrize("name", WATCHDOG_PRIVATE_NAMES)
def test_every_private_name_exists(name: str) -> None:
    base = _base()
    fd = base()
    try:
        assert hasattr(base, name) or name in vars(fd), (
            f"{WATCHDOG} has no InotifyFD.{name}, which runtime/inotify.py relies on"
        )
    finally:
        fd.close()


def test_the_check_has_a_known_signature() -> None:
    params = list(inspect.signature(_base()._check_inotify_fd).parameters.values())[1:]
    got = tuple(
        (p.name, p.default if p.default is not inspect.Parameter.empty else ...) for p in params
    )
    assert got in KNOWN_CHECK_SIGNATURES, (
        f"{WATCHDOG}: InotifyFD._check_inotify_fd{inspect.signature(_base()._check_inotify_fd)}"
    )


class _Callback:
    def __init__(self) -> None:
        self.names: list[bytes] = []

    def on_event(self, event: object) -> None:
        self.names.append(getattr(event, "name", b""))

    def on_watch_deleted(self, wd: int) -> None:
        pass

    def on_queue_overflow(self) -> None:
        pass

    def on_events_lost(self) -> None:
        pass


def test_the_reader_calls_the_check_as_declared(tmp_path: Path) -> None:
    """Every call watchdog's reader makes to ``_check_inotify_fd`` binds to its declared
    signature, from the reader thread; and the reader makes such calls."""
    base = _base()
    calls: list[tuple[tuple[Any, ...], dict[str, Any], str]] = []

    class Spy(base):  # type: ignore[misc, valid-type]
        def _check_inotify_fd(self, *args: Any, **kwargs: Any) -> bool:
            calls.append((args, kwargs, threading.current_thread().name))
            return bool(super()._check_inotify_fd(*args, **kwargs))

    fd = Spy()
    callback = _Callback()
    fd.add_callback(os.fsencode(tmp_path), 0x100, callback, 1)  # IN_CREATE
    fd.start()
    try:
        (tmp_path / "a").touch()
        deadline = time.monotonic() + 10
        while not callback.names:
            assert time.monotonic() < deadline, f"{WATCHDOG}: the event was not delivered"
            time.sleep(0.005)
    finally:
        fd.stop()
        fd.join(5)
    assert calls, f"{WATCHDOG}: the reader no longer calls InotifyFD._check_inotify_fd"
    sig = inspect.signature(base._check_inotify_fd)
    for args, kwargs, thread in calls:
        sig.bind(fd, *args, **kwargs)  # raises TypeError naming what does not fit
        assert thread == fd.name


def test_the_installed_watchdog_fits_the_quiet_queue_barrier() -> None:
    """The start-up check (signatures and a probe instance) accepts the installed
    release: the override is used, and barriers skip cookies on a quiet queue."""
    shape = check_shape(_base())
    assert (shape.barrier, shape.reason) == ("quiet-queue", ""), shape.reason
    assert barrier_shape().barrier == "quiet-queue"
    assert shape.mode == ("queue" if hasattr(_base(), "_dispatch_raw_buffers") else "batch")


def test_the_counting_class_reports_a_pending_event(tmp_path: Path) -> None:
    """An event the reader has not handled makes the queue not quiet; once handled, it
    is quiet again: the read was counted (``_check_inotify_fd`` still called) and marked
    handled (``read_events`` or the ``_raw_queue`` still used)."""
    cls = inotify_fd_class()
    assert cls is not None and cls is not _base(), WATCHDOG
    fd = cls()
    assert not fd.is_alive()
    callback = _Callback()
    fd.add_callback(os.fsencode(tmp_path), 0x100, callback, 1)  # IN_CREATE
    try:
        assert queue_quiet(fd)
        (tmp_path / "a").touch()
        assert not queue_quiet(fd)  # queued in the kernel, no reader yet
        fd.start()
        deadline = time.monotonic() + 10
        while not (callback.names and queue_quiet(fd)):
            assert time.monotonic() < deadline, "the event was not handled"
            time.sleep(0.005)
        assert callback.names == [b"a"]
        assert fd.reads >= 1 and fd.handled == fd.reads
    finally:
        fd.stop()
        fd.join(5)
