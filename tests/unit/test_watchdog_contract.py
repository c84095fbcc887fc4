"""The watchdog internals ``readmany_daemon.runtime.inotify`` relies on exist in the
installed watchdog, and its counting ``InotifyFD`` sees the kernel queue: an upgrade
that moves one fails here, naming it, instead of silently turning every freshness
barrier back into a cookie round trip."""

from __future__ import annotations

import os
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from readmany_daemon.runtime.inotify import WATCHDOG_PRIVATE_NAMES, inotify_fd_class, queue_quiet

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
WATCHDOG = f"watchdog {version('watchdog')}"


@pytest.mark.parametrize("name", WATCHDOG_PRIVATE_NAMES)
def test_every_private_name_exists(name: str) -> None:
    from watchdog.observers.inotify_c import InotifyFD

    assert hasattr(InotifyFD, name) or name in vars(InotifyFD()), (
        f"{WATCHDOG} has no InotifyFD.{name}, which runtime/inotify.py relies on"
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


def test_the_counting_class_reports_a_pending_event(tmp_path: Path) -> None:
    """An event the reader has not handled makes the queue not quiet; once handled, it
    is quiet again."""
    cls = inotify_fd_class()
    assert cls is not None and hasattr(cls, "_check_inotify_fd"), WATCHDOG
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
    finally:
        fd.stop()
        fd.join(5)
