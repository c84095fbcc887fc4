"""Outlines, tags and token counts made ahead (``rank/ahead.py``): what the store keeps
equals what is made on demand; tags are given only for the mark they were made at, outlines only for
their text's key; a changed file is made again, a gone one forgotten; one text is made
once whatever files hold it; the worker process runs at the lowest CPU priority."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from readmany_daemon.content import tokens
from readmany_daemon.content.outline import language_for, outline, outline_key, tags
from readmany_daemon.rank.ahead import AheadStore, _Made, make_batch
from readmany_daemon.rank.fulltext import rank_path
from readmany_daemon.rank.prep import mark_of, read_text
from readmany_daemon.rank.worker import PrepWorker
from tests.helpers import write_tree

FILES = {
    "pkg/a.py": "import os\n\n\nclass Alpha:\n    def run(self):\n        return os.sep\n",
    "pkg/b.py": "from pkg.a import Alpha\n\n\ndef beta():\n    return Alpha().run()\n",
    "pkg/copy.py": "from pkg.a import Alpha\n\n\ndef beta():\n    return Alpha().run()\n",
    "docs/guide.md": "# Guide\n\n## Install\n\ntext\n",
    "notes.txt": "no grammar here\n",
}


def _mark(root: Path, rel: str) -> str:
    return mark_of(os.lstat(root / rel))


def _items(rels: list[str]) -> list[tuple[str, bool, str | None]]:
    return [(rel, False, None) for rel in rels]


@pytest.fixture()
def store(tmp_path: Path) -> AheadStore:
    s = AheadStore(rank_path(str(tmp_path / "cache" / f"index-{'ab' * 16}.snap")))
    yield s  # type: ignore[misc]
    s.close()


def test_what_is_stored_is_what_is_made_on_demand(tmp_path: Path, store: AheadStore) -> None:
    root = tmp_path / "w"
    write_tree(root, FILES)
    made = _Made()
    done = make_batch(str(root), _items(sorted(FILES)), store, made)
    assert [d.path for d in done] == sorted(FILES)
    assert made.made == 4  # copy.py is b.py's text: made once
    got = store.tags({rel: _mark(root, rel) for rel in FILES})
    assert set(got) == set(FILES)
    for rel in FILES:
        text = read_text(str(root), rel)
        assert text is not None
        assert got[rel] == tags(text, rel)
        assert store.count(tokens.count_key(text)) == tokens.count(text)
        lang = language_for(rel, text)
        if lang is not None:
            assert store.outline(outline_key(text.encode(), lang)) == outline(text, rel)
    assert "alpha" in got["pkg/a.py"].defines and "alpha" in got["pkg/b.py"].names
    assert store.meta()["files"] == len(FILES)
    mode = os.stat(store.path).st_mode & 0o777
    assert mode == 0o600 and os.stat(os.path.dirname(store.path)).st_mode & 0o777 == 0o700


def test_a_changed_file_is_never_given_its_old_tags(tmp_path: Path, store: AheadStore) -> None:
    root = tmp_path / "w"
    write_tree(root, FILES)
    make_batch(str(root), _items(sorted(FILES)), store, _Made())
    old_mark = _mark(root, "pkg/a.py")
    old_text = read_text(str(root), "pkg/a.py") or ""
    write_tree(root, {"pkg/a.py": "def gamma():\n    return 3\n"})
    new_mark = _mark(root, "pkg/a.py")
    assert new_mark != old_mark
    assert store.tags({"pkg/a.py": new_mark}) == {}  # the stored row is the old mark's
    # the old text's outline stays under its own key only
    new_text = read_text(str(root), "pkg/a.py") or ""
    assert store.outline(outline_key(new_text.encode(), "python")) is None
    assert store.outline(outline_key(old_text.encode(), "python")) is not None
    made = _Made()
    make_batch(str(root), _items(sorted(FILES)), store, made)
    assert made.made == 1  # only the changed file is parsed again
    assert store.tags({"pkg/a.py": new_mark})["pkg/a.py"].defines == frozenset({"gamma"})
    # gone: forgotten; its text, which no file holds now, pruned at the pass's end
    os.unlink(root / "pkg/a.py")
    make_batch(str(root), [("pkg/a.py", True, None)], store, _Made())
    assert store.known(["pkg/a.py"]) == {}
    assert store.prune() >= 1
    assert store.outline(outline_key(old_text.encode(), "python")) is None


def test_the_worker_process_makes_them_at_the_lowest_priority(
    tmp_path: Path, store: AheadStore
) -> None:
    root = tmp_path / "w"
    write_tree(root, FILES)
    worker = PrepWorker(str(root), store.path, module="readmany_daemon.rank.ahead")
    try:
        assert os.getpriority(os.PRIO_PROCESS, worker.pid) == 19
        worker.submit(_items(sorted(FILES)), 0)
        assert [p.path for p in worker.result()] == sorted(FILES)
        worker.submit([], 0)  # the pass's end
        assert worker.result() == []
    finally:
        worker.close()
    meta = store.meta()
    assert meta["done"] == 1 and meta["files"] == len(FILES) and meta["made"] == 4
    assert set(store.tags({rel: _mark(root, rel) for rel in FILES})) == set(FILES)
