"""The stable order's store (``index/stable_order.py``): seeded oldest git change first
(path order outside git), a changed or new file moved last, kept in a 0600 file of a
0700 folder and read back by another instance, seeded again when the cache sweep drops
it with the snapshot (PROTOCOL §3 ``order``)."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

import pytest

from readmany_daemon.index import cachegc, stable_order
from readmany_daemon.index.stable_order import StableOrder, git_last_changes, git_seed, order_path
from tests.helpers import git, write_tree


def _commit(root: Path, message: str, when: int, *paths: str) -> None:
    git(root, "add", *paths)
    date = f"@{when} +0000"
    env = {**os.environ, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date}
    git(root, "commit", "-q", "-m", message, env=env)


def test_the_seed_is_oldest_git_change_first_then_untracked_in_path_order(repo: Path) -> None:
    write_tree(repo, {"a.py": "a\n", "b.py": "b\n", "c.py": "c\n", "sub/d.py": "d\n"})
    _commit(repo, "one", 1_000_000, "c.py", "sub/d.py")
    _commit(repo, "two", 2_000_000, "a.py")
    _commit(repo, "three", 3_000_000, "b.py")
    write_tree(repo, {"c.py": "c changed\n"})
    _commit(repo, "four", 4_000_000, "c.py")
    assert git_seed(str(repo)) == ["sub/d.py", "a.py", "b.py", "c.py"]
    # In a subfolder the paths are the subfolder's.
    assert git_seed(str(repo / "sub")) == ["d.py"]


def test_last_changes_are_git_times_of_the_paths_asked(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git_last_changes``: each path's newest commit time (relative to the root, a
    subfolder too), a path git never changed left out; the same when more paths are
    asked than git is given as pathspecs; ``{}`` outside git."""
    write_tree(repo, {"a.py": "a\n", "sub/b.py": "b\n", "sub/[c].py": "c\n"})
    _commit(repo, "one", 1_000_000, "a.py", "sub/b.py", "sub/[c].py")
    write_tree(repo, {"a.py": "a changed\n", "untracked.py": "u\n"})
    _commit(repo, "two", 2_000_000, "a.py")
    asked = ["a.py", "sub/b.py", "sub/[c].py", "untracked.py"]
    want = {"a.py": 2_000_000, "sub/b.py": 1_000_000, "sub/[c].py": 1_000_000}
    assert git_last_changes(str(repo), asked) == want
    assert git_last_changes(str(repo / "sub"), ["b.py"]) == {"b.py": 1_000_000}
    monkeypatch.setattr(stable_order, "PATHSPEC_FILES", 1)
    assert git_last_changes(str(repo), asked) == want
    assert git_last_changes(str(repo), []) == {}


def test_files_changing_at_once_go_last_oldest_change_first_then_new_ones() -> None:
    asked: list[list[str]] = []

    def last_changes(rels: Sequence[str]) -> dict[str, int]:
        asked.append(list(rels))
        return {"x": 30, "y": 10}  # z: no time (older than git was asked about)

    order = StableOrder(None, lambda: ["w", "x", "y", "z"], last_changes)
    marks = {"w": (1, 1, 1), "x": (1, 1, 2), "y": (1, 1, 3), "z": (1, 1, 4)}
    order.places(list(marks), list(marks.values()))
    assert asked == []  # seeded: git is not asked again
    changed = {**marks, "x": (2, 2, 2), "y": (2, 2, 3), "z": (2, 2, 4), "b": (1, 1, 5)}
    places = order.places(list(changed), list(changed.values()))
    assert [r for _, r in sorted(zip(places, changed, strict=True))] == ["w", "z", "y", "x", "b"]
    assert asked == [["x", "y", "z"]]  # the changed ones only, once
    one = {**changed, "w": (3, 3, 1)}
    order.places(list(one), list(one.values()))
    assert asked == [["x", "y", "z"]]  # one file alone: no need to ask


def test_outside_git_the_seed_is_empty_and_files_come_in_path_order(tmp_path: Path) -> None:
    assert git_seed(str(tmp_path)) == []
    order = StableOrder(None, lambda: git_seed(str(tmp_path)))
    places = order.places(["b", "a", "c"], [(1, 1, 1), (1, 1, 2), (1, 1, 3)])
    assert sorted(zip(places, ["b", "a", "c"], strict=True)) == [(0, "a"), (1, "b"), (2, "c")]


def test_a_changed_or_new_file_goes_last_and_the_others_keep_their_places() -> None:
    order = StableOrder(None, lambda: ["x", "y", "z"])
    marks = {"x": (1, 10, 1), "y": (1, 10, 2), "z": (1, 10, 3)}
    first = order.places(list(marks), list(marks.values()))
    assert first == [0, 1, 2]  # seeded, then seen: their places kept
    assert order.places(list(marks), list(marks.values())) == first
    marks["x"] = (2, 11, 1)
    rels = [*marks, "new"]
    places = order.places(rels, [*marks.values(), (1, 1, 9)])
    assert [r for _, r in sorted(zip(places, rels, strict=True))] == ["y", "z", "new", "x"]
    # A file that cannot be stat'ed (mark None) keeps its place.
    assert order.places(["y", "z"], [None, None]) == places[1:3]


def test_deleted_files_paths_are_dropped_once_the_order_has_doubled(
    tmp_path: Path,
) -> None:
    """Renames leave the old paths behind; once the order holds more than twice its
    size after the last sweep plus ``PRUNE_SLACK``, paths that are no file any more
    are dropped (those a read asks for never), the file is rewritten smaller, and the
    files left keep their places."""
    path = str(tmp_path / "cache" / f"index-{'0' * 32}.order")
    live = {"keep", "other"}
    order = StableOrder(path, lambda: ["keep", "other"], exists=live.__contains__)
    first = order.places(["keep", "other"], [(1, 1, 1), (1, 1, 2)])
    slack = stable_order.PRUNE_SLACK
    for n in range(2 + slack):  # a file renamed again and again: each name new
        live.discard(f"v{n - 1}")
        live.add(f"v{n}")
        order.places([f"v{n}"], [(1, 1, 10 + n)])
    assert len(order._seq) == 4 + slack  # not yet past 2 * 2 + slack
    size = os.path.getsize(path)
    live.discard(f"v{1 + slack}")
    live.add("last")
    places = order.places(["last"], [(1, 1, 5)])
    assert set(order._seq) == {"keep", "other", "last"}
    assert os.path.getsize(path) < size / 100
    assert order.places(["keep", "other"], [(1, 1, 1), (1, 1, 2)]) == first
    assert places == [order._seq["last"]] and places[0] > max(first)
    again = StableOrder(path, lambda: ["never"], exists=live.__contains__)
    assert again.places(["other", "last", "keep"], [None, None, None]) == [
        first[1],
        places[0],
        first[0],
    ]


def test_the_order_is_kept_0600_in_a_0700_folder_and_read_by_another_instance(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "cache" / "readmany" / f"index-{'0' * 32}.order")
    one = StableOrder(path, lambda: ["a", "b"])
    one.places(["a", "b", "c"], [(1, 1, 1), (1, 1, 2), (1, 1, 3)])
    one.places(["a"], [(5, 5, 1)])  # a changed: last
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    two = StableOrder(path, lambda: ["never", "asked"])
    places = two.places(["a", "b", "c"], [(5, 5, 1), (1, 1, 2), (1, 1, 3)])
    assert [r for _, r in sorted(zip(places, "abc", strict=True))] == ["b", "c", "a"]
    # The first instance sees what another process wrote since.
    Path(path).write_bytes(b"not msgpack")
    assert one.places(["b", "a"], [None, None]) == [1, 0]  # seeded again: a, b


def test_the_sweep_drops_the_order_with_the_snapshot_and_it_is_seeded_again(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    snap = folder / f"index-{'1' * 32}.snap"
    snap.write_bytes(b"x")
    root = tmp_path / "gone"
    root.mkdir()
    cachegc.record_use(str(snap), str(root))
    assert order_path(str(snap)) == str(folder / f"index-{'1' * 32}.order")
    order = StableOrder(order_path(str(snap)), lambda: ["a", "b"])
    order.places(["a", "b"], [(1, 1, 1), (1, 1, 2)])
    order.places(["a"], [(2, 2, 1)])  # a changed: last
    assert order.places(["a", "b"], [None, None]) == [2, 1]
    root.rmdir()
    dropped = cachegc.sweep(str(folder))
    assert [d.reason for d in dropped] == ["root gone"]
    assert not os.path.exists(order_path(str(snap)))
    assert order.places(["a", "b"], [None, None]) == [0, 1]  # seeded again
