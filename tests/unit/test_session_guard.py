"""The session guard (tests/session_guard.py, issue 17) fails a run that leaks.

Each case runs an inner pytest (a subprocess, with this repository's conftest as a
plugin) on a tiny test file, its "real" HOME and XDG folders pointing at a temporary
folder: a test that leaves a sleeping process named like readmany, or writes into the
real readmany state folder, makes the inner run fail with the guard's message; a clean
one passes. Also: the guard's folders are the package's, and the isolation holds here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from readmany_daemon.client import runtime_dir
from readmany_daemon.index.snapshot import cache_dir
from readmany_daemon.launch import default_log_path
from tests.e2e.daemon_helpers import wait_for
from tests.session_guard import MESSAGE, TOKEN_VAR, real_folders

REPO = Path(__file__).resolve().parents[2]

LEAK_PROCESS = """
import os, subprocess, sys

def test_leaks_a_process():
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "readmany_daemon-leak"],
        start_new_session=True,
    )
    with open(os.environ["LEAK_PID_FILE"], "w") as f:
        f.write(str(proc.pid))
"""

LEAK_FILE = """
import os

def test_leaks_a_file():
    folder = os.path.join(os.environ["LEAK_STATE_HOME"], "readmany")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "daemon.log"), "w") as f:
        f.write("oops\\n")
"""

CLEAN = """
import os, subprocess, sys

def test_clean(tmp_path):
    home = os.environ["HOME"]
    assert home != os.environ["LEAK_REAL_HOME"]
    # a readmany process that ends is no leak; nor is a file in the private folders
    subprocess.run([sys.executable, "-c", "pass", "readmany_daemon-ok"], check=True)
    os.makedirs(os.path.join(os.environ["XDG_STATE_HOME"], "readmany"))
"""


def run_inner(tmp_path: Path, source: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run ``source`` as a test file under the guard, with a temporary 'real' HOME."""
    real = tmp_path / "real"
    (real / "state").mkdir(parents=True)
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "test_inner.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != TOKEN_VAR}
    env.update(
        HOME=str(real),
        XDG_STATE_HOME=str(real / "state"),
        XDG_CACHE_HOME=str(real / "cache"),
        XDG_RUNTIME_DIR=str(real / "run"),
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
        RMTEST_GUARD_GRACE="0.5",
        LEAK_PID_FILE=str(tmp_path / "pid"),
        LEAK_STATE_HOME=str(real / "state"),
        LEAK_REAL_HOME=str(real),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path / "inner"),
            "-c",
            os.devnull,
            str(tmp_path / "inner" / "test_inner.py"),
        ],
        cwd=tmp_path / "inner",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, real


def test_a_leaked_process_fails_the_run(tmp_path: Path) -> None:
    proc, _ = run_inner(tmp_path, LEAK_PROCESS)
    pid_file = tmp_path / "pid"
    try:
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "1 passed" in proc.stdout
        assert MESSAGE in proc.stdout
        pid = int(pid_file.read_text())
        assert f"process {pid} still alive" in proc.stdout
        assert "readmany_daemon-leak" in proc.stdout
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_file_in_the_real_state_folder_fails_the_run(tmp_path: Path) -> None:
    proc, real = run_inner(tmp_path, LEAK_FILE)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert MESSAGE in proc.stdout
    assert f"new in the real readmany folder: {real / 'state' / 'readmany'}/daemon.log" in (
        proc.stdout
    )


def test_a_clean_run_passes(tmp_path: Path) -> None:
    proc, real = run_inner(tmp_path, CLEAN)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert MESSAGE not in proc.stdout
    assert not (real / "state" / "readmany").exists()


def test_the_guard_watches_the_packages_folders(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    package = [runtime_dir(env), os.path.dirname(default_log_path(env)), cache_dir(env)]
    assert real_folders(env) == package
    assert real_folders(env) == [
        f"{tmp_path}/run/readmany",
        f"{tmp_path}/state/readmany",
        f"{tmp_path}/cache/readmany",
    ]


def test_this_session_runs_with_private_folders() -> None:
    """HOME and the XDG folders are the session's own, also in a process a test starts."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; print(os.environ['HOME']); print(os.environ['XDG_RUNTIME_DIR']);"
            f"print(os.environ[{TOKEN_VAR!r}])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    assert out[0].startswith("/tmp/rmh") and out[1] == f"{out[0]}/run" and len(out[2]) == 32


def test_a_killed_test_process_gets_its_machine_settings_back(tmp_path: Path) -> None:
    """tests/machine_settings.py: SIGKILL while a setting is changed; the guard process
    writes the original back (a plain file stands in for the /proc/sys one)."""
    setting = tmp_path / "setting"
    setting.write_text("5\n")
    code = (
        "import time; from tests.machine_settings import changed\n"
        f"with changed([{str(setting)!r}]) as c:\n"
        f"    c.set({str(setting)!r}, 1); print('set', flush=True); time.sleep(120)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(
            os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
        ),
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "set\n"
        assert setting.read_text() == "1\n"
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    wait_for(lambda: setting.read_text() == "5\n", 60)
