"""The snapshot cache folder is bounded by the real daemon at start (issue 22, item 6):
roots that are gone or unused for 30 days lose their snapshot and every per-root file
beside it, and the folder is kept under 1 GiB, least recently used first."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.e2e.daemon_helpers import Daemon, fresh_daemon, wait_for
from tests.helpers import write_tree

daemon = fresh_daemon

DAY = 24 * 3600
GIB = 1 << 30


def cache_folder(d: Daemon) -> Path:
    return Path(d.env["XDG_CACHE_HOME"]) / "readmany"


def groups(cache: Path) -> dict[str, str]:
    """root path → the hash naming its files, from the use marks."""
    return {p.read_text(): p.name[len("index-") : -len(".root")] for p in cache.glob("*.root")}


def files_of(cache: Path, digest: str) -> set[str]:
    return {p.name for p in cache.iterdir() if digest in p.name}


def test_the_daemon_bounds_the_cache_at_start(daemon: Daemon, tmp_path: Path) -> None:
    roots = {name: tmp_path / name for name in ("kept", "gone", "old", "big")}
    for name, root in roots.items():
        write_tree(root, {"a.txt": f"{name}\n"})
    daemon.start()
    for root in roots.values():
        client = daemon.session(root)
        try:
            assert (
                client.request("readMany/read", {"paths": ["a.txt"]})["files"][0]["status"] == "ok"
            )
        finally:
            client.exit()
    daemon.stop()  # saves every snapshot
    cache = cache_folder(daemon)
    by_root = groups(cache)
    digests = {name: by_root[str(root)] for name, root in roots.items()}
    for digest in digests.values():
        assert f"index-{digest}.snap" in files_of(cache, digest)

    # Another feature's per-root file beside the gone root's snapshot goes with it.
    (cache / f"outline-{digests['gone']}.db").write_bytes(b"outline")
    (roots["gone"] / "a.txt").unlink()
    roots["gone"].rmdir()
    # Unused for 31 days.
    old = time.time() - 31 * DAY
    for name in files_of(cache, digests["old"]):
        os.utime(cache / name, (old, old))
    # Two roots with 700 MiB each beside their snapshot (sparse): over 1 GiB together;
    # "big" was used longer ago than "kept", so it goes.
    for name, when in (("big", time.time() - 2 * DAY), ("kept", time.time() - DAY)):
        extra = cache / f"extra-{digests[name]}.bin"
        with open(extra, "wb") as f:
            f.truncate(700 << 20)
        for n in files_of(cache, digests[name]):
            os.utime(cache / n, (when, when))

    daemon.start()
    wait_for(
        lambda: not any(files_of(cache, digests[n]) for n in ("gone", "old", "big")),
        30,
        every=0.05,
    )
    kept = files_of(cache, digests["kept"])
    assert f"index-{digests['kept']}.snap" in kept and f"extra-{digests['kept']}.bin" in kept
    assert sum(p.stat().st_size for p in cache.iterdir()) < GIB
