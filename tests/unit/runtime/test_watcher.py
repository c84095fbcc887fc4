"""The watcher in process: a real ``Watcher`` over a real tree and index, without a
daemon, for what the end-to-end tests cannot provoke: the watch limit, a kernel queue
overflow, the observer backend used off Linux, the watch set following the index.

Waits are deadline-bounded polls (``wait_for``) or the cookie barrier itself.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from readmany_daemon.index.model import Index
from readmany_daemon.rules.kinds import ALL
from readmany_daemon.runtime.watcher import Watcher
from readmany_daemon.settings import Settings
from tests.helpers import git, write_tree

T = TypeVar("T")
pytestmark = pytest.mark.skipif(not os.path.exists("/proc/sys/fs/inotify"), reason="inotify")


def wait_for(condition: Callable[[], T], timeout: float = 10.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout} s (last: {value!r})")
        time.sleep(0.01)


class Rig:
    """A tree, its index, its lock and a started watcher."""

    def __init__(self, root: Path, cookies: Path | None, **kw: Any) -> None:
        self.root = root
        self.index = Index.build(str(root), Settings())
        self.lock = threading.Lock()
        self.resets = 0
        self.watcher = Watcher(
            str(root),
            self.index,
            self.lock,
            cookie_dir=str(cookies) if cookies else None,
            on_reset=self._reset,
            reconcile_interval=3600,
            **kw,
        )
        self.watcher.start()
        assert self.watcher.wait_started(10)

    def _reset(self) -> None:
        self.resets += 1

    def fresh(self) -> list[str]:
        """Barrier, then every visible file."""
        with self.lock:
            assert self.watcher.barrier(), self.watcher.warnings
            return self.index.files()

    def as_is(self) -> list[str]:
        with self.lock:
            return self.index.files()


@pytest.fixture
def rigs(tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    made: list[Rig] = []

    def make(files: dict[str, str], **kw: Any) -> Rig:
        root = tmp_path / f"ws{len(made)}"
        write_tree(root, files)
        rig = Rig(root, tmp_path / f"cookies{len(made)}", **kw)
        made.append(rig)
        return rig

    yield make
    for rig in made:
        rig.watcher.stop()


def test_barrier_sees_every_finished_write(rigs: Callable[..., Rig]) -> None:
    rig = rigs({"a/x.txt": ""})
    assert rig.watcher.state == "running"
    for i in range(100):
        write_tree(rig.root, {f"d{i % 7}/e{i}/f{i}.txt": ""})
        assert f"d{i % 7}/e{i}/f{i}.txt" in rig.fresh()
    # the watches follow the index: one per walked folder, no more
    assert set(rig.watcher._table._by_rel) == set(rig.index.walked_dirs())
    shutil.rmtree(rig.root / "d3")
    os.rename(rig.root / "d4", rig.root / "a" / "moved")
    rig.fresh()
    assert set(rig.watcher._table._by_rel) == set(rig.index.walked_dirs())
    assert rig.as_is() == Index.build(str(rig.root), Settings()).files()


def test_reading_files_raises_no_events(rigs: Callable[..., Rig]) -> None:
    rig = rigs({f"a/f{i}.txt": "x\n" for i in range(30)})
    rig.fresh()
    batches = rig.watcher.batches
    for _ in range(5):
        for i in range(30):
            (rig.root / "a" / f"f{i}.txt").read_bytes()
    rig.fresh()
    assert rig.watcher.batches == batches


def test_watch_limit_degrades_and_stays_correct(rigs: Callable[..., Rig]) -> None:
    rig = rigs({"a/1.txt": "", "b/2.txt": "", "c/3.txt": "", "c/d/4.txt": ""}, max_watches=2)
    assert rig.watcher.state == "degraded"
    assert rig.watcher.watched == 2 and rig.watcher.unwatched == 3
    assert any("watch limit" in w for w in rig.watcher.warnings)
    # writes in unwatched folders raise no event; the barrier stats those folders
    unwatched = sorted(set(rig.index.walked_dirs()) - set(rig.watcher._table._by_rel))
    for n, rel in enumerate(unwatched):
        write_tree(rig.root, {f"{rel}/new{n}.txt": "", f"{rel}/sub{n}/deep.txt": ""})
    assert rig.fresh() == Index.build(str(rig.root), Settings()).files()


def test_simulated_overflow_rescans_and_resets_the_clock(rigs: Callable[..., Rig]) -> None:
    rig = rigs({"a/1.txt": "", ".gitignore": ""})
    rig.fresh()
    # as if the kernel had dropped these events: write, then report the overflow
    write_tree(rig.root, {"lost/x.txt": "", "a/2.txt": ""})
    (rig.root / ".gitignore").write_text("a/\n")
    rig.watcher.on_queue_overflow()
    assert rig.watcher.state == "degraded"
    wait_for(lambda: rig.resets == 1)
    wait_for(lambda: rig.watcher.state == "running")
    assert any("overflow" in w for w in rig.watcher.warnings)
    assert rig.fresh() == [".gitignore", "lost/x.txt"]


def test_kernel_queue_overflow(rigs: Callable[..., Rig]) -> None:
    try:
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except OSError:
        pytest.skip("no max_queued_events")
    if limit > 20_000:
        pytest.skip(f"max_queued_events is {limit}: too many files to overflow it here")
    rig = rigs({"f/keep.txt": ""})
    rig.fresh()
    folder = rig.root / "f"
    # Hold watchdog's reader thread (it takes its instance's lock around every read, in
    # 7.1.0 and 7.1.1; 7.1.1's unbounded buffer queue would absorb the burst if only its
    # dispatcher were held): the kernel queue fills up and overflows.
    with rig.watcher._fd._lock:
        for i in range(limit + 200):
            os.close(os.open(folder / f"n{i}", os.O_CREAT | os.O_WRONLY, 0o600))
    wait_for(lambda: rig.resets >= 1, 30)
    wait_for(lambda: rig.watcher.state == "running", 30)
    assert len(rig.fresh()) == limit + 201


def test_observer_backend_without_cookies(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a/x.txt": "", "node_modules/m.js": ""})
    rig = Rig(root, None, backend="observer")
    try:
        assert rig.watcher.state == "running"
        with rig.lock:
            assert rig.watcher.barrier() is False  # no cookies: the caller stats
        write_tree(root, {"a/y.txt": "", "b/z.txt": ""})
        wait_for(lambda: rig.as_is() == ["a/x.txt", "a/y.txt", "b/z.txt"])
        (root / "a" / "x.txt").unlink()
        wait_for(lambda: rig.as_is() == ["a/y.txt", "b/z.txt"])
    finally:
        rig.watcher.stop()


def test_git_index_and_info_exclude(git_env: Path, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write_tree(root, {".gitignore": "*.gen\n", "src/a.py": "", "src/b.gen": ""})
    git(root, "init", "-q")
    rig = Rig(root, tmp_path / "cookies")
    try:
        assert rig.fresh() == [".gitignore", "src/a.py"]
        git(root, "add", "-f", "src/b.gen")  # .git/index changes: no event in the tree
        wait_for(lambda: rig.as_is() == [".gitignore", "src/a.py", "src/b.gen"])
        (root / ".git" / "info").mkdir(exist_ok=True)
        (root / ".git" / "info" / "exclude").write_text("*.py\n")
        wait_for(lambda: rig.as_is() == [".gitignore", "src/b.gen"])
        assert rig.index.glob("**/*.gen", ALL) == ["src/b.gen"]
    finally:
        rig.watcher.stop()


def test_stop_is_idempotent_and_cleans_up(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": ""})
    cookies = tmp_path / "c"
    rig = Rig(root, cookies)
    rig.fresh()
    assert cookies.is_dir() and not list(cookies.iterdir())  # cookies are removed after use
    rig.watcher.stop()
    rig.watcher.stop()
    assert rig.watcher.state == "stopped" and not cookies.exists()
    with rig.lock:
        assert rig.watcher.barrier() is False


def test_a_quiet_queue_needs_no_cookie(rigs: Callable[..., Rig]) -> None:
    """With nothing queued in the kernel and every read batch handled, the barrier vouches
    without a cookie (runtime/inotify.py); the index is still exact."""
    rig = rigs({"a/x.txt": ""})
    rig.fresh()
    trips = rig.watcher.cookie_round_trips
    for _ in range(20):
        rig.fresh()
    assert rig.watcher.cookie_round_trips == trips
    write_tree(rig.root, {"a/y.txt": ""})
    assert "a/y.txt" in rig.fresh()


def test_barrier_exact_while_a_writer_races_it(rigs: Callable[..., Rig]) -> None:
    """A thread keeps creating files, then deleting them, while barriers run: each
    barrier's index holds every file whose creation finished before it, and none whose
    deletion did (the quiet-queue check and the cookie route race the reader thread)."""
    rig = rigs({"w/keep.txt": ""})
    rig.fresh()
    done = -1
    stop = threading.Event()

    def writer(deleting: bool) -> None:
        nonlocal done
        i = 0
        while not stop.is_set() and i < 20_000:
            path = rig.root / "w" / f"n{i}"
            if deleting:
                if not path.exists():
                    break
                path.unlink()
            else:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            done = i
            i += 1

    for deleting in (False, True):
        done = -1
        stop.clear()
        thread = threading.Thread(target=writer, args=(deleting,))
        thread.start()
        try:
            checked = 0
            deadline = time.monotonic() + 1.0
            while thread.is_alive() and (time.monotonic() < deadline or checked < 30):
                finished = done
                files = set(rig.fresh())
                if finished >= 0:
                    assert (f"w/n{finished}" in files) is not deleting, (deleting, finished)
                checked += 1
        finally:
            stop.set()
            thread.join()
        assert rig.fresh() == Index.build(str(rig.root), Settings()).files()
