"""An MCP session's change ledger through the shared daemon (PROTOCOL §4, "Stale files"):
the MCP SDK's client against the real ``readmany mcp`` process and a real daemon.

``readmany mcp`` keeps one daemon connection open from call to call, so the daemon's
ledger of that connection, fed by the root's change log, names what changed; the
server's own ledger checks by ``stat`` only the files given in its own process and
those of a daemon connection it lost.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import Daemon, wait_for
from tests.e2e.test_ledger import NAMES, Tally, prepare, step
from tests.e2e.test_mcp import _daemon_pid, daemon_env, mcp_session, read, text
from tests.helpers import write_tree

__all__ = ["daemon_env"]  # the fixture, shared with test_mcp.py


@pytest.fixture
def served(daemon_env: dict[str, str]) -> Iterator[tuple[Daemon, dict[str, str]]]:
    """A private daemon, and the environment in which ``readmany mcp`` uses it (and
    may start one: ``daemon_env`` stops whatever daemon runs at the end)."""
    daemon = Daemon(daemon_env).start()
    yield daemon, daemon_env
    daemon.stop()


def daemon_status(daemon: Daemon) -> dict[str, Any]:
    with daemon.session(None) as client:
        status: dict[str, Any] = client.request("readMany/status")
    return status


def by_pid(result: dict[str, Any], pid: int) -> bool:
    """Whether daemon ``pid`` answered ``result`` (its clock's instance)."""
    instance = result["structuredContent"]["clock"].split(":")[0]
    return bool(instance.split(".")[0] == f"{pid:x}")


async def test_mcp_over_the_daemon_250_cycles_all_named_none_false(
    served: tuple[Daemon, dict[str, str]], tmp_path: Path
) -> None:
    daemon, env = served
    root = tmp_path / "ws"
    prepare(root)
    rng = random.Random(2727)
    tally = Tally()
    async with mcp_session(env, "--root", str(root)) as session:
        first = await read(session, paths=NAMES)
        assert by_pid(first, daemon.pid) and first["structuredContent"]["stale"] == []
        # One connection kept between calls: the daemon's ledger is this session's.
        assert daemon_status(daemon)["connections"] == 2  # the kept one and this one
        n = 250
        for i in range(1, n + 1):
            wrote, want = step(root, rng, i)
            got = await read(session, paths=["other.txt"])
            tally.add(wrote, got["structuredContent"]["stale"], want)
            if wrote and got["structuredContent"]["stale"] == want:
                name = want[0]["path"]
                assert text(got).startswith(f"[Changed since given to you: {name} (modified).")
    tally.check(n)
    wait_for(lambda: daemon_status(daemon)["connections"] == 1)  # the session's ended


async def test_mcp_takes_the_ledger_over_when_the_daemon_goes(
    served: tuple[Daemon, dict[str, str]], tmp_path: Path
) -> None:
    daemon, env = served
    root = tmp_path / "ws"
    files = {"a.txt": "a1\n", "b.txt": "b1\n", "c.txt": "c1\n", "d.txt": "d1\n", "o.txt": "o\n"}
    write_tree(root, files)
    async with mcp_session(env, "--root", str(root)) as session:
        first = await read(session, paths=["a.txt", "b.txt", "c.txt", "d.txt"])
        assert by_pid(first, daemon.pid)
        (root / "a.txt").write_text("a2\n")
        named = await read(session, paths=["o.txt"])  # by the daemon's ledger
        assert named["structuredContent"]["stale"] == [{"path": "a.txt", "change": "modified"}]
        daemon.stop()  # the kept connection is lost with it
        (root / "b.txt").write_text("b2\n")
        (root / "d.txt").unlink()
        here = await read(session, paths=["o.txt"])  # answered in this process, by stat
        assert here["structuredContent"]["stale"] == [
            {"path": "b.txt", "change": "modified"},
            {"path": "d.txt", "change": "deleted"},
        ]  # a.txt was named already: not again
        assert text(here).startswith("[Changed since given to you: b.txt (modified), d.txt")
        # The server started a daemon for the next calls; a new connection to it.
        new_pid = wait_for(lambda: _daemon_pid(env), timeout=30)
        assert new_pid != daemon.pid

        async def by_new_daemon() -> dict[str, Any]:
            while True:
                got = await read(session, paths=["o.txt"])
                assert got["structuredContent"]["stale"] == []
                if by_pid(got, new_pid):
                    return got

        await by_new_daemon()
        (root / "c.txt").write_text("c2\n")
        (root / "e.txt").write_text("e1\n")
        given = await read(session, paths=["e.txt"])  # e.txt: the new connection's ledger
        assert given["structuredContent"]["stale"] == [{"path": "c.txt", "change": "modified"}]
        (root / "c.txt").write_text("c3\n")
        (root / "e.txt").write_text("e2\n")
        both = await read(session, paths=["o.txt"])
        assert both["structuredContent"]["stale"] == [
            {"path": "c.txt", "change": "modified"},
            {"path": "e.txt", "change": "modified"},
        ]  # one notice: this process's entries first (given before), then the daemon's
        assert text(both).startswith(
            "[Changed since given to you: c.txt (modified), e.txt (modified). "
            'Read again: {"paths": ["c.txt", "e.txt"]}]\n\n--- o.txt ---'
        )
        (root / "e.txt").write_text("e3\n")
        (root / "c.txt").write_text("c4\n")
        doc = await read(session, paths=["o.txt"], format="json", order="stable")
        assert doc["structuredContent"]["stale"] == [
            {"path": "c.txt", "change": "modified"},
            {"path": "e.txt", "change": "modified"},
        ]
        assert (
            text(doc)
            .rstrip()
            .endswith(
                '"stale": [{"path": "c.txt", "change": "modified"}, '
                '{"path": "e.txt", "change": "modified"}]\n}'
            )
        )
        assert (await read(session, paths=["o.txt"]))["structuredContent"]["stale"] == []
