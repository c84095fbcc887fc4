"""The outline queries' one predicate, ``#name-match?``, evaluated by the outline module
on the parsed bytes (``content/outline_queries.py``): tree-sitter's own ``#match?``
fetches a node's text through the parse's read callback, the whole text again for each
match (quadratic: 40,000 constants took 11 s), so no query may use a built-in one."""

from __future__ import annotations

import re

import pytest
import tree_sitter

from readmany_daemon.content import outline as outline_module
from readmany_daemon.content.outline import outline
from readmany_daemon.content.outline_queries import QUERIES


def test_no_outline_query_uses_a_predicate_tree_sitter_evaluates_itself() -> None:
    for lang, text in QUERIES.items():
        used = set(re.findall(r"\(#([a-z-]+[?!])", text))
        assert used <= {"name-match?"}, (lang, used)


def test_the_predicate_never_reads_the_text_through_the_parse_callback() -> None:
    """Parsed in chunks as ``outline`` parses, the query's matches ask the read callback
    for nothing more, and only UPPER_CASE module assignments are constants."""
    data = "".join(f"X_{i} = {i}\nlow_{i} = {i}\n" for i in range(500)).encode()
    grammar = outline_module._grammar("python")
    assert not isinstance(grammar, str)
    reads: list[int] = []

    def read(offset: int, _point: tuple[int, int]) -> bytes:
        reads.append(offset)
        return data[offset : offset + 4096]

    tree = tree_sitter.Parser(grammar.language).parse(read)
    parsed = len(reads)
    matches = tree_sitter.QueryCursor(grammar.query).matches(
        tree.root_node, outline_module._predicates(data)
    )
    assert len(reads) == parsed
    names = [caps["name"][0].text for _, caps in matches]
    assert len(names) == 500 and all(n is not None and n.startswith(b"X_") for n in names)


@pytest.mark.parametrize(
    ("source", "constants"),
    [
        ("MAX = 1\nmin_size = 2\n_PRIVATE = 3\nCamel = 4\n", ["MAX", "_PRIVATE"]),
        ("const MAX = 1;\nconst low = 2;\n", ["MAX"]),  # JavaScript's pattern
    ],
)
def test_upper_case_names_are_constants_and_others_are_not(
    source: str, constants: list[str]
) -> None:
    path = "m.py" if "const " not in source else "m.js"
    got = outline(source, path)
    assert [s.name for s in got.symbols if s.kind == "constant"] == constants
