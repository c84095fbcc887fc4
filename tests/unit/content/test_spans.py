"""Symbol spans and enclosing blocks (``content.spans``) over real parses of Python, Go,
Rust, Java and Markdown (issue 26, items 1 and 2)."""

from __future__ import annotations

import unicodedata

import pytest

from readmany_daemon.content.outline import outline
from readmany_daemon.content.spans import Span, enclosing, fallback, find_symbol

PY = """import os


@dataclass
class Config:
    x = 1

    @classmethod
    def load(cls):
        def inner():
            return 1
        return inner()
        # a comment after the last statement

    # between
    def save(self):
        pass


def load():
    pass
"""

GO = """package main

type Server struct{}

func (s *Server) Handle() {
}

func (s Server[T]) Other() {}
"""

RUST = """struct Parser;

impl Parser {
    #[inline]
    /// Looks ahead.
    fn peek(&self) {}
}

impl Display for Parser {
    #[allow(unused)]
    fn fmt(&self) {}
}
"""

JAVA = """class A {
    @Override
    @Deprecated
    public void run() {
    }
}
"""

MD = "intro\n\n# Title\n\ntext\n\n## Sub\n\nmore\n\n## Sub\n\nagain\n"


@pytest.mark.parametrize(
    ("text", "path", "name", "want"),
    [
        # Python: from the first decorator to the last statement (not a trailing comment)
        (PY, "a.py", "Config", (4, 17, "Config")),
        (PY, "a.py", "Config.load", (8, 12, "Config.load")),
        (PY, "a.py", "load", (20, 21, "load")),
        # "::" and "#" stand for "."
        (PY, "a.py", "Config::save", (16, 17, "Config.save")),
        (PY, "a.py", "Config#save", (16, 17, "Config.save")),
        # Go methods: Type.method and the outline's own spelling; Rust: from the
        # attributes (a doc comment between them kept), Type.method
        *[
            (GO, "a.go", name, (a, b, spelled))
            for name, a, b, spelled in [
                ("Server.Handle", 5, 6, "(*Server).Handle"),
                ("(*Server).Handle", 5, 6, "(*Server).Handle"),
                ("Server.Other", 8, 8, "(Server[T]).Other"),
            ]
        ],
        *[
            (RUST, "a.rs", name, (a, b, spelled))
            for name, a, b, spelled in [
                ("Parser.peek", 4, 6, "impl Parser.peek"),
                ("impl Parser::peek", 4, 6, "impl Parser.peek"),
                ("Parser#fmt", 10, 11, "impl Display for Parser.fmt"),
            ]
        ],
        # Java: from the annotations
        (JAVA, "A.java", "A.run", (2, 5, "A.run")),
    ],
)
def test_symbol_spans(text: str, path: str, name: str, want: tuple[int, int, str]) -> None:
    got = find_symbol(outline(text, path), name)
    assert isinstance(got, Span), got
    assert (got.start, got.end, got.name) == want


def test_markdown_headings_by_text_the_first_of_duplicates_with_the_others() -> None:
    got = find_symbol(outline(MD, "a.md"), "Sub")
    assert got == Span(7, 10, "Sub", ((11, 13),))


def test_a_cpp_definition_out_of_its_class_is_found_with_its_declaration() -> None:
    """``A::m`` defined after ``class A`` declares it: the outline names the definition
    ``A::m`` (top level) and the declaration ``A.m``; every spelling found only the
    declaration, with no word of the body."""
    text = "class A {\n public:\n  void m();\n};\n\nvoid A::m() {\n  int body = 1;\n}\n"
    for name in ("A::m", "A.m", "A#m"):
        assert find_symbol(outline(text, "d.cpp"), name) == Span(3, 3, "A.m", ((6, 8),)), name


def test_enclosing_on_a_rust_doc_comment_is_the_item_after_it() -> None:
    """Rust's comments are ``line_comment`` nodes, which counted as top-level nodes (a
    doc comment's enclosing block was the comment line alone), and an item's
    ``#[…]`` attributes were a node of their own (the block was the attribute)."""
    text = (
        "// header\n\n/// Doc one\n/// Doc two\n#[derive(Debug)]\nstruct P { x: i32 }\n\n"
        "const N: i32 = 1;\n"
    )
    o = outline(text, "g.rs")
    assert o.tops == ((5, 6), (8, 8))
    assert enclosing(o, 3) == Span(5, 6)  # the doc comment: the item after it
    assert enclosing(o, 1) == Span(5, 6)  # the header comment too
    assert enclosing(o, 7) == Span(8, 8)


def test_a_name_is_found_in_either_unicode_normal_form() -> None:
    text = "class Ünïcode:\n    def naïve(self):\n        return 1\n"
    nfd = unicodedata.normalize("NFD", "Ünïcode.naïve")
    assert nfd != "Ünïcode.naïve"
    assert find_symbol(outline(text, "u.py"), nfd) == Span(2, 3, "Ünïcode.naïve")


def test_an_unknown_symbol_gives_the_outline_paths() -> None:
    assert find_symbol(outline(PY, "a.py"), "Conf.lod") == [
        "Config",
        "Config.load",
        "Config.load.inner",
        "Config.save",
        "load",
    ]


def test_a_nested_function_is_read_by_the_name_enclosing_gives_it() -> None:
    o = outline(PY, "a.py")
    assert enclosing(o, 11).name == "Config.load.inner"
    assert find_symbol(o, "Config.load.inner") == Span(10, 11, "Config.load.inner")


def test_enclosing_is_the_innermost_symbol_nested_functions_included() -> None:
    o = outline(PY, "a.py")
    assert enclosing(o, 9) == Span(8, 12, "Config.load")
    assert enclosing(o, 11) == Span(10, 11, "Config.load.inner")
    assert enclosing(o, 13) == Span(4, 17, "Config")  # a comment inside the class
    assert enclosing(o, 6) == Span(4, 17, "Config")


def test_enclosing_outside_symbols_is_the_top_level_node_or_the_next_one() -> None:
    o = outline(PY, "a.py")
    assert enclosing(o, 1) == Span(1, 1)  # import os
    assert enclosing(o, 2) == Span(4, 17)  # a blank line: the next statement
    assert enclosing(o, 19) == Span(20, 21)
    tail = outline("x = 1\n\n# end\n", "b.py")
    assert enclosing(tail, 3) == Span(3, 3)  # nothing follows: the line alone


def test_enclosing_in_markdown_is_the_section() -> None:
    o = outline(MD, "a.md")
    assert enclosing(o, 9) == Span(7, 10, "Sub")
    assert enclosing(o, 1) == Span(1, 1)  # before the first heading: its paragraph


def test_fallback_is_twenty_lines_either_side_clamped() -> None:
    assert fallback(30, 100) == Span(10, 50)
    assert fallback(3, 10) == Span(1, 10)
