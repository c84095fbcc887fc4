"""``readmany serve --stdio`` driven by pytest-lsp, as VS Code, Neovim and Emacs drive it.

Each test starts the real server process and talks LSP to it with the client
capabilities those editors recorded (pytest-lsp ships them); waits are on responses and
notifications, never on sleeps.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import (
    ClientServerConfig,
    LanguageClient,
    LanguageClientProtocol,
    client_capabilities,
    make_test_lsp_client,
)

from tests.helpers import write_tree

EDITORS = ["visual-studio-code", "neovim", "emacs"]
SERVER = [sys.executable, "-m", "readmany_daemon", "serve", "--stdio"]


@attrs.define
class _RawResponse:
    """A response whose ``result`` stays JSON builtins (pygls would make namedtuples)."""

    id: Any
    jsonrpc: str
    result: Any = None


class _Protocol(LanguageClientProtocol):
    def get_result_type(self, method: str) -> Any:
        if method.startswith("readMany/"):
            return _RawResponse
        return super().get_result_type(method)


class Client(LanguageClient):
    """pytest-lsp's client, plus: readMany results as dicts, an event per ended
    progress token, and ``window/logMessage`` waits."""

    progress_ended: asyncio.Event
    log_arrived: asyncio.Event

    async def call(self, method: str, params: Any = None, msg_id: str | None = None) -> Any:
        return await self.protocol.send_request_async(method, params, msg_id=msg_id)

    async def wait_log(self, predicate: Any, timeout: float = 10) -> types.LogMessageParams:
        """The first ``window/logMessage`` matching ``predicate`` (waits for it)."""

        async def scan() -> types.LogMessageParams:
            while True:
                for m in self.log_messages:
                    if predicate(m):
                        return m
                self.log_arrived.clear()
                await self.log_arrived.wait()

        return await asyncio.wait_for(scan(), timeout)


def make_client() -> Client:
    base = make_test_lsp_client()
    client = Client(protocol_cls=_Protocol, converter_factory=lambda: base.protocol._converter)
    client.progress_ended = asyncio.Event()
    client.log_arrived = asyncio.Event()
    from pytest_lsp.client import DEFAULT_CLIENT_FEATURES

    for method, func in DEFAULT_CLIENT_FEATURES.items():
        if method in (types.PROGRESS, types.WINDOW_LOG_MESSAGE):
            continue
        client.feature(method)(func)

    @client.feature(types.PROGRESS)
    def on_progress(ls: Client, params: types.ProgressParams) -> None:
        DEFAULT_CLIENT_FEATURES[types.PROGRESS](ls, params)
        if isinstance(params.value, dict) and params.value.get("kind") == "end":
            ls.progress_ended.set()

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(ls: Client, params: types.LogMessageParams) -> None:
        ls.log_messages.append(params)
        ls.log_arrived.set()

    return client


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write_tree(
        root,
        {
            "a.txt": "disk a\n",
            "src/m.py": "print('m')\n",
            "src/n.py": "print('n')\n",
            "notes/uni.txt": "caf\u00e9 \U0001f600 tail\nsecond\n",
            "big.txt": "".join(f"line {i}\n" for i in range(1, 301)),
        },
    )
    return root


@pytest.fixture
async def start(env: dict[str, str]) -> Any:
    """``await start()`` → a started client; each is shut down (or stopped) afterwards."""
    started: list[Client] = []
    environment = dict(env, READMANY_NO_DAEMON="1")

    async def _start() -> Client:
        config = ClientServerConfig(
            server_command=SERVER, client_factory=make_client, server_env=environment
        )
        client = await config.start()
        assert isinstance(client, Client)
        started.append(client)
        return client

    yield _start
    for client in started:
        if client._server is not None and client._server.returncode is None:
            if client.capabilities is not None and client.error is None:
                await asyncio.wait_for(client.shutdown_session(), 20)
            else:
                client._server.terminate()
        await client.stop()


def _folder(path: Path, name: str | None = None) -> types.WorkspaceFolder:
    return types.WorkspaceFolder(uri=path.as_uri(), name=name or path.name)


async def _init(
    client: Client, editor: str, folders: list[types.WorkspaceFolder], options: Any = None
) -> types.InitializeResult:
    caps = client_capabilities(editor)
    return await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            workspace_folders=folders,
            root_uri=folders[0].uri if folders else None,
            initialization_options=options,
        )
    )


@asynccontextmanager
async def lsp_session(env: dict[str, str], folder: Path) -> AsyncIterator[Client]:
    """A pytest-lsp client of ``readmany serve --stdio`` (a new process answering in
    itself, ``env`` its environment), initialized as Neovim with ``folder``; shut down
    and stopped after."""
    config = ClientServerConfig(
        server_command=SERVER,
        client_factory=make_client,
        server_env=dict(env, READMANY_NO_DAEMON="1"),
    )
    client = await config.start()
    assert isinstance(client, Client)
    try:
        await _init(client, "neovim", [_folder(folder)])
        yield client
        await client.shutdown_session()
    finally:
        await client.stop()


def _unit_len(text: str, encoding: str) -> int:
    """Length of ``text`` in the units of an LSP position encoding (LSP 3.17
    §"Position")."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


# ------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("editor", EDITORS)
async def test_lifecycle_read_files_status(start: Any, ws: Path, editor: str) -> None:
    client = await start()
    result = await _init(client, editor, [_folder(ws)])
    assert result.server_info is not None and result.server_info.name == "readmany"
    sync = result.capabilities.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions) and sync.open_close
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert result.capabilities.workspace.workspace_folders.change_notifications  # type: ignore[union-attr]

    answer = await client.call("readMany/read", {"paths": ["a.txt", "src/*.py"]})
    assert [f["path"] for f in answer["files"]] == ["a.txt", "src/m.py", "src/n.py"]
    assert "--- a.txt ---\ndisk a\n" in answer["llmContent"]
    assert answer["summary"]["read"] == 3

    listed = await client.call("readMany/files", {"patterns": ["src"]})
    assert [f["path"] for f in listed["files"]] == ["src/m.py", "src/n.py"]
    assert {"size", "mtimeMs"} <= set(listed["files"][0])

    status = await client.call("readMany/status", {})
    assert status["pid"] != os.getpid() and status["version"] == result.server_info.version
    assert status["connections"] == 1
    assert [r["root"] for r in status["roots"]] == [os.path.realpath(ws)]
    assert status["roots"][0]["name"] == "proj"
    assert status["fileCount"] == 5
    assert set(status["cache"]) == {"bytes", "hitRate"}
    assert set(status["watcher"]) == {"state", "warnings"}
    assert status["clock"] == status["roots"][0]["clock"]

    await client.shutdown_session()
    assert client._server is not None and client._server.returncode == 0


async def test_progress_while_first_index_builds(start: Any, ws: Path) -> None:
    client = await start()
    await _init(client, "visual-studio-code", [_folder(ws)])
    await asyncio.wait_for(client.progress_ended.wait(), 20)
    (reports,) = client.progress_reports.values()
    assert reports[0].kind == "begin" and reports[-1].kind == "end"
    assert reports[0].title == "readmany: indexing"
    assert "5 files" in (reports[-1].message or "")


async def test_no_progress_without_client_support(start: Any, ws: Path) -> None:
    client = await start()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(), workspace_folders=[_folder(ws)]
        )
    )
    # files waits for the index (same root lock): by then any progress would have begun.
    await client.call("readMany/files", {})
    assert client.progress_reports == {}


@pytest.mark.parametrize("editor", EDITORS)
async def test_overlays_incremental_full_and_close(start: Any, ws: Path, editor: str) -> None:
    client = await start()
    result = await _init(client, editor, [_folder(ws)])
    encoding = str(result.capabilities.position_encoding or "utf-16")
    uri = (ws / "notes" / "uni.txt").as_uri()
    text = "caf\u00e9 \U0001f600 tail\nsecond\n"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text=text)
        )
    )

    async def read() -> dict[str, Any]:
        answer = await client.call("readMany/read", {"paths": ["notes/uni.txt"], "format": "json"})
        (f,) = answer["files"]
        return {
            "source": f.get("source", "disk"),
            "text": answer["llmContent"],
        }  # "disk" is omitted

    got = await read()
    assert got["source"] == "overlay"

    # Incremental: replace "tail" (after a 2-unit emoji in UTF-16, 1 in UTF-32, 4 in UTF-8).
    start_col = _unit_len("caf\u00e9 \U0001f600 ", encoding)
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(0, start_col), types.Position(0, start_col + 4)),
        text="EDITED",
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2), [edit]
        )
    )
    got = await read()
    assert got["source"] == "overlay"
    assert (
        "caf\\u00e9 \\ud83d\\ude00 EDITED\\nsecond" in got["text"]
        or "caf\u00e9 \U0001f600 EDITED\\nsecond" in got["text"]
    )

    # Full: the whole buffer replaced.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            [types.TextDocumentContentChangeWholeDocument(text="whole new buffer\n")],
        )
    )
    got = await read()
    assert got["source"] == "overlay" and "whole new buffer" in got["text"]

    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
    )
    got = await read()
    assert got["source"] != "overlay" and "second" in got["text"] and "EDITED" not in got["text"]


async def test_invalid_params_name_the_field(start: Any, ws: Path) -> None:
    client = await start()
    await _init(client, "neovim", [_folder(ws)])
    cases = [
        ("readMany/read", {"paths": ["a.txt"], "perFileMaxLines": 0}, "$.perFileMaxLines"),
        ("readMany/read", {"files": [{"path": "a.txt", "offset": 0}]}, "$.files[0].offset"),
        ("readMany/read", {"paths": ["a.txt"], "format": "yaml"}, "$.format"),
        ("readMany/read", {}, "$.paths"),
        ("readMany/read", {"paths": ["a.txt"], "root": "no-such-folder"}, "$.root"),
        ("readMany/files", {"patterns": "src"}, "$.patterns"),
        ("readMany/changedSince", {}, "$.clock"),
        ("readMany/changedSince", {"clock": 7}, "$.clock"),
        ("readMany/rescan", {"root": 1}, "$.root"),
    ]
    for method, params, field in cases:
        with pytest.raises(JsonRpcException) as info:
            await client.call(method, params)
        assert info.value.code == -32602, (method, params, info.value)
        assert field in info.value.message or field.removeprefix("$.") in info.value.message, (
            info.value.message
        )
        assert info.value.data == {"field": field}
    # The connection still answers afterwards.
    assert (await client.call("readMany/read", {"paths": ["a.txt"]}))["summary"]["read"] == 1


async def test_changed_since_and_rescan(start: Any, ws: Path) -> None:
    client = await start()
    await _init(client, "visual-studio-code", [_folder(ws)])
    await asyncio.wait_for(client.progress_ended.wait(), 20)
    clock = (await client.call("readMany/status", {}))["clock"]

    same = await client.call("readMany/changedSince", {"clock": clock})
    assert same == {"clock": clock, "isFreshInstance": False, "changed": [], "deleted": []}

    fresh = await client.call("readMany/changedSince", {"clock": "someone-else:3"})
    assert fresh["isFreshInstance"] is True and fresh["clock"] == clock
    assert fresh["changed"] == ["a.txt", "big.txt", "notes/uni.txt", "src/m.py", "src/n.py"]

    (ws / "src" / "new.py").write_text("new\n")
    (ws / "a.txt").unlink()
    rescanned = await client.call("readMany/rescan", {})
    assert rescanned["clock"] != clock
    delta = await client.call("readMany/changedSince", {"clock": clock})
    assert delta["clock"] == rescanned["clock"]
    assert "src/new.py" in delta["changed"]
    assert "a.txt" in delta["deleted"] or (
        delta["isFreshInstance"] and "a.txt" not in delta["changed"]
    )
    listed = await client.call("readMany/files", {})
    assert "src/new.py" in [f["path"] for f in listed["files"]]


async def test_settings_warn_and_connection_defaults(start: Any, ws: Path) -> None:
    client = await start()
    await _init(client, "neovim", [_folder(ws)], {"maxFileBytes": "huge", "perFileMaxLines": 3})
    warning = await client.wait_log(lambda m: "maxFileBytes" in m.message)
    assert warning.type == types.MessageType.Warning
    answer = await client.call("readMany/read", {"paths": ["big.txt"]})
    assert answer["files"][0]["lineEnd"] == 3  # the connection's default budget

    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"readmany": {"shareOverlays": "sometimes", "perFileMaxLines": 5}}
        )
    )
    await client.wait_log(lambda m: "shareOverlays" in m.message)
    answer = await client.call("readMany/read", {"paths": ["big.txt"]})
    assert answer["files"][0]["lineEnd"] == 5
    # A request's own value wins over the connection default.
    answer = await client.call("readMany/read", {"paths": ["big.txt"], "perFileMaxLines": 7})
    assert answer["files"][0]["lineEnd"] == 7


async def test_workspace_folders_added_and_removed(start: Any, ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write_tree(other, {"o.txt": "other root\n"})
    client = await start()
    await _init(client, "visual-studio-code", [_folder(ws, "main")])
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(added=[_folder(other, "second")], removed=[])
        )
    )
    answer = await client.call("readMany/read", {"paths": ["o.txt"], "root": "second"})
    assert answer["files"][0]["status"] == "ok" and "other root" in answer["llmContent"]
    answer = await client.call("readMany/read", {"paths": ["o.txt"], "root": other.as_uri()})
    assert answer["files"][0]["status"] == "ok"

    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(added=[], removed=[_folder(ws, "main")])
        )
    )
    with pytest.raises(JsonRpcException) as info:
        await client.call("readMany/read", {"paths": ["a.txt"], "root": "main"})
    assert info.value.code == -32602
    # The first folder is now "second": relative paths resolve there.
    answer = await client.call("readMany/read", {"paths": ["o.txt"]})
    assert answer["files"][0]["status"] == "ok"


async def test_cancel_request_stops_the_engine(start: Any, tmp_path: Path) -> None:
    root = tmp_path / "big"
    line = "x" * 79 + "\n"
    write_tree(root, {f"f{i:03}.txt": line * 1500 for i in range(400)})  # 48 MB: ~1 s to number
    client = await start()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(), workspace_folders=[_folder(root)]
        )
    )
    await client.call("readMany/files", {})  # the index is built

    params = {
        "paths": ["*.txt"],
        "maxTotalFiles": 1000,
        "maxTotalChars": 10**9,
        "preferFullRead": True,
        "lineNumbers": True,
    }
    request = asyncio.ensure_future(client.call("readMany/read", params, msg_id="long-read"))
    # Once the engine runs it, cancel it ($/cancelRequest, LSP 3.17 §"Cancellation Support").
    await _wait_for(
        lambda: client.call("readMany/status", {}), lambda s: s["engine"]["inflight"] >= 1
    )
    client.cancel_request(types.CancelParams(id="long-read"))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(request, 20)
    assert info.value.code == -32800
    # The engine itself stopped at its next file (not just the answer dropped).
    status = await _wait_for(
        lambda: client.call("readMany/status", {}), lambda s: s["engine"]["inflight"] == 0
    )
    assert status["engine"]["cancelled"] == 1
    answer = await client.call("readMany/read", {"paths": ["f000.txt"]})
    assert answer["files"][0]["status"] == "partial"


async def _wait_for(fetch: Any, condition: Any, timeout: float = 20) -> Any:
    """Ask ``fetch()`` again (each answer is an event) until ``condition`` holds."""

    async def loop() -> Any:
        while True:
            value = await fetch()
            if condition(value):
                return value

    return await asyncio.wait_for(loop(), timeout)
