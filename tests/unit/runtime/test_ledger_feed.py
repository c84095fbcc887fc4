"""The change ledger fed by a watched root's change log (``runtime/ledger.py``), through
a real ``Service`` watching a real tree: a read behind a running watcher's barrier
checks only the entries the log names after its mark (no ``stat`` per entry), names
every same-size write with the mtime put back and nothing else; files the log would not
report (a git-ignored file named explicitly, a second hard link) and every entry after
an overflow, or a read on the stat route, are checked by stat, and fed again after.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.runtime.ledger import Ledger
from readmany_daemon.runtime.requests import RequestContext
from readmany_daemon.runtime.roots import RootEntry
from readmany_daemon.runtime.service import Service
from readmany_daemon.runtime.stale import read_with_stale
from readmany_daemon.wire.cursor import decode_read_request
from tests.helpers import write_tree
from tests.unit.runtime.test_watcher_restart import service, wait_for, watched

__all__ = ["service"]  # the fixture: a watching Service, its cookies under tmp_path

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/sys/fs/inotify"), reason="inotify")

OLD = (1_600_000_000_000_000_000, 1_600_000_000_000_000_000)


def stale(svc: Service, entry: RootEntry, ledger: Ledger, *paths: str, **more: Any) -> list[str]:
    """One read of ``paths`` on the session of ``ledger``; its ``stale`` as
    ``path:change`` strings."""
    params = {"paths": list(paths), "maxTotalFiles": 5000, "maxTotalChars": 10**7, **more}
    req = decode_read_request(params)
    result, _ = svc.call(RequestContext(1), read_with_stale, svc, entry, req, ledger)
    return [f"{s.path}:{s.change}" for s in result.stale]


def rewrite_same_size(path: Path, text: str) -> None:
    """Write ``text`` (the file's size) and put the mtime back."""
    st = path.stat()
    assert len(text.encode()) == st.st_size
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    files = {f"d{i // 100:02d}/f{i:04d}.txt": f"value {i:06d}\n" for i in range(1000)}
    write_tree(root, {**files, "other.txt": "o\n", ".gitignore": "*.log\n", "x.log": "l1\n"})
    return Path(os.path.realpath(root))


def test_a_watched_read_checks_only_what_the_log_names(service: Service, tree: Path) -> None:
    entry, _ = watched(service, tree)
    ledger = Ledger()
    assert stale(service, entry, ledger, "**/*.txt") == []
    assert len(ledger) == 1001
    assert stale(service, entry, ledger, "other.txt") == []
    assert ledger.last_stat_checks == 0  # nothing stat'ed: the log named nothing
    names = [f"d{i // 100:02d}/f{i:04d}.txt" for i in range(1000)]
    rng = random.Random(27)
    named = 0
    for i in range(300):
        name = rng.choice(names)
        path = tree / name
        kind = i % 3
        if kind == 0:  # a write: same size, the mtime put back
            rewrite_same_size(path, f"value {900000 + i:06d}\n")
        elif kind == 1:  # the same bytes again, a new mtime
            path.write_bytes(path.read_bytes())
        got = stale(service, entry, ledger, "other.txt")
        assert got == ([f"{name}:modified"] if kind == 0 else []), (i, kind)
        assert ledger.last_stat_checks == 0
        named += kind == 0
    assert named == 100
    (tree / names[5]).unlink()
    assert stale(service, entry, ledger, "other.txt") == [f"{names[5]}:deleted"]
    assert stale(service, entry, ledger, "other.txt") == []


def test_files_the_log_would_miss_are_stat_checked(service: Service, tree: Path) -> None:
    entry, _ = watched(service, tree)
    os.link(tree / "d00/f0001.txt", tree / "link.txt")  # one file, two names
    ledger = Ledger()
    assert stale(service, entry, ledger, "x.log", "link.txt", "d01/f0100.txt") == []
    assert ledger.last_stat_checks == 0
    assert stale(service, entry, ledger, "other.txt") == []
    assert ledger.last_stat_checks == 2  # the ignored file and the linked one
    rewrite_same_size(tree / "x.log", "l2\n")  # hidden: the index reports no write of it
    rewrite_same_size(tree / "d00/f0001.txt", "value 999999\n")  # through the other name
    assert stale(service, entry, ledger, "other.txt") == ["x.log:modified", "link.txt:modified"]
    rewrite_same_size(tree / "d01/f0100.txt", "value 888888\n")
    assert stale(service, entry, ledger, "other.txt") == ["d01/f0100.txt:modified"]


def test_after_an_overflow_or_the_stat_route_entries_are_stat_checked_then_fed_again(
    service: Service, tree: Path
) -> None:
    entry, watcher = watched(service, tree)
    ledger = Ledger()
    assert stale(service, entry, ledger, "d00/*.txt") == []
    watcher.on_queue_overflow()  # as watchdog reports IN_Q_OVERFLOW: events were lost
    rewrite_same_size(tree / "d00/f0002.txt", "value 777777\n")
    assert stale(service, entry, ledger, "other.txt", sync="stat") == ["d00/f0002.txt:modified"]
    assert ledger.last_stat_checks == 100  # the log lost track: every entry by stat
    wait_for(lambda: watcher.state == "running")
    assert stale(service, entry, ledger, "other.txt") == []
    assert ledger.last_stat_checks == 101  # with other.txt; proved after a barrier: fed
    assert stale(service, entry, ledger, "other.txt") == []
    assert ledger.last_stat_checks == 0
    rewrite_same_size(tree / "d00/f0003.txt", "value 666666\n")
    assert stale(service, entry, ledger, "other.txt") == ["d00/f0003.txt:modified"]
