"""What a warm ranking (``rank/root.py``) hands the engine beside its order: the order
as places among the candidates (``Ranked.places``), and sizes kept only while the
index's clock stays (a file changed since ranks by its new size)."""

from __future__ import annotations

from pathlib import Path

from readmany_daemon.index.records import CONTENT, ENTRY
from tests.helpers import write_tree
from tests.unit.rank.test_root_background import _ranking


def test_places_are_the_order_as_places_among_the_candidates(tmp_path: Path) -> None:
    root = tmp_path / "w"
    files = {f"pkg/m{i:03}.py": f"def f{i}():\n    return {i}\n" for i in range(40)}
    files["pkg/m031.py"] = "# the pangolin module\n"
    files["pkg/m007.py"] = "# pangolin pangolin, a pangolin\n"
    write_tree(root, files)
    r, index = _ranking(root, tmp_path / "cache", [], "on-demand")
    try:
        candidates = list(reversed(index.files()))  # not path order
        for _ in range(200):
            got = r.rank(candidates, "pangolin", [])
            if got.pending_files == 0:
                break
        assert set(got.order[:2]) == {"pkg/m031.py", "pkg/m007.py"}
        assert got.places is not None
        assert [candidates[j] for j in got.places] == list(got.order)
        assert sorted(got.places) == list(range(len(candidates)))  # each once
        assert got.order == tuple(got.order)  # read as the tuple it was
    finally:
        r.close()


def test_a_file_shrunk_since_the_last_call_ranks_by_its_new_size(tmp_path: Path) -> None:
    root = tmp_path / "w"
    files = {f"other/m{i:02}.py": "z = 0\n" for i in range(20)}
    files |= {"a/pangolin.py": "x = 1\n", "b/pangolin.py": "y = 2\n" * 8000}
    write_tree(root, files)
    r, index = _ranking(root, tmp_path / "cache", [], "off")  # names alone: a tie
    try:
        every = index.files()
        assert r.rank(every, "pangolin", []).order[0] == "a/pangolin.py"  # the smaller
        assert r.rank(every, "pangolin", []).order[0] == "a/pangolin.py"  # sizes kept
        # b changed (recency 0.2) and is as small as a now: first; by its old size it
        # would stay after a
        write_tree(root, {"b/pangolin.py": "y = 2\n"})
        index.apply([("b/pangolin.py", ENTRY | CONTENT)])
        assert r.rank(every, "pangolin", []).order[0] == "b/pangolin.py"
    finally:
        r.close()
