"""An MCP session's copy of its daemon connection's ledger (``Ledger.remember``,
``adopt``, ``settle_apart``: PROTOCOL §4 "Stale files"), on real files: taken over when
the connection is lost, with no file named twice, and one notice for both ledgers
(``stale.renotice``)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from readmany_daemon.runtime.ledger import Ledger
from readmany_daemon.runtime.stale import Stale, place_notice, renotice


def _given(root: Path, *names: str) -> dict[str, str]:
    return {str(root / n): hashlib.sha256((root / n).read_bytes()).hexdigest() for n in names}


def test_a_copy_taken_over_names_what_changed_since_and_not_what_was_named(
    tmp_path: Path,
) -> None:
    for n in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / n).write_text(f"{n} v1\n")
    copy, own = Ledger(), Ledger()
    copy.remember(_given(tmp_path, "a.txt", "b.txt", "c.txt"), time.time_ns(), [])
    (tmp_path / "a.txt").write_text("a.txt v2\n")
    # The daemon's ledger named a.txt: the copy takes its new bytes, silently.
    copy.remember({}, time.time_ns(), [str(tmp_path / "a.txt")])
    (tmp_path / "b.txt").write_text("b.txt v2\n")
    (tmp_path / "c.txt").unlink()
    own.adopt(copy)  # the connection is lost
    assert len(copy) == 0 and len(own) == 3
    assert own.settle({}, time.time_ns()) == [
        (str(tmp_path / "b.txt"), "modified"),
        (str(tmp_path / "c.txt"), "deleted"),
    ]
    assert own.settle({}, time.time_ns()) == []


def test_settle_apart_checks_its_own_and_lets_the_given_go(tmp_path: Path) -> None:
    for n in ("a.txt", "b.txt"):
        (tmp_path / n).write_text(f"{n} v1\n")
    own = Ledger()
    own.settle(_given(tmp_path, "a.txt", "b.txt"), time.time_ns())
    (tmp_path / "a.txt").write_text("a.txt v2\n")
    (tmp_path / "b.txt").write_text("b.txt v2\n")
    # b.txt delivered again over the daemon connection: not named, no longer kept here.
    given = _given(tmp_path, "b.txt")
    assert own.settle_apart(given) == [(str(tmp_path / "a.txt"), "modified")]
    assert len(own) == 1
    (tmp_path / "b.txt").write_text("b.txt v3\n")
    assert own.settle_apart({}) == []


def test_adopt_keeps_the_bound(tmp_path: Path) -> None:
    names = [f"f{i}.txt" for i in range(5)]
    for n in names:
        (tmp_path / n).write_text(n)
    copy, own = Ledger(), Ledger(max_entries=3)
    own.settle(_given(tmp_path, "f0.txt"), time.time_ns())
    copy.remember(_given(tmp_path, *names[1:]), time.time_ns(), [])
    own.adopt(copy)
    assert len(own) == 3
    (tmp_path / "f0.txt").unlink()
    (tmp_path / "f1.txt").unlink()
    (tmp_path / "f4.txt").unlink()
    assert own.settle({}, time.time_ns()) == [(str(tmp_path / "f4.txt"), "deleted")]


def test_renotice_makes_one_notice_in_every_format() -> None:
    told = [Stale("b.txt", "modified")]
    both = [Stale("a.txt", "deleted"), *told]
    for fmt, parts in (
        ("separator", ["--- o.txt ---\no\n"]),
        ("xml", ["<documents>\n<document>o</document>\n</documents>"]),
        ("json", ['{\n  "results": []\n}']),
    ):
        for after in (False, True):
            placed = "".join(place_notice(parts, fmt, told, after))
            want = "".join(place_notice(parts, fmt, both, after))
            assert renotice(placed, fmt, told, both, after) == want
            if fmt == "json":
                json.loads(want)
    assert renotice("--- o.txt ---\n", "separator", told, both) is None
    assert renotice("--- o.txt ---\n", "separator", [], both) is None
