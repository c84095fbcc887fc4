"""``readmany serve --stdio`` with a stdin the event loop cannot poll (``/dev/null``, a
regular file): read another way, it ends at its end of file, promptly and without a
traceback (issue 22 follow-up). The real process, its real stdin and stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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
