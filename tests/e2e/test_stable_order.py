"""``order: "stable"`` end to end (PROTOCOL §3 ``order``): the same bytes through the
daemon, on another connection (another agent), after a daemon restart and in process
(``--no-daemon``), which reads the order the daemon keeps beside the root's snapshot
(0600 in the 0700 cache folder, never in the workspace); a changed file goes last in
every one of them."""

from __future__ import annotations

import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from tests.e2e.daemon_helpers import Daemon, cli, fresh_daemon
from tests.helpers import git, write_tree

daemon = fresh_daemon  # the fixture (tests/e2e/daemon_helpers.py)

#: Committed oldest first: the seed's order, not path order.
HISTORY = ["src/z.py", "src/b.py", "src/y.py", "src/a.py"]

REQUEST: dict[str, Any] = {"paths": ["src/**/*.py"], "order": "stable", "sync": "stat"}


def _repo(root: Path, env: dict[str, str]) -> None:
    root.mkdir()
    git(root, "init", "-q", env=env)
    for n, rel in enumerate(HISTORY):
        write_tree(root, {rel: f"# {rel}\n" * 4})
        when = f"@{1_600_000_000 + n * 3600} +0000"
        git(root, "add", rel, env=env)
        git(
            root,
            "commit",
            "-q",
            "-m",
            rel,
            env={**env, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when},
        )


def _through_daemon(daemon: Daemon, root: Path) -> str:
    with daemon.session(root) as client:
        text: str = client.request("readMany/read", REQUEST)["llmContent"]
    return text


def _in_process(daemon: Daemon, root: Path) -> str:
    proc = cli(daemon.env, "read", "--no-daemon", "--root", str(root), "--order", "stable",
               "src/**/*.py")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.removesuffix("\n")


def _files(text: str) -> list[str]:
    return [line[4:-4] for line in text.splitlines() if line.startswith("--- src/")]


def test_stable_answers_are_the_same_bytes_everywhere_and_a_change_goes_last(
    daemon: Daemon, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    _repo(root, daemon.env)
    daemon.start()
    first = _through_daemon(daemon, root)
    assert _files(first) == HISTORY
    assert _through_daemon(daemon, root) == first  # another connection: another agent
    assert _in_process(daemon, root) == first
    daemon.stop()
    daemon.start()
    assert _through_daemon(daemon, root) == first  # after a restart

    cache = Path(daemon.env["XDG_CACHE_HOME"]) / "readmany"
    kept = list(cache.glob("index-*.order"))
    assert len(kept) == 1
    assert stat.S_IMODE(kept[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert sorted(p.name for p in (root / "src").iterdir()) == ["a.py", "b.py", "y.py", "z.py"]
    assert sorted(p.name for p in root.iterdir()) == [".git", "src"]

    time.sleep(0.02)
    write_tree(root, {"src/b.py": "# b, changed\n"})
    moved = ["src/z.py", "src/y.py", "src/a.py", "src/b.py"]
    changed = _through_daemon(daemon, root)
    assert _files(changed) == moved
    # In process, the order the daemon moved b.py in is read, not seeded again from git.
    assert _in_process(daemon, root) == changed
    daemon.stop()
    daemon.start()
    assert _through_daemon(daemon, root) == changed
    assert os.path.exists(kept[0])


#: A task done before: the past commit's message matches the focus, its file's text
#: does not; the text of another file does (the ranking's signals disagree).
FOCUSED: dict[str, str] = {
    "src/alarm.py": "def quell(level):\n    return level - 1\n" * 30,
    "src/notes.py": "# the warning of a quokka is rare\n" + "VALUE = 1\n" * 60,
    **{f"src/m{n}.py": f"def step_{n}(x):\n    return x + {n}\n" * 30 for n in range(4)},
}


def _focused_repo(root: Path, env: dict[str, str]) -> None:
    root.mkdir()
    git(root, "init", "-q", env=env)
    write_tree(root, FOCUSED)
    git(root, "add", ".", env=env)
    git(root, "commit", "-qm", "Initial import", env=env)
    write_tree(root, {"src/alarm.py": FOCUSED["src/alarm.py"] + "# quieter\n"})
    git(root, "commit", "-qam", "Quell the quokka warning when it repeats", env=env)
    write_tree(root, {f"src/m{n}.py": FOCUSED[f"src/m{n}.py"] + "# tidied\n" for n in range(4)})
    git(root, "commit", "-qam", "Tidy the steps", env=env)  # more recent than the task's


def test_a_focused_stable_answer_is_the_same_bytes_in_process_once_complete(
    daemon: Daemon, tmp_path: Path
) -> None:
    """With ``focus`` the ranking decides what gets in; its complete answer
    (``pendingFiles`` 0: git's answers, the past commits, the graph's tags) is the
    same bytes through the daemon and in process. In-process answers ranked without
    the past commits and with the tags of 50 ms, and differed while saying complete."""
    root = tmp_path / "ws"
    _focused_repo(root, daemon.env)
    request = {**REQUEST, "focus": "quokka warning", "maxTotalTokens": 1000}
    daemon.start()
    with daemon.session(root) as client:
        for _ in range(600):  # until the daemon's ranking is complete
            got = client.request("readMany/read", request)
            if got["summary"]["ranking"]["pendingFiles"] == 0:
                break
            time.sleep(0.05)
    assert got["summary"]["ranking"]["pendingFiles"] == 0, got["summary"]
    assert "src/alarm.py" in _files(got["llmContent"]), got["llmContent"]
    proc = cli(daemon.env, "read", "--no-daemon", "--root", str(root), "--json",
               "--params", json.dumps(request))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    alone = json.loads(proc.stdout)
    assert alone["summary"]["ranking"]["pendingFiles"] == 0, alone["summary"]
    # the cursor's time (its last 26 digits) is the one byte run that may differ
    assert _timeless(alone["llmContent"]) == _timeless(got["llmContent"])


def _timeless(text: str) -> str:
    return re.sub(r"\.\d{26}\b", ".", text)
