"""The ``mcp`` SDK seam: ``readmany mcp`` served over stdio by the official SDK.

The only module that imports the ``mcp`` package, and only when a server is built.
Works with SDK 2.x (``Server(on_list_tools=…, on_call_tool=…)``: both eras, the
legacy handshake and 2026-07-28, ``ttlMs``/``cacheScope`` from ``mcp/modern.py``) and
1.x from 1.10 (the decorator API, the legacy era only; structured content needs 1.10).
Nothing but protocol goes to stdout; logs go to stderr.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from readmany_daemon import __version__
from readmany_daemon.errors import RootNotFound
from readmany_daemon.mcp import modern
from readmany_daemon.mcp.schema import INSTRUCTIONS, tool_definitions
from readmany_daemon.mcp.tools import ReadManyMcp, ToolFailure
from readmany_daemon.settings import Settings
from readmany_daemon.wire.messages import SERVER_NAME

log = logging.getLogger("readmany.mcp")

#: How long to wait for the client's answer to ``roots/list`` (s).
ROOTS_TIMEOUT = 5.0


def _sdk_major() -> int:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("mcp").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 2


async def _client_roots(session: Any) -> list[tuple[str, str | None]] | None:
    """The client's roots as (uri, name), or None when it does not offer roots or does
    not answer within ``ROOTS_TIMEOUT``."""
    import anyio
    import mcp.types as types

    caps = getattr(session, "client_capabilities", None)  # SDK 2.x
    if caps is None:
        params = getattr(session, "client_params", None)
        caps = getattr(params, "capabilities", None)
    if caps is None or getattr(caps, "roots", None) is None:
        return None
    if getattr(session, "can_send_request", True) is False:
        return None
    try:
        with anyio.fail_after(ROOTS_TIMEOUT):
            if hasattr(session, "client_capabilities"):
                # 2.x: the typed request (``list_roots`` warns: roots are deprecated in the
                # 2026-07-28 protocol, which this path never speaks).
                result = await session.send_request(types.ListRootsRequest(), types.ListRootsResult)
            else:
                result = await session.list_roots()
    except Exception as exc:  # the client's problem, not ours: fall back to the cwd
        log.warning("roots/list failed (%r); using the current directory", exc)
        return None
    return [(str(r.uri), getattr(r, "name", None)) for r in result.roots]


def build_server(app: ReadManyMcp) -> Any:
    """An SDK ``Server`` serving ``app``'s tools (SDK 2.x handlers, or 1.x decorators)."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    tools = [types.Tool.model_validate(t) for t in tool_definitions(app.settings)]

    if _sdk_major() >= 2:

        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=tools)

        async def call_tool(ctx: Any, params: Any) -> Any:
            result = await app.call_tool(
                params.name, params.arguments, lambda: _client_roots(ctx.session)
            )
            return types.CallToolResult.model_validate(result)

        async def roots_changed(ctx: Any, params: Any) -> None:
            app.roots_changed()

        from mcp.server.caching import CacheHint

        hint = CacheHint(ttl_ms=modern.CACHE_TTL_MS, scope=modern.CACHE_SCOPE)
        server = Server(
            SERVER_NAME,
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            cache_hints={"tools/list": hint, "server/discover": hint},
        )
        server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, roots_changed
        )
        return server

    # SDK 1.x (typed against 2.x here, hence ``Any``)
    legacy: Any = Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS)

    @legacy.list_tools()  # type: ignore[untyped-decorator]
    async def _list_tools() -> list[Any]:
        return tools

    @legacy.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def _call_tool(name: str, arguments: dict[str, Any]) -> Any:
        session = legacy.request_context.session
        result = await app.call_tool(name, arguments, lambda: _client_roots(session))
        if result["isError"]:
            raise ToolFailure(result["content"][0]["text"])  # 1.x: isError with this text
        content: list[Any] = [types.TextContent.model_validate(result["content"][0])]
        for block in result["content"][1:]:
            cls = types.ImageContent if block["type"] == "image" else types.EmbeddedResource
            content.append(cls.model_validate(block))
        return content, result["structuredContent"]

    async def _roots_changed(_: Any) -> None:
        app.roots_changed()

    legacy.notification_handlers[types.RootsListChangedNotification] = _roots_changed
    return legacy


def line_check() -> Callable[[str], None]:
    """The SDK stdio transport's own check of one line of stdin: a callable that raises
    ``ValueError`` (pydantic's ``ValidationError``) for a line the transport would drop
    (``mcp/screen.py`` answers those). SDK 2.x validates with ``types.jsonrpc_message_adapter`` (a
    ``TypeAdapter``), 1.x with ``types.JSONRPCMessage.model_validate_json``; checked here
    once, the 1.x form the fallback."""
    import mcp.types as types

    adapter = getattr(types, "jsonrpc_message_adapter", None)
    validate = getattr(adapter, "validate_json", None)
    if callable(validate):

        def check(line: str) -> None:
            validate(line, by_name=False)

        return check
    model: Any = types.JSONRPCMessage  # 1.x: a RootModel (2.x: a union, with the adapter)

    def check_model(line: str) -> None:
        model.model_validate_json(line)

    return check_model


def load() -> None:
    """Import what serving needs (``mcp/front.py`` calls it in its loader thread)."""
    import anyio.to_thread  # noqa: F401
    import mcp.server.lowlevel
    import mcp.server.stdio
    import mcp.types  # noqa: F401


async def serve(app: ReadManyMcp, stdin: Any = None, stdout: Any = None) -> None:
    """Serve ``app`` with the SDK's low-level server until the client closes: over the
    process's stdio, or over ``stdin`` (async iterable of lines) and ``stdout`` (async
    ``write``/``flush`` of text) when given (``mcp/front.py``'s hand-over)."""
    from mcp.server.stdio import stdio_server

    server = build_server(app)
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run(
    roots: list[str] | None = None, no_daemon: bool = False, settings: Settings | None = None
) -> int:
    """``readmany mcp``: serve until the client closes stdin; returns the exit code.
    ``roots``: the ``--root`` folders (None: the client's roots, else the current
    directory); ``settings``: the server's (default: from the environment). Raises
    ``RootNotFound`` when a ``--root`` is no folder."""
    import anyio

    for root in roots or []:
        if not os.path.isdir(root):
            raise RootNotFound(f"--root: no such folder: {root}", "root")
    if not logging.getLogger().handlers:
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.WARNING,
            format="readmany mcp: %(levelname)s: %(message)s",
        )
    app = ReadManyMcp(roots, no_daemon, settings)
    anyio.run(serve, app)
    return 0
