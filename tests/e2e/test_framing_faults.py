"""JSON-RPC framing faults against the real shared daemon (``serve --socket``).

Raw socket clients send what a broken or hostile client might: garbage, frames without
or with a wrong ``Content-Length``, a 100 MB frame, bodies that are not UTF-8 or not
JSON, JSON that is not a message, unknown methods, params of the wrong type, and 5,000
pipelined requests. Each gets the error response ``server.read_frame``/``dispatch``
document (JSON-RPC 2.0 §5.1 codes) and, where the framing is lost, a closed connection;
meanwhile a *witness* client, connected for the whole module, keeps getting correct
``readMany/read`` answers and the daemon process stays alive.

Waits are socket reads with timeouts (``Client.receive`` on a socket with a timeout),
never sleeps.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.client import Client, ConnectionClosed, RpcError
from readmany_daemon.lsp.framing import MAX_MESSAGE_BYTES
from tests.e2e.daemon_helpers import Daemon, wait_for
from tests.helpers import make_env

TIMEOUT = 30.0


class Setup:
    def __init__(self, daemon: Daemon, root: Path, witness: Client) -> None:
        self.daemon = daemon
        self.root = root
        self.witness = witness

    def logged(self, needle: str) -> str:
        """The daemon's stderr log line holding ``needle`` (its stderr is read by a
        thread: a deadline-bounded wait)."""
        found: str = wait_for(
            lambda: next((line for line in list(self.daemon.stderr) if needle in line), "")
        )
        return found

    def check_witness(self) -> None:
        """The witness still gets a correct answer and the daemon still runs."""
        assert self.daemon.proc is not None and self.daemon.proc.poll() is None
        result = self.witness.request("readMany/read", {"paths": ["a.txt", "b.txt"]})
        assert [f["status"] for f in result["files"]] == ["ok", "ok"]
        assert "alpha line\n" in result["llmContent"] and "beta line\n" in result["llmContent"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    base = tmp_path_factory.mktemp("framing")
    root = base / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha line\n")
    (root / "b.txt").write_text("beta line\n")
    daemon = Daemon(make_env(base / "home")).start()
    try:
        witness = daemon.session(root)
        witness.settimeout(TIMEOUT)
        s = Setup(daemon, root, witness)
        s.check_witness()
        yield s
        witness.exit()
    finally:
        daemon.cleanup()


class Raw:
    """A raw connection: bytes out, framed messages in (``Client.receive``)."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(TIMEOUT)
        self.sock.connect(path)
        self.client = Client(self.sock)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self) -> dict[str, Any]:
        return self.client.receive()

    def reply(self) -> dict[str, Any]:
        """The next message that is not a server notification/request."""
        while True:
            message = self.receive()
            if "method" not in message:
                return message

    def assert_closed(self) -> list[dict[str, Any]]:
        """Read until the daemon closes the connection; the messages read on the way."""
        seen = []
        while True:
            try:
                seen.append(self.receive())
            except ConnectionClosed:
                return seen

    def close(self) -> None:
        self.sock.close()


def frame(body: bytes, length: int | None = None) -> bytes:
    n = len(body) if length is None else length
    return b"Content-Length: %d\r\n\r\n" % n + body


def msg(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def request(msg_id: int, method: str, params: Any = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        m["params"] = params
    return frame(msg(m))


@pytest.fixture
def raw(setup: Setup) -> Iterator[Raw]:
    conn = Raw(setup.daemon.socket)
    yield conn
    conn.close()
    setup.check_witness()  # after every fault


def initialized(setup: Setup) -> Raw:
    conn = Raw(setup.daemon.socket)
    params = {"processId": None, "capabilities": {}, "rootUri": setup.root.as_uri()}
    conn.send(request(1, "initialize", params))
    assert "result" in conn.reply()
    conn.send(frame(msg({"jsonrpc": "2.0", "method": "initialized", "params": {}})))
    return conn


def assert_error(reply: dict[str, Any], code: int, msg_id: Any = None) -> str:
    assert reply.get("id", "absent") == msg_id, reply
    assert reply["error"]["code"] == code, reply
    message: str = reply["error"]["message"]
    return message


# ------------------------------------------------------------- framing: connection closed


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\x00\xff\xfe garbage \x01\x02\r\n", "not a header line"),
        (os.urandom(256).replace(b"\n", b"") + b"\r\n", "not a header line"),
        (b"Content-Type: application/json\r\n\r\n" + msg({"jsonrpc": "2.0"}), "without Content"),
        (b"Content-Length: -5\r\n\r\n{}", "is not a byte count"),
        (b"Content-Length: abc\r\n\r\n{}", "is not a byte count"),
        (b"Content-Length: 1e3\r\n\r\n{}", "is not a byte count"),
        (b"Content-Length: " + b"9" * 40 + b"\r\n\r\n{}", "is not a byte count"),
        (b"X-Long: " + b"x" * 70_000 + b"\r\n", "too long"),
        (b"X: y\r\n" * 2000, "header section is over"),
    ],
    ids=[
        "garbage",
        "random-bytes",
        "no-content-length",
        "negative",
        "non-numeric",
        "float",
        "40-digits",
        "70k-header-line",
        "2000-headers",
    ],
)
def test_broken_framing_is_answered_and_closed(
    setup: Setup, raw: Raw, data: bytes, needle: str
) -> None:
    raw.send(data)
    message = assert_error(raw.reply(), -32700)
    assert needle in message and "closing the connection" in message
    assert raw.assert_closed() == []
    assert "closing the connection" in setup.logged(needle)


def test_content_length_too_small_loses_the_frame_then_closes(setup: Setup, raw: Raw) -> None:
    body = msg({"jsonrpc": "2.0", "id": 1, "method": "readMany/status", "params": {}})
    raw.send(frame(body, len(body) - 5) + request(2, "readMany/status", {}))
    first = raw.reply()
    assert "not JSON" in assert_error(first, -32700)
    rest = raw.assert_closed()  # the leftover bytes are no header: closed
    assert [m["error"]["code"] for m in rest] == [-32700] and all(m["id"] is None for m in rest)


def test_content_length_too_large_swallows_the_next_frame_then_closes(
    setup: Setup, raw: Raw
) -> None:
    body = msg({"jsonrpc": "2.0", "id": 1, "method": "readMany/status", "params": {}})
    raw.send(frame(body, len(body) + 10) + request(2, "readMany/status", {}))
    assert "not JSON" in assert_error(raw.reply(), -32700)
    rest = raw.assert_closed()
    assert all("result" not in m for m in rest), rest
    assert [m["error"]["code"] for m in rest] == [-32700]


def test_content_length_too_large_then_end_of_input_closes(setup: Setup, raw: Raw) -> None:
    raw.send(frame(b'{"jsonrpc":"2.0"', 1000))
    raw.sock.shutdown(socket.SHUT_WR)
    assert raw.assert_closed() == []


def test_frame_over_the_limit_is_refused_unread(setup: Setup, raw: Raw) -> None:
    size = 100_000_000
    assert size > MAX_MESSAGE_BYTES
    failures: list[BaseException] = []

    def push() -> None:
        chunk = b"x" * (1 << 20)
        try:
            raw.send(b"Content-Length: %d\r\n\r\n" % size)
            for _ in range(size // len(chunk)):
                raw.send(chunk)
        except (BrokenPipeError, ConnectionResetError):
            return  # the daemon closed the connection: expected
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    sender = threading.Thread(target=push, daemon=True)
    sender.start()
    reply = raw.reply()
    setup.check_witness()  # during: the sender may still be pushing
    message = assert_error(reply, -32600)
    assert str(size) in message and "MAX_MESSAGE_BYTES" in message
    assert raw.assert_closed() == []
    sender.join(TIMEOUT)
    assert not sender.is_alive() and not failures, failures


def test_a_large_frame_under_the_limit_is_read_and_answered(setup: Setup) -> None:
    conn = initialized(setup)
    try:
        big = "x" * 5_000_000
        conn.send(request(7, "readMany/read", {"paths": ["a.txt"], "bogus": big}))
        reply = conn.reply()
        assert_error(reply, -32602, 7)
        assert reply["error"]["data"] == {"field": "$.bogus"}
        conn.send(request(8, "readMany/read", {"paths": ["a.txt"]}))
        assert "alpha line" in conn.reply()["result"]["llmContent"]
    finally:
        conn.close()
    setup.check_witness()


# ------------------------------------------------------- bodies: answered, connection kept


STATUS_1 = {"jsonrpc": "2.0", "id": 1, "method": "readMany/status"}


@pytest.mark.parametrize(
    ("body", "code", "reply_id", "needle"),
    [
        (msg(STATUS_1)[:-1] + b',"params":{"x":"\xff\xfe"}}', -32700, None, "not UTF-8"),
        (b"\xef\xbb\xbf" + msg(STATUS_1), -32700, None, "not JSON"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700, None, "not JSON"),
        (b"", -32700, None, "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, -32700, None, "not JSON"),
        (b"[1, 2]", -32600, None, "array"),
        (msg([STATUS_1]), -32600, None, "array"),
        (b"42", -32600, None, "not an object"),
        (b'"hello"', -32600, None, "not an object"),
        (b"null", -32600, None, "not an object"),
        (msg({**STATUS_1, "jsonrpc": "1.0"}), -32600, 1, "jsonrpc"),
        (msg({"id": 1, "method": "readMany/status"}), -32600, 1, "jsonrpc"),
        (msg({**STATUS_1, "id": [1]}), -32600, None, '"id"'),
        (msg({**STATUS_1, "id": 1.5}), -32600, None, '"id"'),
        (msg({**STATUS_1, "id": True}), -32600, None, '"id"'),
        (msg({**STATUS_1, "method": 5}), -32600, 1, '"method"'),
        (msg({"jsonrpc": "2.0"}), -32600, None, '"method" or an "id"'),
        (msg({"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}), -32601, 1, "no/such"),
    ],
    ids=[
        "invalid-utf8",
        "bom",
        "truncated-json",
        "empty",
        "deep-nesting",
        "array",
        "batch",
        "number",
        "string",
        "null",
        "jsonrpc-1.0",
        "no-jsonrpc",
        "id-array",
        "id-float",
        "id-bool",
        "method-number",
        "neither",
        "unknown-no-params",
    ],
)
def test_bad_bodies_are_answered_and_the_connection_goes_on(
    setup: Setup, raw: Raw, body: bytes, code: int, reply_id: Any, needle: str
) -> None:
    raw.send(frame(body))
    message = assert_error(raw.reply(), code, reply_id)
    assert needle in message, message
    # Framing intact: the same connection still answers.
    raw.send(request(99, "readMany/status", {}))
    answer = raw.reply()
    assert answer["id"] == 99 and answer["result"]["pid"] == setup.daemon.pid


def test_unknown_methods_and_wrong_param_types(setup: Setup) -> None:
    conn = initialized(setup)
    try:
        # A notification of an unknown method is ignored; a request gets -32601.
        conn.send(frame(msg({"jsonrpc": "2.0", "method": "readMany/nope", "params": {}})))
        conn.send(frame(msg({"jsonrpc": "2.0", "method": "custom/thing"})))
        conn.send(request(2, "readMany/nope", {}))
        assert "readMany/nope" in assert_error(conn.reply(), -32601, 2)
        conn.send(request(3, "no/such/method"))
        assert_error(conn.reply(), -32601, 3)
        cases = [
            ({"paths": 5}, "$.paths"),
            ({"paths": ["a.txt"], "perFileMaxLines": "10"}, "$.perFileMaxLines"),
            ({"files": [{"path": "a.txt", "offset": "x"}]}, "$.files[0].offset"),
            ({"paths": ["a.txt"], "fileFilteringOptions": [True]}, "$.fileFilteringOptions"),
            ({"paths": ["a\u0000b"]}, "$.paths[0]"),
            ([1, 2], "$"),
            ("paths", "$"),
        ]
        for n, (params, field) in enumerate(cases, 10):
            conn.send(request(n, "readMany/read", params))
            reply = conn.reply()
            message = assert_error(reply, -32602, n)
            assert reply["error"]["data"] == {"field": field}, reply
            assert field in message or field.removeprefix("$.") in message or field == "$"
        conn.send(request(30, "readMany/files", {"patterns": "a.txt"}))
        assert conn.reply()["error"]["data"] == {"field": "$.patterns"}
        # The answers after the faults are right, on this connection too.
        conn.send(request(31, "readMany/read", {"paths": ["b.txt"]}))
        assert "beta line" in conn.reply()["result"]["llmContent"]
    finally:
        conn.close()
    setup.check_witness()


def test_lifecycle_faults_get_answers_not_silence(setup: Setup) -> None:
    """Blank lines between frames are skipped; a ``$/cancelRequest`` without a usable id
    is ignored (no traceback); requests after ``shutdown`` get InvalidRequest (LSP
    §"shutdown") instead of no answer, and ``exit`` still ends the connection."""
    conn = initialized(setup)
    try:
        conn.send(b"\r\n\r\n\r\n" + request(2, "readMany/read", {"paths": ["b.txt"]}))
        assert "beta line" in conn.reply()["result"]["llmContent"]
        for params in ({"id": [1]}, {"id": {"a": 1}}, {}, [1], None):
            body: dict[str, Any] = {"jsonrpc": "2.0", "method": "$/cancelRequest"}
            if params is not None:
                body["params"] = params
            conn.send(frame(msg(body)))
        conn.send(request(3, "readMany/status", {}))
        assert "result" in conn.reply()
        conn.send(request(4, "shutdown"))
        assert conn.reply() == {"jsonrpc": "2.0", "id": 4, "result": None}
        conn.send(request(5, "readMany/read", {"paths": ["b.txt"]}))
        assert "shutdown" in assert_error(conn.reply(), -32600, 5)
        conn.send(request(6, "readMany/status", {}))
        assert_error(conn.reply(), -32600, 6)
        conn.send(frame(msg({"jsonrpc": "2.0", "method": "exit"})))
        conn.assert_closed()
    finally:
        conn.close()
    setup.check_witness()
    log = Path(setup.daemon.env["XDG_STATE_HOME"]) / "readmany" / "daemon.log"
    logged = log.read_text(errors="replace") if log.exists() else ""
    assert "Traceback" not in "".join(setup.daemon.stderr) + logged


def test_initialize_with_wrong_param_types_names_the_fields(setup: Setup, raw: Raw) -> None:
    raw.send(request(1, "initialize", {"processId": "x", "capabilities": 5}))
    message = assert_error(raw.reply(), -32602, 1)
    assert "$.processId" in message and "$.capabilities" in message, message
    raw.send(request(2, "initialize", {"processId": None, "capabilities": {}}))
    assert "capabilities" in raw.reply()["result"]


# ------------------------------------------------------------------------------- flood


def test_five_thousand_pipelined_requests(setup: Setup) -> None:
    conn = initialized(setup)
    count = 5000
    try:
        data = bytearray()
        for n in range(count):
            if n % 10 == 0:
                data += request(1000 + n, "readMany/read", {"paths": ["a.txt"], "sync": "none"})
            else:
                data += request(1000 + n, "readMany/status", {})
        done = threading.Event()
        failures: list[BaseException] = []

        def push() -> None:
            try:
                conn.send(bytes(data))
            except BaseException as exc:  # surfaced below
                failures.append(exc)
            finally:
                done.set()

        sender = threading.Thread(target=push, daemon=True)
        sender.start()
        setup.check_witness()  # during the flood (the sender may still be sending)
        assert done.wait(TIMEOUT * 4) and not failures, failures
        setup.check_witness()  # all sent, no answer read yet
        seen: dict[int, dict[str, Any]] = {}
        while len(seen) < count:
            reply = conn.reply()
            seen[reply["id"]] = reply
        assert sorted(seen) == list(range(1000, 1000 + count))
        for n in range(count):
            reply = seen[1000 + n]
            assert "error" not in reply, reply
            if n % 10 == 0:
                assert "alpha line" in reply["result"]["llmContent"]
            else:
                assert reply["result"]["pid"] == setup.daemon.pid
    finally:
        conn.close()
    setup.check_witness()


def test_witness_was_never_disturbed(setup: Setup) -> None:
    """The daemon log names each closed connection; the witness still answers."""
    setup.logged("closing the connection")
    log = "".join(setup.daemon.stderr)
    assert "Traceback" not in log, log[-3000:]
    setup.check_witness()
    with pytest.raises(RpcError) as info:
        setup.witness.request("readMany/read", {"paths": 5})
    assert info.value.code == -32602


def test_malformed_ignore_files_are_reported_by_status(setup: Setup, tmp_path: Path) -> None:
    """PROTOCOL §2 ``readMany/status``: the root's warnings name each bad ignore line
    (file:line), and the lines that parse still apply to answers."""
    root = tmp_path / "bad-ignores"
    root.mkdir()
    (root / ".gitignore").write_bytes(b"*.log\n[unclosed\n\x00\xff\xfe\ntrail\\\n")
    (root / ".readmanyignore").write_bytes(b"secret.txt\n\xff[x\n")
    for name in ("a.txt", "b.log", "secret.txt"):
        (root / name).write_text(f"{name} body\n")
    client = setup.daemon.session(root)
    try:
        result = client.request("readMany/read", {"paths": ["**"]})
        listed = sorted(f["path"] for f in result["files"])
        assert listed == [".gitignore", ".readmanyignore", "a.txt"]
        status = client.request("readMany/status", {})
        (item,) = [r for r in status["roots"] if r["root"] == os.path.realpath(root)]
        warnings = item["warnings"]
        assert any(w.startswith(".gitignore:2: pattern '[unclosed'") for w in warnings), warnings
        assert ".gitignore:3: binary content (NUL byte); pattern cut there" in warnings
        assert any(w.startswith(".gitignore:4: pattern") for w in warnings), warnings
        assert any(w.startswith(".readmanyignore:2: pattern") for w in warnings), warnings
    finally:
        client.exit()
    setup.check_witness()
