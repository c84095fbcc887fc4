"""The sorted-list arithmetic of the git-seeded listing's second half (index/gitplan.py);
the listing as a whole is tested against the index walk in test_gitlist.py."""

from __future__ import annotations

from readmany_daemon.index import gitplan


def test_sorted_diff() -> None:
    a = [f"p{i:05d}" for i in range(0, 1000, 2)]
    b = [f"p{i:05d}" for i in range(0, 1000, 3)]
    b = sorted(b + b[10:20] + ["p99999", "p99999"])
    only_a, only_b = gitplan._sorted_diff(a, b)
    assert only_a == sorted(set(a) - set(b))
    assert only_b == sorted(set(b) - set(a))
    assert gitplan._sorted_diff(a, a) == ([], [])
    assert gitplan._sorted_diff([], b[:3]) == ([], b[:3])
