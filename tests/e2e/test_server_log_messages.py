"""``readmany serve --stdio``'s log reaches the client as ``window/logMessage`` with its
own severity; stderr, which editors show as errors, keeps only failures.

The real server process, spoken to over raw LSP frames (no client library between), so
every notification and every stderr byte is seen.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from tests.helpers import write_tree

SERVER = [sys.executable, "-m", "readmany_daemon", "serve", "--stdio"]


class RawClient:
    """Frames in, frames out; every message the server sends lands in ``messages``."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._next_id = 0
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            length = None
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if line == b"" or length is None:
                return
            self.messages.put(json.loads(stream.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> dict[str, Any]:
        """Send a request; return its response (everything before it is in ``seen``)."""
        self._next_id += 1
        self.send({"id": self._next_id, "method": method, "params": params})
        while True:
            message = self.messages.get(timeout=30)
            self.seen.append(message)
            if message.get("id") == self._next_id and "method" not in message:
                return message

    def logs(self) -> list[tuple[int, str]]:
        return [
            (m["params"]["type"], m["params"]["message"])
            for m in self.seen
            if m.get("method") == "window/logMessage"
        ]


def test_warnings_are_log_messages_with_their_severity_and_stderr_stays_quiet(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "proj"
    write_tree(root, {"a.txt": "alpha\n"})
    client = RawClient(dict(env, READMANY_NO_DAEMON="1", READMANY_LOG_LEVEL="INFO"))
    try:
        client.request(
            "initialize",
            {
                "processId": None,
                "capabilities": {},
                "workspaceFolders": [{"uri": root.as_uri(), "name": "proj"}],
                # A bad setting: the session's own warning (sent once, not twice).
                "initializationOptions": {"maxFileBytes": "huge"},
            },
        )
        client.send({"method": "initialized", "params": {}})
        # A notification with bad params: the connection loop's logger warns.
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": 5}})
        answer = client.request("readMany/read", {"paths": ["a.txt"]})
        assert answer["result"]["files"][0]["path"] == "a.txt"
        client.request("shutdown", None)
        client.send({"method": "exit"})
        _, stderr = client.proc.communicate(timeout=30)
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.communicate()
    assert client.proc.returncode == 0
    logs = client.logs()
    bad_params = [m for m in logs if "textDocument/didOpen: bad params ignored" in m[1]]
    assert [t for t, _ in bad_params] == [2], logs  # Warning, once
    setting = [m for m in logs if "maxFileBytes" in m[1]]
    assert [t for t, _ in setting] == [2], logs  # Warning, once
    assert any(t == 3 and "opened root" in m for t, m in logs), logs  # INFO → Info
    # Nothing below ERROR on stderr (an editor would show it as an error).
    text = stderr.decode()
    assert "WARNING" not in text and "INFO" not in text, text
