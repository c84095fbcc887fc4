"""Logging for the daemon and the servers: one handler (a file of mode 0600, or
stderr; never stdout, which carries the protocol), with two filters on it: pygls'
log arguments are redacted (they hold whole messages: file contents), and records
that repeat without end (failed accepts when out of descriptors) are throttled.
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
import time


class _RedactArgs(logging.Filter):
    """Drop the arguments of pygls log records: they hold whole messages (document
    text, answers) and logs never hold file contents (PROTOCOL §1)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and record.name.startswith("pygls"):
            # the format's own placeholders go with the arguments ("%s" left bare read
            # as part of the message)
            record.msg = _PLACEHOLDER.sub("…", str(record.msg)) + " [arguments redacted]"
            record.args = ()
        return True


#: A %-format placeholder (``%s``, ``%r``, ``%5.2f``…) of a log message.
_PLACEHOLDER = re.compile(r"%[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[sdrifxXeEgGc]")


class _ClientFaults(logging.Filter):
    """pygls logs at ERROR, with a traceback, the params it cannot structure
    (``Unable to deserialize message``): a client's bad params, which are answered
    -32602 naming the fields (``lsp/serve.py``), not a fault of this process. On
    pygls' JSON-RPC logger (before any handler's level): such records become INFO, so
    that stderr carries failures only (PROTOCOL §1)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Unable to deserialize") and "ClassValidationError" in str(
            record.args
        ):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


class _Throttle(logging.Filter):
    """At most one record per ``every`` seconds for each message text that repeats
    without end when the process is out of descriptors (asyncio logs
    "socket.accept() out of system resource" with a traceback for every failed accept:
    hundreds of thousands of lines a minute, a log that fills the disk)."""

    NOISY = ("socket.accept() out of system resource",)

    def __init__(self, every: float = 60.0) -> None:
        super().__init__()
        self.every = every
        self._last: dict[str, float] = {}
        self._dropped: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        key = next((n for n in self.NOISY if n in text), None)
        if key is None:
            return True
        now = time.monotonic()
        if now - self._last.get(key, -math.inf) < self.every:
            self._dropped[key] = self._dropped.get(key, 0) + 1
            return False
        self._last[key] = now
        dropped = self._dropped.pop(key, 0)
        if dropped:
            record.msg = f"{text} ({dropped} more like it in the last {self.every:g} s)"
        return True


def standard_filters() -> list[logging.Filter]:
    """The filters every log handler gets: pygls' arguments redacted (logs never hold
    file contents), endless repeats throttled."""
    return [_RedactArgs(), _Throttle()]


def configure_logging(level: str = "WARNING", log_file: str | None = None) -> None:
    """Log to ``log_file`` (created with its folder, mode 0600) or stderr — never
    stdout, which carries the protocol. ``pygls`` stays at WARNING whatever ``level``."""
    if log_file:
        os.makedirs(os.path.dirname(log_file) or ".", mode=0o700, exist_ok=True)
        fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        handler: logging.Handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    # On the handler: a logger's own filters do not see its children's records.
    for f in standard_filters():
        handler.addFilter(f)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.getLevelNamesMapping().get(str(level).upper(), logging.WARNING))
    logging.getLogger("pygls").setLevel(logging.WARNING)
    rpc = logging.getLogger("pygls.protocol.json_rpc")
    if not any(isinstance(f, _ClientFaults) for f in rpc.filters):
        rpc.addFilter(_ClientFaults())
