"""``readmany serve --stdio`` with a stdin the event loop cannot poll (``/dev/null``, a
regular file): read another way, it ends at its end of file, promptly and without a
traceback (issue 22 follow-up). The real process, its real stdin and stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import make_env, write_tree

SERVER = [sys.executable, "-m", "readmany_daemon", "serve", "--stdio"]
#: a guard against the hang this file pins, not a wait: the process ends on its own
GUARD = 60


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def frames(data: bytes) -> list[dict[str, Any]]:
    """The JSON bodies of the LSP frames in ``data``, in order."""
    out: list[dict[str, Any]] = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, data[:200]
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


def no_traceback(stderr: str) -> None:
    for needle in ("Traceback", "Exception in callback", "PermissionError"):
        assert needle not in stderr, stderr


def test_stdin_from_dev_null_ends_promptly(tmp_path: Path) -> None:
    env = make_env(tmp_path / "home")
    run = subprocess.run(
        SERVER,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=GUARD,
    )
    no_traceback(run.stderr)
    # The end of input without `shutdown`: LSP §"exit" says 1, as for an empty pipe.
    assert run.returncode == 1, run.stderr
    assert run.stdout == ""


def test_stdin_from_a_regular_file_is_answered(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_tree(ws, {"a.txt": "hello\n"})
    exchange = tmp_path / "exchange.lsp"
    exchange.write_bytes(
        frame(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": ws.as_uri(), "capabilities": {}},
            }
        )
        + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        + frame({"jsonrpc": "2.0", "method": "exit"})
    )
    env = make_env(tmp_path / "home")
    with exchange.open("rb") as stdin:
        run = subprocess.run(
            SERVER, stdin=stdin, capture_output=True, env=env, cwd=tmp_path, timeout=GUARD
        )
    stderr = run.stderr.decode(errors="replace")
    no_traceback(stderr)
    assert run.returncode == 0, stderr
    answers = {m["id"]: m for m in frames(run.stdout) if "id" in m}
    assert "capabilities" in answers[1]["result"], answers
    assert answers[2]["result"] is None, answers


def _exchange(ws: Path, *tail: dict[str, Any]) -> bytes:
    """initialize, initialized, two reads (ids 2 and 3), then ``tail``: framed."""
    head = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": ws.as_uri(), "capabilities": {}},
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "readMany/read", "params": {"paths": ["a.txt"]}},
        {"jsonrpc": "2.0", "id": 3, "method": "readMany/read", "params": {"paths": ["**"]}},
    ]
    return b"".join(frame(m) for m in [*head, *tail])


@pytest.mark.parametrize("stdin_kind", ["pipe", "file"])
@pytest.mark.parametrize("ending", ["shutdown-exit", "end-of-input"])
def test_requests_sent_before_the_end_are_answered_first(
    tmp_path: Path, stdin_kind: str, ending: str
) -> None:
    """A client that writes its requests, ``shutdown`` and ``exit`` at once (or closes
    its stdin after them) gets every answer, ``shutdown``'s after the earlier ones: the
    messages of a connection are handled in order (PROTOCOL §1). pygls cancelled the
    reads at ``shutdown`` and ``exit`` closed the connection before they ended: only
    the answers to ``initialize`` and ``shutdown`` came."""
    ws = tmp_path / "ws"
    write_tree(ws, {"a.txt": "hello\n", **{f"d/f{n}.txt": f"line {n}\n" * 50 for n in range(300)}})
    tail = (
        [{"jsonrpc": "2.0", "id": 4, "method": "shutdown"}, {"jsonrpc": "2.0", "method": "exit"}]
        if ending == "shutdown-exit"
        else []
    )
    data = _exchange(ws, *tail)
    env = make_env(tmp_path / "home")
    if stdin_kind == "pipe":
        run = subprocess.run(
            SERVER, input=data, capture_output=True, env=env, cwd=tmp_path, timeout=GUARD
        )
    else:
        exchange = tmp_path / "exchange.lsp"
        exchange.write_bytes(data)
        with exchange.open("rb") as stdin:
            run = subprocess.run(
                SERVER, stdin=stdin, capture_output=True, env=env, cwd=tmp_path, timeout=GUARD
            )
    stderr = run.stderr.decode(errors="replace")
    no_traceback(stderr)
    answered = [m["id"] for m in frames(run.stdout) if "id" in m]
    if ending == "shutdown-exit":
        assert run.returncode == 0, stderr
        assert sorted(answered[1:3]) == [2, 3] and answered[3:] == [4], answered
    else:
        assert run.returncode == 1, stderr  # no `shutdown` (LSP §"exit")
        assert sorted(answered[1:]) == [2, 3], answered
    results = {m["id"]: m.get("result") for m in frames(run.stdout) if "id" in m}
    assert results[2]["summary"]["read"] == 1 and results[3]["summary"]["matched"] == 301
