"""The change ledger (``runtime/ledger.py``, PROTOCOL §4 "Stale files") on real files,
its entries checked by stat (no watcher): named once per change, same bytes are no
change, a same-size write with its mtime put back is caught, bounded, a bulk change cut
(the watched route: ``test_ledger_feed.py``; the notice: ``test_stale.py``)."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from readmany_daemon.runtime.ledger import Ledger
from readmany_daemon.runtime.stale import (
    NOTICE_NAMES,
    Stale,
    answer_stale,
    notice_text,
    stale_members,
)

OLD = (1_600_000_000_000_000_000, 1_600_000_000_000_000_000)


def _given(root: Path, *names: str) -> list[tuple[str, str, str | None]]:
    return [(n, "ok", hashlib.sha256((root / n).read_bytes()).hexdigest()) for n in names]


def _settle(ledger: Ledger, root: Path, *names: str) -> list[Stale]:
    return answer_stale(ledger, _given(root, *names), str(root), False, time.time_ns())


def test_named_once_per_change_and_same_bytes_are_no_change(tmp_path: Path) -> None:
    for n in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / n).write_text(f"{n} v1\n")
        os.utime(tmp_path / n, ns=OLD)
    ledger = Ledger()
    assert _settle(ledger, tmp_path, "a.txt", "b.txt", "c.txt") == []
    (tmp_path / "a.txt").write_text("a.txt v2\n")  # same size
    os.utime(tmp_path / "a.txt", ns=OLD)  # mtime put back
    (tmp_path / "b.txt").write_text("b.txt v1\n")  # the same bytes again, a new mtime
    (tmp_path / "c.txt").unlink()
    assert _settle(ledger, tmp_path) == [Stale("a.txt", "modified"), Stale("c.txt", "deleted")]
    assert _settle(ledger, tmp_path) == []  # once per change
    (tmp_path / "a.txt").write_text("a.txt v3\n")
    os.utime(tmp_path / "a.txt", ns=OLD)
    assert _settle(ledger, tmp_path) == [Stale("a.txt", "modified")]
    assert len(ledger) == 2


def test_a_file_given_again_is_not_named_and_its_new_bytes_count(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    ledger = Ledger()
    _settle(ledger, tmp_path, "a.txt")
    (tmp_path / "a.txt").write_text("two\n")
    assert _settle(ledger, tmp_path, "a.txt") == []
    assert _settle(ledger, tmp_path) == []
    outline_only = [("a.txt", "omitted", None), ("a.txt", "error", None)]
    (tmp_path / "a.txt").write_text("six\n")
    stale = answer_stale(ledger, outline_only, str(tmp_path), False, time.time_ns())
    assert stale == [Stale("a.txt", "modified")]


def test_unchanged_counts_as_given_and_one_shot_keeps_none(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    sha = hashlib.sha256(b"one\n").hexdigest().upper()
    ledger = Ledger()
    answer_stale(ledger, [("a.txt", "unchanged", sha)], str(tmp_path), False, time.time_ns())
    (tmp_path / "a.txt").write_text("two\n")
    assert _settle(ledger, tmp_path) == [Stale("a.txt", "modified")]
    assert answer_stale(None, _given(tmp_path, "a.txt"), str(tmp_path), False, 0) == []


def test_labels_follow_files_path(tmp_path: Path) -> None:
    root, other = tmp_path / "ws", tmp_path / "other"
    root.mkdir()
    other.mkdir()
    (root / "a.txt").write_text("a\n")
    (other / "o.txt").write_text("o\n")
    ledger = Ledger()
    given = [*_given(root, "a.txt"), (str(other / "o.txt"), "ok", _given(other, "o.txt")[0][2])]
    answer_stale(ledger, given, str(root), False, time.time_ns())
    (root / "a.txt").write_text("A\n")
    (other / "o.txt").write_text("O\n")
    stale = answer_stale(ledger, [], str(root), False, time.time_ns())
    assert stale == [Stale("a.txt", "modified"), Stale(str(other / "o.txt"), "modified")]
    (root / "a.txt").write_text("B\n")
    stale = answer_stale(ledger, [], str(root), True, time.time_ns())
    assert stale == [Stale(str(root / "a.txt"), "modified")]


def test_bounded_oldest_dropped(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"{i}.txt").write_text(f"{i}\n")
    ledger = Ledger(max_entries=3)
    _settle(ledger, tmp_path, *(f"{i}.txt" for i in range(5)))
    assert len(ledger) == 3
    for i in range(5):
        (tmp_path / f"{i}.txt").write_text(f"changed {i}\n")
    assert [s.path for s in _settle(ledger, tmp_path)] == ["2.txt", "3.txt", "4.txt"]


def test_a_bulk_change_is_cut_and_counts_as_named(tmp_path: Path) -> None:
    names = [f"f{i:03d}.txt" for i in range(250)]
    for n in names:
        (tmp_path / n).write_text("v1\n")
    ledger = Ledger()
    _settle(ledger, tmp_path, *names)
    for n in names:
        (tmp_path / n).write_text("v2\n")
    stale = _settle(ledger, tmp_path)
    members = stale_members(stale)
    assert len(members["stale"]) == 200 and members["staleTruncated"] is True
    text = notice_text(stale)
    assert text.count("(modified)") == NOTICE_NAMES and "and 230 more" in text
    assert _settle(ledger, tmp_path) == []  # the rest counted as named
    assert stale_members([]) == {"stale": []}
