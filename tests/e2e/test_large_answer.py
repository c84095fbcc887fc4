"""Answers of several MiB over the real daemon's unix socket (``serve --socket``).

A large ``readMany/read`` answer is encoded in chunks, cached files' texts in the JSON
form the content cache keeps with them, and sent with ``sendmsg`` from a worker thread.
Here, end to end:

- such an answer arrives whole and byte for byte the files, twice in a row (the second
  time every file comes from the cache and its kept JSON form); a ``readMany/status``
  sent while it is on the wire is answered after it, not inside it;
- a client that hangs up while more of its answer is still to come (more than the
  socket can buffer: the daemon asks for a 4 MiB send buffer, 8 MiB in the kernel's
  accounting) does not take the daemon down nor leave a descriptor behind, and the next
  client is answered.

Waits are on answers, or deadline-bounded polls of ``/proc`` (``wait_for``); no sleeps.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readmany_daemon.client import Client
from readmany_daemon.content import cache as cache_mod
from readmany_daemon.engine import budget as budget_mod
from readmany_daemon.engine import redact as redact_mod
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.e2e.daemon_helpers import Daemon, fresh_daemon, wait_for
from tests.helpers import answer

daemon = fresh_daemon  # the fixture (tests/e2e/daemon_helpers.py)

MiB = 1 << 20

BIG_READ = {
    "paths": ["**/*.txt"],
    "preferFullRead": True,
    "maxTotalFiles": 10_000,
    "maxTotalChars": 10**9,
}

#: More than a unix socket of the daemon can hold unread (see the module docstring).
BEYOND_SOCKET_BUFFER = 9 * MiB


def make_tree(root: Path, files: int, file_bytes: int) -> dict[str, str]:
    """``files`` distinct text files of about ``file_bytes`` bytes in 8 folders, with
    characters JSON escapes (quote, backslash, tab, U+2028) and non-ASCII ones, dated
    an hour back so the cache takes them (not racy)."""
    texts: dict[str, str] = {}
    past = time.time() - 3600
    for i in range(files):
        line = f'file {i:02} "quoted" \\ back\tslash café 😀 \u2028 end\n'
        rel = f"d{i % 8}/sub/f{i:02}.txt"
        texts[rel] = line * (file_bytes // len(line.encode()))
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(texts[rel].encode())
        os.utime(path, (past, past))
    return texts


def in_process(root: Path, params: dict[str, Any]) -> str:
    """``llmContent`` of the same read answered in this process, without a cache."""
    return answer(Workspace.open(str(root), Settings()), decode_read_params(params)).llm_content


def answer_begun(client: Client, at_least: int) -> int:
    """Read until the header of a message of at least ``at_least`` bytes is in, and
    return its length (the daemon has begun to write it; its body stays unread except
    for what came along). Smaller messages before it (notifications) are consumed."""
    while True:
        end = client._buf.find(b"\r\n\r\n")
        if end >= 0:
            length = int(bytes(client._buf[:end]).split(b":", 1)[1])
            if length >= at_least:
                return length
            message = client.receive()
            assert "id" not in message or "method" in message, message
            continue
        client._fill()


def next_answer(client: Client) -> dict[str, Any]:
    """The next response on ``client`` (notifications skipped)."""
    while True:
        message = client.receive()
        if "method" not in message:
            return message


def sections(llm_content: str, texts: dict[str, str]) -> dict[str, bytes]:
    """The UTF-8 bytes shown for each of ``texts``' files in ``llm_content``."""
    shown: dict[str, bytes] = {}
    for rel, text in texts.items():
        start = llm_content.index(f"--- {rel} ---\n") + len(f"--- {rel} ---\n")
        shown[rel] = llm_content[start : start + len(text)].encode()
        assert llm_content[start + len(text)] == "\n"
    return shown


def held(pid: int, root: Path) -> tuple[int, list[str]]:
    """How many sockets process ``pid`` holds open, and which paths below ``root`` (a
    request's folder descriptors must all be closed once it is answered)."""
    sockets, below = 0, []
    top = os.path.realpath(root)
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed while listed
        if target.startswith("socket:"):
            sockets += 1
        elif target == top or target.startswith(top + "/"):
            below.append(target)
    return sockets, below


def stderr_until_exit(d: Daemon) -> str:
    """Stop the daemon and return all it wrote to stderr (the pump's end is awaited)."""
    d.stop()
    while d.lines.get(timeout=10) is not None:
        pass
    return "".join(d.stderr)


# ------------------------------------------------------------------------------- tests


def test_a_several_mib_answer_arrives_whole_twice_then_a_status_in_order(
    daemon: Daemon, tmp_path: Path
) -> None:
    root = tmp_path / "big"
    texts = make_tree(root, files=40, file_bytes=256 * 1024)
    expected = in_process(root, BIG_READ)
    assert len(expected.encode()) > 8 * MiB
    expected_cache_bytes = sum(
        # a fresh str each, plus the UTF-8 copy msgspec leaves on a non-ASCII one
        sys.getsizeof(t.encode().decode())
        + (0 if t.isascii() else len(t.encode()) + 1)
        + cache_mod._ENTRY_OVERHEAD
        + len(msgspec.json.encode(t))
        - 2
        # its (empty) redaction scan, kept with it
        + redact_mod._size(redact_mod.redact(t))
        for t in texts.values()
    )
    counts_kept = 0
    daemon.start()
    client = daemon.session(root)
    try:
        assert client.request("readMany/status")["cache"]["bytes"] == 0
        for turn in range(2):
            read_id, status_id = 100 + 2 * turn, 101 + 2 * turn
            client.send(
                {"jsonrpc": "2.0", "id": read_id, "method": "readMany/read", "params": BIG_READ}
            )
            answer_begun(client, BEYOND_SOCKET_BUFFER)
            # The big answer is on the wire (more of it than the socket holds): a small
            # answer must queue behind it, not land inside it.
            client.send({"jsonrpc": "2.0", "id": status_id, "method": "readMany/status"})
            big, small = next_answer(client), next_answer(client)
            assert (big["id"], small["id"]) == (read_id, status_id)
            result = big["result"]
            assert result["llmContent"] == expected
            for rel, shown in sections(result["llmContent"], texts).items():
                assert shown == (root / rel).read_bytes(), rel
            files = result["files"]
            assert sorted(f["path"] for f in files) == sorted(texts)
            assert {f["status"] for f in files} == {"ok"}
            sources = {f.get("source", "disk") for f in files}
            if turn == 1:
                assert sources == {"cache"}
            # Every file is cached with its JSON form, charged once: the cache holds
            # exactly its texts, their JSON forms, redaction scans and the per-entry
            # overhead, and the token counts made: an answer this large counts its first
            # 2,000,000 characters (engine.answer.EXACT_COUNT_CHARS) and estimates the
            # rest, so each read keeps a few more files' counts, never one twice.
            cache = small["result"]["cache"]
            counts = cache["bytes"] - expected_cache_bytes
            assert counts % budget_mod._COUNT_BYTES == 0, (turn, cache)
            assert counts_kept < counts <= len(texts) * budget_mod._COUNT_BYTES, (turn, cache)
            counts_kept = counts
            assert small["result"]["connections"] == 1
        assert client._buf == b""
        # and the connection goes on as usual
        window = {"files": [{"path": "d0/sub/f00.txt", "offset": 2, "limit": 1}]}
        small_read = client.request("readMany/read", window)
        assert [(f["status"], f["lineStart"]) for f in small_read["files"]] == [("ok", 2)]
        assert texts["d0/sub/f00.txt"].splitlines(keepends=True)[1] in small_read["llmContent"]
    finally:
        client.close()
    assert daemon.proc is not None and daemon.proc.poll() is None
    assert "Traceback" not in stderr_until_exit(daemon)


def test_a_client_hanging_up_mid_answer_leaves_the_daemon_serving(
    daemon: Daemon, tmp_path: Path
) -> None:
    root = tmp_path / "big"
    texts = make_tree(root, files=40, file_bytes=256 * 1024)
    daemon.start()
    observer = daemon.session(root)
    try:
        warm = observer.request("readMany/read", BIG_READ)  # root open, files cached
        assert len(warm["files"]) == 40 and {f["status"] for f in warm["files"]} == {"ok"}
        baseline = held(daemon.pid, root)
        assert baseline[1] == []

        for how in ("close", "reset", "close"):
            quitter = daemon.session(root)
            quitter.send({"jsonrpc": "2.0", "id": 9, "method": "readMany/read", "params": BIG_READ})
            length = answer_begun(quitter, BEYOND_SOCKET_BUFFER)
            assert len(quitter._buf) < length  # most of it still to come
            if how == "reset":  # SO_LINGER 0: the close sends a reset
                quitter._sock.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
            quitter.close()

            def settled() -> bool:
                status = observer.request("readMany/status")
                return status["connections"] == 1 and held(daemon.pid, root) == baseline

            wait_for(settled, 15)  # its socket and the sender's duplicate are closed
            assert daemon.proc is not None and daemon.proc.poll() is None

        # the one that stayed, and a new one, get the whole large answer
        again = observer.request("readMany/read", BIG_READ)
        assert again["llmContent"] == warm["llmContent"]
        with daemon.session(root) as newcomer:
            got = newcomer.request("readMany/read", BIG_READ)
            assert got["llmContent"] == warm["llmContent"]
            for rel, shown in sections(got["llmContent"], texts).items():
                assert shown == (root / rel).read_bytes(), rel
            assert newcomer.request("readMany/status")["connections"] == 2
    finally:
        observer.close()
    assert daemon.proc is not None and daemon.proc.poll() is None
    assert "Traceback" not in stderr_until_exit(daemon)


def test_clients_that_stop_reading_do_not_stall_another_clients_large_answer(
    daemon: Daemon, tmp_path: Path
) -> None:
    root = tmp_path / "big"
    make_tree(root, files=40, file_bytes=256 * 1024)
    daemon.start()
    stalled: list[Client] = []
    reader = daemon.session(root)
    try:
        expected = reader.request("readMany/read", BIG_READ)["llmContent"]  # cached now
        for _ in range(min(32, (os.cpu_count() or 1) + 4)):  # the default executor's size
            c = daemon.session(root)
            c.send({"jsonrpc": "2.0", "id": 5, "method": "readMany/read", "params": BIG_READ})
            answer_begun(c, BEYOND_SOCKET_BUFFER)  # begun, then never read further
            stalled.append(c)
        reader.settimeout(1.0)  # an idle daemon sends this answer in ~0.1 s
        try:
            got = reader.request("readMany/read", BIG_READ)
        except TimeoutError:
            pytest.fail("a large answer waited behind clients that do not read")
        assert got["llmContent"] == expected
    finally:
        reader.close()
        for c in stalled:
            c.close()
