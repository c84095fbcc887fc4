"""The front stage of ``readmany mcp``: the first answers while the SDK loads.

Importing the ``mcp`` SDK (pydantic models) takes most of a second; a client's
``initialize`` and first ``tools/list`` need none of it. ``run`` starts loading the SDK
and the tools (``mcp/sdk.py``) in a background thread at once, reads the client's
newline-delimited JSON-RPC from stdin itself and, until the SDK is loaded:

- the legacy era (the first request is ``initialize``): answers ``initialize`` when the
  SDK would answer it with the client's own protocol version (``ECHOED``, by SDK major
  version; any other request waits for the SDK), with the bytes the SDK writes:
  serverInfo, capabilities, instructions and the key order of its major version (1.x:
  field order; 2.x: sorted model fields); then ``tools/list`` (no cursor) after
  ``notifications/initialized`` from ``schema.tool_definitions``;
- the 2026-07-28 era (the first request carries a protocol version in ``_meta``, on an
  SDK that serves it: ``mcp/modern.py``): answers ``server/discover`` and ``tools/list``
  (no cursor) that carry an envelope the SDK accepts as it is, statelessly, with the
  bytes the SDK writes;
- answers only while no other request is waiting, and keeps everything else, in order.

Then it hands the connection over: the SDK's stdio transport reads the kept messages
(the first request answered here, so that the SDK settles on the same era, then what
followed), then the rest of stdin; its answer to that replayed request is dropped (a
warning names it when it differs from the one sent). The SDK serves everything from there on
(tools/call, roots, cancellation, progress, ping). The ``mcp`` package is never
imported here (``mcp/sdk.py`` is its seam).

While serving, fd 0 reads the null device and fd 1 writes to stderr, so nothing but
protocol reaches the client (the SDK's own stdio transport does the same).

``READMANY_MCP_FRONT=0`` turns the front stage off (the SDK answers everything);
``READMANY_MCP_SDK_GATE=FIFO`` makes the loader open the named FIFO and read it to its
end before loading the SDK (tests: the SDK stays unloaded until the test writes).
"""

from __future__ import annotations

import glob
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from readmany_daemon import __version__
from readmany_daemon.errors import RootNotFound
from readmany_daemon.frames import write_all
from readmany_daemon.mcp import modern, screen
from readmany_daemon.settings import Settings, load_settings
from readmany_daemon.wire.fold import one_line
from readmany_daemon.wire.messages import SERVER_NAME

log = logging.getLogger("readmany.mcp")

ENV_FRONT = "READMANY_MCP_FRONT"
ENV_SDK_GATE = "READMANY_MCP_SDK_GATE"

#: Protocol versions the SDK answers ``initialize`` with unchanged, by SDK major version:
#: every mcp from 1.21.1 (its ``SUPPORTED_PROTOCOL_VERSIONS``) and 2.x
#: (``HANDSHAKE_PROTOCOL_VERSIONS``). Another version is negotiated by the SDK itself.
ECHOED: dict[int, tuple[str, ...]] = {
    1: ("2024-11-05", "2025-03-26", "2025-06-18"),
    2: ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"),
}

_CAPABILITY_OBJECTS = ("experimental", "roots", "sampling", "elicitation", "tasks", "extensions")


def sdk_major() -> int | None:
    """The installed ``mcp`` SDK's major version, read from its ``dist-info`` folder
    without importing it (``importlib.metadata`` when there is none); None when the SDK
    is not installed or its version is unreadable."""
    from importlib.util import find_spec

    spec = find_spec("mcp")
    if spec is None or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(next(iter(spec.submodule_search_locations)))
    found = glob.glob(os.path.join(glob.escape(site), "mcp-*.dist-info"))
    if len(found) == 1:
        name = os.path.basename(found[0])[len("mcp-") :]
    else:
        from importlib.metadata import PackageNotFoundError, version

        try:
            name = version("mcp")
        except PackageNotFoundError:
            return None
    head = name.split(".")[0]
    return int(head) if head.isdigit() else None


def _plain_initialize(msg: Any) -> bool:
    """Whether ``msg`` is an ``initialize`` request the SDK accepts as it is: an int or
    string id, ``protocolVersion``, ``capabilities`` (known members objects) and
    ``clientInfo`` (``name``, ``version``)."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return False
    if msg.get("method") != "initialize" or set(msg) - {"jsonrpc", "id", "method", "params"}:
        return False
    msg_id = msg.get("id")
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
        return False
    params = msg.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return False
    caps, info = params.get("capabilities"), params.get("clientInfo")
    if not isinstance(caps, dict) or not isinstance(info, dict):
        return False
    if any(k in caps and not isinstance(caps[k], dict) for k in _CAPABILITY_OBJECTS):
        return False
    roots = caps.get("roots") or {}
    if "listChanged" in roots and not isinstance(roots["listChanged"], bool):
        return False
    return isinstance(info.get("name"), str) and isinstance(info.get("version"), str)


def initialize_result(protocol_version: str, major: int) -> dict[str, Any]:
    """The ``InitializeResult`` the SDK of ``major`` answers for an accepted
    ``protocol_version``, keys in the order it writes them."""
    from readmany_daemon.mcp.schema import INSTRUCTIONS

    server_info = {"name": SERVER_NAME, "version": __version__}
    if major == 1:
        return {
            "protocolVersion": protocol_version,
            "capabilities": {"experimental": {}, "tools": {"listChanged": False}},
            "serverInfo": server_info,
            "instructions": INSTRUCTIONS,
        }
    return {
        "capabilities": {"tools": {"listChanged": False}},
        "instructions": INSTRUCTIONS,
        "protocolVersion": protocol_version,
        "serverInfo": server_info,
    }


def tools_result(major: int, settings: Settings | None = None) -> dict[str, Any]:
    """The ``ListToolsResult`` the SDK of ``major`` answers (``schema.tool_definitions``
    with ``settings``, default the environment's: the budgets, ``mcpStructuredText``;
    2.x writes the keys of each tool and of its object members (annotations, schemas,
    ``_meta``) sorted, nested objects as given)."""
    from readmany_daemon.mcp.schema import tool_definitions

    if settings is None:
        settings = load_settings()[0]  # warnings: the server logs them (``server_settings``)
    tools = tool_definitions(settings)
    if major >= 2:
        tools = [
            {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in sorted(t.items())}
            for t in tools
        ]
    return {"tools": tools}


def _response(msg_id: Any, result: dict[str, Any]) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "id": msg_id, "result": result}) + b"\n"


@dataclass
class Front:
    """The front stage's state: what it answered and what waits for the SDK.

    ``receive(line)`` takes one stdin line (bytes, newline stripped) and returns the
    answer to write, or None when the line waits in ``kept`` for the SDK."""

    major: int | None
    #: The server's settings (``server_settings``); None: the environment's.
    settings: Settings | None = None
    kept: list[bytes] = field(default_factory=list)
    #: The first request answered here (``initialize``, or the first of the 2026-07-28
    #: era), replayed to the SDK: its id and the bytes written (else None).
    init_id: Any = None
    init_answer: bytes | None = None
    initialized: bool = False
    #: The first request opened the 2026-07-28 era.
    modern: bool = False
    #: A request (or an unreadable line) waits for the SDK: answer nothing more here.
    waiting: bool = False

    def receive(self, line: bytes) -> bytes | None:
        """The answer to ``line`` when the front stage gives it, else None (kept)."""
        answer = self._answer(line)
        if answer is None:
            self.kept.append(line)
        return answer

    def _answer(self, line: bytes) -> bytes | None:
        if self.waiting or self.major not in ECHOED:
            return None
        try:
            msg = msgspec.json.decode(line)
        except msgspec.DecodeError:
            self.waiting = True
            return None
        if not isinstance(msg, dict):
            self.waiting = True
            return None
        method = msg.get("method")
        if self.modern or (
            self.init_answer is None
            and "id" in msg
            and method != "initialize"
            and modern.has_envelope(msg)
            and modern.served(self.major)
        ):
            return self._answer_modern(msg, line)
        if self.init_answer is None:
            if _plain_initialize(msg) and msg["params"]["protocolVersion"] in ECHOED[self.major]:
                self.init_id = msg["id"]
                result = initialize_result(msg["params"]["protocolVersion"], self.major)
                self.init_answer = _response(self.init_id, result)
                self.kept.append(line)  # replayed to the SDK, its answer dropped
                return self.init_answer
            self.waiting = True  # the SDK negotiates (or refuses) this one
            return None
        if "id" not in msg:  # a notification: kept, in order
            self.initialized = self.initialized or method == "notifications/initialized"
            return None
        params = msg.get("params")
        plain = params is None or (isinstance(params, dict) and set(params) <= {"_meta"})
        plain = plain and not modern.has_envelope(msg)  # the SDK refuses it on this era
        if method == "tools/list" and self.initialized and plain and msg.get("jsonrpc") == "2.0":
            return _response(msg["id"], tools_result(self.major, self.settings))
        self.waiting = True
        return None

    def _answer_modern(self, msg: dict[str, Any], line: bytes) -> bytes | None:
        """A 2026-07-28 request: ``server/discover`` or ``tools/list`` answered when its
        envelope is one the SDK accepts as it is; the first one answered is also kept
        for the SDK (it settles the era), with its answer to drop."""
        self.modern = True
        if "id" not in msg:  # a notification: kept, in order
            return None
        method = msg.get("method")
        if method not in ("server/discover", "tools/list") or not modern.modern_request(msg):
            self.waiting = True
            return None
        if method == "server/discover":
            result = modern.discover_result()
        else:
            from readmany_daemon.mcp.schema import tool_definitions

            settings = self.settings if self.settings is not None else load_settings()[0]
            result = modern.tools_result(tool_definitions(settings))
        answer = _response(msg["id"], result)
        if self.init_answer is None:
            self.init_id, self.init_answer = msg["id"], answer
            self.kept.append(line)  # replayed to the SDK, its answer dropped
        return answer


# ------------------------------------------------------------------------ plumbing


@dataclass
class _Loaded:
    """The loader thread's outcome: the tools (``ReadManyMcp``) or what failed."""

    app: Any = None
    error: BaseException | None = None


_EOF = b""


def _load(
    roots: list[str] | None, no_daemon: bool, settings: Settings, events: queue.SimpleQueue[Any]
) -> None:
    try:
        gate = os.environ.get(ENV_SDK_GATE)
        if gate:
            with open(gate, "rb") as fifo:  # blocks until a writer opens it
                fifo.read()
        from readmany_daemon.mcp import sdk
        from readmany_daemon.mcp.tools import ReadManyMcp

        sdk.load()
        events.put(_Loaded(app=ReadManyMcp(roots, no_daemon, settings)))
    except BaseException as exc:  # handed to the main thread, raised there
        events.put(_Loaded(error=exc))


def _read_lines(fd: int, events: queue.SimpleQueue[Any]) -> None:
    """Put each line of ``fd`` (newline stripped, blank lines skipped) on ``events``,
    then ``_EOF``."""
    buf = b""
    try:
        while chunk := os.read(fd, 1 << 16):
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.strip():
                    events.put(line)
    except OSError as exc:
        log.warning("stdin: %s", exc)
    if buf.strip():
        events.put(buf)
    events.put(_EOF)


def _claim_stdio() -> tuple[int, int]:
    """The client's stdin and stdout as private descriptors; fd 0 then reads the null
    device and fd 1 writes to stderr, so stray output never reaches the wire."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


class _Lines:
    """The SDK transport's stdin: the kept lines, then the rest of the client's. A line
    the transport would drop unanswered (``check`` raises: the SDK's own check) is
    answered here with ``screen.refusal``'s error, through ``out``, and not passed on."""

    def __init__(
        self,
        kept: list[bytes],
        events: queue.SimpleQueue[Any],
        check: Callable[[str], None],
        out: _Out,
    ) -> None:
        self.kept = list(reversed(kept))
        self.events, self.check, self.out = events, check, out

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        import anyio.to_thread

        while True:
            if self.kept:
                raw = self.kept.pop()
            else:
                raw = await anyio.to_thread.run_sync(self.events.get, abandon_on_cancel=True)
                if raw is _EOF:
                    raise StopAsyncIteration
            line = raw.decode("utf-8", errors="replace") + "\n"
            try:
                self.check(line)
            except ValueError:  # pydantic's ValidationError: the transport would drop it
                answer = screen.refusal(line)
                log.warning("refused a line of stdin: %s", one_line(line.strip())[:200])
                if answer is not None:
                    await self.out.write_raw(answer)
                continue
            return line


class _Out:
    """The SDK transport's stdout: writes each message to the client, except the SDK's
    answer to the replayed request (``initialize``, or the first of the 2026-07-28
    era; compared with the one sent)."""

    def __init__(self, fd: int, front: Front) -> None:
        self.fd = fd
        self.drop_id, self.sent = front.init_id, front.init_answer
        self._lock = threading.Lock()  # the SDK's writer and ``_Lines``' refusals

    def _write_all(self, data: bytes) -> None:
        with self._lock:
            write_all(self.fd, data)

    async def write_raw(self, data: bytes) -> None:
        """Write ``data`` (whole messages) to the client as it is."""
        import anyio.to_thread

        await anyio.to_thread.run_sync(self._write_all, data)

    async def write(self, text: str) -> None:
        import anyio.to_thread

        data = text.encode()
        if self.sent is not None:
            msg = msgspec.json.decode(data)
            if isinstance(msg, dict) and "method" not in msg and msg.get("id") == self.drop_id:
                if data != self.sent:
                    log.warning(
                        "the SDK answers the replayed request otherwise than the front "
                        "stage did: %s",
                        data.decode(errors="replace").strip(),
                    )
                self.sent = None
                return
        await anyio.to_thread.run_sync(self._write_all, data)

    async def flush(self) -> None:
        """Nothing: every write goes straight to the descriptor."""


def _setup_logging() -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.WARNING,
            format="readmany mcp: %(levelname)s: %(message)s",
        )


def server_settings(structured_text: bool = False) -> Settings:
    """The server's settings: the environment's (``READMANY_*``; each one ignored is
    logged), then the command line's flags (``--structured-text``: ``mcpStructuredText``
    on)."""
    settings, warnings = load_settings()
    for w in warnings:
        log.warning("%s", w)
    if structured_text:
        settings = msgspec.structs.replace(settings, mcp_structured_text=True)
    return settings


def run(
    roots: list[str] | None = None, no_daemon: bool = False, structured_text: bool = False
) -> int:
    """``readmany mcp``: serve on stdio until the client closes stdin; returns the exit
    code. ``roots``: the ``--root`` folders (None: the client's roots, else the current
    directory); ``structured_text``: ``--structured-text``. Raises ``RootNotFound`` (a
    ``--root`` is no folder) and whatever loading the SDK raised."""
    for root in roots or []:
        if not os.path.isdir(root):
            raise RootNotFound(f"--root: no such folder: {root}", "root")
    _setup_logging()
    settings = server_settings(structured_text)
    if os.environ.get(ENV_FRONT) == "0":
        from readmany_daemon.mcp import sdk

        return sdk.run(roots, no_daemon, settings)
    events: queue.SimpleQueue[Any] = queue.SimpleQueue()
    loader = threading.Thread(target=_load, args=(roots, no_daemon, settings, events), daemon=True)
    loader.start()
    wire_in, wire_out = _claim_stdio()
    threading.Thread(target=_read_lines, args=(wire_in, events), daemon=True).start()
    front = Front(sdk_major(), settings)
    kept_eof = False
    while not isinstance(item := events.get(), _Loaded):
        if item is _EOF:
            kept_eof = True
            continue
        answer = front.receive(item)
        if answer is not None:
            write_all(wire_out, answer)
    if item.error is not None:
        raise item.error
    if kept_eof:
        events.put(_EOF)
    import anyio

    from readmany_daemon.mcp import sdk

    out = _Out(wire_out, front)
    anyio.run(sdk.serve, item.app, _Lines(front.kept, events, sdk.line_check(), out), out)
    return 0
