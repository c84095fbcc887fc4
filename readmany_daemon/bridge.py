"""``readmany lsp``: a byte pump between stdio and the shared daemon's socket.

The editor speaks LSP on our stdin/stdout; every byte goes to the daemon unchanged, and
back. The daemon is started (detached) when none runs, and replaced when its version
differs (``launch.ensure_running``). The bridge ends when the daemon closes the
connection (after ``exit``) or the editor closes stdin. No pygls here: the bridge costs
one process of a few MB, not a second server.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

from readmany_daemon import launch
from readmany_daemon.client import default_socket_path
from readmany_daemon.errors import UsageError
from readmany_daemon.frames import write_all

_CHUNK = 1 << 16


def run(path: str | None = None) -> int:
    """Bridge stdin/stdout to the daemon at ``path`` (default: the per-user socket);
    returns 0 when the daemon closed the connection. Raises ``DaemonError`` when no
    daemon could be started."""
    if os.name != "posix":
        raise UsageError("readmany lsp needs unix sockets; on Windows use serve --stdio")
    path = path or default_socket_path()
    launch.ensure_running(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    stdin_fd = sys.stdin.buffer.fileno()
    stdout_fd = sys.stdout.buffer.fileno()

    def upstream() -> None:
        # OSError: the daemon or the editor went away; either way the upstream half ends.
        with contextlib.suppress(OSError):
            while chunk := os.read(stdin_fd, _CHUNK):
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
    return 0
