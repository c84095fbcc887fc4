"""The log of ``readmany serve --stdio`` goes to its client: records below ERROR become
``window/logMessage`` notifications with their own severity, and stderr keeps only
failures (ERROR and above).

An editor shows a language server's stderr as errors (vscode-languageclient logs every
stderr line at error level), so a warning written there reads as a failure. LSP §"window/
logMessage" maps the levels: WARNING → Warning (2), INFO → Info (3), DEBUG → Log (4).
Records from before ``initialize`` wait (at most ``MAX_WAITING``) until the client may
be sent notifications (LSP §"initialize": logMessage is allowed while it runs); after
the connection ended, WARNING records go to stderr and INFO and below are dropped
(nobody listens; ``--log-file`` keeps every record).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import sys
import threading
from typing import Any, Final, Protocol

from lsprotocol import types

from readmany_daemon.logs import standard_filters

#: ``extra`` key of a record whose message the client got already (``ReadManyServer.warn``).
CLIENT_NOTIFIED: Final = "readmany_client_notified"

#: Records kept while waiting for ``initialize``; older ones are dropped beyond this.
MAX_WAITING: Final = 200


class Connection(Protocol):
    """What ``ClientLog`` uses of a connection's server (``session.ReadManyServer``)."""

    stop_event: threading.Event
    client_log: ClientLog | None

    def window_log_message(self, params: types.LogMessageParams) -> None: ...


def message_type(levelno: int) -> types.MessageType:
    """LSP severity of a logging level: ERROR+ → Error, WARNING → Warning, INFO → Info,
    below → Log."""
    if levelno >= logging.ERROR:
        return types.MessageType.Error
    if levelno >= logging.WARNING:
        return types.MessageType.Warning
    if levelno >= logging.INFO:
        return types.MessageType.Info
    return types.MessageType.Log


class ClientLog(logging.Handler):
    """A root-logger handler sending records below ERROR to one connection's client as
    ``window/logMessage`` (``readmany: <logger>: <message>``). Thread-safe: records from
    other threads are sent from the connection's event loop, in order."""

    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.server: Connection | None = None
        self._ready = False
        self._waiting: collections.deque[logging.LogRecord] = collections.deque(maxlen=MAX_WAITING)
        self._sending = threading.local()
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self.addFilter(_for_the_client)
        for f in standard_filters():
            self.addFilter(f)
        #: stderr handlers whose level ``install`` raised, with their old level
        self.quieted: list[tuple[logging.Handler, int]] = []

    def attach(self, server: Connection) -> None:
        """Send to ``server``'s client from now on (once it is ready), from the running
        event loop (call it there)."""
        self.loop = asyncio.get_running_loop()
        self.server = server
        server.client_log = self

    def ready(self) -> None:
        """``initialize`` arrived: send what waited, then every record as it comes."""
        self._ready = True
        while self._waiting:
            self._deliver(self._waiting.popleft())

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._sending, "active", False):
            return  # a record logged while sending one: stderr has it already
        if not self._ready:
            self._waiting.append(record)
        else:
            self._deliver(record)

    def _deliver(self, record: logging.LogRecord) -> None:
        try:
            text = f"readmany: {self.format(record)}"
        except Exception:  # a record whose arguments do not fit its message
            self.handleError(record)
            return
        kind = message_type(record.levelno)
        if self.loop is None or self._on_loop_thread():
            self._send(kind, text)
            return
        try:
            self.loop.call_soon_threadsafe(self._send, kind, text)
        except RuntimeError:  # the loop is closed: the connection is over
            _after_the_end(kind, text)

    def _on_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def _send(self, kind: types.MessageType, text: str) -> None:
        server = self.server
        if server is None or server.stop_event.is_set():
            _after_the_end(kind, text)
            return
        self._sending.active = True
        try:
            server.window_log_message(types.LogMessageParams(type=kind, message=text))
        except Exception:  # the transport failed: keep the line
            _to_stderr(text)
        finally:
            self._sending.active = False


def _for_the_client(record: logging.LogRecord) -> bool:
    """Below ERROR (failures stay on stderr), and not already sent by ``warn``."""
    return record.levelno < logging.ERROR and not getattr(record, CLIENT_NOTIFIED, False)


def _after_the_end(kind: types.MessageType, text: str) -> None:
    """A record with no client to take it: stderr when it is a warning."""
    if kind == types.MessageType.Warning:
        _to_stderr(text)


def _to_stderr(text: str) -> None:
    stream: Any = sys.stderr
    if stream is not None:
        try:
            stream.write(text + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass  # stderr is closed too: nowhere left to write


def install() -> ClientLog:
    """Add a ``ClientLog`` to the root logger and keep only ERROR+ on the stderr handler
    ``logs.configure_logging`` installed (a log file keeps every record). Returns the
    handler, to ``attach`` to the connection's server."""
    root = logging.getLogger()
    client = ClientLog()
    for handler in root.handlers:
        stream = getattr(handler, "stream", None)
        if stream is sys.stderr or stream is sys.__stderr__:
            client.quieted.append((handler, handler.level))
            handler.setLevel(logging.ERROR)
    root.addHandler(client)
    return client


def uninstall(client: ClientLog) -> None:
    """Remove ``client`` from the root logger (the connection is over) and give stderr
    back every level."""
    logging.getLogger().removeHandler(client)
    for handler, level in client.quieted:
        handler.setLevel(level)
    client.quieted.clear()
