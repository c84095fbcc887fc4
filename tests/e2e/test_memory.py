"""Memory stays flat on a large tree: a real daemon serving a 100,000-file workspace.

The daemon indexes the tree and answers one full read of it (every file's content, so
the content cache holds the tree); its ``VmRSS`` then is where the run starts. Then
100,000 requests (named reads, globs with the default budgets, ``readMany/files``,
``readMany/status``) and ten more full reads of the tree, over one connection: the RSS
at the end stays within 10 % of the start. A leak of 100 bytes a request, or a full read
that keeps a copy of its answer, would show (~10 MB each, the margin being ~10-20 MB).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.daemon_helpers import Daemon, fresh_daemon

daemon = fresh_daemon

#: the tree: FOLDERS folders of FILES_PER_FOLDER small files
FOLDERS = 1000
FILES_PER_FOLDER = 100
REQUESTS = 100_000
FULL_READS = 10
#: how far the end RSS may be above the start, as a fraction of the start
MARGIN = 0.10


def make_tree(root: Path) -> int:
    """``d000/f00.py`` … ``d999/f99.py``, a line or two each; returns the file count."""
    for d in range(FOLDERS):
        folder = root / f"d{d:03d}"
        folder.mkdir(parents=True)
        for f in range(FILES_PER_FOLDER):
            (folder / f"f{f:02d}.py").write_text(f"x = {d * FILES_PER_FOLDER + f}\n" * (1 + f % 2))
    return FOLDERS * FILES_PER_FOLDER


def rss_kib(pid: int) -> int:
    """``VmRSS`` of ``pid`` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_memory_flat_over_100k_requests_and_full_reads(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "big"
    total = make_tree(root)
    daemon.start()
    full = {"paths": ["**"], "maxTotalFiles": total, "maxTotalChars": 10 * total * 20}
    with daemon.session(root) as c:
        listed = c.request("readMany/files", {"patterns": []})
        assert len(listed["files"]) == total
        answer = c.request("readMany/read", full)
        assert [f["status"] for f in answer["files"]].count("ok") == total
        del answer
        start = rss_kib(daemon.pid)
        kinds = [
            ("readMany/read", lambda i: {"paths": [f"d{i % FOLDERS:03d}/f{i % 100:02d}.py"]}),
            ("readMany/read", lambda i: {"paths": [f"d{i % FOLDERS:03d}/*.py"]}),
            ("readMany/files", lambda i: {"patterns": [f"d{i % FOLDERS:03d}"]}),
            ("readMany/status", lambda i: {}),
        ]
        every = REQUESTS // FULL_READS
        samples: list[int] = []
        for i in range(REQUESTS):
            method, params = kinds[i % len(kinds)]
            got = c.request(method, params(i))
            if i % every == every - 1:
                answer = c.request("readMany/read", full)
                assert len(answer["files"]) == total
                del answer
                samples.append(rss_kib(daemon.pid))
            assert got is not None
        end = rss_kib(daemon.pid)
    print(
        f"\ndaemon VmRSS: start {start} KiB, end {end} KiB ({(end - start) / start:+.1%}); "
        f"after each full read: {samples}"
    )
    assert end <= start * (1 + MARGIN), (
        f"RSS grew from {start} KiB to {end} KiB ({(end - start) / start:+.1%}) over "
        f"{REQUESTS} requests and {FULL_READS} full reads of {total} files"
    )
