"""readmany's MCP server against the official conformance suite
(``@modelcontextprotocol/conformance``, its ``server`` scenarios).

The suite (0.1.16) reaches a server only over Streamable HTTP (``--url``) and covers the
2025-06-18 and 2025-11-25 revisions (the legacy era; it has no 2026-07-28 scenario).
``readmany mcp`` speaks stdio, so the test serves the very ``Server`` it runs
(``mcp/sdk.py``'s ``build_server`` over ``ReadManyMcp``) with the SDK's own Streamable
HTTP app on a loopback port, and runs the scenarios that apply to a server of tools
only: the handshake, ``ping``, ``tools/list`` and a failing ``tools/call``. The others
test features readmany does not offer (resources, prompts, completions, logging,
sampling, elicitation, progress) or call the suite's reference tools.

The suite is found as ``$READMANY_CI_TOOLS/node_modules/.bin/conformance`` (``.ci/run``
installs it there), with ``node`` >= 20 from PATH; missing: skip with how to install
it, or fail when CI is set. Needs the SDK 2.x (its ``Server.streamable_http_app``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.editor_support import missing
from tests.helpers import write_tree

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SCENARIOS = ("server-initialize", "ping", "tools-list", "tools-call-error")
INSTALL_HINT = (
    "the conformance test needs Node.js >= 20 and @modelcontextprotocol/conformance: "
    "PATH=/tmp/node24/bin:$PATH npm install --prefix /tmp/ci-tools "
    "@modelcontextprotocol/conformance@0.1.16 && export READMANY_CI_TOOLS=/tmp/ci-tools"
)

#: Serves readmany's SDK server over Streamable HTTP on a free loopback port; uvicorn
#: names the port on stderr once it listens.
SERVE = """
import sys, uvicorn
from readmany_daemon.mcp import sdk
from readmany_daemon.mcp.tools import ReadManyMcp
server = sdk.build_server(ReadManyMcp([sys.argv[1]], True))
uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=0, log_level="info")
"""


@pytest.fixture
def url(tmp_path: Path, env: dict[str, str]) -> object:
    pytest.importorskip("mcp.server.caching", reason="the SDK 1.x: no Server.streamable_http_app")
    write_tree(tmp_path / "ws", {"a.txt": "alpha\n"})
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(tmp_path / "ws")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
        if found:
            break
    else:
        raise AssertionError("".join(seen))
    try:
        yield f"{found.group(1)}/mcp"
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stderr.close()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_official_conformance_scenarios_for_a_tools_server_pass(
    url: str, scenario: str, tmp_path: Path
) -> None:
    tools = os.environ.get("READMANY_CI_TOOLS", "/nonexistent")
    script = Path(tools, "node_modules/.bin/conformance")
    if shutil.which("node") is None or not script.exists():
        missing(f"{INSTALL_HINT} (conformance: {script})")
    proc = subprocess.run(
        [str(script), "server", "--url", url, "--scenario", scenario, "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == 0 and "0 failed" in out, out
