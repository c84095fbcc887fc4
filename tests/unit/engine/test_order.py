"""``order`` (PROTOCOL §3): ``"stable"`` lays files out, and fills the budget, in the
root's stable order: seeded oldest git change first, a changed or new file last, the
same bytes for an unchanged tree in every new workspace, volatile notices only after
the content, cursor pages in that order with each file once; ``"rank"`` needs
``focus`` (-32602 naming ``$.order``)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.engine.workspace import Overlay, Workspace
from readmany_daemon.errors import InvalidParams, jsonrpc_code
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyResult
from tests.helpers import answer, git, write_tree

#: The files, oldest commit first (the seed's order), none in path order.
HISTORY = ["src/m.py", "src/z.py", "src/a.py", "src/k/b.py", "src/c.py"]


@pytest.fixture
def tree(repo: Path) -> Path:
    """A repository whose files were committed one a day, in ``HISTORY`` order."""
    for n, rel in enumerate(HISTORY):
        write_tree(repo, {rel: f"line-of-{rel}\n" * 3})
        when = f"@{1_600_000_000 + n * 86_400} +0000"
        git(repo, "add", rel)
        git(
            repo,
            "commit",
            "-q",
            "-m",
            rel,
            env={**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when},
        )
    return repo


def ask(root: Path, **params: Any) -> ReadManyResult:
    """One answer from a new workspace (as a new process makes it), whose stable order
    is kept beside the tree."""
    ws = Workspace.open(str(root), Settings())
    ws.order_file = str(root.parent / "cache" / "index-x.order")
    return answer(ws, decode_read_params({"paths": ["src/**/*.py"], **params}))


def shown(result: ReadManyResult) -> list[str]:
    return [f.path for f in result.files if f.status in ("ok", "partial")]


def test_stable_order_is_the_seed_and_the_same_bytes_in_every_new_workspace(tree: Path) -> None:
    first = ask(tree, order="stable")
    assert shown(first) == HISTORY
    assert first.packing.strategy == "stable"
    for fmt in ("separator", "heredoc", "xml", "json"):
        assert ask(tree, order="stable", format=fmt).llm_content == (
            ask(tree, order="stable", format=fmt).llm_content
        )
    assert ask(tree, order="stable").llm_content == first.llm_content
    # Without order (or null, or "request-order"): path order, the same bytes as before.
    plain = ask(tree)
    assert shown(plain) == sorted(HISTORY)
    assert ask(tree, order=None).llm_content == plain.llm_content
    assert ask(tree, order="request-order").llm_content == plain.llm_content


def test_changed_and_new_files_go_last_and_the_others_keep_their_places(tree: Path) -> None:
    """Files that change at once go last oldest git change first, as the seed orders
    them (``src/z.py`` was committed before ``src/a.py``), then the new ones."""
    ask(tree, order="stable")
    time.sleep(0.01)
    write_tree(tree, {"src/a.py": "changed\n", "src/z.py": "changed\n", "src/new.py": "new\n"})
    after = shown(ask(tree, order="stable"))
    assert after == ["src/m.py", "src/k/b.py", "src/c.py", "src/z.py", "src/a.py", "src/new.py"]
    assert shown(ask(tree, order="stable")) == after
    time.sleep(0.01)
    write_tree(tree, {"src/m.py": "changed\n"})  # one at a time: simply last
    assert shown(ask(tree, order="stable")) == [*after[1:], "src/m.py"]


def test_the_budget_fills_in_stable_order_so_a_re_pack_is_a_prefix(tree: Path) -> None:
    whole = ask(tree, order="stable")
    for n in range(1, len(HISTORY)):
        part = ask(tree, order="stable", maxTotalFiles=n)
        assert shown(part) == HISTORY[:n]
        end = part.llm_content.index(f"line-of-{HISTORY[n - 1]}\n" * 3) + 3 * len(
            f"line-of-{HISTORY[n - 1]}\n"
        )
        assert whole.llm_content.startswith(part.llm_content[:end])
    # packing does not reorder a stable answer
    assert (
        shown(ask(tree, order="stable", packing="smallest-first", maxTotalFiles=2)) == (HISTORY[:2])
    )


@pytest.mark.parametrize("fmt", ["separator", "heredoc", "xml", "json"])
def test_cursors_and_notices_come_after_the_content(tree: Path, fmt: str) -> None:
    """Two answers made at different times (their cursors differ) agree up to the end of
    the last file they deliver: nothing volatile comes before or between files."""
    params = {"order": "stable", "maxTotalFiles": 3, "format": fmt, "lineNumbers": True}
    one = ask(tree, **params)
    time.sleep(0.02)
    two = ask(tree, **params)
    assert one.next_cursor and two.next_cursor and one.next_cursor != two.next_cursor
    last = HISTORY[2]
    end = max(one.llm_content.rindex(f"line-of-{last}"), 0) + len(f"line-of-{last}")
    assert one.llm_content[:end] == two.llm_content[:end]
    assert one.next_cursor not in one.llm_content[:end]
    assert "nextCursor" not in one.llm_content[:end] and "cursor" not in one.llm_content[:end]


def test_cursor_pages_deliver_the_rest_in_stable_order_each_file_once(tree: Path) -> None:
    ask(tree, order="stable")
    time.sleep(0.01)
    write_tree(tree, {"src/m.py": "changed\n"})
    order = shown(ask(tree, order="stable"))
    assert order[-1] == "src/m.py"
    pages = [ask(tree, order="stable", maxTotalFiles=2)]
    while pages[-1].next_cursor:
        pages.append(ask(tree, cursor=pages[-1].next_cursor))
    assert [shown(p) for p in pages] == [order[0:2], order[2:4], order[4:]]
    assert all(p.packing.strategy == "stable" for p in pages)


def test_rank_needs_focus() -> None:
    ws = Workspace.open(os.getcwd(), Settings())
    with pytest.raises(InvalidParams) as caught:
        answer(ws, decode_read_params({"paths": ["*.md"], "order": "rank"}))
    assert caught.value.field == "$.order"
    assert "focus" in str(caught.value)
    assert jsonrpc_code(caught.value) == -32602
    with pytest.raises(InvalidParams) as bad:
        decode_read_params({"paths": ["*.md"], "order": "sideways"})
    assert "order" in str(bad.value)


def test_an_edited_buffer_goes_last_like_a_changed_file(tree: Path) -> None:
    """An open editor buffer wins over the disk (PROTOCOL §6): when its text changes,
    its file goes last though the file on disk did not change."""
    buffers: dict[str, Overlay] = {}
    ws = Workspace.open(str(tree), Settings(), overlay=buffers.get)
    ws.order_file = str(tree.parent / "cache" / "index-x.order")

    def order() -> list[str]:
        params = decode_read_params({"paths": ["src/**/*.py"], "order": "stable"})
        return shown(answer(ws, params))

    assert order() == HISTORY
    buffers[str(tree / "src/z.py")] = Overlay("edited in the editor\n", 1)
    assert order() == ["src/m.py", "src/a.py", "src/k/b.py", "src/c.py", "src/z.py"]
    assert order() == ["src/m.py", "src/a.py", "src/k/b.py", "src/c.py", "src/z.py"]


def test_stop_on_error_stops_in_stable_order(tree: Path) -> None:
    """Under ``stopOnError`` the entries after the first error in stable order are
    ``stopped``, those before it delivered (or omitted by the budget), whatever their
    request order."""
    write_tree(tree, {"n2.txt": "fine\n"})  # new files: last, by path
    (tree / "n1.txt").symlink_to(".git/config")  # a link to a denied file: an error
    ws = Workspace.open(str(tree), Settings())
    ws.order_file = str(tree.parent / "cache" / "index-x.order")
    params: dict[str, Any] = {"paths": ["n2.txt", "src/**/*.py", "n1.txt"]}
    params |= {"order": "stable", "stopOnError": True}
    result = answer(ws, decode_read_params(params))
    assert [(f.path, f.status) for f in result.files] == [
        *[(rel, "ok") for rel in HISTORY],
        ("n1.txt", "error"),
        ("n2.txt", "omitted"),
    ]
    assert result.files[-1].code == "stopped"
    result = answer(ws, decode_read_params({**params, "maxTotalFiles": 2}))
    assert [(f.path, f.status, f.code) for f in result.files] == [
        *[(rel, "ok", None) for rel in HISTORY[:2]],
        *[(rel, "omitted", "budget") for rel in HISTORY[2:]],
        ("n1.txt", "omitted", "budget"),  # not loaded: after the budget stop
        ("n2.txt", "omitted", "stopped"),
    ]
