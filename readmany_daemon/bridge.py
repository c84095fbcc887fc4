"""``readmany lsp``: a byte pump between stdio and the shared daemon's socket.

The editor speaks LSP on our stdin/stdout; every byte goes to the daemon unchanged, and
back. The daemon is started (detached) when none runs, and replaced when its version
differs (``launch.ensure_running``). The bridge ends when the daemon closes the
connection (after ``exit``) or the editor closes stdin. No pygls here: the bridge costs
one process of a few MB, not a second server. It reads just enough of the editor's
frames to see a ``shutdown`` request (``ShutdownSeen``): its exit status is LSP's
(§"exit": 0 after ``shutdown``, else 1), as ``serve --stdio``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading

from readmany_daemon import launch
from readmany_daemon.client import default_socket_path
from readmany_daemon.errors import UsageError
from readmany_daemon.frames import write_all

_CHUNK = 1 << 16
#: A body longer than this is no ``shutdown`` request: skipped unread by ``ShutdownSeen``.
_SMALL_BODY = 4096


class ShutdownSeen:
    """Whether an LSP byte stream fed to it, in pieces as read, has held a ``shutdown``
    request (LSP 3.17 §"Base Protocol": header lines up to a blank line, then
    ``Content-Length`` bytes of JSON). Framing it cannot follow (the daemon answers
    that and closes) ends the watch: ``seen`` keeps what it was."""

    def __init__(self) -> None:
        self.seen = False
        self._buf = b""
        self._skip = 0  # body bytes still to pass over
        self._lost = False

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the stream."""
        if self._lost:
            return
        self._buf += data
        while True:
            if self._skip:
                passed = min(self._skip, len(self._buf))
                self._skip -= passed
                self._buf = self._buf[passed:]
                if self._skip:
                    return
            head, sep, rest = self._buf.partition(b"\r\n\r\n")
            if not sep:
                self._lost = len(self._buf) > _SMALL_BODY  # no header ends: not LSP
                return
            length = _content_length(head)
            if length is None:
                self._lost = True
                return
            if length > _SMALL_BODY:  # no shutdown request: passed over unread
                self._buf, self._skip = rest, length
                continue
            if len(rest) < length:
                return
            body, self._buf = rest[:length], rest[length:]
            if b"shutdown" in body and _is_shutdown(body):
                self.seen = True


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"content-length":
            try:
                n = int(value.strip())
            except ValueError:
                return None
            return n if n >= 0 else None
    return None


def _is_shutdown(body: bytes) -> bool:
    try:
        msg = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(msg, dict) and msg.get("method") == "shutdown" and "id" in msg


def run(path: str | None = None) -> int:
    """Bridge stdin/stdout to the daemon at ``path`` (default: the per-user socket)
    until the daemon closes the connection; returns 0 when the editor sent
    ``shutdown``, else 1 (LSP §"exit"). Raises ``DaemonError`` when no daemon could be
    started."""
    if os.name != "posix":
        raise UsageError("readmany lsp needs unix sockets; on Windows use serve --stdio")
    path = path or default_socket_path()
    launch.ensure_running(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    stdin_fd = sys.stdin.buffer.fileno()
    stdout_fd = sys.stdout.buffer.fileno()

    shutdown = ShutdownSeen()

    def upstream() -> None:
        # OSError: the daemon or the editor went away; either way the upstream half ends.
        with contextlib.suppress(OSError):
            while chunk := os.read(stdin_fd, _CHUNK):
                shutdown.feed(chunk)
                sock.sendall(chunk)
        with contextlib.suppress(OSError):  # already closed
            sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, name="readmany-bridge-in", daemon=True).start()
    try:
        while chunk := sock.recv(_CHUNK):
            write_all(stdout_fd, chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the editor closed stdout, or the daemon died: nothing more to carry
    finally:
        sock.close()
    return 0 if shutdown.seen else 1
