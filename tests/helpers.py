"""Plain helpers shared by every test folder: one git runner, one tree writer, one
private process environment. (Fixtures live in ``tests/conftest.py``.)

- ``git``: git with ``core.fsmonitor=false`` (no daemon left behind, no hook answering
  for the file system) and ``protocol.file.allow=always`` (local submodules), raising
  on failure with git's stderr in the message.
- ``write_tree``: files (relative POSIX path -> text or bytes; text as UTF-8) under a
  folder.
- ``GIT_ENV`` / ``make_env``: the git variables every test runs git under (no system
  config, a committer identity) and a whole process environment with a private HOME
  and XDG folders for the ``readmany`` processes a test starts.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from readmany_daemon.engine import answer as engine_answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.wire.cursor import read_request
from readmany_daemon.wire.messages import ReadManyParams, ReadManyResult

__all__ = ["GIT_ENV", "answer", "git", "make_env", "write_tree"]

#: Git variables for every git a test runs: no system config (``HOME`` is private, so
#: there is no global config or excludes file either) and a committer identity.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(cwd: Path | str, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run ``git ARGS`` in ``cwd`` (fsmonitor off) under ``env`` (None: this process's
    environment) and return its stdout (undecodable bytes kept as surrogate escapes, as
    ``os.fsdecode`` does). A failure raises ``CalledProcessError`` carrying stderr."""
    proc = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(
            proc.returncode, proc.args, proc.stdout, os.fsdecode(proc.stderr)
        )
    return os.fsdecode(proc.stdout)


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Create ``files`` (relative POSIX path -> content; text is written as UTF-8) under
    ``root``, with their parent folders."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


def make_env(home: Path, runtime: Path | None = None) -> dict[str, str]:
    """A process environment with a private ``home`` and XDG folders below it (no user
    git config, no global excludes, no ``READMANY_*`` or ``GIT_*`` variable of the
    caller), ``GIT_ENV`` and ``READMANY_NO_DAEMON=1``. ``runtime`` is the
    ``XDG_RUNTIME_DIR`` (created 0700); by default a new short ``/tmp/rmw…`` folder, so
    that a daemon socket path fits ``sun_path`` (whoever made it removes it; directly in
    ``/tmp``, not in the session's 0700 folder, so that tests can let other users in)."""
    home.mkdir(parents=True, exist_ok=True)
    if runtime is None:
        runtime = Path(tempfile.mkdtemp(prefix="rmw", dir="/tmp"))
    else:
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("READMANY_", "GIT_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_RUNTIME_DIR=str(runtime),
        READMANY_NO_DAEMON="1",
        **GIT_ENV,
    )
    return env


def answer(ws: Workspace, params: ReadManyParams) -> ReadManyResult:
    """``engine.answer.answer`` for validated ``params`` whose cursor (if any) is not yet
    decoded: decodes it as an adapter's edge would (``wire.cursor.read_request``)."""
    return engine_answer.answer(ws, read_request(params))
