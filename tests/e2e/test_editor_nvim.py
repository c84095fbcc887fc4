"""The Neovim plugin (editors/nvim) against the real server.

Runs ``editors/nvim/tests/run.lua`` in a headless Neovim (0.7+, as Debian 12 ships it):
the plugin starts this checkout's ``readmany`` (``serve --stdio`` and ``lsp``, the bridge
to the shared daemon), reads real files of a temp workspace through
``require('readmany').read`` and ``:ReadMany``, and checks the answers, including an
unsaved buffer winning over disk. Skipped when ``nvim`` is missing, failed instead when
``CI`` is set.
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

RUN_LUA = "editors/nvim/tests/run.lua"
TIMEOUT = 40  # seconds for the whole editor run
INSTALL = "apt-get install neovim (any Neovim 0.7+; Debian 12 ships 0.7.2)"


@pytest.fixture
def nvim() -> str:
    path = shutil.which("nvim")
    if path is None:
        missing(f"Neovim not found: {INSTALL}")
    assert path is not None
    version = subprocess.run(
        [
            path,
            "--headless",
            "-u",
            "NONE",
            "--cmd",
            "if has('nvim-0.7') | qall! | else | cquit 3 | endif",
        ],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    if version.returncode != 0:
        missing(f"Neovim 0.7+ needed: {INSTALL}")
    return path


@pytest.fixture
def editor_env(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """See ``editor_support.editor_env``."""
    yield from editor_support_env(env, "rmnv", ("NVIM", "NVIM_LISTEN_ADDRESS", "VIMINIT"))


def lsp_log(env: dict[str, str]) -> str:
    for base in ("XDG_STATE_HOME", "XDG_CACHE_HOME"):
        log = Path(env.get(base, "/nonexistent")) / "nvim" / "lsp.log"
        if log.is_file():
            return "\n--- lsp.log (tail) ---\n" + log.read_text(errors="replace")[-3000:]
    return ""


@pytest.mark.timeout(TIMEOUT + 20)
@pytest.mark.parametrize("mode", [["serve", "--stdio"], ["lsp"]], ids=["serve-stdio", "lsp-daemon"])
def test_nvim_plugin_reads_through_real_server(
    nvim: str, editor_env: dict[str, str], tmp_path: Path, mode: list[str]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = dict(
        editor_env,
        READMANY_CMD=json.dumps([*readmany_cmd(), *mode]),
        READMANY_TEST_ROOT=str(workspace),
    )
    try:
        try:
            proc = subprocess.run(
                [
                    nvim,
                    "--headless",
                    "-u",
                    "NONE",
                    "--cmd",
                    "set rtp+=editors/nvim",
                    "-c",
                    f"luafile {RUN_LUA}",
                ],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            output = f"{exc.stdout!r}\n{exc.stderr!r}{lsp_log(env)}"
            pytest.fail(f"nvim did not finish within {TIMEOUT} s:\n{output}")
        report = (
            f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
        )
        assert proc.returncode == 0, report + lsp_log(env)
        assert "checks passed" in proc.stdout, report
        assert "FAIL" not in proc.stderr, report
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
