"""Tags (``content/outline.py`` ``tags``): what a file defines and the identifiers it
names, the nodes of a references graph (Aider's repo map)."""

from __future__ import annotations

from readmany_daemon.content.outline import OutlineCache, Tags, tags

PY = """\
class Parser:
    def parse_known_args(self, args):
        return helper(args, DEFAULT)


def helper(args, default):
    return Namespace(args)
"""

GO = """\
package main

type Server struct{ Addr string }

func (s *Server) Serve() error { return listen(s.Addr) }
"""


def test_python_definitions_and_references() -> None:
    got = tags(PY, "p.py")
    assert got.defines == {"parser", "parse_known_args", "helper"}
    assert {"helper", "default", "namespace", "args"} <= got.names
    assert got.defines <= got.names


def test_go_methods_define_their_last_name_and_types_are_references() -> None:
    got = tags(GO, "s.go")
    assert got.defines == {"server", "serve"}
    assert {"listen", "addr", "server"} <= got.names


def test_no_grammar_or_markdown_has_no_tags_and_outlines_are_cached() -> None:
    assert tags("some text", "notes.txt") == Tags()
    assert tags("# Title\n\ntext\n", "README.md") == Tags()
    cache = OutlineCache()
    tags(PY, "p.py", cache=cache)
    tags(PY, "other.py", cache=cache)
    assert (cache.misses, cache.hits) == (1, 1)
