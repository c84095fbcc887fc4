"""The change ledger end to end (PROTOCOL §4, "Stale files"): over LSP connections to
the real daemon and through the MCP SDK's client to ``readmany mcp``.

The accuracy test makes 1,000 write / no-write cycles outside the daemon on files a
connection was given (a write keeps the size and puts the mtime back; a no-write is
nothing at all or the same bytes written again with a new mtime) and asks right after
each: every write is named, once, and nothing else is (about 2 s).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from readmany_daemon.client import Client
from tests.e2e.daemon_helpers import Daemon
from tests.e2e.test_mcp import mcp_session, read, text
from tests.e2e.test_server_stdio import lsp_session
from tests.helpers import write_tree

OLD = (1_600_000_000_000_000_000, 1_600_000_000_000_000_000)
NAMES = [f"src/f{i}.txt" for i in range(5)]


def body(i: int) -> bytes:
    """Cycle ``i``'s content: always 24 bytes, so a write keeps the size."""
    return f"value {i:08d} {'x' * 8}\n".encode()


def ask(client: Client, paths: list[str], **more: Any) -> dict[str, Any]:
    result: dict[str, Any] = client.request("readMany/read", {"paths": paths, **more})
    return result


def prepare(root: Path) -> None:
    """The tree of the write cycles: ``NAMES`` (of ``body(0)``, an old mtime) and
    ``other.txt``."""
    write_tree(root, {**{name: body(0).decode() for name in NAMES}, "other.txt": "o\n"})
    for name in NAMES:
        os.utime(root / name, ns=OLD)


def step(root: Path, rng: random.Random, i: int) -> tuple[bool, list[dict[str, str]]]:
    """Cycle ``i`` on one of ``NAMES``: a write (same size, mtime put back), the same
    bytes again (a new mtime) or nothing; returns (whether it wrote, the ``stale`` the
    next answer must give)."""
    name = rng.choice(NAMES)
    path = root / name
    kind = i % 3
    if kind == 0:  # a write: same size, mtime put back
        path.write_bytes(body(i))
        os.utime(path, ns=OLD)
    elif kind == 1:  # the same bytes again, a new mtime
        path.write_bytes(path.read_bytes())
    # kind 2: no write at all
    return kind == 0, ([{"path": name, "change": "modified"}] if kind == 0 else [])


class Tally:
    """Writes named, missed, and files named falsely over the cycles."""

    def __init__(self) -> None:
        self.named = self.missed = self.false = 0

    def add(self, wrote: bool, stale: list[Any], want: list[dict[str, str]]) -> None:
        self.named += wrote and stale == want
        self.missed += wrote and stale != want
        self.false += not wrote and stale != []

    def check(self, n: int) -> None:
        assert (self.missed, self.false) == (0, 0)
        assert self.named == n // 3


def cycles(daemon: Daemon, root: Path, n: int) -> None:
    prepare(root)
    rng = random.Random(27)
    tally = Tally()
    with daemon.session(root) as client:
        assert ask(client, NAMES)["stale"] == []
        for i in range(1, n + 1):
            wrote, want = step(root, rng, i)
            tally.add(wrote, ask(client, ["other.txt"])["stale"], want)
    tally.check(n)


def test_1000_write_cycles_all_named_none_false(daemon: Daemon, tmp_path: Path) -> None:
    cycles(daemon, tmp_path / "ws", 1000)


def test_each_connection_has_its_own_ledger(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "a1\n", "b.txt": "b1\n", "gone.txt": "g\n", "c.txt": "c\n"})
    with daemon.session(root) as one, daemon.session(root) as two:
        assert ask(one, ["a.txt", "b.txt", "gone.txt"])["stale"] == []
        assert ask(two, ["c.txt"])["stale"] == []
        (root / "a.txt").write_text("a2\n")
        (root / "b.txt").write_text("b2\n")
        (root / "gone.txt").unlink()
        assert ask(two, ["c.txt"])["stale"] == []
        got = ask(one, ["b.txt", "c.txt"])
        assert got["stale"] == [
            {"path": "a.txt", "change": "modified"},
            {"path": "gone.txt", "change": "deleted"},
        ]  # b.txt is delivered again: not named
        assert got["llmContent"].startswith("[Changed since given to you: a.txt (modified), ")
        assert got["llmContent"].index("]\n\n--- b.txt ---") > 0
        assert ask(one, ["c.txt"])["stale"] == []
        (root / "a.txt").write_text("a3\n")
        xml = ask(one, ["c.txt"], format="xml")["llmContent"]
        assert xml.startswith("<documents><notice>[Changed since given to you: a.txt")
        (root / "a.txt").write_text("a4\n")
        doc = ask(one, ["c.txt"], format="json")
        assert json.loads(doc["llmContent"])["stale"] == [{"path": "a.txt", "change": "modified"}]
        (root / "a.txt").write_text("a5\n")
        stable = ask(one, ["c.txt"], order="stable")["llmContent"]
        assert stable.index("--- c.txt ---") < stable.index("[Changed since given to you: a.txt")
        assert stable.rstrip().endswith('Read again: {"paths": ["a.txt"]}]')


async def test_mcp_session_names_stale_files(env: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "a1\n", "b.txt": "b1\n", "big.txt": "x\n" * 500})
    async with mcp_session(env, "--root", str(root)) as session:
        first = await read(session, paths=["a.txt"], files=[{"path": "big.txt", "limit": 3}])
        assert first["structuredContent"]["stale"] == []
        (root / "a.txt").write_text("a2\n")
        (root / "big.txt").write_text("y\n" * 500)
        second = await read(session, paths=["b.txt"])
        assert second["structuredContent"]["stale"] == [
            {"path": "a.txt", "change": "modified"},
            {"path": "big.txt", "change": "modified"},
        ]
        assert text(second).startswith(
            "[Changed since given to you: a.txt (modified), big.txt (modified). "
            'Read again: {"paths": ["a.txt", "big.txt"]}]\n\n--- b.txt ---'
        )
        third = await read(session, paths=["b.txt"])
        assert third["structuredContent"]["stale"] == []
        (root / "a.txt").write_text("a9\n")
        stable = text(await read(session, paths=["b.txt"], order="stable"))
        assert stable.startswith("--- b.txt ---")
        assert stable.rstrip().endswith('Read again: {"paths": ["a.txt"]}]')
    async with mcp_session(env, "--root", str(root)) as fresh:
        (root / "a.txt").write_text("a3\n")
        assert (await read(fresh, paths=["b.txt"]))["structuredContent"]["stale"] == []


async def test_serve_stdio_connection_names_stale_files(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "a1\n", "b.txt": "b1\n"})
    async with lsp_session(env, root) as client:
        first = await client.call("readMany/read", {"paths": ["a.txt"], "format": "heredoc"})
        assert first["stale"] == []
        (root / "a.txt").write_text("a2\n")
        second = await client.call("readMany/read", {"paths": ["b.txt"], "format": "heredoc"})
        assert second["stale"] == [{"path": "a.txt", "change": "modified"}]
        assert second["llmContent"].startswith("[Changed since given to you: a.txt (modified).")
        assert "]\n\n@b.txt\n" in second["llmContent"]


def test_a_write_in_another_root_is_named_in_the_next_answer(
    daemon: Daemon, tmp_path: Path
) -> None:
    # each read of one root names a write made just before it in the other, at once
    # (the other root's barrier runs before the ledger is checked), by absolute path
    one, two = tmp_path / "one", tmp_path / "two"
    write_tree(one, {"a.txt": "a\n", "b.txt": "b\n"})
    write_tree(two, {"c.txt": "c\n", "d.txt": "d\n"})
    with daemon.session(one) as client:
        assert ask(client, ["a.txt"])["stale"] == []
        assert ask(client, ["c.txt"], root=str(two))["stale"] == []
        for i in range(6):
            mine, other, root = (
                (two / "c.txt", "b.txt", one) if i % 2 else (one / "a.txt", "d.txt", two)
            )
            mine.write_text(f"v{i}\n")
            got = ask(client, [other], root=str(root))["stale"]
            assert got == [{"path": str(mine), "change": "modified"}], (i, got)
