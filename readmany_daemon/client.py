"""A tiny synchronous JSON-RPC client for the shared daemon: the CLI's warm path.

LSP framing (LSP 3.17 §"Base Protocol": ``Content-Length`` header, ``\\r\\n\\r\\n``,
UTF-8 JSON body) over a unix or TCP socket. A session is ``initialize`` →
``initialized`` → requests → ``exit`` (the daemon keeps the roots warm afterwards).

The warm ``readmany read`` must cost at most two ``python -c pass``, so this module is
the whole of what that path imports besides the CLI: neither pygls (~0.4 s) nor watchdog,
nor msgspec (~20 ms; ``quickjson``, the C codec of the stdlib's ``json`` without the
``json`` package and its ``re``, encodes here, and decodes all but a body of
``MSGSPEC_BODY_BYTES``; a longer session decodes from ``SESSION_MSGSPEC_BODY_BYTES``),
nor ``contextlib``, nor ``socket`` (its enum tables and ``selectors``; the C ``_socket``
does the same work). The socket path rules (PROTOCOL §1) live here for the same reason;
``daemon`` re-exports and documents them.
"""

from __future__ import annotations

import _socket
import os

from readmany_daemon.frames import CONTENT_FRAME_TYPE
from readmany_daemon.paths import path_to_uri
from readmany_daemon.quickjson import dumps, loads

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~2 ms)
if TYPE_CHECKING:
    from typing import Any, Protocol

    class ContentSink(Protocol):
        """Where :meth:`Client.receive` passes a content frame as it arrives."""

        def start(self, length: int) -> None:
            """A frame of ``length`` bytes begins."""

        def write(self, chunk: memoryview) -> None:
            """The next bytes of the frame (the view is valid only during the call)."""


SOCKET_NAME = "daemon.sock"

#: Bodies at least this long (bytes) are decoded with ``msgspec.json`` by a one-shot
#: session (``connect_pipelined``: msgspec is imported then, ~20 ms, more than
#: ``json.loads`` takes below this size; 2.5x faster above it).
MSGSPEC_BODY_BYTES = 4 << 20
#: The same for a longer session (``Client``'s default): the import is paid once, and a
#: 200 KB answer decodes in 0.3 ms instead of 0.8 ms.
SESSION_MSGSPEC_BODY_BYTES = 64 << 10

#: Bytes of a content frame received at a time when it is relayed (``content_sink``).
STREAM_CHUNK_BYTES = 1 << 20


def decode_body(body: bytes | bytearray, msgspec_from: int = MSGSPEC_BODY_BYTES) -> Any:
    """JSON ``body`` (UTF-8) as builtins: ``json.loads`` for a small body (through
    ``quickjson.loads``: the same C scanner, the same result), ``msgspec.json``
    for one of ``msgspec_from`` bytes or more (the same builtins; a body msgspec refuses,
    with a lone-surrogate escape such as ``\\udc80``, goes to ``json.loads``). Raises
    ``ValueError`` for a body that is not JSON."""
    if len(body) >= msgspec_from:
        import msgspec

        try:
            return msgspec.json.decode(body)
        except msgspec.DecodeError:
            pass  # a lone surrogate (json.loads keeps it) or not JSON (it says so)
    return loads(body)


#: Where systemd-logind makes each user's runtime folder (``/run/user/<uid>``).
RUN_USER = "/run/user"


def user_run_dir(uid: int, run_user: str = RUN_USER) -> str | None:
    """``run_user/<uid>`` when it is a folder (not a link) owned by ``uid`` that no one
    else may write to (what logind makes, 0700), else None. The runtime folder of a
    process started without ``XDG_RUNTIME_DIR`` (a GUI client's MCP server), so that it
    finds the daemon the user's shell started (issue 22, item 6)."""
    path = os.path.join(run_user, str(uid))
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not (st.st_mode & 0o170000 == 0o040000 and st.st_uid == uid and not st.st_mode & 0o022):
        return None
    return path


def runtime_dir(environ: Any = None, run_user: str = RUN_USER) -> str:
    """``$XDG_RUNTIME_DIR/readmany`` when that variable holds an absolute path; else,
    when ``run_user/<uid>`` (``/run/user/<uid>``) exists and belongs to this user
    (``user_run_dir``), ``/run/user/<uid>/readmany``; else ``$TMPDIR/readmany-$UID``
    (``/tmp`` without ``TMPDIR``). PROTOCOL §1."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "readmany")
    uid = os.getuid()
    run = user_run_dir(uid, run_user)
    if run is not None:
        return os.path.join(run, "readmany")
    tmp = env.get("TMPDIR", "") or "/tmp"
    return os.path.join(tmp, f"readmany-{uid}")


def default_socket_path(environ: Any = None) -> str:
    """The shared daemon's socket: ``runtime_dir()/daemon.sock`` (PROTOCOL §1)."""
    return os.path.join(runtime_dir(environ), SOCKET_NAME)


def connect(
    path: str, root: str | None = None, options: dict[str, Any] | None = None, timeout: float = 2.0
) -> Client | None:
    """An initialized session with the daemon at unix socket ``path``, or None when none
    answers there (no socket, a stale one, one that hangs past ``timeout`` s).
    ``client.server_version`` tells its version."""
    try:
        client = Client.connect_unix(path, timeout=timeout)
    except OSError:
        return None
    try:
        client.settimeout(timeout)
        client.initialize(root, options)
        client.settimeout(None)
    except (OSError, RpcError, ValueError):
        client.close()
        return None
    return client


def connect_pipelined(
    path: str,
    root: str | None,
    options: dict[str, Any] | None,
    method: str,
    params: Any,
    timeout: float = 2.0,
) -> tuple[Client, Pending] | None:
    """A one-shot session with the daemon at unix socket ``path`` whose ``initialize``,
    ``initialized`` and first request (``method``, ``params``) leave in one write, so
    the call costs one round trip, not two. Returns the client, ``initialize`` answered
    (``server_version`` known), and the request's :class:`Pending` answer; None as
    :func:`connect` does. The caller checks ``server_version`` before it takes the
    answer (a daemon of another version answered a request it may not understand)."""
    try:
        client = Client.connect_unix(path, timeout=timeout)
    except OSError:
        return None
    client.msgspec_from = MSGSPEC_BODY_BYTES  # one answer: not worth msgspec's import
    try:
        client.settimeout(timeout)
        init_id = client.send_initialize(root, options)
        client.notify("initialized", {})
        pending = client.send_request(method, params)
        client.finish_initialize(client.wait(init_id))
        client.settimeout(None)
    except (OSError, RpcError, ValueError):
        client.close()
        return None
    return client, pending


def peer_credentials(sock: Any) -> tuple[int, int | None] | None:
    """``(uid, pid)`` of the process at the other end of unix socket ``sock``, from the
    kernel as recorded when the peer called ``connect`` (``SO_PEERCRED`` on Linux:
    ``struct ucred {pid, uid, gid}``; ``LOCAL_PEERCRED`` on macOS/BSD: ``struct xucred
    {version, uid, ...}``, no pid). None when the system cannot tell."""
    import sys

    def field(raw: bytes, index: int, signed: bool) -> int:
        # The index-th native 32-bit int of ``raw`` (``struct`` costs the warm path an
        # import); ValueError when ``raw`` is too short.
        word = raw[4 * index : 4 * index + 4]
        if len(word) != 4:
            raise ValueError(f"a {len(raw)}-byte answer")
        return int.from_bytes(word, sys.byteorder, signed=signed)

    try:
        if hasattr(_socket, "SO_PEERCRED"):
            raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
            return field(raw, 1, True), field(raw, 0, True)  # struct ucred {pid, uid, gid}
        if sys.platform == "darwin" or "bsd" in sys.platform:
            sol_local, local_peercred = 0, 0x001  # <sys/un.h>
            raw = sock.getsockopt(sol_local, local_peercred, 76)
            return field(raw, 1, False), None  # struct xucred {version, uid, ...}
    except (OSError, ValueError):
        return None
    return None


class RpcError(Exception):
    """The daemon answered with a JSON-RPC error (``code``, ``message``, ``data``)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ConnectionClosed(OSError):
    """The daemon closed the connection before answering."""


class Pending:
    """A request sent and not yet answered: :meth:`Client.wait` its ``id``."""

    __slots__ = ("id",)

    def __init__(self, msg_id: int) -> None:
        self.id = msg_id


class Client:
    """One connection to a JSON-RPC server speaking LSP framing.

    Server-to-client requests are answered with "method not found" (this client
    announces no capabilities, so a conforming server sends none); notifications are
    kept in ``notifications`` (method, params) only for ``window/logMessage``.
    """

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._buf = bytearray()
        self._next_id = 0
        self.server_info: dict[str, Any] = {}
        self.notifications: list[tuple[str, Any]] = []
        #: The last content frame received (raw UTF-8 ``llmContent`` of the
        #: ``readMany/read`` answer that follows it), until :meth:`take_content`.
        self._content: bytearray | None = None
        #: Bodies of this many bytes or more are decoded with msgspec (decode_body).
        self.msgspec_from = SESSION_MSGSPEC_BODY_BYTES
        #: When set, content frames go to it as they arrive (``readmany read`` prints
        #: them so), not to :meth:`take_content`; ``relayed`` counts the bytes passed (a
        #: call lost after some were must not be answered again: they are out).
        self.content_sink: ContentSink | None = None
        self.relayed = 0

    @classmethod
    def connect_unix(cls, path: str, timeout: float | None = 5.0) -> Client:
        """Connect to the unix socket ``path``, served by a process of this user (its uid
        checked with :func:`peer_credentials`). Raises ``OSError``: FileNotFoundError
        (none), ConnectionRefusedError (stale socket), ``socket.timeout``,
        PermissionError (a socket of another user)."""
        family = getattr(_socket, "AF_UNIX", None)
        if family is None:
            raise OSError("unix sockets are not available on this system")
        sock = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.settimeout(None)
            # Whoever serves the socket sees the workspace paths, params and settings we
            # send and chooses the answer: only a server of this user is trusted (a
            # fallback path under /tmp can be taken by anyone first).
            creds = peer_credentials(sock)
            if creds is not None and creds[0] != os.geteuid():
                raise PermissionError(
                    f"{path} is served by uid {creds[0]}, not by this user "
                    f"(uid {os.geteuid()}): not using it"
                )
        except OSError:
            sock.close()
            raise
        return cls(sock)

    @classmethod
    def connect_tcp(cls, host: str, port: int, timeout: float | None = 5.0) -> Client:
        """Connect to ``host:port`` over TCP (IPv4 or IPv6 literal, or a name). Raises
        ``OSError``."""
        family, kind, proto, _, address = _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM)[0]
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
            sock.settimeout(None)
        except OSError:
            sock.close()
            raise
        return cls(sock)

    def settimeout(self, timeout: float | None) -> None:
        """Limit each later blocking send/receive to ``timeout`` s (None: no limit)."""
        self._sock.settimeout(timeout)

    # -- framing

    def send(self, message: dict[str, Any]) -> None:
        """Write one JSON-RPC ``message`` with LSP framing (``Content-Length``). Raises
        ``ConnectionClosed`` when the daemon went away."""
        try:
            body = dumps(message).encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (a file name that is not UTF-8, kept by surrogateescape):
            # raw, it would make the body invalid UTF-8; JSON's \udcXX escape carries it.
            body = dumps(message, ensure_ascii=True).encode("ascii")
        try:
            self._sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        except (BrokenPipeError, ConnectionResetError):
            raise ConnectionClosed("the daemon closed the connection") from None

    def _fill(self) -> None:
        try:
            chunk = self._sock.recv(1 << 16)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise ConnectionClosed("the daemon closed the connection")
        self._buf += chunk

    def _body(self, length: int) -> bytearray:
        """The next ``length`` bytes: what ``_buf`` holds, the rest received straight
        into one buffer of that size (no growing, no copy of a large answer)."""
        if len(self._buf) >= length:
            body = self._buf[:length]
            del self._buf[:length]
            return body
        body = bytearray(length)
        view = memoryview(body)
        have = len(self._buf)
        view[:have] = self._buf
        self._buf.clear()
        while have < length:
            have += self._recv_into(view[have : have + min(length - have, 1 << 22)])
        return body

    def _recv_into(self, view: memoryview) -> int:
        """Bytes received into ``view`` (one or more); ``ConnectionClosed`` at the end."""
        try:
            got: int = self._sock.recv_into(view)
        except ConnectionResetError:
            got = 0
        if not got:
            raise ConnectionClosed("the daemon closed the connection")
        return got

    def _frame(self) -> tuple[bytes | None, bytearray]:
        """The next frame: its ``Content-Type`` (None without one) and its body. Raises
        ``ConnectionClosed`` at end of stream and ``ValueError`` for a malformed header."""
        kind, length = self._header()
        return kind, self._body(length)

    def _header(self) -> tuple[bytes | None, int]:
        """The next frame's header: its ``Content-Type`` (None without one) and its
        ``Content-Length``. Raises as :meth:`_frame` does."""
        while (end := self._buf.find(b"\r\n\r\n")) < 0:
            self._fill()
        length = -1
        kind = None
        for line in bytes(self._buf[:end]).split(b"\r\n"):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip())
            elif name == b"content-type":
                kind = value.strip()
        if length < 0:
            raise ValueError("a message without Content-Length")
        del self._buf[: end + 4]
        return kind, length

    def _relay(self, length: int, sink: ContentSink) -> None:
        """Pass the next ``length`` bytes to ``sink`` as they arrive: ``sink.start(length)``,
        then ``sink.write`` of pieces of at most ``STREAM_CHUNK_BYTES`` (each view valid
        only during its call)."""
        sink.start(length)
        have = min(len(self._buf), length)
        if have:
            head = bytes(self._buf[:have])
            del self._buf[:have]
            self.relayed += have
            sink.write(memoryview(head))
        left = length - have
        if not left:
            return
        buf = bytearray(min(left, STREAM_CHUNK_BYTES))
        view = memoryview(buf)
        while left:
            got = self._recv_into(view[: min(left, len(buf))])
            left -= got
            self.relayed += got
            sink.write(view[:got])

    def receive(self) -> dict[str, Any]:
        """The next message, decoded by :func:`decode_body`; a content frame before it is
        kept for :meth:`take_content`, or passed to ``content_sink`` as it arrives. Raises
        ``ConnectionClosed`` at end of stream and ``ValueError`` for a malformed header;
        what the sink raises passes through."""
        while True:
            kind, length = self._header()
            if kind == CONTENT_FRAME_TYPE and self.content_sink is not None:
                self._relay(length, self.content_sink)
                continue
            body = self._body(length)
            if kind == CONTENT_FRAME_TYPE:
                self._content = body
                continue
            message: dict[str, Any] = decode_body(body, self.msgspec_from)
            return message

    def take_content(self) -> bytearray | None:
        """The raw UTF-8 ``llmContent`` of the last ``readMany/read`` answer when the
        daemon sent it as a content frame (a connection opened with
        ``initializationOptions.llmContentFrames``; that answer's ``llmContent`` is then
        ``""``), else None; forgotten once taken."""
        content, self._content = self._content, None
        return content

    # -- JSON-RPC

    def notify(self, method: str, params: Any = None) -> None:
        """Send the notification ``method`` (``params`` omitted when None); no answer comes."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its answer; raises ``RpcError`` for an error
        answer and ``ConnectionClosed`` when the connection ends first."""
        return self.wait(self.send_request(method, params))

    def send_request(self, method: str, params: Any = None) -> Pending:
        """Send a request; its answer is :meth:`wait`-ed for later (pipelining)."""
        self._next_id += 1
        msg_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return Pending(msg_id)

    def wait(self, pending: Pending) -> Any:
        """The answer to ``pending`` (answers to earlier requests are skipped); raises
        ``RpcError`` for an error answer and ``ConnectionClosed`` when the connection
        ends first."""
        msg_id = pending.id
        while True:
            reply = self.receive()
            if "method" in reply:
                if "id" in reply:
                    self.send(
                        {
                            "jsonrpc": "2.0",
                            "id": reply["id"],
                            "error": {"code": -32601, "message": "not supported"},
                        }
                    )
                elif reply["method"] == "window/logMessage":
                    self.notifications.append((reply["method"], reply.get("params")))
                continue
            if reply.get("id") != msg_id:
                if reply.get("id") is None and "error" in reply:
                    # The server could not read a message of ours (JSON-RPC 2.0 §5: id
                    # null): the one waited for may be it, and no answer would come.
                    err = reply["error"] or {}
                    raise RpcError(
                        int(err.get("code", -32700)), str(err.get("message", "")), err.get("data")
                    )
                continue
            if "error" in reply:
                err = reply["error"] or {}
                raise RpcError(
                    int(err.get("code", -32603)), str(err.get("message", "")), err.get("data")
                )
            return reply.get("result")

    def initialize(
        self, root: str | None = None, options: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """``initialize`` (with ``root`` as the one workspace folder) and
        ``initialized``; returns the ``InitializeResult``. ``serverInfo`` is kept in
        ``server_info``."""
        result = self.finish_initialize(self.wait(self.send_initialize(root, options)))
        self.notify("initialized", {})
        return result

    def send_initialize(
        self, root: str | None = None, options: dict[str, Any] | None = None
    ) -> Pending:
        """Send ``initialize`` (``root``: the one workspace folder; ``options``:
        ``initializationOptions``); pass its answer to :meth:`finish_initialize`."""
        params: dict[str, Any] = {"processId": os.getpid(), "capabilities": {}, "rootUri": None}
        if root is not None:
            uri = path_to_uri(root)
            params["rootUri"] = uri
            params["workspaceFolders"] = [{"uri": uri, "name": os.path.basename(root) or root}]
        if options:
            params["initializationOptions"] = options
        return self.send_request("initialize", params)

    def finish_initialize(self, answer: Any) -> dict[str, Any]:
        """Keep ``serverInfo`` of the ``initialize`` ``answer``; returns it as a dict."""
        result: dict[str, Any] = answer if isinstance(answer, dict) else {}
        self.server_info = result.get("serverInfo") or {}
        return result

    @property
    def server_version(self) -> str | None:
        """``serverInfo.version`` of the daemon's ``initialize`` answer, or None when it gave
        none."""
        version = self.server_info.get("version")
        return version if isinstance(version, str) else None

    def exit(self) -> None:
        """Send ``exit`` and close (the connection only; the daemon goes on)."""
        try:  # noqa: SIM105 (contextlib costs the warm path collections, functools)
            self.notify("exit")
        except OSError:
            pass  # already gone: nothing to end
        self.close()

    def close(self) -> None:
        """Close the socket (no ``shutdown``/``exit``: see :meth:`exit`)."""
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.exit()
