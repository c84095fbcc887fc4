"""rank/keeper.py with its worker process (``rank/worker.py`` ``PrepWorker``): a big
build prepares texts in a fresh interpreter while the keeper's thread writes. The worker
indexes the very texts the thread would (secrets redacted, identifiers split, links,
FIFOs and binary files left out), never imports from its current folder, is ended when
the keeper closes, and a worker that dies leaves the build to the thread."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from readmany_daemon.engine.redact import redacted_text
from readmany_daemon.rank.fulltext import FullText
from readmany_daemon.rank.keeper import IndexKeeper
from readmany_daemon.rank.worker import PrepWorker
from tests.helpers import write_tree

TOKEN = "ghp_" + "k3Jd9" * 8
GATE = "READMANY_TEST_PREP_GATE"
PARENT = "READMANY_TEST_PREP_PARENT"


def _in_worker() -> bool:
    return str(os.getpid()) != os.environ.get(PARENT, str(os.getpid()))


def redact_dying(text: str) -> str:
    """The engine's redaction, except that a worker process dies on its first text."""
    if _in_worker():
        os._exit(3)
    return redacted_text(text)


def redact_stuck(text: str) -> str:
    """The engine's redaction, except that a worker process blocks for good (opening a
    FIFO nobody writes), as a read on a hung file system would."""
    if _in_worker():
        with open(os.environ[GATE], "rb") as f:
            f.read()
    return redacted_text(text)


def _workers() -> list[int]:
    """This process's children that are full-text index workers."""
    out = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            pids = [int(p) for p in f.read().split()]
        for pid in pids:
            with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"readmany_daemon.rank.worker" in f.read():
                    out.append(pid)
    return out


@pytest.fixture(autouse=True)
def _parent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PARENT, str(os.getpid()))


@pytest.fixture()
def tree(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "w"
    files: dict[str, str | bytes] = {
        f"pkg/m{i:02}.py": f"def getFixtureValue{i}(parse_known_args):\n    return HTTPServer{i}\n"
        for i in range(40)
    }
    files["pkg/conf.py"] = f'GITHUB_TOKEN = "{TOKEN}"\nuseTheToken = 1\n'
    files["pkg/latin.txt"] = "caf\xe9 na\xefve".encode("cp1252")
    files["pkg/blob.bin"] = b"\x00\x01\x02binaryStuff\x00" * 20
    write_tree(root, files)
    (tmp_path / "outside.py").write_text("outsideSecretName = 1\n")
    os.symlink(tmp_path / "outside.py", root / "pkg/link.py")
    os.mkfifo(root / "pkg/pipe.py")
    return root, [*sorted(files), "pkg/link.py", "pkg/pipe.py"]


@pytest.fixture()
def keepers() -> Iterator[list[IndexKeeper]]:
    out: list[IndexKeeper] = []
    yield out
    for k in out:
        k.close()
        k.fulltext.close()


def _keeper(
    root: Path,
    path: Path,
    made: list[IndexKeeper],
    redact: Callable[[str], str] = redacted_text,
    pool_min_files: int = 1,
) -> IndexKeeper:
    k = IndexKeeper(str(root), FullText(str(path)), redact, pool_min_files=pool_min_files)
    made.append(k)
    return k


def _rows(path: Path) -> dict[str, tuple[str, str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        q = "SELECT f.path, f.mark, d.name, d.body FROM files f JOIN docs d ON d.rowid = f.id"
        return {p: (m, n, b) for p, m, n, b in db.execute(q)}


def _in_thread(root: Path, files: list[str], path: Path, made: list[IndexKeeper]) -> None:
    k = _keeper(root, path, made, pool_min_files=0)
    k.start(files, background=False)
    k.work(float("inf"))
    assert k.pending_count() == 0


def _built(k: IndexKeeper, files: list[str]) -> None:
    k.start(files, background=True)
    assert k.settle(120)


def test_the_worker_indexes_the_texts_the_thread_would(
    tree: tuple[Path, list[str]], tmp_path: Path, keepers: list[IndexKeeper]
) -> None:
    root, files = tree
    _in_thread(root, files, tmp_path / "thread.rank", keepers)
    pooled = _keeper(root, tmp_path / "pool.rank", keepers)
    _built(pooled, files)
    assert pooled.pooled_batches >= 1
    got = _rows(tmp_path / "pool.rank")
    assert got == _rows(tmp_path / "thread.rank")
    assert set(got) == {f for f in files if f.endswith((".py", ".txt"))} - {
        "pkg/link.py",
        "pkg/pipe.py",
    }
    assert "getFixtureValue3 get Fixture Value 3" in got["pkg/m03.py"][2]
    assert TOKEN not in got["pkg/conf.py"][2] and "«redacted:" in got["pkg/conf.py"][2]
    assert got["pkg/latin.txt"][2] == "café naïve"
    assert pooled.worker_pid() is None  # the worker ends with the build
    assert not _workers()


def test_a_worker_that_dies_leaves_the_build_to_the_thread(
    tree: tuple[Path, list[str]], tmp_path: Path, keepers: list[IndexKeeper]
) -> None:
    root, files = tree
    _in_thread(root, files, tmp_path / "thread.rank", keepers)
    k = _keeper(root, tmp_path / "pool.rank", keepers, redact=redact_dying)
    _built(k, files)
    assert k.pooled_batches == 0
    assert _rows(tmp_path / "pool.rank") == _rows(tmp_path / "thread.rank")
    assert not _workers()


def test_close_ends_the_worker_even_a_stuck_one(
    tree: tuple[Path, list[str]],
    tmp_path: Path,
    keepers: list[IndexKeeper],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root, files = tree
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    monkeypatch.setenv(GATE, str(gate))
    k = _keeper(root, tmp_path / "pool.rank", keepers, redact=redact_stuck)
    k.start(files, background=True)
    pid = k.worker_pid(60)
    assert pid is not None
    k.close()
    assert k.worker_pid() is None
    assert not _workers()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert k.pending_count() > 0  # nothing the stuck worker held was written


def test_a_small_queue_and_an_unpicklable_redaction_stay_in_the_thread(
    tree: tuple[Path, list[str]], tmp_path: Path, keepers: list[IndexKeeper]
) -> None:
    root, files = tree
    small = _keeper(root, tmp_path / "a.rank", keepers, pool_min_files=len(files) + 1)
    _built(small, files)
    closure = _keeper(root, tmp_path / "b.rank", keepers, redact=lambda t: redacted_text(t))
    _built(closure, files)
    assert small.pooled_batches == closure.pooled_batches == 0
    assert _rows(tmp_path / "a.rank") == _rows(tmp_path / "b.rank") != {}


def test_the_worker_never_imports_from_its_current_folder(
    tree: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = tree
    here = tmp_path / "here"
    marker = tmp_path / "imported"
    for name in ("socket", "json", "pickle", "queue", "readmany_daemon"):
        write_tree(here, {f"{name}.py": f"open({str(marker)!r}, 'a').write('{name}')\n"})
    monkeypatch.chdir(here)  # an editor starts servers in the workspace
    worker = PrepWorker(str(root), redacted_text)
    try:
        worker.submit([("pkg/conf.py", False, None)], 1 << 20)
        (got,) = worker.result()
    finally:
        worker.close()
    assert got.path == "pkg/conf.py" and got.body is not None and TOKEN not in got.body
    assert not marker.exists()


def test_a_pooled_build_makes_the_word_counts_once_at_its_end(
    tree: tuple[Path, list[str]], tmp_path: Path, keepers: list[IndexKeeper]
) -> None:
    root, files = tree
    path = tmp_path / "pool.rank"
    pooled = _keeper(root, path, keepers)
    _built(pooled, files)
    assert pooled.pooled_batches >= 1
    deadline = time.monotonic() + 30
    with contextlib.closing(sqlite3.connect(path)) as db:
        while db.execute("SELECT stale FROM term_files_state").fetchone()[0]:
            assert time.monotonic() < deadline, "the counts were never made"
            time.sleep(0.05)
        table = dict(db.execute("SELECT term, files FROM term_files"))
        vocab = dict(db.execute("SELECT term, doc FROM docs_terms WHERE doc > 0"))
    assert table == vocab and table["getfixturevalue3"] == 1 and table["pkg"] == 42
