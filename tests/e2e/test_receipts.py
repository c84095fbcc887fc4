"""Receipts (PROTOCOL §4, "Receipts"), end to end through the real daemon and the CLI.

A file comes back ``unchanged`` only when its current bytes hash to the receipt sent and
the answer would have given it whole. 1,000 cycles of edits made outside the daemon
(same size with the mtime restored, atomic replace by rename with the mtime restored,
an open buffer changed with ``didChange``, and no edit at all) give 0 false
``unchanged``; each request goes out the moment the edit returns. Then the window
trap: a receipt for the whole file never makes a window, a cut or an unsaved buffer
``unchanged``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.client import Client, RpcError
from tests.e2e.daemon_helpers import Daemon, cli
from tests.helpers import write_tree


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read(client: Client, spec: Any, known: list[dict[str, str]], **more: Any) -> dict[str, Any]:
    params = {"paths": [spec], "known": known, "format": "json", **more}
    result: dict[str, Any] = client.request("readMany/read", params)
    return result


def body(i: int) -> bytes:
    """Cycle ``i``'s file content: always 32 bytes, so every edit keeps the size."""
    return f"value {i:08d} {'x' * 15}\n".encode()


def test_1000_edit_cycles_give_no_false_unchanged(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"f.txt": body(0).decode()})
    path = root / "f.txt"
    uri = path.as_uri()
    fixed = (1_600_000_000_000_000_000, 1_600_000_000_000_000_000)
    os.utime(path, ns=fixed)
    # ``held``: the sha256 the caller holds (from its last whole answer).
    unchanged = false_unchanged = opened = 0
    with daemon.session(root) as client:
        held = read(client, "f.txt", [])["files"][0]["sha256"]
        for i in range(1, 1001):
            kind = i % 5
            overlay = False
            if kind == 0:  # same size, mtime put back
                path.write_bytes(body(i))
                os.utime(path, ns=fixed)
            elif kind == 2:  # atomic replace by rename, mtime put back
                tmp = root / f".tmp{i}"
                tmp.write_bytes(body(i))
                os.utime(tmp, ns=fixed)
                os.replace(tmp, path)
            elif kind == 4:  # an editor buffer, changed but not saved
                text = body(i).decode()
                if not opened:
                    client.notify(
                        "textDocument/didOpen",
                        {"textDocument": {"uri": uri, "languageId": "plaintext",
                                          "version": i, "text": text}},
                    )  # fmt: skip
                else:
                    client.notify(
                        "textDocument/didChange",
                        {"textDocument": {"uri": uri, "version": i},
                         "contentChanges": [{"text": text}]},
                    )  # fmt: skip
                opened += 1
                overlay = True
            # kinds 1 and 3: no edit at all; only there may the answer be unchanged
            result = read(client, "f.txt", [{"path": "f.txt", "sha256": held}])
            entry = result["files"][0]
            current = body(i) if overlay else path.read_bytes()
            if entry["status"] == "unchanged":
                unchanged += 1
                if held != sha(current):
                    false_unchanged += 1
            else:
                assert entry["status"] == "ok", (i, entry)
                got = json.loads(result["llmContent"])["results"]["f.txt"]["content"]
                assert got.encode() == current, (i, kind)
                assert entry["sha256"] == sha(current), (i, kind)
                held = entry["sha256"]
            if overlay:
                client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                opened = 0
    assert false_unchanged == 0
    # The check is not vacuous: each cycle without an edit is unchanged.
    assert unchanged == 400, unchanged


def test_the_window_trap(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    lines = "".join(f"line {n}\n" for n in range(1, 301))
    write_tree(root, {"big.txt": lines, "small.txt": "one\ntwo\n"})
    with daemon.session(root) as client:
        first = read(client, "small.txt", [], preferFullRead=True)
        receipt = [{"path": "small.txt", "sha256": first["files"][0]["sha256"]}]
        whole = read(client, "small.txt", receipt)
        assert whole["files"][0]["status"] == "unchanged"
        assert whole["summary"]["unchanged"] == 1
        assert whole["summary"]["totalChars"] == 0
        # A window of a file whose receipt holds: content.
        for spec in ({"path": "small.txt", "offset": 1, "limit": 1},
                     {"path": "small.txt", "offset": 2}):  # fmt: skip
            got = read(client, spec, receipt)["files"][0]
            assert got["status"] == "ok" and got["chars"] > 0, (spec, got)
        # A file cut by its per-file cap: content, although the receipt is right.
        big = sha((root / "big.txt").read_bytes())
        cut = read(client, "big.txt", [{"path": "big.txt", "sha256": big}])["files"][0]
        assert cut["status"] == "partial" and cut["sha256"] == big
        # An open buffer equal to the disk may be unchanged; one that differs never.
        uri = (root / "small.txt").as_uri()
        doc = {"uri": uri, "languageId": "plaintext", "version": 1, "text": "one\ntwo\n"}
        client.notify("textDocument/didOpen", {"textDocument": doc})
        same = read(client, "small.txt", receipt)["files"][0]
        assert (same["status"], same["source"]) == ("unchanged", "overlay")
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "new\n"}]},
        )
        buffer = [{"path": "small.txt", "sha256": sha(b"new\n")}]
        unsaved = read(client, "small.txt", buffer)["files"][0]
        assert unsaved["status"] == "ok" and unsaved["sha256"] == sha(b"new\n")


def test_every_format_names_unchanged(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.py": "print(1)\n"})
    receipt = [{"path": "a.py", "sha256": sha(b"print(1)\n")}]
    with daemon.session(root) as client:
        for fmt in ("separator", "heredoc", "xml", "json"):
            result = read(client, "a.py", receipt, format=fmt)
            text = result["llmContent"]
            assert "print(1)" not in text, fmt
            assert "Unchanged" in text and "a.py" in text, fmt
        doc = json.loads(read(client, "a.py", receipt)["llmContent"])
        assert doc["results"]["a.py"]["status"] == "unchanged"


def test_a_bad_receipt_is_invalid_params(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.py": "x\n"})
    with daemon.session(root) as client, pytest.raises(RpcError) as caught:
        read(client, "a.py", [{"path": "a.py", "sha256": "abc"}])
    assert caught.value.code == -32602
    assert "$.known[0].sha256" in caught.value.message


def test_the_cli_takes_an_earlier_answer_as_receipts(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.py": "a = 1\n", "b.py": "b = 2\n"})
    env = daemon.env
    first = cli(env, "read", "--root", str(root), "--json", "a.py", "b.py")
    assert first.returncode == 0, first.stderr
    saved = tmp_path / "answer.json"
    saved.write_text(first.stdout)
    (root / "b.py").write_text("b = 3\n")  # same size
    again = cli(env, "read", "--root", str(root), "--known", str(saved), "--json", "a.py", "b.py")
    assert again.returncode == 0, again.stderr
    files = {f["path"]: f["status"] for f in json.loads(again.stdout)["files"]}
    assert files == {"a.py": "unchanged", "b.py": "ok"}
    text = cli(env, "read", "--root", str(root), "--known", str(saved), "a.py", "b.py").stdout
    assert "b = 3" in text and "a = 1" not in text and "Unchanged" in text
    bad = cli(env, "read", "--root", str(root), "--known", str(tmp_path / "none.json"), "a.py")
    assert bad.returncode == 2 and "--known" in bad.stderr


def test_a_redacted_copy_is_no_receipt_for_the_real_values(daemon: Daemon, tmp_path: Path) -> None:
    """The sha256 of a redacted answer is of the bytes on disk: a caller that held the
    redacted copy and asks with ``redactSecrets: false`` gets the content, through the
    daemon and through the CLI with ``--known``."""
    root = tmp_path / "ws"
    token = "glpat-" + "Q7w2e" * 5
    write_tree(root, {"s.py": f"TOKEN = '{token}'\n", "p.py": "x = 1\n"})
    with daemon.session(root) as client:
        first = client.request("readMany/read", {"paths": ["s.py", "p.py"], "format": "json"})
        assert token not in first["llmContent"]
        known = [{"path": f["path"], "sha256": f["sha256"]} for f in first["files"]]
        real = read(client, "s.py", known, redactSecrets=False)
        assert real["files"][0]["status"] == "ok" and token in real["llmContent"]
        plain = read(client, "p.py", known, redactSecrets=False)
        assert plain["files"][0]["status"] == "unchanged"
        assert read(client, "s.py", known)["files"][0]["status"] == "unchanged"
    saved = tmp_path / "answer.json"
    saved.write_text(json.dumps({"files": first["files"]}))
    args = ("read", "--root", str(root), "--known", str(saved), "--no-redact-secrets", "s.py")
    shown = cli(daemon.env, *args)
    assert shown.returncode == 0, shown.stderr
    assert token in shown.stdout and "Unchanged" not in shown.stdout
