"""The pages of a ``changes`` read agree while the branch moves (issue 26 item 3): the
cursor holds the base's commit id, not the revision the first page named."""

from __future__ import annotations

from pathlib import Path

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer, committed_tree, write_tree
from tests.unit.engine.test_changed import run_git


def test_page_two_uses_the_base_of_page_one_after_a_commit(tmp_path: Path) -> None:
    base = committed_tree(tmp_path, {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    write_tree(tmp_path, {"a.txt": "A\n", "b.txt": "B\n", "c.txt": "C\n"})
    ws = Workspace.open(str(tmp_path), Settings())
    first = answer(ws, decode_read_params({"changes": {"base": "HEAD"}, "maxTotalFiles": 1}))
    assert [f.path for f in first.files if f.status != "omitted"] == ["a.txt"]
    assert first.next_cursor is not None and first.changes is not None
    assert first.changes.base == base

    run_git(tmp_path, "commit", "-qam", "the branch moves")  # HEAD names another commit now
    second = answer(ws, decode_read_params({"cursor": first.next_cursor}))
    assert [f.path for f in second.files if f.status != "omitted"] == ["b.txt"]
    assert second.changes is not None and second.changes.base == base
    assert "[Changed since " + base[:12] in second.llm_content

    fresh = answer(ws, decode_read_params({"changes": {"base": "HEAD"}}))
    assert fresh.files == []  # a new request against the new HEAD: nothing changed
