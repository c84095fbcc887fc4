"""The one-shot path through the warm daemon (issue 16 items 1 and 4), end to end.

- ``readmany read`` answered by the daemon loads only the light modules (no ``typing``,
  ``dataclasses``, ``shutil``, ``msgspec``, pygls, watchdog) and asks in one round trip
  (``initialize``, ``initialized`` and the request pipelined);
- a connection that asks for content frames (``initializationOptions.llmContentFrames``,
  PROTOCOL §1) gets ``llmContent`` as raw UTF-8 in a frame before the response, byte for
  byte the text the JSON answer carries; every other client gets the usual answer;
- ``readmany read`` prints a content frame while it arrives; a daemon lost in the middle
  of one ends the call with an error, not with a second answer from the CLI's process;
- large bodies decode (``client.decode_body``, msgspec) to what ``json.loads`` gives.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon import __version__
from readmany_daemon.client import (
    Client,
    ConnectionClosed,
    RpcError,
    connect_pipelined,
)
from readmany_daemon.frames import CONTENT_FRAME_TYPE
from tests.e2e.daemon_helpers import Daemon, cli, fresh_daemon

daemon = fresh_daemon  # the fixture (tests/e2e/daemon_helpers.py)

REPO = Path(__file__).resolve().parents[2]

#: Modules a warm one-shot ``readmany read`` must not load (each costs its budget
#: milliseconds: typing ~2, dataclasses ~5, shutil ~3, msgspec ~20, pygls ~400; argparse
#: and json ~4 with what they import: re, enum, functools, collections, gettext, locale;
#: contextlib pulls collections and functools).
HEAVY = (
    "typing", "dataclasses", "inspect", "shutil", "msgspec", "pygls", "watchdog",
    "argparse", "json", "re", "enum", "functools", "collections", "contextlib", "gettext",
    "locale",
)  # fmt: skip

#: Text with what JSON escapes (quotes, backslashes, tabs, control characters), non-ASCII
#: and astral characters, and a line without its newline.
TRICKY = 'quote " back \\ tab \t bell \x07 é ü 漢字 🎉\r\nlast line'


def _tree(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.py").write_text("print('a')\n", encoding="utf-8")
    (root / "tricky.txt").write_text(TRICKY, encoding="utf-8")
    (root / "big.txt").write_text("line é\n" * 200_000, encoding="utf-8")  # ~1.4 MB


@pytest.mark.parametrize(
    "flags",
    [
        (),
        ("--json",),
        ("--line-numbers", "--max-total-chars", "100000", "--no-gitignore"),
        ("--params", '{"max_total_chars": 100000, "file_filtering_options": {}}'),
    ],
)
def test_warm_read_loads_only_light_modules(
    daemon: Daemon, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """``python -S``: the interpreter alone loads none of the modules checked, so each
    one found was loaded by the read (site's own imports would hide ``re``)."""
    root = tmp_path / "ws"
    _tree(root)
    daemon.start()
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from readmany_daemon import cli\n"
        "asked = []\n"
        "def ask(*a, **k):\n"
        "    asked.append(cli.ask_daemon.__wrapped__(*a, **k))\n"
        "    return asked[-1]\n"
        "ask.__wrapped__ = cli.ask_daemon\n"
        "cli.ask_daemon = ask\n"
        f"rc = cli.main(['read', '--root', {str(root)!r}, 'a.py', *{flags!r}])\n"
        "by_daemon = asked[0].answer is not None\n"
        "framed = asked[0].answer is not None and asked[0].answer.get('llmContent') == ''\n"
        "tops = sorted({m.partition('.')[0] for m in set(sys.modules) - before})\n"
        "import json\n"
        "print(json.dumps([rc, by_daemon, framed, tops]), file=sys.stderr)\n"
    )
    env = dict(daemon.env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "print('a')" in proc.stdout
    rc, by_daemon, framed, tops = json.loads(proc.stderr.strip().splitlines()[-1])
    assert rc == 0
    assert by_daemon  # answered by the daemon
    assert framed == ("--json" not in flags)  # the text in a content frame
    assert "readmany_daemon" in tops  # the snapshot was taken before the read
    assert [m for m in HEAVY if m in tops] == []
    if "--json" in flags:
        assert json.loads(proc.stdout)["files"][0]["path"] == "a.py"


def test_content_frames_carry_the_same_text(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _tree(root)
    daemon.start()
    params = {"paths": ["**"], "preferFullRead": True, "maxTotalChars": 10**9}
    plain = daemon.session(root)
    framed = daemon.session(root, {"llmContentFrames": True})
    try:
        usual = plain.request("readMany/read", params)
        assert plain.take_content() is None  # a client that did not ask: the usual answer
        answer = framed.request("readMany/read", params)
        content = framed.take_content()
        assert content is not None
        assert answer["llmContent"] == ""
        assert bytes(content) == usual["llmContent"].encode("utf-8")
        assert TRICKY.encode("utf-8") in content

        # The same answer but llmContent; a file's ``source`` says where this read took
        # it from (the first read may find a file too fresh to cache: disk, then cache).
        def rest(result: dict[str, Any]) -> dict[str, Any]:
            files = [{k: v for k, v in f.items() if k != "source"} for f in result["files"]]
            return {**{k: v for k, v in result.items() if k != "llmContent"}, "files": files}

        assert rest(answer) == rest(usual)
        # Other methods on a framed connection are plain JSON-RPC.
        status = framed.request("readMany/status")
        assert framed.take_content() is None and status["connections"] >= 2
    finally:
        plain.exit()
        framed.exit()


def test_pipelined_handshake_answers_like_a_full_one(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _tree(root)
    daemon.start()
    opened = connect_pipelined(
        daemon.socket, str(root), {"environment": {}}, "readMany/read", {"paths": ["a.py"]}
    )
    assert opened is not None
    client, pending = opened
    try:
        assert client.server_version is not None
        answer = client.wait(pending)
        assert answer["files"][0]["path"] == "a.py"
        assert "print('a')" in answer["llmContent"]
    finally:
        client.exit()
    # A conforming client (initialize, wait, initialized, request) is served as before.
    with daemon.session(root) as normal:
        assert (
            normal.request("readMany/read", {"paths": ["a.py"]})["llmContent"]
            == answer["llmContent"]
        )


def test_cli_prints_framed_and_in_process_answers_alike(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _tree(root)
    args = ("read", "--root", str(root), "**", "--prefer-full-read", "--max-total-chars", "9999999")
    local = cli(daemon.env, *args, "--no-daemon")
    daemon.start()
    warm = cli(daemon.env, *args)
    assert warm.returncode == local.returncode == 0
    assert warm.stdout == local.stdout
    assert "bell \x07 é ü 漢字 🎉" in warm.stdout


def test_a_client_decodes_large_bodies_as_json_does() -> None:
    from readmany_daemon.client import MSGSPEC_BODY_BYTES, decode_body

    big = {"llmContent": TRICKY * (MSGSPEC_BODY_BYTES // len(TRICKY) + 1), "n": [1, 2.5, None]}
    body = json.dumps(big, ensure_ascii=False).encode("utf-8")
    assert len(body) >= MSGSPEC_BODY_BYTES
    assert decode_body(body) == json.loads(body) == big
    assert decode_body(bytearray(body)) == big
    # A lone surrogate (an undecodable file name) is refused by msgspec: json.loads keeps it.
    lone = b'{"p":"\\udc80' + b"x" * MSGSPEC_BODY_BYTES + b'"}'
    assert decode_body(lone) == json.loads(lone)


def test_a_session_decodes_mid_sized_bodies_with_msgspec_the_same() -> None:
    from readmany_daemon.client import SESSION_MSGSPEC_BODY_BYTES, decode_body

    mid = {"llmContent": TRICKY * (SESSION_MSGSPEC_BODY_BYTES // len(TRICKY) + 1), "n": [1]}
    body = json.dumps(mid, ensure_ascii=False).encode("utf-8")
    assert SESSION_MSGSPEC_BODY_BYTES <= len(body) < (4 << 20)
    assert decode_body(body, SESSION_MSGSPEC_BODY_BYTES) == json.loads(body) == mid
    lone = b'{"p":"\\udc80' + b"x" * SESSION_MSGSPEC_BODY_BYTES + b'"}'
    assert decode_body(lone, SESSION_MSGSPEC_BODY_BYTES) == json.loads(lone)


def _frame(body: bytes, kind: bytes | None = None) -> bytes:
    head = b"Content-Length: %d\r\n" % len(body)
    if kind is not None:
        head += b"Content-Type: " + kind + b"\r\n"
    return head + b"\r\n" + body


class _Sink:
    def __init__(self) -> None:
        self.lengths: list[int] = []
        self.got: list[bytes] = []

    def start(self, length: int) -> None:
        self.lengths.append(length)

    def write(self, chunk: memoryview) -> None:
        self.got.append(bytes(chunk))


def test_a_content_frame_is_relayed_as_it_arrives() -> None:
    """With ``content_sink``, the frame goes to the sink piece by piece, the response
    after it is decoded as usual, and nothing is kept for ``take_content``."""
    ours, theirs = socket.socketpair()
    client = Client(ours)
    sink = _Sink()
    client.content_sink = sink
    got = sink.got
    text = TRICKY.encode("utf-8") * 50_000  # ~2.5 MB: several receives
    response = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"llmContent": ""}}).encode()
    sender = threading.Thread(
        target=theirs.sendall, args=(_frame(text, CONTENT_FRAME_TYPE) + _frame(response),)
    )
    sender.start()
    try:
        assert client.receive()["result"] == {"llmContent": ""}
        assert b"".join(got) == text and sink.lengths == [len(text)]
        assert len(got) > 2 and client.relayed == len(text)
        assert client.take_content() is None
    finally:
        sender.join()
        client.close()
        theirs.close()


def test_a_connection_lost_mid_frame_says_so() -> None:
    ours, theirs = socket.socketpair()
    client = Client(ours)
    sink = _Sink()
    client.content_sink = sink
    got = sink.got
    theirs.sendall(b"Content-Length: 1000\r\nContent-Type: " + CONTENT_FRAME_TYPE + b"\r\n\r\n")
    theirs.sendall(b"x" * 300)
    theirs.close()
    with pytest.raises(ConnectionClosed):
        client.receive()
    assert b"".join(got) == b"x" * 300 and client.relayed == 300
    client.close()


def _dying_daemon(path: str, ready: threading.Event) -> None:
    """Answer ``initialize`` as this version's daemon would, then send part of a content
    frame and close: a daemon killed in the middle of an answer."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    ready.set()
    conn, _ = server.accept()
    with conn, server:
        data = b""
        while b'"readMany/read"' not in data:
            data += conn.recv(65536)
        init = {"jsonrpc": "2.0", "id": 1,
                "result": {"capabilities": {}, "serverInfo": {"name": "readmany",
                                                              "version": __version__}}}  # fmt: skip
        conn.sendall(_frame(json.dumps(init).encode()))
        conn.sendall(b"Content-Length: 100000\r\nContent-Type: " + CONTENT_FRAME_TYPE)
        conn.sendall(b"\r\n\r\n--- a.py ---\nprint('partial")


def test_cli_stops_with_an_error_when_the_daemon_dies_mid_answer(
    daemon: Daemon, tmp_path: Path
) -> None:
    """What was printed cannot be taken back: no in-process answer after it, exit 1."""
    root = tmp_path / "ws"
    _tree(root)
    ready = threading.Event()
    fake = threading.Thread(target=_dying_daemon, args=(daemon.socket, ready), daemon=True)
    fake.start()
    assert ready.wait(10)
    out = cli(daemon.env, "read", "--root", str(root), "a.py")
    fake.join(10)
    assert out.returncode == 1, out
    assert out.stdout == "--- a.py ---\nprint('partial"
    assert "in the middle of the answer" in out.stderr
    assert "End of content" not in out.stdout


def test_a_name_that_is_not_utf8_is_read_through_the_daemon(daemon: Daemon, tmp_path: Path) -> None:
    """A lone surrogate (a non-UTF-8 byte kept by surrogateescape) travels as JSON's
    ``\\udcXX`` escape: the daemon answers as this process would, and never hangs."""
    root = tmp_path / "ws"
    _tree(root)
    name = os.fsdecode(b"caf\xe9.md")
    (root / name).write_text("latin-1 name\n", encoding="utf-8")
    args = ("read", "--root", str(root), name)
    local = cli(daemon.env, *args, "--no-daemon")
    daemon.start()
    warm = cli(daemon.env, *args, timeout=30)
    assert warm.returncode == local.returncode == 0, warm.stderr
    assert warm.stdout == local.stdout and "latin-1 name" in warm.stdout
    bad = cli(daemon.env, "read", "--root", str(root), "--params", '{"paths": ["\\ud800"]}')
    assert bad.returncode == 2 and "lone surrogate" in bad.stderr, bad


def test_an_error_for_a_message_it_could_not_read_ends_the_wait() -> None:
    """JSON-RPC 2.0 §5: a server that cannot read a request answers with id null; the
    client waiting for that request raises instead of waiting for ever."""
    ours, theirs = socket.socketpair()
    client = Client(ours)
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    theirs.sendall(_frame(json.dumps(error).encode()))
    try:
        with pytest.raises(RpcError) as caught:
            client.wait(client.send_request("readMany/status"))
        assert caught.value.code == -32700
    finally:
        client.close()
        theirs.close()
