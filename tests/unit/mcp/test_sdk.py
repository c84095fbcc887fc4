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

from readmany_daemon.mcp import front, modern, sdk
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


def _envelope(version: str = "2026-07-28") -> dict[str, Any]:
    return {
        "_meta": {
            modern.PROTOCOL_VERSION_KEY: version,
            modern.CLIENT_INFO_KEY: {"name": "contract", "version": "0"},
            modern.CLIENT_CAPABILITIES_KEY: {},
        }
    }


@pytest.mark.skipif(not modern.served(MAJOR), reason=f"{MCP} serves the legacy era only")
def test_the_front_stage_writes_the_sdks_own_bytes_in_the_2026_era(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``server/discover`` and ``tools/list`` of the 2026-07-28 era, stateless: the
    front stage's answers (``Front.receive``, as ``readmany mcp`` runs it) are the SDK's
    bytes, ``ttlMs`` and ``cacheScope`` included, and two listings are identical."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_tree(tmp_path / "ws", {"a.py": "a = 1\n"})
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": _envelope()},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": _envelope()},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": _envelope()},
    ]
    stdout = _Stdout()
    app = ReadManyMcp(str(tmp_path / "ws"), True)
    anyio.run(sdk.serve, app, _Stdin(messages, stdout, 3), stdout)
    by_id = {json.loads(line)["id"]: line.encode() + b"\n" for line in stdout.lines}

    stage = front.Front(MAJOR)
    answers = [stage.receive(json.dumps(m).encode()) for m in messages]
    assert answers == [by_id[1], by_id[2], by_id[3]], (
        f"{MCP} answers the 2026-07-28 era otherwise than the front stage"
    )
    assert stage.kept == [json.dumps(messages[0]).encode()]  # replayed: settles the era
    listed = [json.loads(a)["result"] for a in answers[1:] if a is not None]
    assert listed[0] == listed[1]
    for result in (json.loads(by_id[1])["result"], listed[0]):
        assert result["ttlMs"] == modern.CACHE_TTL_MS
        assert result["cacheScope"] == modern.CACHE_SCOPE


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": _envelope("2099-01-01")},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": 1} | _envelope()},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": _envelope()},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {"_meta": {**_envelope()["_meta"], "progressToken": 1}},
        },
    ],
)
def test_the_front_stage_leaves_other_2026_requests_to_the_sdk(message: dict[str, Any]) -> None:
    """An unknown version, a cursor, another method or another ``_meta`` key: the SDK
    answers, and nothing after it is answered before it."""
    stage = front.Front(2)
    assert stage.receive(json.dumps(message).encode()) is None
    later = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": _envelope()}
    assert stage.receive(json.dumps(later).encode()) is None
    assert len(stage.kept) == 2


def test_an_sdk_of_the_legacy_era_only_answers_2026_requests_itself() -> None:
    """SDK 1.x: a ``server/discover`` probe waits for the SDK (which refuses it, and the
    client's ``auto`` mode falls back to ``initialize``)."""
    stage = front.Front(1)
    probe = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": _envelope()}
    assert stage.receive(json.dumps(probe).encode()) is None
    assert not stage.modern
