"""The shared per-user daemon process: its lock, socket, peer checks, idle exit, serving.

Rules (PROTOCOL §1):

- Socket: ``$XDG_RUNTIME_DIR/readmany/daemon.sock``, else
  ``/run/user/$UID/readmany/daemon.sock`` when that runtime folder exists and is the
  user's (a GUI-started process has no ``XDG_RUNTIME_DIR``, yet must find the daemon of
  the user's shell), else ``$TMPDIR/readmany-$UID/daemon.sock`` (``/tmp`` when
  ``TMPDIR`` is unset). The folder
  is created 0700 and must belong to the user; the socket is 0600.
- Peers: every accepted unix connection is checked with the kernel's peer credentials
  (``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED`` on macOS/BSD): a peer whose uid is not
  the daemon's effective uid is closed at once, unanswered, with a warning in the log.
  The folder and socket modes already keep other users out; the check also holds when
  they are loosened (a shared runtime folder, a umask accident) and against root-less
  tricks such as a passed file descriptor. Where the system cannot tell, the modes alone
  protect.
- One daemon per socket: the daemon holds an exclusive ``flock`` on ``daemon.sock.lock``
  for its lifetime (released by the kernel when it dies). A starting daemon that gets
  the lock knows any socket file left is stale and replaces it; one that does not
  connects, compares versions (``serverInfo.version`` of ``initialize``) and exits 0 when
  they match, or asks the other to stop (``readMany/stopDaemon``, then SIGTERM) and takes
  its place. Whatever is left at the socket path is replaced by the lock holder: a socket
  nobody listens on, and in the per-user runtime folder also a regular file or a symlink
  (only this user can write there). At an explicit ``--socket PATH`` elsewhere, a
  non-socket is refused (exit 1), so that a typo never deletes a file.
- Idle exit: ``idleTimeoutSeconds`` after the last connection closed; roots unused for
  that long are dropped before then.
- Why it went away: every exit the daemon sees (idle timeout, ``readMany/stopDaemon``
  with its ``reason``: ``readmany stop`` or a replacement by another version, SIGTERM,
  SIGINT, SIGHUP, a fatal error) logs one WARNING line ``daemon exiting (pid N): CAUSE``.
  A socket daemon keeps ``daemon.sock.running`` (its pid, version and start time) beside
  its lock while it serves and removes it on any such exit; the next daemon that finds
  one left behind logs at WARNING that the previous one ended unseen (SIGKILL, the OOM
  killer, a crash of the interpreter).
- ``serve --tcp``: loopback only (the host given and every address it was bound to),
  ``READMANY_TOKEN`` required from every connection (``initializationOptions.authToken``).
  Without ``--tcp`` the daemon has no TCP listener at all.
- Auto-start, probing and stopping from outside: ``launch.py``.

``runtime_dir``/``default_socket_path``/``connect`` are defined in ``client.py`` (and
re-exported here) so that the CLI's warm path imports that one small module only;
importing this module is cheap too (no asyncio, pygls, watchdog): the serving half
imports what it needs when called.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from readmany_daemon import __version__
from readmany_daemon.client import (
    SOCKET_NAME,
    connect,
    default_socket_path,
    peer_credentials,
    runtime_dir,
)
from readmany_daemon.errors import DaemonError, UsageError
from readmany_daemon.launch import clear_starting, ensure_private_dir
from readmany_daemon.socketfiles import acquire_lock, bind_unix, mark_running

__all__ = [
    "SOCKET_NAME",
    "Daemon",
    "connect",
    "default_socket_path",
    "parse_tcp",
    "peer_credentials",
    "runtime_dir",
    "serve_socket",
    "serve_tcp",
]

if TYPE_CHECKING:
    import asyncio

    from readmany_daemon.runtime.service import Service
    from readmany_daemon.settings import Settings


def _log() -> Any:
    """This module's logger (``logging`` costs ~6 ms to import: not on the warm path)."""
    import logging

    return logging.getLogger(__name__)


# ----------------------------------------------------------------------------- serving


def parse_tcp(spec: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) → (host, port); only loopback hosts
    (127.0.0.0/8, ::1, localhost). Raises ``UsageError``."""
    import ipaddress

    host, sep, port_text = spec.rpartition(":")
    if not sep or not port_text.isdigit():
        raise UsageError(f"--tcp: expected HOST:PORT, got {spec!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise UsageError(
                f"--tcp: {host} is not a loopback address; "
                "only 127.0.0.1, ::1 or localhost are allowed"
            )
    port = int(port_text)
    if port > 65535:
        raise UsageError(f"--tcp: port {port} is out of range")
    return host, port


class Daemon:
    """Accepts connections and serves each with its own ``ReadManyServer`` over one
    shared ``Service``; exits when asked or after ``idleTimeoutSeconds`` without a
    connection.

    Unix connections are accepted from this user only: on accept, the peer's uid is read
    from the kernel (``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED`` on macOS, see
    ``peer_uid``) and a peer whose uid differs from the daemon's effective uid is closed
    at once, before a byte is read or written, with a warning in the log naming its uid
    and pid. This holds even if the folder (0700) or socket (0600) modes were loosened;
    root gets no exception. TCP connections (``kind="tcp"``) authenticate with the token
    instead.
    """

    def __init__(self, service: Service, *, kind: str, token: str | None = None) -> None:
        import asyncio

        self.service = service
        self.kind = kind
        self.token = token
        self._stopping = asyncio.Event()
        self._activity = asyncio.Event()
        self._connections: set[asyncio.Task[Any]] = set()
        self._live: set[Any] = set()  # ReadManyServer of each open connection
        #: Why the daemon stops (the first cause given to ``stop``), None while it serves.
        self.cause: str | None = None

    def stop(self, cause: str = "asked to stop") -> None:
        """Ask the daemon to exit; ``cause`` (the first one given wins) is what its exit
        line names: ``"idle timeout …"``, ``"signal SIGTERM"``, ``"readmany stop"``."""
        if self.cause is None:
            self.cause = cause
        self._stopping.set()

    def _stop_asked(self, reason: str | None) -> None:
        """``readMany/stopDaemon`` with its optional ``reason`` (``"readmany stop"``,
        ``"replaced by version X"``)."""
        self.stop(reason or "readMany/stopDaemon from a client")

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import asyncio

        from readmany_daemon.lsp.serve import run_connection
        from readmany_daemon.lsp.writers import StreamWriter

        if self.kind == "socket" and not self._peer_allowed(writer):
            writer.close()
            return
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            await run_connection(
                self.service,
                reader,
                StreamWriter(writer),
                kind=self.kind,
                token=self.token,
                on_stop_daemon=self._stop_asked,
                live=self._live,
            )
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()

    def _peer_allowed(self, writer: asyncio.StreamWriter) -> bool:
        """Whether the peer of a new unix connection runs as this daemon's user (see the
        class doc); logs a refusal."""
        sock = writer.get_extra_info("socket")
        creds = peer_credentials(sock) if sock is not None else None
        if creds is None or creds[0] == os.geteuid():
            return True
        _log().warning(
            "refused a connection from uid %d (pid %s): only uid %d may use this daemon",
            creds[0],
            creds[1] if creds[1] is not None else "?",
            os.geteuid(),
        )
        return False

    async def _idle_watch(self) -> None:
        import asyncio

        limit = self.service.settings.idle_timeout_seconds
        sweep = max(min(limit, 60.0), 0.05)
        while True:
            self._activity.clear()
            now = time.monotonic()
            self.service.evict_idle(now)
            wait = sweep
            if self.service.connection_count == 0:
                remaining = self.service.last_activity + limit - now
                if remaining <= 0:
                    self.stop(f"idle timeout: no client for {limit:g} s")
                    return
                wait = min(remaining, sweep)
            with contextlib.suppress(TimeoutError):  # time to look again
                await asyncio.wait_for(self._activity.wait(), wait)

    async def run(
        self, server: asyncio.base_events.Server, on_ready: Callable[[], None] | None
    ) -> None:
        """Serve ``server`` until SIGTERM/SIGINT, ``readMany/stopDaemon`` or the idle timeout;
        ``on_ready`` runs once the socket accepts connections."""
        import asyncio
        import signal

        loop = asyncio.get_running_loop()
        self.service.on_activity = self._activity.set
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stop, f"signal {sig.name}")
        watcher = asyncio.create_task(self._idle_watch())
        # Bound the snapshot cache folder: now, then once a day (``index/cachegc.py``).
        self.service.start_cache_sweeps()
        from readmany_daemon.lsp.serve import warm_up

        warm_up(self.service)
        if on_ready is not None:
            on_ready()
        try:
            await self._stopping.wait()
        finally:
            server.close()
            watcher.cancel()
            # End each connection by closing its transport: its read loop sees the end
            # of input and finishes normally (cancelling it would leave asyncio's
            # stream callback a cancelled task to complain about).
            for live in list(self._live):
                live.end(1)
            if self._connections:
                await asyncio.wait(list(self._connections), timeout=2.0)


def serve_socket(
    path: str | None,
    settings: Settings,
    *,
    log_file: str | None = None,
    on_ready: Callable[[str], None] | None = None,
    on_running: Callable[[str], None] | None = None,
) -> int:
    """``readmany serve --socket [PATH]``: serve until stopped or idle; returns the exit
    code (0, also when a daemon of this version already runs: ``on_running`` is told).
    ``on_ready`` gets a one-line description once the socket accepts connections."""
    import asyncio

    from readmany_daemon.logs import configure_logging

    if os.name != "posix":
        raise UsageError("serve --socket needs unix sockets; on Windows use serve --stdio")
    path = os.path.abspath(path or default_socket_path())
    configure_logging(settings.log_level, log_file)
    directory = os.path.dirname(path)
    private = directory == runtime_dir()
    if private or not os.path.exists(directory):
        ensure_private_dir(directory)
    try:
        lock_fd = acquire_lock(path)
    except DaemonError:
        clear_starting(path)
        raise
    if lock_fd is None:
        clear_starting(path)
        if on_running is not None:
            on_running(f"a readmany {__version__} daemon already serves {path}")
        return 0
    sock = None
    inode: int | None = None
    marker: str | None = None
    try:
        sock = bind_unix(path, private=private)
        inode = os.stat(path).st_ino
        marker = mark_running(path)
        clear_starting(path)  # it listens now: ``stop`` reaches it through the socket

        async def main(daemon: Daemon) -> None:
            server = await asyncio.start_unix_server(daemon._handle, sock=sock)
            await daemon.run(
                server,
                (lambda: on_ready(f"serving on {path} (pid {os.getpid()})")) if on_ready else None,
            )

        _run_logged(settings, main, kind="socket")
        return 0
    finally:
        clear_starting(path)
        if marker is not None:
            with contextlib.suppress(OSError):
                os.unlink(marker)
        try:
            if inode is not None and os.stat(path).st_ino == inode:
                os.unlink(path)
        except OSError:
            pass  # already gone or replaced by a newer daemon: not ours to remove
        if sock is not None:
            sock.close()
        os.close(lock_fd)


def _check_loopback(server: asyncio.base_events.Server) -> None:
    """Refuse to go on when a listening socket is bound to a non-loopback address (a
    ``localhost`` that resolves elsewhere). Raises ``UsageError``."""
    import ipaddress

    for sock in server.sockets:
        address = sock.getsockname()[0]
        if not ipaddress.ip_address(address.split("%", 1)[0]).is_loopback:
            server.close()
            raise UsageError(f"--tcp: bound to {address}, which is not a loopback address")


def serve_tcp(
    spec: str,
    settings: Settings,
    token: str | None,
    *,
    log_file: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> int:
    """``readmany serve --tcp 127.0.0.1:PORT``: loopback only, every connection must
    authenticate with ``token`` (``READMANY_TOKEN``). Port 0 picks a free port; the
    ready line names the real one. Raises ``UsageError`` for a non-loopback host or a
    missing token."""
    import asyncio

    from readmany_daemon.logs import configure_logging

    host, port = parse_tcp(spec)
    if not token:
        raise UsageError("serve --tcp needs a token: set READMANY_TOKEN")
    configure_logging(settings.log_level, log_file)

    async def main(daemon: Daemon) -> None:
        server = await asyncio.start_server(daemon._handle, host, port)
        _check_loopback(server)
        bound = server.sockets[0].getsockname()
        await daemon.run(
            server,
            (lambda: on_ready(f"serving on tcp {bound[0]}:{bound[1]} (pid {os.getpid()})"))
            if on_ready
            else None,
        )

    _run_logged(settings, main, kind="tcp", token=token)
    return 0


def _run_logged(
    settings: Settings,
    main: Callable[[Daemon], Coroutine[Any, Any, None]],
    *,
    kind: str,
    token: str | None = None,
) -> None:
    """Make the ``Service`` and the ``Daemon`` of ``kind``, run ``main(daemon)`` to its
    end, close the service, and log the one WARNING line ``daemon exiting (pid N):
    CAUSE`` naming why: the daemon's ``cause``, or the fatal error that ended it (which
    is re-raised after the line)."""
    import asyncio

    from readmany_daemon.runtime.service import Service

    cause = "the event loop ended"
    service: Service | None = None
    daemon: Daemon | None = None
    try:
        service = Service(settings)
        daemon = Daemon(service, kind=kind, token=token)
        asyncio.run(main(daemon))
        cause = daemon.cause or cause
    except BaseException as exc:  # named in the exit line, then re-raised (issue 22)
        cause = f"fatal error: {type(exc).__name__}: {exc}"
        raise
    finally:
        try:
            if service is not None:
                service.close()
        finally:
            _log().warning("daemon exiting (pid %d): %s", os.getpid(), cause)
