"""``runtime/hints.py``: one watcher's queue of change hints between threads."""

from __future__ import annotations

import threading
import time

from readmany_daemon.index.records import CONTENT, ENTRY, FOLDER
from readmany_daemon.runtime.hints import MAX_PENDING, HintQueue


def test_hints_are_taken_as_one_batch_in_order() -> None:
    q = HintQueue("/r")
    assert not q.busy
    q.push([("a", ENTRY)])
    q.push([("b", CONTENT), ("c", FOLDER)])
    assert q.busy
    assert q.take() == ([("a", ENTRY), ("b", CONTENT), ("c", FOLDER)], False, False)
    assert not q.busy and q.take() == ([], False, False)


def test_a_flood_past_max_pending_becomes_one_rescan() -> None:
    q = HintQueue("/r")
    q.push([("a", ENTRY)] * MAX_PENDING)
    q.push([("b", ENTRY)])  # one more than the queue holds
    q.push([("c", ENTRY)])  # after the overflow: the rescan covers it
    assert q.take() == ([], False, True)
    q.push([("d", ENTRY)])  # the rescan was taken: hints queue again
    assert q.take() == ([("d", ENTRY)], False, False)


def test_lost_events_drop_the_queue_for_a_rescan_and_verify_is_kept_beside_hints() -> None:
    q = HintQueue("/r")
    q.push([("a", ENTRY)])
    q.overflowed()
    assert q.take() == ([], False, True)
    q.verify()
    q.push([("b", ENTRY)])
    assert q.take() == ([("b", ENTRY)], True, False)


def test_wait_returns_when_a_hint_comes_from_another_thread() -> None:
    q = HintQueue("/r")
    pusher = threading.Timer(0.05, q.push, [[("a", ENTRY)]])
    pusher.start()
    started = time.monotonic()
    q.wait(10.0)
    pusher.join()
    assert time.monotonic() - started < 5.0
    assert q.busy
    started = time.monotonic()
    q.wait(10.0)  # something is queued: no wait at all
    assert time.monotonic() - started < 1.0


def test_wake_ends_a_wait_with_nothing_queued() -> None:
    q = HintQueue("/r")
    waker = threading.Timer(0.05, q.wake)
    waker.start()
    started = time.monotonic()
    q.wait(10.0)
    waker.join()
    assert time.monotonic() - started < 5.0
    assert not q.busy
