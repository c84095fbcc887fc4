"""``readmany mcp``'s front stage end to end (``mcp/front.py``): raw newline-delimited
JSON-RPC over the real process's pipes, as a client writes it.

- Pipelined messages (initialize, initialized, tools/list, tools/call, ping in one write)
  get every answer, initialize and tools/list first, byte for byte what the SDK alone answers
  (``READMANY_MCP_FRONT=0``), for protocol versions the front stage answers and for
  ones it leaves to the SDK.
- ``roots/list`` is still asked by the SDK after the hand-over.
- ``initialize`` and ``tools/list`` are answered while the SDK is held back
  (``READMANY_MCP_SDK_GATE``: the loader waits on a FIFO before importing it).
- The 2026-07-28 era (on an SDK that serves it): ``server/discover`` and ``tools/list``
  with ``_meta`` envelopes, stateless, answered the same ways; ``tools/list`` is the
  same bytes call after call; a legacy-only SDK refuses the probe and takes the
  handshake that follows.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.mcp import front, modern
from tests.helpers import write_tree


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(root, {"a.py": "print('a')\n", "src/b.py": "print('b')\n"})
    return root


def _init(version: str, roots: bool = False) -> dict[str, Any]:
    caps: dict[str, Any] = {"roots": {"listChanged": True}} if roots else {}
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": caps,
            "clientInfo": {"name": "test", "version": "0"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
TOOLS_CALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "read_many_files", "arguments": {"paths": ["a.py", "src/b.py"]}},
}
PING = {"jsonrpc": "2.0", "id": 4, "method": "ping"}


def _envelope(**params: Any) -> dict[str, Any]:
    meta = {
        modern.PROTOCOL_VERSION_KEY: "2026-07-28",
        modern.CLIENT_INFO_KEY: {"name": "test", "version": "0"},
        modern.CLIENT_CAPABILITIES_KEY: {},
    }
    return {**params, "_meta": meta}


DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": _envelope()}
MODERN_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": _envelope()}
MODERN_CALL = {
    "jsonrpc": "2.0",
    "id": 4,
    "method": "tools/call",
    "params": _envelope(name="read_many_files", arguments={"paths": ["a.py", "src/b.py"]}),
}
SERVED = modern.served(front.sdk_major())
needs_modern = pytest.mark.skipif(not SERVED, reason="this mcp SDK serves the legacy era only")


def _start(env: dict[str, str], *args: str, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "readmany_daemon", "mcp", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )


def _send(proc: subprocess.Popen[bytes], *messages: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    proc.stdin.flush()


def _line(proc: subprocess.Popen[bytes]) -> bytes:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the server closed stdout"
    return line


def _finish(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.close()
    err = proc.stderr.read().decode(errors="replace")
    assert proc.wait(60) == 0, err
    proc.stdout.close()
    proc.stderr.close()
    return err


def _pipelined(
    env: dict[str, str], tree: Path, version: str, front: bool, *args: str
) -> list[bytes]:
    env = {**env, "READMANY_MCP_FRONT": "1" if front else "0"}
    proc = _start(env, "--root", str(tree), *args, cwd=tree)
    _send(proc, _init(version), INITIALIZED, TOOLS_LIST, TOOLS_CALL, PING)
    # The clock names the process's index instance: the one part that differs per run.
    lines = [re.sub(rb'"clock":"[^"]*"', b'"clock":""', _line(proc)) for _ in range(4)]
    err = _finish(proc)
    assert "otherwise than the front stage" not in err, err
    return lines


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "1999-01-01"])
def test_pipelined_messages_are_answered_in_order_as_the_sdk_answers(
    env: dict[str, str], tree: Path, version: str
) -> None:
    with_front = _pipelined(env, tree, version, front=True)
    sdk_only = _pipelined(env, tree, version, front=False)
    # initialize, then tools/list; the SDK runs tools/call and ping concurrently, so
    # either may come first (as without the front stage).
    assert [json.loads(line)["id"] for line in with_front[:2]] == [1, 2]
    by_id = {json.loads(line)["id"]: line for line in with_front}
    assert set(by_id) == {1, 2, 3, 4}
    call = json.loads(by_id[3])["result"]
    assert not call["isError"] and "print('b')" in call["content"][0]["text"]
    assert by_id == {json.loads(line)["id"]: line for line in sdk_only}
    assert with_front[:2] == sdk_only[:2]


def test_the_sdk_asks_the_clients_roots_after_the_hand_over(
    env: dict[str, str], tree: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = _start(env, cwd=elsewhere)  # no --root: the client's roots, then the cwd
    listing = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "list_files", "arguments": {}},
    }
    _send(proc, _init("2025-06-18", roots=True), INITIALIZED, listing)
    assert json.loads(_line(proc))["id"] == 1
    ask = json.loads(_line(proc))
    assert ask["method"] == "roots/list"
    _send(proc, {"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": tree.as_uri()}]}})
    answer = json.loads(_line(proc))
    assert answer["id"] == 3
    assert answer["result"]["structuredContent"]["total"] == 2
    _finish(proc)


@pytest.mark.parametrize("era", ["legacy", pytest.param("2026-07-28", marks=needs_modern)])
def test_the_first_answers_come_before_the_sdk_loads(
    env: dict[str, str], tree: Path, tmp_path: Path, era: str
) -> None:
    """``initialize`` and ``tools/list``, or ``server/discover`` and ``tools/list``, are
    answered while the SDK is held back; the tool call after them once it loads."""
    gate = tmp_path / "sdk-gate"
    os.mkfifo(gate)
    proc = _start({**env, "READMANY_MCP_SDK_GATE": str(gate)}, "--root", str(tree), cwd=tree)
    if era == "legacy":
        _send(proc, _init("2025-06-18"), INITIALIZED, TOOLS_LIST, TOOLS_CALL)
        assert json.loads(_line(proc))["result"]["serverInfo"]["name"] == "readmany"
    else:
        _send(proc, DISCOVER, MODERN_LIST, MODERN_CALL)
        assert json.loads(_line(proc))["result"]["supportedVersions"] == ["2026-07-28"]
    assert len(json.loads(_line(proc))["result"]["tools"]) == 3
    # The loader still waits at the gate, before importing the SDK: a FIFO opens for
    # writing without blocking only while a reader holds it (else ENXIO).
    fd = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)  # the loader reads the end of the FIFO: the SDK loads now
    answer = json.loads(_line(proc))
    assert answer["id"] == (TOOLS_CALL if era == "legacy" else MODERN_CALL)["id"]
    assert not answer["result"]["isError"]
    _finish(proc)


def test_structured_text_is_listed_alike_by_the_front_stage_and_the_sdk(
    env: dict[str, str], tree: Path
) -> None:
    """``--structured-text``: the front stage's ``tools/list`` names ``llmContent`` in
    the output schemas, byte for byte as the SDK does, and the call carries it."""
    with_front = _pipelined(env, tree, "2025-06-18", True, "--structured-text")
    sdk_only = _pipelined(env, tree, "2025-06-18", False, "--structured-text")
    assert with_front[:2] == sdk_only[:2]
    tools = json.loads(with_front[1])["result"]["tools"]
    assert all("llmContent" in t["outputSchema"]["properties"] for t in tools)
    by_id = {json.loads(line)["id"]: json.loads(line) for line in with_front}
    call = by_id[3]["result"]
    assert call["structuredContent"]["llmContent"] == call["content"][0]["text"]


def _modern_pipelined(env: dict[str, str], tree: Path, with_front: bool) -> list[bytes]:
    env = {**env, "READMANY_MCP_FRONT": "1" if with_front else "0"}
    proc = _start(env, "--root", str(tree), cwd=tree)
    # The last tools/list comes after the call: the SDK answers it, the front stage the others.
    lists = [{**MODERN_LIST, "id": i} for i in (2, 3, 5)]
    _send(proc, DISCOVER, lists[0], lists[1], MODERN_CALL, lists[2])
    lines = [re.sub(rb'"clock":"[^"]*"', b'"clock":""', _line(proc)) for _ in range(5)]
    err = _finish(proc)
    assert "otherwise than the front stage" not in err, err
    return lines


@needs_modern
def test_2026_requests_are_answered_in_order_as_the_sdk_answers(
    env: dict[str, str], tree: Path
) -> None:
    with_front = _modern_pipelined(env, tree, True)
    sdk_only = _modern_pipelined(env, tree, False)
    assert [json.loads(line)["id"] for line in with_front[:3]] == [1, 2, 3]
    by_id = {json.loads(line)["id"]: line for line in with_front}
    assert by_id == {json.loads(line)["id"]: line for line in sdk_only}
    discover = json.loads(by_id[1])["result"]
    assert discover["supportedVersions"] == ["2026-07-28"]
    listed = [json.loads(by_id[i])["result"] for i in (2, 3)]
    # Byte-identical call to call, with the cache hints the revision asks for.
    assert by_id[2].replace(b'"id":2', b'"id":3', 1) == by_id[3]
    assert by_id[2].replace(b'"id":2', b'"id":5', 1) == by_id[5]
    for result in (discover, listed[0]):
        assert result["ttlMs"] == modern.CACHE_TTL_MS
        assert result["cacheScope"] == modern.CACHE_SCOPE
    call = json.loads(by_id[4])["result"]
    assert not call["isError"] and "print('b')" in call["content"][0]["text"]


def test_the_era_is_the_first_requests_and_a_legacy_only_sdk_refuses_the_probe(
    env: dict[str, str], tree: Path
) -> None:
    """The probe a modern client's ``auto`` mode sends first: answered on an SDK that
    serves 2026-07-28 (the handshake is then refused, -32022 naming the versions);
    refused on a legacy-only SDK, whose handshake then works (the client falls back)."""
    proc = _start(env, "--root", str(tree), cwd=tree)
    _send(proc, DISCOVER)
    probe = json.loads(_line(proc))
    _send(proc, {**_init("2025-06-18"), "id": 2})
    handshake = json.loads(_line(proc))
    if SERVED:
        assert probe["result"]["supportedVersions"] == ["2026-07-28"]
        assert handshake["error"]["code"] == -32022
    else:
        assert "error" in probe
        assert handshake["result"]["protocolVersion"] == "2025-06-18"
    _finish(proc)


@pytest.mark.parametrize("held", [False, True], ids=["sdk-loaded", "sdk-held-back"])
def test_lines_the_sdk_would_drop_get_an_error_and_the_server_goes_on(
    env: dict[str, str], tree: Path, tmp_path: Path, held: bool
) -> None:
    """The SDK's transport drops a line it cannot validate (not JSON, a batch, a lone
    surrogate) and the client would wait for ever: each request gets its JSON-RPC error
    (``mcp/screen.py``), also when it was kept by the front stage, and the next call is
    served."""
    extra = {}
    if held:
        gate = tmp_path / "sdk-gate"
        os.mkfifo(gate)
        extra = {"READMANY_MCP_SDK_GATE": str(gate)}
    proc = _start({**env, **extra}, "--root", str(tree), cwd=tree)
    assert proc.stdin is not None
    bad_call = json.dumps({**TOOLS_CALL, "id": 11}).replace('"a.py"', '"a.py\\ud800"')
    _send(proc, _init("2025-06-18"), INITIALIZED)
    proc.stdin.write(f"{bad_call}\nnot json\n[1]\n".encode())
    _send(proc, TOOLS_CALL)
    assert json.loads(_line(proc))["id"] == 1
    if held:
        os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))  # the SDK loads now
    answers = [json.loads(_line(proc)) for _ in range(4)]
    assert answers[:3] == [
        {
            "jsonrpc": "2.0",
            "id": 11,
            "error": {
                "code": -32602,
                "message": "Invalid params: a lone surrogate at "
                "`$.params.arguments.paths[0]`; the server reads only text UTF-8 can carry",
                "data": {"field": "$.params.arguments.paths[0]"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32700,
                "message": "Parse error: the line is not JSON "
                "(Expecting value: line 1 column 1 (char 0))",
            },
        },
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "Invalid Request: the message is an array (batches are not supported)",
            },
        },
    ]
    assert answers[3]["id"] == 3 and not answers[3]["result"]["isError"]
    err = _finish(proc)
    assert err.count("refused a line of stdin") == 3, err
