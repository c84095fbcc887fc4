"""``runtime/cookies.py``: one watcher's barrier cookies (create, await, unlink)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from readmany_daemon.runtime.cookies import COOKIE_PREFIX, COOKIE_RETRY, CookieSync


def _deliver(sync: CookieSync, folder: Path, stop: threading.Event) -> None:
    """Stand in for the reader thread: report each cookie created in ``folder``."""
    while not stop.is_set():
        for name in os.listdir(folder):
            sync.arrived(name)
        stop.wait(0.005)


def test_a_cookie_that_arrives_ends_the_round_trip(tmp_path: Path) -> None:
    sync = CookieSync(str(tmp_path))
    stop = threading.Event()
    reader = threading.Thread(target=_deliver, args=(sync, tmp_path, stop))
    reader.start()
    try:
        assert sync.round_trip(10.0, lambda: False) is True
    finally:
        stop.set()
        reader.join()
    assert sync.round_trips == 1
    assert os.listdir(tmp_path) == []  # the cookie file was removed


def test_a_cookie_that_does_not_arrive_turns_cookies_off_until_the_retry(
    tmp_path: Path,
) -> None:
    sync = CookieSync(str(tmp_path))
    sync.ok = True
    before = time.monotonic()
    assert sync.round_trip(0.05, lambda: False) is False
    assert not sync.ok
    assert sync.retry_at >= before + COOKIE_RETRY
    assert os.listdir(tmp_path) == []


def test_a_dead_thread_ends_the_wait_at_once(tmp_path: Path) -> None:
    sync = CookieSync(str(tmp_path))
    sync.ok = True
    started = time.monotonic()
    assert sync.round_trip(10.0, lambda: True) is None
    assert time.monotonic() - started < 5.0
    assert sync.ok  # not the cookies' fault: the watcher restarts


def test_a_cookie_that_cannot_be_created_raises_and_turns_cookies_off(tmp_path: Path) -> None:
    sync = CookieSync(str(tmp_path / "gone"))
    sync.ok = True
    with pytest.raises(FileNotFoundError):
        sync.round_trip(1.0, lambda: False)
    assert not sync.ok


def test_an_event_for_no_awaited_cookie_is_ignored_and_remove_clears_the_folder(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "cookies"
    folder.mkdir()
    (folder / f"{COOKIE_PREFIX}1-1").write_text("")
    sync = CookieSync(str(folder))
    sync.arrived(f"{COOKIE_PREFIX}1-1")  # nobody waits for it
    sync.remove()
    assert not folder.exists()
    CookieSync(None).remove()  # no folder: nothing to do
