"""The runtime in process, with no server, socket or daemon: overlays, the change log,
root reference counts and eviction, the freshness routes (cookie barrier, stat route,
none) with fake or idle watchers, status, and ``Service.*_sync`` through a real
``Workspace`` over ``tmp_path`` (``watch=False``: every ``sync: "auto"`` answer takes the
stat route)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from readmany_daemon.engine.workspace import Overlay, Workspace
from readmany_daemon.errors import Cancelled, RootNotFound
from readmany_daemon.index.model import Index
from readmany_daemon.racy import RACY_NS
from readmany_daemon.runtime import changelog
from readmany_daemon.runtime.changelog import SNAPSHOTS_KEPT, ChangeLog
from readmany_daemon.runtime.freshness import Freshness, stat_route, sweep_cookie_roots
from readmany_daemon.runtime.inotify import watchdog_version
from readmany_daemon.runtime.overlays import OverlayStore
from readmany_daemon.runtime.requests import Jobs, RequestContext, checkpoint, current_context
from readmany_daemon.runtime.roots import RootEntry, index_key
from readmany_daemon.runtime.service import Service
from readmany_daemon.runtime.status import cache_status, overall_state, watcher_status
from readmany_daemon.runtime.watcher import Watcher
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import decode_read_request
from readmany_daemon.wire.decode import decode_files_params
from readmany_daemon.wire.messages import to_builtins
from readmany_daemon.wire.replies import CacheStatus, ChangedSinceResult
from tests.helpers import write_tree

OLD = time.time() - 3600  # an mtime outside the racy window: whole reads get cached


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "one\n", "src/b.py": "hi\n"})
    for path in (root / "a.txt", root / "src/b.py"):
        os.utime(path, (OLD, OLD))
    return Path(os.path.realpath(root))


@pytest.fixture()
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # cookie folders stay in here
    svc = Service(Settings(), watch=False, snapshots=False, warm_cache=False)
    try:
        yield svc
    finally:
        svc.close()


def read(svc: Service, entry: RootEntry, conn: int = 1, **params: Any) -> str:
    """``llmContent`` of a ``readMany/read`` run as connection ``conn``."""
    result = svc.call(RequestContext(conn), svc.read_sync, entry, decode_read_request(params))
    return result.llm_content


def listed(svc: Service, entry: RootEntry, **params: Any) -> list[str]:
    result = svc.call(RequestContext(1), svc.files_sync, entry, decode_files_params(params))
    return [f.path for f in result.files]


class FakeWatcher:
    """The part of ``Watcher`` the freshness barrier and status use, scripted."""

    def __init__(self, vouches: bool, *, root_lost: bool = False) -> None:
        self.vouches = vouches
        self.root_lost = root_lost
        self.calls: list[tuple[str, Any]] = []
        self.stopped = threading.Event()
        self.state = "running"
        self.warnings = ["w1"]
        self.watched, self.unwatched, self.batches = 3, 1, 7
        self.broken: str | None = None
        self.barrier_kind, self.barrier_reason, self.cookies_ready = "quiet-queue", "", True

    def barrier(self, timeout: float = 2.0, since: float | None = None) -> bool:
        self.calls.append(("barrier", since))
        return self.vouches

    def drain(self) -> None:
        self.calls.append(("drain", None))

    def wait_started(self, timeout: float | None = None) -> bool:
        return True

    def stop(self) -> None:
        self.stopped.set()


# ------------------------------------------------------------------------------ overlays


def test_overlay_is_seen_by_its_owner_and_shared_ones_by_others() -> None:
    store = OverlayStore()
    store.put("/w/a.py", 1, "private", 1, shared=False)
    assert store.lookup("/w/a.py", 1) == Overlay("private", 1)
    assert store.lookup("/w/a.py", 2) is None
    assert store.lookup("/w/a.py", None) is None
    assert store.lookup("/w/other.py", 1) is None

    store.put("/w/a.py", 3, "shared by 3", 5, shared=True)
    assert store.lookup("/w/a.py", 2) == Overlay("shared by 3", 5)
    assert store.lookup("/w/a.py", None) == Overlay("shared by 3", 5)
    assert store.lookup("/w/a.py", 1) == Overlay("private", 1)  # its own buffer wins

    store.set_shared(1, True)  # ``shareOverlays`` turned on: 1's buffer is older than 3's
    assert store.lookup("/w/a.py", 2) == Overlay("shared by 3", 5)
    store.put("/w/a.py", 1, "private v2", 2, shared=True)  # now 1's is the latest change
    assert store.lookup("/w/a.py", 2) == Overlay("private v2", 2)
    assert len(store) == 2


def test_overlay_close_and_dropped_connection() -> None:
    store = OverlayStore()
    store.put("/w/a.py", 1, "a1", 1, shared=True)
    store.put("/w/b.py", 1, "b1", 1, shared=True)
    store.put("/w/a.py", 2, "a2", 1, shared=True)
    store.close("/w/a.py", 2)
    assert store.lookup("/w/a.py", 2) == Overlay("a1", 1)
    store.close("/w/a.py", 2)  # closing twice is harmless
    assert store.drop_connection(1) == 2
    assert store.drop_connection(1) == 0
    assert store.lookup("/w/a.py", 2) is None and store.lookup("/w/b.py", 2) is None
    assert len(store) == 0


def test_service_reads_overlays_per_connection(service: Service, tree: Path) -> None:
    entry = service.acquire(str(tree), Settings())
    service.overlays.put(str(tree / "a.txt"), 1, "buffer of 1\n", 4, shared=False)
    assert "buffer of 1" in read(service, entry, 1, paths=["a.txt"])
    assert "one" in read(service, entry, 2, paths=["a.txt"])  # 2 reads the disk
    service.overlays.set_shared(1, True)
    assert "buffer of 1" in read(service, entry, 2, paths=["a.txt"])
    service.disconnect(1)
    assert "one" in read(service, entry, 2, paths=["a.txt"])
    assert len(service.overlays) == 0


# ---------------------------------------------------------------------------- change log


def test_changelog_answers_by_last_state_and_only_once_attached() -> None:
    log = ChangeLog()
    log.record(1, "a", False)
    assert log.since(0) is None  # not attached: cannot tell
    log.attached = True
    log.record(2, "b", False)
    log.record(3, "a", True)
    log.record(4, "c", True)
    log.record(5, "c", False)
    assert log.since(0) == (["b", "c"], ["a"])
    assert log.since(2) == (["c"], ["a"])
    assert log.since(5) == ([], [])


def test_changelog_that_dropped_entries_cannot_answer_for_older_clocks() -> None:
    log = ChangeLog(limit=3)
    log.attached = True
    for gen, rel in enumerate(["a", "b", "c", "d", "e"], start=1):
        log.record(gen, rel, False)
    # Entries of generations 1 and 2 were dropped: clocks before 2 cannot be answered.
    assert log.since(0) is None
    assert log.since(1) is None
    assert log.since(2) == (["c", "d", "e"], [])
    assert log.since(4) == (["e"], [])


# --------------------------------------------------------------------------------- roots


def test_acquire_shares_a_root_per_folder_and_index_settings(service: Service, tree: Path) -> None:
    a = service.acquire(str(tree), Settings())
    b = service.acquire(str(tree / "src" / ".."), Settings())
    assert a is b and a.refs == 2
    other = service.acquire(str(tree), Settings(max_file_bytes=1000))
    assert other is not a and other.refs == 1
    same = service.acquire(str(tree), Settings(log_level="DEBUG", share_overlays=False))
    assert same is a and a.refs == 3  # per-connection settings share the root
    assert a.key == (str(tree), *index_key(Settings()))
    assert a.ws.instance != other.ws.instance
    assert service.roots() == [a, other]


def test_acquire_of_no_folder_names_root(service: Service, tree: Path) -> None:
    with pytest.raises(RootNotFound) as info:
        service.acquire(str(tree / "missing"), Settings())
    assert info.value.field == "$.root"
    with pytest.raises(RootNotFound):
        service.acquire(str(tree / "a.txt"), Settings())
    assert service.roots() == []


def test_release_and_eviction_follow_the_reference_count(service: Service, tree: Path) -> None:
    entry = service.acquire(str(tree), Settings())
    service.acquire(str(tree), Settings())
    limit = service.settings.idle_timeout_seconds
    fake = FakeWatcher(True)
    entry.watcher = fake  # type: ignore[assignment]
    service.release(entry)
    assert entry.refs == 1
    assert service.evict_idle(time.monotonic() + 2 * limit) == []  # still in use
    service.release(entry)
    assert entry.refs == 0
    released = entry.released_at
    assert released > 0
    assert service.evict_idle(released + limit / 2) == []  # not idle long enough
    service.release(entry)  # one release too many stays at zero
    assert entry.refs == 0
    # (a + limit) - a can round below limit: ask a millisecond later
    assert service.evict_idle(entry.released_at + limit + 0.001) == [str(tree)]
    assert service.roots() == []
    assert fake.stopped.is_set() and entry.watcher is None
    again = service.acquire(str(tree), Settings())
    assert again is not entry and again.refs == 1


def test_a_root_being_indexed_is_not_evicted(service: Service, tree: Path) -> None:
    entry = service.acquire(str(tree), Settings())
    service.release(entry)
    entry.indexing = True
    assert service.evict_idle(time.monotonic() + 1e9) == []
    entry.indexing = False
    assert service.evict_idle(time.monotonic() + 1e9) == [str(tree)]


# ---------------------------------------------------------------------------- freshness


def test_stat_route_sets_and_restores_the_flag(service: Service, tree: Path) -> None:
    entry = service.acquire(str(tree), Settings())
    service.call(RequestContext(1), service.index_sync, entry)
    index = entry.ws.index
    assert index.stat_checks is False
    with stat_route(index):
        assert index.stat_checks is True
        with stat_route(index):
            assert index.stat_checks is True
        assert index.stat_checks is True  # the inner scope restores, not clears
    assert index.stat_checks is False
    with pytest.raises(RuntimeError), stat_route(index):
        raise RuntimeError("engine failed")
    assert index.stat_checks is False


def test_without_a_watcher_auto_takes_the_stat_route(service: Service, tree: Path) -> None:
    """Watcher off: ``sync: "auto"`` sees an in-place edit and a created file; ``none``
    answers from the index as it is (the new file is not listed)."""
    entry = service.acquire(str(tree), Settings())
    assert listed(service, entry) == ["a.txt", "src/b.py"]
    assert "one" in read(service, entry, paths=["a.txt"])

    (tree / "a.txt").write_text("two\n")  # same size, in place
    (tree / "src" / "new.py").write_text("new\n")
    assert read(service, entry, paths=["src"], sync="none").count("--- src/") == 1
    text = read(service, entry, paths=["a.txt", "src"])
    assert "two" in text and "one" not in text
    assert "--- src/new.py ---\nnew" in text
    assert listed(service, entry) == ["a.txt", "src/b.py", "src/new.py"]
    assert entry.ws.index.stat_checks is False  # scoped to each answer

    (tree / "src" / "new.py").unlink()
    assert listed(service, entry) == ["a.txt", "src/b.py"]


def test_ensure_with_a_watcher_that_vouches_skips_the_stat_route(
    service: Service, tree: Path
) -> None:
    entry = service.acquire(str(tree), Settings())
    service.call(RequestContext(1), service.index_sync, entry)
    fake = FakeWatcher(vouches=True)
    entry.watcher = fake  # type: ignore[assignment]
    fresh = service.freshness
    with entry.lock, fresh.ensure(entry, "auto", since=12.5) as on_stat_route:
        assert on_stat_route is False and entry.ws.index.stat_checks is False
    assert fake.calls == [("barrier", 12.5)]
    # The barrier vouched: a file created meanwhile shows once the watcher says so,
    # not through stats (the fake never delivers it).
    (tree / "late.txt").write_text("late\n")
    assert "late.txt" not in listed(service, entry)

    fake.calls.clear()
    with entry.lock, fresh.ensure(entry, "stat") as on_stat_route:
        assert on_stat_route is True and entry.ws.index.stat_checks is True
    assert fake.calls == [("drain", None)]  # ``stat`` never asks for a cookie
    assert entry.ws.index.stat_checks is False

    fake.calls.clear()
    with entry.lock, fresh.ensure(entry, "none") as on_stat_route:
        assert on_stat_route is False and entry.ws.index.stat_checks is False
    assert fake.calls == []

    fake.vouches = False  # cannot vouch (degraded, cookie late): stat route
    with entry.lock, fresh.ensure(entry, "auto") as on_stat_route:
        assert on_stat_route is True
    assert [c[0] for c in fake.calls] == ["barrier", "drain"]
    assert "late.txt" in listed(service, entry)
    entry.watcher = None


def test_a_watcher_that_is_not_running_falls_back_to_stats(service: Service, tree: Path) -> None:
    """A real ``Watcher`` never started (state ``starting``, no cookie folder): the
    barrier declines and the answer goes through stat checks."""
    entry = service.acquire(str(tree), Settings())
    service.call(RequestContext(1), service.index_sync, entry)
    watcher = Watcher(str(tree), entry.ws.index, entry.lock)
    entry.watcher = watcher
    (tree / "src" / "c.py").write_text("c\n")
    assert listed(service, entry, patterns=["src"]) == ["src/b.py", "src/c.py"]
    assert watcher.state == "starting" and entry.ws.index.stat_checks is False
    entry.watcher = None


def test_ensure_rewatches_a_root_that_came_back(service: Service, tree: Path) -> None:
    entry = service.acquire(str(tree), Settings())
    service.call(RequestContext(1), service.index_sync, entry)
    lost = FakeWatcher(vouches=True, root_lost=True)
    entry.watcher = lost  # type: ignore[assignment]
    with entry.lock, service.freshness.ensure(entry, "auto") as on_stat_route:
        assert on_stat_route is True  # this answer stats; later ones use the new watcher
    assert lost.stopped.wait(5)
    assert isinstance(entry.watcher, Watcher) and entry.watcher is not lost
    assert lost.calls == []
    assert entry.watcher.wait_started(10)
    cookie_dir = entry.watcher._cookie_dir
    assert cookie_dir is not None and cookie_dir.startswith(os.environ["XDG_RUNTIME_DIR"])
    service.freshness.unwatch(entry)
    assert entry.watcher is None
    service.freshness.close()
    assert not os.path.exists(os.path.dirname(cookie_dir))


def test_sweep_removes_cookie_folders_of_dead_processes(tmp_path: Path) -> None:
    dead = tmp_path / "readmany-cookies-999999999-abc"
    alive = tmp_path / f"readmany-cookies-{os.getpid()}-abc"
    other = tmp_path / "readmany-cookies-x-abc"
    for folder in (dead, alive, other):
        (folder / "1").mkdir(parents=True)
    sweep_cookie_roots(str(tmp_path))
    assert not dead.exists() and alive.exists() and other.exists()


def test_watcher_reset_starts_a_new_clock_instance(service: Service, tree: Path) -> None:
    entry = service.acquire(str(tree), Settings())
    service.call(RequestContext(1), service.index_sync, entry)
    before, log = entry.ws.instance, entry.changelog
    entry.reset_clock(service.registry.new_instance())
    assert entry.ws.instance != before and entry.ws.instance.startswith(f"{os.getpid():x}.")
    assert entry.changelog is not log and entry.changelog.since(0) == ([], [])


def test_freshness_without_cookie_folder_gives_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", str(blocker))
    (tmp_path / "readmany").write_text("not a folder")
    fresh = Freshness(lambda: "x")
    assert fresh._cookie_dir() is None


# ------------------------------------------------------------------------ changedSince


def test_changed_since_answers_from_the_change_log(service: Service, tree: Path) -> None:
    """A watcher vouches (a fake one that never delivers: the index takes the changes
    through a rescan): the change log answers, with the workspace's clocks."""
    entry = service.acquire(str(tree), Settings())
    service.call(RequestContext(1), service.index_sync, entry)
    entry.watcher = FakeWatcher(vouches=True)  # type: ignore[assignment]
    first = service.call(RequestContext(1), service.changed_since_sync, "nope", entry)
    assert first.is_fresh_instance is True
    assert first.changed == ["a.txt", "src/b.py"] and first.deleted == []
    clock = first.clock
    same = service.changed_since_sync(clock, None)
    assert same == ChangedSinceResult(clock, False, [], [])

    (tree / "src" / "new.py").write_text("new\n")
    (tree / "a.txt").unlink()
    service.rescan_sync(entry)
    delta = service.changed_since_sync(clock, None)
    assert delta.is_fresh_instance is False
    assert (delta.changed, delta.deleted) == (["src/new.py"], ["a.txt"])
    assert delta.clock != clock and delta.clock == entry.ws.clock()
    entry.watcher = None


@pytest.mark.parametrize("write", ["append", "same-size-mtime-kept", "replace"])
def test_a_write_before_the_watches_are_in_is_a_change_since_an_earlier_clock(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    """A read hands out a clock while its root's watcher is still adding watches; a
    file written in place then (no folder's mtime moves, no watch saw it) was never in
    the change log, and ``changedSince`` of that clock said nothing changed, for good.
    The start now reports such files, and ``changedSince`` waits for it."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    go = threading.Event()
    watch_all = Watcher._watch_all

    def held(self: Watcher, dirs: list[str]) -> None:
        assert go.wait(30), "the test never let the watcher start"
        watch_all(self, dirs)

    monkeypatch.setattr(Watcher, "_watch_all", held)
    svc = Service(Settings(), watch=True, snapshots=False, warm_cache=False)
    try:
        entry = svc.acquire(str(tree), Settings())
        clock = svc.call(RequestContext(1), svc.read_sync, entry, decode_read_request(
            {"paths": ["**"]})).clock  # fmt: skip
        target = tree / "a.txt"
        if write == "append":
            with target.open("a") as f:
                f.write("more\n")
        elif write == "same-size-mtime-kept":
            st = target.stat()
            target.write_text("ONE\n")
            os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        else:
            (tree / "a.tmp").write_text("new\n")
            os.replace(tree / "a.tmp", target)
        go.set()
        got = svc.call(RequestContext(1), svc.changed_since_sync, clock, None)
        assert not got.is_fresh_instance and "a.txt" in got.changed, got
        assert got.clock != clock
    finally:
        go.set()
        svc.close()


def changes(svc: Service, entry: RootEntry, clock: str) -> tuple[bool, list[str], list[str]]:
    got = svc.call(RequestContext(1), svc.changed_since_sync, clock, entry)
    return got.is_fresh_instance, got.changed, got.deleted


def test_changed_since_without_a_watcher_sees_in_place_edits(service: Service, tree: Path) -> None:
    """No watcher vouches: stat snapshots answer, so an edit in place with the same
    size (no folder's mtime moves) is reported, with clocks ``instance:generation.n``."""
    entry = service.acquire(str(tree), Settings())
    first = service.call(RequestContext(1), service.changed_since_sync, "", entry)
    assert first.is_fresh_instance is True and first.changed == ["a.txt", "src/b.py"]
    clock = first.clock
    assert clock.startswith(entry.ws.clock() + ".")
    same = service.changed_since_sync(clock, None)  # nothing changed: the same clock
    assert same == ChangedSinceResult(clock, False, [], [])

    (tree / "a.txt").write_text("two\n")  # same size, in place
    os.utime(tree / "a.txt", (OLD + 1, OLD + 1))  # out of the racy window: by stat
    delta = service.changed_since_sync(clock, None)
    assert (delta.is_fresh_instance, delta.changed, delta.deleted) == (False, ["a.txt"], [])
    assert delta.clock != clock
    (tree / "src" / "b.py").unlink()
    (tree / "src" / "c.py").write_text("c\n")
    assert changes(service, entry, delta.clock) == (False, ["src/c.py"], ["src/b.py"])
    # a clock of the workspace (a read's) names no snapshot: a fresh instance
    assert changes(service, entry, entry.ws.clock())[0] is True


def test_changed_since_without_a_watcher_sees_a_racy_same_second_edit(
    service: Service, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit within the snapshot's timestamp tick, leaving size and mtime as they
    were, is found by the content hash taken while the file was racy."""
    path = tree / "a.txt"
    mtime = os.stat(path).st_mtime_ns
    now = [mtime + RACY_NS // 2]  # the baseline is taken within the tick of a.txt
    monkeypatch.setattr(changelog, "time", SimpleNamespace(time_ns=lambda: now[0]))
    entry = service.acquire(str(tree), Settings())
    base = service.call(RequestContext(1), service.changed_since_sync, "", entry)
    path.write_text("ONE\n")  # same size...
    os.utime(path, ns=(mtime, mtime))  # ...and the same mtime: only the hash tells
    st = os.stat(path)
    assert (st.st_size, st.st_mtime_ns) == (4, mtime)
    delta = service.changed_since_sync(base.clock, None)
    assert (delta.is_fresh_instance, delta.changed, delta.deleted) == (False, ["a.txt"], [])


def test_a_file_racy_at_the_baseline_is_not_changed_later(
    tmp_path: Path, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written within ``RACY_NS`` of the baseline (hashed then), untouched, and asked
    about once it is no longer racy: not changed."""
    (tmp_path / "a.py").write_text("a\n")
    (tmp_path / "b.py").write_text("b\n")
    mtime = os.stat(tmp_path / "a.py").st_mtime_ns
    now = [mtime + RACY_NS // 2]
    monkeypatch.setattr(changelog, "time", SimpleNamespace(time_ns=lambda: now[0]))
    entry = service.acquire(str(tmp_path), Settings())
    base = service.call(RequestContext(1), service.changed_since_sync, "", entry)
    assert base.is_fresh_instance and sorted(base.changed) == ["a.py", "b.py"]

    now[0] = mtime + 3 * RACY_NS
    (tmp_path / "b.py").write_text("B\n")  # same size, maybe the same mtime: hashed
    delta = service.changed_since_sync(base.clock, None)
    assert (delta.is_fresh_instance, delta.changed, delta.deleted) == (False, ["b.py"], [])


def test_stat_snapshots_kept_per_root_are_bounded(service: Service, tree: Path) -> None:
    entry = service.acquire(str(tree), Settings())
    clocks = []
    for i in range(SNAPSHOTS_KEPT + 1):
        (tree / f"n{i}.txt").write_text("n\n")
        clocks.append(service.changed_since_sync(clocks[-1] if clocks else "", entry).clock)
    assert clocks[0] not in entry.statlog and clocks[-1] in entry.statlog
    assert changes(service, entry, clocks[0])[0] is True  # dropped: a fresh instance


def test_an_in_place_ignore_file_edit_is_seen_without_a_watcher(
    service: Service, tree: Path
) -> None:
    """Appending to a ``.gitignore`` moves no folder's mtime: its stamp does."""
    (tree / "notes.md").write_text("n\n")
    (tree / ".gitignore").write_text("# none\n")
    entry = service.acquire(str(tree), Settings())
    assert "notes.md" in listed(service, entry)
    with open(tree / ".gitignore", "a") as f:
        f.write("notes.md\n")
    assert "notes.md" not in listed(service, entry)


def test_changed_since_an_unknown_clock_without_a_root_is_refused(service: Service) -> None:
    with pytest.raises(RootNotFound):
        service.changed_since_sync("abc:1", None)


# ---------------------------------------------------------------------- requests, status


def test_call_runs_under_the_context_and_counts_cancelled_jobs(
    service: Service, tree: Path
) -> None:
    seen: list[RequestContext | None] = []
    ctx = RequestContext(7)
    assert service.call(ctx, lambda: seen.append(current_context()) or 5) == 5
    assert seen == [ctx] and current_context() is None
    ctx.cancel.set()
    with pytest.raises(Cancelled):
        service.call(ctx, seen.append, None)
    assert seen == [ctx]  # cancelled before it ran
    assert (service.jobs.inflight, service.jobs.cancelled) == (0, 1)
    checkpoint()  # no request on this thread: nothing to cancel


def test_cancellation_goes_through_the_workspace_checkpoint(service: Service, tree: Path) -> None:
    """The engine calls ``Workspace.checkpoint`` once per item it loads; the overlay
    lookup only looks up overlays, even for a cancelled request."""
    entry = service.acquire(str(tree), Settings())
    assert entry.ws.checkpoint is checkpoint
    seen: list[str] = []
    entry.ws.checkpoint = lambda: seen.append("check")
    read(service, entry, paths=["a.txt", "src"])
    assert seen == ["check", "check"]

    entry.ws.checkpoint = checkpoint
    ctx = RequestContext(1)
    with pytest.raises(Cancelled), service.jobs.running(ctx):
        ctx.cancel.set()
        assert service._overlay(str(tree / "a.txt")) is None
        service.read_sync(entry, decode_read_request({"paths": ["a.txt"]}))
    assert service.jobs.cancelled == 1


def test_install_index_replaces_the_lazy_walk_and_its_rules(tree: Path) -> None:
    lazy = Workspace.open(str(tree), Settings())
    assert not lazy.has_index and lazy.clock().endswith(":0")
    assert lazy.index is lazy.index and lazy.has_index  # walked once, on first use
    assert lazy.rules is lazy.index.rules

    ws = Workspace.open(str(tree), Settings())
    own = ws.rules  # made before any index: rules of its own
    index = Index.build(ws.root, ws.settings)
    ws.install_index(index)
    assert ws.has_index and ws.index is index
    assert ws.rules is index.rules and ws.rules is not own


def test_jobs_quiet_for() -> None:
    jobs = Jobs(2)
    assert jobs.quiet_for(0.5, time.monotonic())
    with jobs.running(RequestContext(1)):
        assert jobs.inflight == 1 and not jobs.quiet_for(0.0, time.monotonic() + 10)
    assert not jobs.quiet_for(0.5, jobs.last_call + 0.1)
    assert jobs.quiet_for(0.5, jobs.last_call + 0.5)


def test_status_reports_roots_cache_and_engine(service: Service, tree: Path) -> None:
    conn = service.connect("stdio")
    entry = service.acquire(str(tree), Settings())
    status = to_builtins(service.status(entry))
    (root,) = status["roots"]
    assert root["files"] is None and root["indexed"] is False and status["fileCount"] == 0
    assert service.call(RequestContext(conn), service.index_sync, entry) == 2
    read(service, entry, paths=["a.txt"])
    read(service, entry, paths=["a.txt"])  # a cache hit: the file is not racy
    service.overlays.put(str(tree / "src/b.py"), conn, "x", 1, shared=True)

    status = to_builtins(service.status(entry))
    (root,) = status["roots"]
    assert root["root"] == str(tree) and root["name"] == "ws"
    assert (root["files"], root["indexed"], root["connections"]) == (2, True, 1)
    assert root["clock"] == entry.ws.clock() == status["clock"]
    assert root["watcher"] == {
        "state": "off",
        "warnings": [],
        "barrier": "stat",
        "barrierReason": f"{watchdog_version()}: no watcher runs for this root",
    }
    assert "snapshot" not in root and "error" not in root and "warnings" not in root
    assert isinstance(root["indexMs"], float)
    assert status["fileCount"] == 2
    assert status["cache"]["bytes"] == service.cache.bytes_used > 0
    assert status["cache"]["hitRate"] == 0.5
    assert status["watcher"] == {"state": "off", "warnings": []}
    assert (status["connections"], status["overlays"]) == (1, 1)
    assert status["engine"] == {"inflight": 0, "cancelled": 0, "workers": 4}
    assert status["pid"] == os.getpid() and status["uptime"] >= 0

    entry.watcher = FakeWatcher(True)  # type: ignore[assignment]
    status = to_builtins(service.status(None))
    assert status["roots"][0]["watcher"] == {
        "state": "running",
        "warnings": ["w1"],
        "watched": 3,
        "unwatched": 1,
        "batches": 7,
        "barrier": "quiet-queue",
    }
    assert status["watcher"] == {"state": "running", "warnings": [f"{tree}: w1"]}
    assert status["clock"] == ""
    entry.watcher = None


def test_status_helpers() -> None:
    assert to_builtins(watcher_status(None)) == {
        "state": "off",
        "warnings": [],
        "barrier": "stat",
        "barrierReason": f"{watchdog_version()}: no watcher runs for this root",
    }
    assert overall_state(set()) == "off"
    assert overall_state({"running"}) == "running"
    assert overall_state({"running", "degraded"}) == "mixed"

    class Cache:
        bytes_used, hits, misses = 10, 1, 2

    assert cache_status(Cache()) == CacheStatus(10, 0.3333)  # type: ignore[arg-type]


def test_files_sync_and_rescan_through_a_workspace(service: Service, tree: Path) -> None:
    entry = service.acquire(str(tree), Settings())
    assert listed(service, entry, patterns=["**/*.py"]) == ["src/b.py"]
    assert listed(service, entry, patterns=["src"], exclude=["**/b.py"]) == []
    generation = entry.ws.index.clock
    (tree / "src" / "c.py").write_text("c\n")
    clock = service.rescan_sync(entry)
    assert clock == entry.ws.clock() and entry.ws.index.clock > generation
    assert entry.ws.index.files() == ["a.txt", "src/b.py", "src/c.py"]
