"""The daemon's log handler: records that repeat without end are throttled; under
``serve --stdio`` records below ERROR go to the client as ``window/logMessage``."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from lsprotocol import types

from readmany_daemon import logs
from readmany_daemon.lsp import clientlog
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


# -- serve --stdio: the log goes to the client as window/logMessage (lsp/clientlog.py)


class _Server:
    """What ClientLog uses of a connection's server: its stop event and logMessage."""

    def __init__(self) -> None:
        self.stop_event = threading.Event()
        self.sent: list[tuple[int, str]] = []
        self.client_log: clientlog.ClientLog | None = None

    def window_log_message(self, params: types.LogMessageParams) -> None:
        self.sent.append((int(params.type), params.message))


def _log_record(
    level: int, msg: str, *args: object, name: str = "readmany_daemon.x"
) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args or None, None)


def test_levels_map_to_lsp_message_types() -> None:
    assert clientlog.message_type(logging.CRITICAL) == types.MessageType.Error
    assert clientlog.message_type(logging.ERROR) == types.MessageType.Error
    assert clientlog.message_type(logging.WARNING) == types.MessageType.Warning
    assert clientlog.message_type(logging.INFO) == types.MessageType.Info
    assert clientlog.message_type(logging.DEBUG) == types.MessageType.Log


def test_client_log_waits_for_initialize_then_sends_with_severity_in_order() -> None:
    async def main() -> _Server:
        server = _Server()
        handler = clientlog.ClientLog()
        handler.attach(server)
        assert server.client_log is handler
        handler.handle(_log_record(logging.WARNING, "early %s", "one"))
        assert server.sent == []  # not before initialize
        handler.ready()
        handler.handle(_log_record(logging.INFO, "opened root"))
        handler.handle(_log_record(logging.ERROR, "a failure"))  # stderr's, not the client's
        already = _log_record(logging.WARNING, "sent by warn")
        already.readmany_client_notified = True
        handler.handle(already)
        # From another thread (a watcher, the engine's executor): sent from the loop.
        worker = threading.Thread(target=handler.handle, args=(_log_record(logging.DEBUG, "late"),))
        worker.start()
        worker.join()
        for _ in range(10):
            await asyncio.sleep(0)
        return server

    server = asyncio.run(main())
    assert server.sent == [
        (2, "readmany: readmany_daemon.x: early one"),
        (3, "readmany: readmany_daemon.x: opened root"),
        (4, "readmany: readmany_daemon.x: late"),
    ]


def test_client_log_redacts_pygls_arguments_and_falls_back_to_stderr_once_closed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def main() -> _Server:
        server = _Server()
        handler = clientlog.ClientLog()
        handler.attach(server)
        handler.ready()
        handler.handle(
            _log_record(logging.WARNING, "message %s", "SECRET FILE TEXT", name="pygls.x")
        )
        server.stop_event.set()
        handler.handle(_log_record(logging.WARNING, "after the end"))
        return server

    server = asyncio.run(main())
    assert len(server.sent) == 1 and "SECRET" not in server.sent[0][1]
    assert "[arguments redacted]" in server.sent[0][1]
    assert "message … [arguments redacted]" in server.sent[0][1]  # no bare "%s"
    assert "readmany: readmany_daemon.x: after the end" in capsys.readouterr().err


def test_a_clients_bad_params_logged_by_pygls_are_no_failure() -> None:
    """pygls logs params it cannot structure at ERROR with a traceback; the client gets
    -32602 for them, so the record is made INFO (the client's log, not stderr)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    try:
        logs.configure_logging("INFO")
        keep = Keep()
        root.addHandler(keep)
        rpc = logging.getLogger("pygls.protocol.json_rpc")
        rpc.error("Unable to deserialize message\n%s", "cattrs.errors.ClassValidationError: …")
        rpc.error("Unable to deserialize message\n%s", "KeyError: 'x'")  # a fault of ours
        assert [r.levelno for r in seen] == [logging.INFO, logging.ERROR]
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)


def test_install_keeps_only_failures_on_stderr_and_uninstall_restores() -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        logs.configure_logging("INFO")
        (stderr_handler,) = root.handlers
        handler = clientlog.install()
        assert stderr_handler.level == logging.ERROR and handler in root.handlers
        clientlog.uninstall(handler)
        assert stderr_handler.level == logging.NOTSET and handler not in root.handlers
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
