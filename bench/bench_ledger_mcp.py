"""Benchmark: what an MCP session's change ledger adds to a warm read (PROTOCOL §4,
"Stale files"), through a real daemon.

Usage::

    python bench/bench_ledger_mcp.py [--entries 10000] [--runs 41] [--tree DIR]

Writes the tree of ``bench_ledger.py`` (``--entries`` small files, 10 more to read),
starts a private daemon (``readmany serve --socket``, its own HOME and XDG folders) and
runs the MCP read tool in this process, the code path of ``readmany mcp`` from the
tool call on (``ReadManyMcp.call_tool``: the arguments decoded, the daemon asked over
the session's kept connection, ``stale`` and the notice, the result as MCP content;
the MCP SDK and the stdio framing are left out). Three sessions, each first given what
it holds by one read, then timed on a warm read of 10 other files (``read/*.py``),
interleaved round by round:

- ``no ledger``: a session given nothing before;
- ``daemon``: a session given all ``--entries`` files over its kept connection: the
  daemon's ledger of that connection checks only what the root's change log names
  after the read's barrier (nothing changed: none), and the server's copy is not
  checked;
- ``taken over``: the same, but with the server's copy taken over as after a lost
  daemon connection: one ``stat`` per entry (the fallback);
- ``new connection`` (timed after the others, not interleaved): a session given
  nothing, its kept connection closed before each timed read, so each opens one
  (``initialize`` pipelined with the read), as every call did before the connection
  was kept.

The ledger's cost is the difference of the medians; target ≤ 5 ms for ``daemon``.
Prints one Markdown table and writes ``bench/results/ledger-mcp-latest.json``. Nothing is
asserted.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench_ledger import TARGET_MS, save, setup
from common import REPO_ROOT, reap, table

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.client import connect, default_socket_path
from readmany_daemon.mcp.schema import READ_TOOL
from readmany_daemon.mcp.tools import ReadManyMcp
from readmany_daemon.racy import RACY_NS


def private_env(base: str) -> None:
    """This process's HOME and XDG folders under ``base`` (the daemon inherits them),
    auto-start on, no ``READMANY_*`` of the caller."""
    for name in [k for k in os.environ if k.startswith("READMANY_")]:
        del os.environ[name]
    for name, sub in (
        ("HOME", "home"),
        ("XDG_RUNTIME_DIR", "run"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
    ):
        os.makedirs(os.path.join(base, sub), mode=0o700, exist_ok=True)
        os.environ[name] = os.path.join(base, sub)


def start_daemon() -> subprocess.Popen[bytes]:
    """``readmany serve --socket`` at the default socket, once it answers."""
    socket = default_socket_path()
    os.makedirs(os.path.dirname(socket), mode=0o700, exist_ok=True)
    argv = [sys.executable, "-m", "readmany_daemon", "serve", "--socket", socket]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while (client := connect(socket)) is None:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("the daemon did not start")
        time.sleep(0.05)
    client.exit()
    return proc


async def run(root: str, entries: int, runs: int) -> dict[str, list[float]]:
    """The timed reads of each session (seconds), after giving each what it holds."""
    kinds = ["no ledger", "daemon", "taken over", "new connection"]
    sessions = {k: ReadManyMcp(root) for k in kinds}

    async def call(mcp: ReadManyMcp, args: dict[str, Any]) -> dict[str, Any]:
        got = await mcp.call_tool(READ_TOOL, args, lambda: None)
        assert not got["isError"], got["content"][0]["text"]
        structured: dict[str, Any] = got["structuredContent"]
        return structured

    everything = {"paths": ["d*/*.txt"], "max_total_files": entries}
    everything.update(max_total_chars=100 * entries, max_total_tokens=40 * entries)
    for kind in ("daemon", "taken over"):
        first = await call(sessions[kind], everything)
        assert len(first["files"]) == entries, len(first["files"])
        assert sessions[kind].backend.link.number == 1  # type: ignore[union-attr]
    over = sessions["taken over"]
    over.ledger.adopt(over._shadow)  # as when the connection is lost: stat'ed from now
    assert len(over.ledger) == entries
    time.sleep(RACY_NS / 1e9 + 0.2)  # ctimes older than the racy tick: stats prove them
    small = {"paths": ["read/*.py"]}
    for mcp in sessions.values():
        assert (await call(mcp, small))["stale"] == []  # warm: the cache, the stat proofs
    times: dict[str, list[float]] = {k: [] for k in sessions}

    async def timed(k: str) -> None:
        t0 = time.perf_counter()
        got = await call(sessions[k], small)
        times[k].append(time.perf_counter() - t0)
        assert got["stale"] == [] and len(got["files"]) == 10

    rotated = kinds[:3]
    for round_ in range(runs):
        for k in rotated[round_ % 3 :] + rotated[: round_ % 3]:
            await timed(k)
    # Apart: a closed connection's end in the daemon would slow whichever read follows.
    for _ in range(runs):
        sessions["new connection"].daemon.close()  # type: ignore[union-attr]
        time.sleep(0.05)
        await timed("new connection")
    for mcp in sessions.values():
        given = mcp in (sessions["daemon"], sessions["taken over"])
        assert mcp.daemon is not None and mcp.daemon.answered_by_daemon == runs + 1 + given
        mcp.daemon.close()
    return times


def main(argv: list[str] | None = None) -> int:
    import anyio

    args, dest, root = setup(argv, __doc__.split("\n\n")[0])
    base = tempfile.mkdtemp(prefix="rmbl-")  # short: the socket path fits sun_path
    private_env(base)
    daemon = start_daemon()
    try:
        times = anyio.run(run, root, args.entries, args.runs)
    finally:
        daemon.terminate()
        reap(daemon)
        shutil.rmtree(base, ignore_errors=True)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    cost = {k: med[k] - med["no ledger"] for k in ("daemon", "taken over", "new connection")}
    verdict = "PASS" if cost["daemon"] <= TARGET_MS else "FAIL"
    n = f"{args.entries:,}"
    rows = [
        {
            "MCP read tool": "warm read of 10 files, no ledger",
            "median ms": f"{med['no ledger']:.2f}",
        },
        {
            "MCP read tool": f"the same, {n} entries in the daemon connection's ledger",
            "median ms": f"{med['daemon']:.2f}",
        },
        {
            "MCP read tool": f"the same, {n} entries taken over (stat)",
            "median ms": f"{med['taken over']:.2f}",
        },
    ]
    rows.append(
        {
            "MCP read tool": "warm read of 10 files, no ledger, a new connection",
            "median ms": f"{med['new connection']:.2f}",
        }
    )
    print(table(rows))
    target = f"(target ≤ {TARGET_MS} ms): {verdict}"
    print(f"\nledger check, daemon: {cost['daemon']:+.2f} ms p50 {target}")
    print(f"ledger check, taken over: {cost['taken over']:+.2f} ms p50")
    print(f"a new connection per call: {cost['new connection']:+.2f} ms p50")
    save("ledger-mcp", dest, args, times, cost, verdict)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
