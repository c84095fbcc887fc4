"""The daemon's log handler: records that repeat without end are throttled."""

from __future__ import annotations

import logging

import pytest

from readmany_daemon import logs
from readmany_daemon.runtime.process import raise_open_files_limit

NOISY = "socket.accept() out of system resource"


def _record(msg: str) -> logging.LogRecord:
    return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, None, None)


def test_repeating_accept_failures_are_logged_once_a_minute_with_a_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(logs.time, "monotonic", lambda: clock[0])
    throttle = logs._Throttle(every=60.0)
    assert throttle.filter(_record(NOISY))
    assert not any(throttle.filter(_record(NOISY)) for _ in range(1000))
    assert throttle.filter(_record("anything else"))
    clock[0] += 61
    again = _record(NOISY)
    assert throttle.filter(again)
    assert "1000 more like it" in str(again.msg)


def test_open_files_limit_is_raised_to_the_hard_limit() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
        got = raise_open_files_limit()
        now = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        assert got == now == (min(hard, 1 << 20) if hard != resource.RLIM_INFINITY else 1 << 20)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
