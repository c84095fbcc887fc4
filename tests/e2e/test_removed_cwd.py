"""Run from a folder that was removed (issue 22, item 6): an agent's shell left in a
deleted worktree. With an absolute ``--root`` every command works; without one, the
command that needs the current directory says so in one line and exits 2. Each run is
the real process, started by a shell that enters a folder and removes it first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import write_tree

#: ``sh -c`` enters $1, removes it, then runs the rest: the process starts in a removed
#: current directory, as a shell whose folder was deleted under it.
IN_REMOVED = 'cd "$1" && rmdir "$1" && shift && exec "$@"'


def run_in_removed(
    tmp_path: Path, env: dict[str, str], *argv: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.run(
        ["sh", "-c", IN_REMOVED, "sh", str(gone), *argv],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not gone.exists()
    return proc


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(root, {"README.rst": "hello\n", "src/a.py": "print('a')\n"})
    return root


READMANY = [sys.executable, "-m", "readmany_daemon"]


@pytest.mark.parametrize("no_daemon", [True, False], ids=["no-daemon", "daemon-route"])
def test_read_with_absolute_root_works(
    tmp_path: Path, env: dict[str, str], tree: Path, no_daemon: bool
) -> None:
    flags = ["--no-daemon"] if no_daemon else []
    proc = run_in_removed(
        tmp_path, env, *READMANY, "read", *flags, "--json", "--root", str(tree), "README.rst"
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    result = json.loads(proc.stdout)
    assert [(f["path"], f["status"]) for f in result["files"]] == [("README.rst", "ok")]


@pytest.mark.parametrize("no_daemon", [True, False], ids=["no-daemon", "daemon-route"])
def test_files_with_absolute_root_works(
    tmp_path: Path, env: dict[str, str], tree: Path, no_daemon: bool
) -> None:
    flags = ["--no-daemon"] if no_daemon else []
    proc = run_in_removed(tmp_path, env, *READMANY, "files", *flags, "--root", str(tree))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["README.rst", "src/a.py"]


@pytest.mark.parametrize(
    "args",
    [
        ["read", "README.rst"],
        ["read", "--no-daemon", "README.rst"],
        ["read", "--root", "ws", "README.rst"],
        ["files"],
        ["files", "--no-daemon"],
        ["mcp"],
        ["mcp", "--no-daemon"],
    ],
    ids=lambda a: " ".join(a),
)
def test_without_root_one_line_and_exit_2(
    tmp_path: Path, env: dict[str, str], args: list[str]
) -> None:
    proc = run_in_removed(tmp_path, env, *READMANY, *args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("readmany: ") and "current directory" in lines[0]


def test_mcp_with_absolute_root_reads(tmp_path: Path, env: dict[str, str], tree: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    mcp = [*READMANY, "mcp", "--no-daemon", "--root", str(tree)]
    proc = subprocess.Popen(
        ["sh", "-c", IN_REMOVED, "sh", str(gone), *mcp],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    }
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "read_many_files", "arguments": {"paths": ["README.rst"]}},
        },
    ):
        proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    answers: dict[int, Any] = {}
    while 2 not in answers:
        line = proc.stdout.readline()
        assert line, "the server closed stdout"
        message = json.loads(line)
        if "id" in message:
            answers[message["id"]] = message
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    call = answers[2]["result"]
    assert not call.get("isError"), call
    assert "hello" in json.dumps(call["content"])


def test_mcp_whose_folder_is_removed_later_says_so(tmp_path: Path, env: dict[str, str]) -> None:
    """Started without ``--root`` in a folder removed afterwards: a tool call fails with
    the reason (no traceback), and the server goes on."""
    ws = tmp_path / "ws"
    write_tree(ws, {"a.txt": "a\n"})
    proc = subprocess.Popen(
        [*READMANY, "mcp", "--no-daemon"],
        env=env,
        cwd=ws,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def answer(wanted: int) -> dict[str, Any]:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            assert line, "the server closed stdout"
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == wanted:
                return message

    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    }
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    (ws / "a.txt").unlink()
    ws.rmdir()
    call = {"name": "read_many_files", "arguments": {"paths": ["a.txt"]}}
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    result = answer(2)["result"]
    assert result.get("isError") is True, result
    assert "current directory" in json.dumps(result["content"])
    send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert "result" in answer(3)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
