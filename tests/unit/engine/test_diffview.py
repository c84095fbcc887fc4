"""The spans a changed file shows (issue 26 item 3): hunks widened to their innermost
enclosing symbols from the real outline, joined, kept to the hunk with 3 lines of context
when the symbol is far longer or there is no outline; deletions and the file's ends."""

from __future__ import annotations

from readmany_daemon.content.outline import outline
from readmany_daemon.engine.diffview import WIDEN_MAX_LINES, change_spans

SRC = """import os


class Config:
    x = 1

    def load(self):
        a = 1
        return a

    def save(self):
        pass


def top():
    return 2
"""


def test_a_hunk_widens_to_its_innermost_symbol() -> None:
    o = outline(SRC, "app.py")
    assert change_spans([(8, 1)], o, 16) == [(7, 9)]  # inside load: the method
    assert change_spans([(5, 1)], o, 16) == [(4, 12)]  # the class body: the class
    assert change_spans([(1, 1)], o, 16) == [(1, 1)]  # a top-level statement
    assert change_spans([(8, 1), (16, 1)], o, 16) == [(7, 9), (15, 16)]


def test_spans_a_few_lines_apart_are_joined() -> None:
    o = outline(SRC, "app.py")
    assert change_spans([(8, 1), (12, 1)], o, 16) == [(7, 12)]  # load and save: 1 line apart


def test_a_deletion_widens_around_the_line_before_it() -> None:
    o = outline(SRC, "app.py")
    assert change_spans([(8, 0)], o, 16) == [(7, 9)]
    assert change_spans([(0, 0)], o, 16) == [(1, 1)]  # deleted at the top


def test_a_symbol_far_longer_than_the_hunk_keeps_the_hunk_with_context() -> None:
    body = "".join(f"    v{i} = {i}\n" for i in range(WIDEN_MAX_LINES + 20))
    src = "class Big:\n" + body
    o = outline(src, "big.py")
    assert change_spans([(50, 1)], o, o.lines) == [(47, 53)]


def test_without_an_outline_each_hunk_has_three_lines_of_context() -> None:
    o = outline("".join(f"l{i}\n" for i in range(1, 41)), "notes.txt")
    assert o.reason is not None
    assert change_spans([(10, 2), (30, 0)], o, 40) == [(7, 14), (28, 33)]
    assert change_spans([(1, 1), (40, 1)], None, 40) == [(1, 4), (37, 40)]
    assert change_spans([(3, 1)], None, 0) == []
