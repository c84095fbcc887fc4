"""The ``mcp`` SDK as ``mcp/sdk.py`` and ``mcp/front.py`` use it, checked against the
installed SDK: the calls bind to its signatures, and the bytes the front stage writes
for ``initialize`` and ``tools/list`` before the SDK loads are the bytes the SDK itself
writes when it serves the same messages (in process, over ``sdk.serve``'s hand-over
streams). An SDK release that changes either fails here, naming the SDK version, before
a client sees two different answers. ``tests/e2e/test_mcp_front.py`` checks the same
end to end through the real process."""

from __future__ import annotations

import inspect
import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest

from readmany_daemon.mcp import front, sdk
from readmany_daemon.mcp.tools import ReadManyMcp
from tests.helpers import write_tree

MCP = f"mcp {version('mcp')}"
MAJOR = int(version("mcp").split(".")[0])


def _binds(fn: Any, *args: Any, **kwargs: Any) -> None:
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise AssertionError(f"{MCP}: {fn.__qualname__}{inspect.signature(fn)}: {exc}") from exc


def test_the_calls_sdk_py_makes_bind_to_the_sdk() -> None:
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    _binds(stdio_server, None, None)
    _binds(Server.run, object(), object(), object(), object())
    _binds(Server.create_initialization_options, object())
    _binds(Server.__init__, object(), "readmany", version="0", instructions="x")
    if MAJOR >= 2:
        _binds(
            Server.__init__,
            object(),
            "readmany",
            version="0",
            instructions="x",
            on_list_tools=None,
            on_call_tool=None,
        )
        _binds(Server.add_notification_handler, object(), "m", object, None)
    else:
        _binds(Server.list_tools, object())
        _binds(Server.call_tool, object(), validate_input=False)
        server: Any = Server("readmany")
        assert isinstance(server.notification_handlers, dict), f"{MCP}: notification_handlers"


class _Stdout:
    def __init__(self) -> None:
        self.lines: list[str] = []

    async def write(self, text: str) -> None:
        self.lines.extend(line for line in text.splitlines() if line)

    async def flush(self) -> None:
        pass


class _Stdin:
    def __init__(self, lines: list[dict[str, Any]], stdout: _Stdout, wait_for: int) -> None:
        self.pending = [json.dumps(m) + "\n" for m in lines]
        self.stdout = stdout
        self.wait_for = wait_for

    def __aiter__(self) -> _Stdin:
        return self

    async def __anext__(self) -> str:
        if self.pending:
            return self.pending.pop(0)
        # Closing stdin ends the session: first let every answer be written.
        with anyio.fail_after(20):
            while len(self.stdout.lines) < self.wait_for:
                await anyio.sleep(0.01)
        raise StopAsyncIteration


@pytest.mark.parametrize("protocol_version", front.ECHOED.get(MAJOR, ()))
def test_the_front_stage_writes_the_sdks_own_bytes(
    tmp_path: Path, protocol_version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_tree(tmp_path / "ws", {"a.py": "a = 1\n"})
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol_version,
            "capabilities": {},
            "clientInfo": {"name": "contract", "version": "0"},
        },
    }
    messages = [
        init,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    stdout = _Stdout()
    app = ReadManyMcp(str(tmp_path / "ws"), True)
    anyio.run(sdk.serve, app, _Stdin(messages, stdout, 2), stdout)

    by_id = {json.loads(line)["id"]: line.encode() for line in stdout.lines}
    assert by_id[1] + b"\n" == front._response(
        1, front.initialize_result(protocol_version, MAJOR)
    ), f"{MCP} answers initialize otherwise than the front stage"
    assert by_id[2] + b"\n" == front._response(2, front.tools_result(MAJOR)), (
        f"{MCP} answers tools/list otherwise than the front stage"
    )
