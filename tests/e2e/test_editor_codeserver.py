"""The VS Code extension inside a real VS Code: code-server, driven by headless Chromium.

The packaged ``.vsix`` and a test-only probe extension (editors/vscode/test/codeserver/
probe) are installed into a fresh ``--user-data-dir`` and ``--extensions-dir``;
code-server is started on 127.0.0.1 with ``--auth none`` in a session of its own
(``setsid``), and ``drive.mjs`` (puppeteer-core) opens the workspace, waits for the
status-bar item, lists the MCP servers (the extension registers ``readmany mcp``), runs
every "Read Many Files" palette command and asks the probe for the extension's API,
``vscode.lm.tools``, ``vscode.lm.invokeTool`` and VS Code's start of the MCP server;
last it asks for both read tools (``readmany.mcpServer.alsoLanguageModelTool``). The whole process
group is stopped at the end. On a failure the screenshots are under ``.ci/artifacts/``.

Needs Node.js 22 or newer on PATH, code-server and puppeteer-core in
``$READMANY_CI_TOOLS/node_modules`` and Debian's ``chromium`` (``.ci/run`` installs all
of them; editors/vscode/README.md says how by hand). Missing: skips with that hint, or
fails when CI is set. Slow (about a minute and a half, plus the ``.vsix`` build).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.editor_support import BIN, REPO, missing
from tests.helpers import write_tree

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

EXTENSION = REPO / "editors" / "vscode"
PROBE = EXTENSION / "test" / "codeserver" / "probe"
DRIVER = EXTENSION / "test" / "codeserver" / "drive.mjs"
ARTIFACTS = REPO / ".ci" / "artifacts"
INSTALL_HINT = (
    "the code-server test needs Node.js >= 22 on PATH, code-server@4.139.1 and "
    "puppeteer-core in $READMANY_CI_TOOLS/node_modules, and chromium "
    "(apt-get install chromium); editors/vscode/README.md, 'Testing in a real VS Code', "
    "gives the commands"
)


def _tools() -> dict[str, str]:
    """node, code-server, puppeteer-core and chromium, or skip/fail with the hint."""
    tools = Path(os.environ.get("READMANY_CI_TOOLS", "/nonexistent")) / "node_modules"
    found = {
        "node": shutil.which("node") or "",
        "npm": shutil.which("npm") or "",
        "code-server": str(tools / ".bin" / "code-server"),
        "puppeteer": str(tools / "puppeteer-core"),
        "chromium": os.environ.get("READMANY_CHROMIUM") or shutil.which("chromium") or "",
    }
    absent = [k for k, v in found.items() if not v or not Path(v).exists()]
    if absent:
        missing(f"{INSTALL_HINT} (missing: {', '.join(absent)})")
    version = subprocess.run([found["node"], "--version"], capture_output=True, text=True).stdout
    if int(re.findall(r"\d+", version)[0]) < 22:
        missing(f"{INSTALL_HINT} (node on PATH is {version.strip()})")
    return found


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(
            f"{' '.join(args)} exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-6000:]}"
        )
    return proc.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_setting() -> dict[str, Any]:
    """How the extension finds this checkout's server: the venv's ``readmany`` script,
    else this Python with ``-m readmany_daemon``."""
    script = BIN / "readmany"
    if script.is_file() and os.access(script, os.X_OK):
        return {"readmany.path": [str(script)]}
    return {"readmany.interpreter": [sys.executable]}


@pytest.fixture
def code_server(env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, Any]]:
    """code-server serving a small workspace with the extension and the probe installed;
    yields {url, log, probe_out, tools, env}. Stops its process group afterwards."""
    tools = _tools()
    e = dict(env)
    e["PATH"] = os.pathsep.join([str(Path(tools["node"]).parent), e.get("PATH", "")])
    # The .vsix as `npm run package` makes it, and the probe packed alongside.
    if not (EXTENSION / "node_modules" / ".package-lock.json").exists():
        _run([tools["npm"], "ci", "--no-audit", "--no-fund"], EXTENSION, e)
    vsix, probe_vsix = tmp_path / "readmany.vsix", tmp_path / "probe.vsix"
    _run([tools["npm"], "run", "package", "--", "--out", str(vsix)], EXTENSION, e)
    vsce = str(EXTENSION / "node_modules" / ".bin" / "vsce")
    flags = ["--no-dependencies", "--allow-missing-repository", "--skip-license"]
    _run([vsce, "package", *flags, "--out", str(probe_vsix)], PROBE, e)

    ws = tmp_path / "ws"
    write_tree(ws, {"a.txt": "alpha\n", "src/m.py": "print('m')\n"})
    data, extensions = tmp_path / "user-data", tmp_path / "extensions"
    # readmany.path is machine-overridable: in a remote window (code-server) it is read
    # from the Machine settings; in User settings it is dropped once the schema loads.
    write_tree(data, {"Machine/settings.json": json.dumps(_server_setting())})
    user = {
        "readmany.shared": False,  # a server of this window's own, gone with the window
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": False,
        "telemetry.telemetryLevel": "off",
        "extensions.autoUpdate": False,
        "extensions.autoCheckUpdates": False,
    }
    write_tree(data, {"User/settings.json": json.dumps(user)})
    dirs = ["--user-data-dir", str(data), "--extensions-dir", str(extensions)]
    for package in (vsix, probe_vsix):
        _run([tools["code-server"], *dirs, "--install-extension", str(package)], tmp_path, e)

    port = _free_port()
    log = tmp_path / "code-server.log"
    probe_out = tmp_path / "probe.json"
    e["READMANY_PROBE_OUT"] = str(probe_out)
    args = [tools["code-server"], "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", *dirs]
    args += ["--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", str(ws)]
    with log.open("wb") as sink:
        # start_new_session: setsid, so the whole group (extension host, the readmany
        # server it started) is stopped together.
        proc = subprocess.Popen(
            args, cwd=tmp_path, env=e, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 60
        while b"HTTP server listening" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"code-server did not start:\n{log.read_text()[-4000:]}")
            time.sleep(0.2)
        yield {
            "url": f"http://127.0.0.1:{port}/?folder={ws}",
            "ws": ws,
            "pid": proc.pid,
            "log": log,
            "probe_out": probe_out,
            "tools": tools,
            "env": e,
        }
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def _processes_with(*args: str) -> dict[int, list[str]]:
    """pid → command line of the running processes that hold every one of ``args``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            cmdline = [a for a in _cmdline(int(entry.name)) if a]
            if all(a in cmdline for a in args):
                found[int(entry.name)] = cmdline
    return found


def _process_group(pid: int) -> int:
    """The process group of ``pid`` (field 5 of /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[2])


def test_the_extension_in_code_server(code_server: dict[str, Any]) -> None:
    tools = code_server["tools"]
    config = {
        "url": code_server["url"],
        "chromium": tools["chromium"],
        "puppeteer": tools["puppeteer"],
        "artifacts": str(ARTIFACTS),
        "probeOut": str(code_server["probe_out"]),
        "timeoutMs": 90000,
    }
    started = time.monotonic()
    proc = subprocess.run(
        [tools["node"], str(DRIVER)],
        env=dict(code_server["env"], READMANY_DRIVE=json.dumps(config)),
        capture_output=True,
        text=True,
        timeout=780,
    )
    seconds = time.monotonic() - started
    try:
        seen: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        seen = {}
    after = seen.get("restart") or {}
    pid = (after.get("status") or {}).get("value", {}).get("pid")
    server_cmdline = _cmdline(pid) if isinstance(pid, int) else []
    mcp_servers = _processes_with("mcp", "--root", str(code_server["ws"]))
    print(f"code-server drive: {seconds:.1f} s; steps: {seen.get('steps')}")
    if proc.returncode != 0:
        pytest.fail(
            f"the drive failed at {seen.get('failedStep')!r}: {seen.get('error')}\n"
            f"screenshot: {seen.get('screenshot')}\n{proc.stderr[-3000:]}\n"
            f"code-server log:\n{code_server['log'].read_text()[-3000:]}"
        )

    # The status bar shows the warm index (its codicon is an icon, not text).
    assert re.match(r"^readmany \d", seen["statusBar"]), seen["statusBar"]
    probe = seen["probeBefore"]
    assert probe["installed"] and probe["active"], probe
    assert probe["remoteName"], probe  # a remote window: the extension runs server-side
    assert probe["apiKeys"] == ["read", "status"]
    # The exported API: read() sends its params as an object (not [params, null]).
    assert probe["read"] == {
        "ok": True,
        "value": {
            "llmContent": "--- a.txt ---\nalpha\n\n--- End of content ---",
            "files": ["a.txt"],
        },
    }, probe["read"]
    assert probe["status"]["ok"] and probe["status"]["value"]["fileCount"] == 2, probe["status"]
    # VS Code lists the MCP server the extension registered (MCP: List Servers) ...
    servers = seen["mcpServers"]
    assert any(row.startswith("readmany, Running") for row in servers), servers
    # ... started it beside the files, from code-server's extension host (its process
    # group): `readmany mcp --root <the workspace folder>`, `--no-daemon` as the window
    # has a server of its own (readmany.shared off) ...
    assert len(mcp_servers) == 1, mcp_servers
    [(mcp_pid, mcp_cmdline)] = mcp_servers.items()
    assert mcp_cmdline[-4:] == ["mcp", "--root", str(code_server["ws"]), "--no-daemon"]
    assert _process_group(mcp_pid) == code_server["pid"]
    # ... and lists its tools for the model, which answer.
    assert probe["mcpStart"]["ok"], probe["mcpStart"]
    mcp_tools = {"mcp_readmany_read_many_files", "mcp_readmany_list_files"}
    assert mcp_tools <= set(probe["allTools"]), probe["allTools"]
    # VS Code 1.139 hands the model a result's structuredContent (as JSON) in place of
    # its text blocks when it has one; the extension starts the server with
    # READMANY_MCP_STRUCTURED_TEXT, so that JSON holds the text (llmContent), the file's
    # content included, beside the per-file results.
    assert probe["invokeMcpTool"]["ok"], probe["invokeMcpTool"]
    model_facing = json.loads(probe["invokeMcpTool"]["value"])
    assert model_facing["llmContent"] == "--- a.txt ---\nalpha\n\n--- End of content ---"
    assert model_facing["files"][0]["path"] == "a.txt"
    assert model_facing["files"][0]["status"] == "ok"
    # One read tool for the model: the Language Model Tool is not registered (VS Code
    # still knows its contribution, hidden by its `when` clause).
    assert seen["toolShownBefore"] is False
    assert "registered" in probe["invokeTool"]["error"], probe["invokeTool"]
    # readmany.mcpServer.alsoLanguageModelTool: both; the tool answers through
    # vscode.lm.invokeTool.
    both = seen["probeBoth"]
    assert seen["toolShownAfter"] is True
    assert both["invokeTool"]["ok"], both["invokeTool"]
    assert "--- src/m.py ---\nprint('m')" in both["invokeTool"]["value"]
    assert mcp_tools <= set(both["allTools"]), both["allTools"]
    # Every palette command.
    assert "--- a.txt ---\nalpha\n\n--- src/m.py ---\nprint('m')" in seen["openInEditor"]
    assert seen["clipboard"] == "--- a.txt ---\nalpha\n\n--- End of content ---"
    assert re.match(r"^readmany \d", seen["refreshStatus"])
    assert "Read Many Files" in seen["showOutput"]
    assert after["status"]["value"]["pid"] != probe["status"]["value"]["pid"]  # restarted
    assert re.match(r"^readmany \d", seen["statusBarAfterRestart"])
    # The server process the extension started: `readmany serve --stdio`, alive.
    assert "serve" in server_cmdline and "--stdio" in server_cmdline, server_cmdline
