"""``bridge.ShutdownSeen``: the frames ``readmany lsp`` passes on, watched for a
``shutdown`` request (its exit status, LSP §"exit"), whatever the pieces they arrive in."""

from __future__ import annotations

import json

import pytest

from readmany_daemon.bridge import ShutdownSeen


def frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


OPEN = frame(
    {
        "jsonrpc": "2.0",
        "method": "textDocument/didOpen",
        # "shutdown" in a big body (a file's text) is no request
        "params": {"textDocument": {"uri": "file:///w/a.py", "text": '"shutdown"\n' * 3000}},
    }
)
READ = frame(
    {"jsonrpc": "2.0", "id": 2, "method": "readMany/read", "params": {"paths": ["shutdown"]}}
)
SHUTDOWN = frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
NOTIFY = frame({"jsonrpc": "2.0", "method": "shutdown"})  # not a request


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_a_shutdown_request_is_seen_in_any_pieces(piece: int) -> None:
    for stream, seen in ((OPEN + READ + NOTIFY, False), (OPEN + READ + SHUTDOWN, True)):
        watch = ShutdownSeen()
        for at in range(0, len(stream), piece):
            watch.feed(stream[at : at + piece])
        assert watch.seen is seen


def test_lost_framing_ends_the_watch() -> None:
    watch = ShutdownSeen()
    watch.feed(b"Content-Length: nope\r\n\r\n" + SHUTDOWN)
    assert watch.seen is False
