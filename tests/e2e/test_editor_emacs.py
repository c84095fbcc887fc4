"""The Emacs package (editors/emacs) against the real server.

Runs the ERT suite ``editors/emacs/test/readmany-test.el`` in ``emacs --batch``: through
``readmany-read`` (jsonrpc.el, its own connection) and through Eglot (``readmany-eglot``,
then ``jsonrpc-request`` on ``eglot--current-server-or-lose``), with this checkout's
``readmany`` as ``serve --stdio`` and as ``lsp`` (the bridge to the shared daemon).
Skipped when Emacs 27+ or Eglot is missing, failed instead when ``CI`` is set.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.editor_support import REPO, missing, readmany_cmd
from tests.e2e.editor_support import editor_env as editor_support_env

TIMEOUT = 40  # seconds for the whole editor run
INSTALL = "apt-get install emacs-nox elpa-eglot (Eglot is built into Emacs 29+)"
PROBE = "(kill-emacs (cond ((< emacs-major-version 27) 4) ((not (require 'eglot nil t)) 3) (t 0)))"


@pytest.fixture
def emacs() -> str:
    path = shutil.which("emacs")
    if path is None:
        missing(f"Emacs not found: {INSTALL}")
    assert path is not None
    # Without -Q: Debian activates its elpa-* packages (eglot) from site-start.
    probe = subprocess.run(
        [path, "--batch", "--eval", PROBE], capture_output=True, timeout=TIMEOUT, check=False
    )
    if probe.returncode == 4:
        missing(f"Emacs 27+ needed (jsonrpc.el): {INSTALL}")
    elif probe.returncode == 3:
        missing(f"Eglot not found: {INSTALL}")
    elif probe.returncode != 0:
        pytest.fail(f"emacs --batch failed: {probe.stderr!r}")
    return path


@pytest.fixture
def editor_env(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """See ``editor_support.editor_env``."""
    yield from editor_support_env(env, "rmem", ("EMACSLOADPATH", "EMACS_SERVER_FILE"))


@pytest.mark.timeout(TIMEOUT + 20)
@pytest.mark.parametrize("mode", [["serve", "--stdio"], ["lsp"]], ids=["serve-stdio", "lsp-daemon"])
def test_emacs_package_reads_through_real_server(
    emacs: str, editor_env: dict[str, str], tmp_path: Path, mode: list[str]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = dict(
        editor_env,
        READMANY_CMD=json.dumps([*readmany_cmd(), *mode]),
        READMANY_TEST_ROOT=str(workspace),
    )
    args = [
        emacs,
        "--batch",
        "-L",
        "editors/emacs",
        "-l",
        "editors/emacs/test/readmany-test.el",
        "-f",
        "ert-run-tests-batch-and-exit",
    ]
    try:
        try:
            proc = subprocess.run(
                args,
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"emacs did not finish within {TIMEOUT} s:\n{exc.stdout!r}\n{exc.stderr!r}")
        report = (
            f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
        )
        assert proc.returncode == 0, report
        assert "0 unexpected" in proc.stderr, report
        assert "skipped" not in proc.stderr.split("Ran ")[-1], report
    finally:
        if mode == ["lsp"]:
            subprocess.run(
                [*readmany_cmd(), "stop"], env=env, capture_output=True, timeout=30, check=False
            )
    if mode == ["lsp"]:
        status = subprocess.run(
            [*readmany_cmd(), "status"], env=env, capture_output=True, timeout=30, check=False
        )
        assert status.returncode == 3, "the shared daemon still runs after readmany stop"
