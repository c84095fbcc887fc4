"""Outlines (content/outline.py): symbols, kinds, 1-based lines and depth per language,
Markdown headings, the reasons for no outline, broken and hostile input, the cache."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import msgspec
import pytest

from readmany_daemon.content.outline import (
    MAX_OUTLINE_BYTES,
    Outline,
    OutlineCache,
    Symbol,
    language_for,
    outline,
    render_outline,
)


def shown(text: str, path: str) -> str:
    """The rendered outline of ``text`` (all of ``name, kind, lines, depth`` in one view)."""
    got = outline(textwrap.dedent(text).lstrip("\n"), path)
    assert got.reason is None, got.reason
    return render_outline(got.symbols)


def expect(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


PYTHON = """
    \"\"\"A module.\"\"\"
    import os

    MAX_SIZE = 10
    _DEFAULT_NAME: str = "x"
    lower_case = 3

    @dataclass
    class Foo(Base):
        \"\"\"A class.\"\"\"

        LIMIT = 1

        def __init__(self):
            def inner():
                pass

        @property
        def size(self) -> int:
            return 1

        class Inner:
            async def run(self): ...

    def top(a, b):
        return a

    async def atop(): pass
"""


def test_python() -> None:
    assert shown(PYTHON, "pkg/mod.py") == expect("""
        constant MAX_SIZE L4
        constant _DEFAULT_NAME L5
        class Foo L8-23
          method __init__ L14-16
          method size L18-20
          class Inner L22-23
            method run L23
        function top L25-26
        function atop L28
    """)


def test_typescript() -> None:
    src = """
        import { x } from "y";

        export const MAX_RETRIES = 3;
        const helper = (a: number) => a + 1;

        export interface Shape {
          area(): number;
        }

        export type Point = { x: number; y: number };

        enum Color {
          Red,
          Green,
        }

        namespace Geometry {
          export function dist(p: Point): number {
            return 0;
          }
        }

        @Component({})
        export abstract class Base implements Shape {
          abstract area(): number;
          protected name = "base";

          constructor(private readonly id: string) {}

          get label(): string {
            return this.id;
          }
        }

        export default function main(): void {
          function nested() {}
        }

        declare module "lib" {
          export function f(): void;
        }
    """
    assert shown(src, "src/shapes.ts") == expect("""
        constant MAX_RETRIES L3
        function helper L4
        interface Shape L6-8
        interface Point L10
        enum Color L12-15
        namespace Geometry L17-21
          function dist L18-20
        class Base L23-33
          method area L25
          method constructor L28
          method label L30-32
        function main L35-37
        module "lib" L39-41
          function f L40
    """)


def test_tsx() -> None:
    src = """
        type Props = { name: string };

        export function Hello({ name }: Props) {
          return <div>Hello {name}</div>;
        }

        export const Button = (props: Props) => {
          return <button>{props.name}</button>;
        };

        class Widget extends React.Component<Props> {
          render() {
            return <span />;
          }
        }
    """
    assert shown(src, "ui/Hello.tsx") == expect("""
        interface Props L1
        function Hello L3-5
        function Button L7-9
        class Widget L11-15
          method render L12-14
    """)


def test_javascript() -> None:
    src = """
        'use strict';
        const PORT = 8080;
        let counter = 0;

        class Server extends EventEmitter {
          constructor(opts) {
            super();
          }

          async start() {
            return 1;
          }
        }

        function* gen() {
          yield 1;
        }

        const handler = async (req, res) => {
          res.end();
        }, other = 1;
    """
    assert shown(src, "server.mjs") == expect("""
        constant PORT L2
        class Server L5-13
          method constructor L6-8
          method start L10-12
        function gen L15-17
        function handler L19-21
    """)


def test_go() -> None:
    src = """
        package server

        const MaxConns = 10

        const (
        \tA = iota
        \tB
        )

        type Server struct {
        \taddr string
        }

        type Handler interface {
        \tServe() error
        }

        type HandlerFunc func() error

        func New(addr string) *Server {
        \treturn &Server{addr: addr}
        }

        func (s *Server) Start() error {
        \treturn nil
        }

        func (h HandlerFunc) Serve() error { return h() }
    """
    assert shown(src, "server.go") == expect("""
        constant MaxConns L3
        constant A L6
        constant B L7
        class Server L10-12
        interface Handler L14-16
        class HandlerFunc L18
        function New L20-22
        method (*Server).Start L24-26
        method (HandlerFunc).Serve L28
    """)


def test_rust() -> None:
    src = """
        const MAX: usize = 10;

        pub struct Point {
            x: i32,
        }

        pub enum Shape {
            Circle,
        }

        pub trait Area {
            fn area(&self) -> f64;
        }

        impl Point {
            pub fn new() -> Self {
                Point { x: 0 }
            }
        }

        impl fmt::Display for Point {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "p")
            }
        }

        mod tests {
            #[test]
            fn it_works() {}
        }
    """
    assert shown(src, "src/lib.rs") == expect("""
        constant MAX L1
        class Point L3-5
        enum Shape L7-9
        interface Area L11-13
          method area L12
        class impl Point L15-19
          method new L16-18
        class impl fmt::Display for Point L21-25
          method fmt L22-24
        module tests L27-30
          function it_works L28-29
    """)


def test_java() -> None:
    src = """
        package x;

        public class Outer {
            public static final int MAX_SIZE = 10;
            private int count;

            public Outer() {}

            @Override
            public String toString() {
                return "x";
            }

            interface Listener {
                void onEvent(String e);
            }

            enum Mode { ON, OFF }
        }
    """
    assert shown(src, "src/x/Outer.java") == expect("""
        class Outer L3-19
          constant MAX_SIZE L4
          method Outer L7
          method toString L9-12
          interface Listener L14-16
            method onEvent L15
          enum Mode L18
    """)


def test_c() -> None:
    src = """
        #include <stdio.h>
        #define BUF_SIZE 1024

        struct node {
            int value;
        };

        typedef struct {
            int x;
        } point_t;

        enum color { RED, GREEN };

        static int helper(int x);

        static int helper(int x) {
            return x;
        }

        char **split(const char *s) {
            return 0;
        }
    """
    assert shown(src, "src/util.c") == expect("""
        constant BUF_SIZE L2
        class node L4-6
        class point_t L8-10
        enum color L12
        function helper L16-18
        function split L20-22
    """)


def test_cpp() -> None:
    src = """
        namespace geo {

        class Shape {
        public:
            virtual ~Shape() = default;
            virtual double area() const = 0;
            int id() const { return id_; }
        };

        double Shape::area() const { return 0; }

        }  // namespace geo

        template <typename T>
        T& first(std::vector<T>& v) { return v[0]; }
    """
    assert shown(src, "geo.hpp") == expect("""
        namespace geo L1-12
          class Shape L3-8
            method ~Shape L5
            method area L6
            method id L7
          function Shape::area L10
        function first L14-15
    """)


def test_ruby() -> None:
    src = """
        VERSION = "1.0"

        module Tools
          class Parser < Base
            def initialize(src)
              @src = src
            end

            def self.parse(text)
              new(text).run
            end
          end
        end

        def helper
        end
    """
    assert shown(src, "lib/tools.rb") == expect("""
        constant VERSION L1
        module Tools L3-13
          class Parser L4-12
            method initialize L5-7
            method self.parse L9-11
        method helper L15-16
    """)


def test_bash_and_shebangs() -> None:
    src = """
        #!/usr/bin/env bash
        PREFIX=/usr

        usage() {
          echo "usage"
        }

        function build {
          make
        }
    """
    want = expect("""
        function usage L4-6
        function build L8-10
    """)
    assert shown(src, "tools/build.sh") == want
    assert shown(src, "bin/build") == want  # no extension: the #! line names bash
    assert language_for("bin/tool", "#!/usr/bin/python3.12 -u\n") == "python"
    assert language_for("Rakefile") == "ruby"
    assert language_for("a/B.PY") == "python"


MARKDOWN = """
    Intro text.

    # Title

    ```python
    # a comment, not a heading
    ```

    ~~~
    ## nor this
    ~~~

        # indented code, not a heading

    > # quoted: not part of the outline

    ## Usage ##
    Text under usage.

    Install
    -------

    ### Deep

    # Second
    The end.
"""


def test_markdown_headings_skip_code() -> None:
    got = outline(textwrap.dedent(MARKDOWN).lstrip("\n"), "docs/README.md")
    assert render_outline(got.symbols) == expect("""
        heading Title L3-24
          heading Usage L17-19
          heading Install L20-24
            heading Deep L23-24
        heading Second L25-26
    """)
    assert got.lines == 26


def test_symbols_overlapping_a_range() -> None:
    got = outline(textwrap.dedent(PYTHON).lstrip("\n"), "mod.py")
    # lines 21..28 (the part not shown after line 20): Foo continues there, Inner and the
    # functions after it start there; size (18-20) and everything before it do not.
    assert [s.name for s in got.overlapping(21, got.lines)] == [
        "Foo",
        "Inner",
        "run",
        "top",
        "atop",
    ]
    assert [s.name for s in got.overlapping(15, 15)] == ["Foo", "__init__"]  # not inner
    assert got.overlapping(5, 4) == ()


def test_the_wire_shape() -> None:
    sym = Symbol("Foo", "class", 3, 9, 0)
    assert json.loads(msgspec.json.encode(sym)) == {
        "name": "Foo",
        "kind": "class",
        "lineStart": 3,
        "lineEnd": 9,
        "depth": 0,
    }
    assert (
        render_outline([sym, Symbol("go", "method", 4, 4, 1)]) == "class Foo L3-9\n  method go L4\n"
    )


def test_no_grammar_says_so() -> None:
    assert outline("x = 1\n", "data/table.xyz") == Outline(None, reason="no grammar for .xyz")
    assert outline("all:\n", "Makefile").reason == "no grammar for Makefile"
    assert outline("", ".gitignore").reason == "no grammar for .gitignore"


def test_too_large_says_so() -> None:
    text = "x = 1\n" * (MAX_OUTLINE_BYTES // 6 + 1)
    got = outline(text, "big.py")
    assert got.symbols == () and got.reason is not None
    assert got.reason.startswith("too large to outline")


def test_broken_source_gives_what_parses() -> None:
    src = textwrap.dedent("""
        class Good:
            def ok(self):
                return 1

        def broken(:
            x = 1

        x = = 2

        def after():
            pass
    """).lstrip("\n")
    got = outline(src, "broken.py")
    assert got.reason is None
    assert render_outline(got.symbols) == expect("""
        class Good L1-3
          method ok L2-3
        function broken L5-6
        function after L10-11
    """)
    cut = outline('class A:\n    def f(self):\n        """unterminated\n', "cut.py")
    assert [(s.kind, s.name, s.line_start) for s in cut.symbols][:1] == [("class", "A", 1)]


@pytest.mark.parametrize("path", ["x.py", "x.ts", "x.tsx", "x.c", "x.cpp", "x.rb", "x.md", "x.sh"])
def test_hostile_input_never_raises(path: str) -> None:
    cases = [
        "",
        "\x00\x01\x02\xff" * 5000,
        "\ud800 lone surrogate\n def f(): pass",
        "(" * 50_000 + ")" * 10,
        "{" * 20_000,
        "f(x" * 20_000,
        "\n" * 100_000,
        bytes(range(256)).decode("latin-1") * 200,
        "# " * 10_000 + "\n" + "=" * 10,
        "-(" * 30_000,  # unclosed brackets: quadratic to query, so no outline
        "{\n" * 30_000,
    ]
    for text in cases:
        got = outline(text, path)
        assert got.reason is None or got.reason.startswith(("too broken", "too slow")), got.reason
        for s in got.symbols:
            assert 1 <= s.line_start <= s.line_end <= max(got.lines, 1)
            assert s.depth >= 0


def test_a_name_is_one_short_line() -> None:
    src = "int\nvery_long_" + "x" * 500 + "(\n int a,\n int b) { return 0; }\n"
    (sym,) = outline(src, "a.c").symbols
    assert sym.name.startswith("very_long_") and len(sym.name) == 120
    assert (sym.line_start, sym.line_end) == (1, 4)


def test_the_cache_makes_an_outline_once() -> None:
    cache = OutlineCache()
    text = textwrap.dedent(PYTHON)
    first = outline(text, "a.py", cache=cache)
    again = outline(text, "other/b.py", cache=cache)  # same text, same language
    assert again is first and (cache.hits, cache.misses) == (1, 1)
    # the same text in another language is another outline
    assert outline(text, "a.rb", cache=cache) is not first and cache.misses == 2
    assert outline(text + "\n", "a.py", cache=cache) is not first


def test_the_cache_is_bounded() -> None:
    cache = OutlineCache(max_bytes=2_000)
    for i in range(50):
        outline(f"def f{i}(): pass\n" * 3, "a.py", cache=cache)
    assert 0 < len(cache) < 10


def test_threads_share_the_lazy_grammar() -> None:
    results: list[str] = []

    def work() -> None:
        results.append(render_outline(outline("package m\nfunc F() {}\n", "m.go").symbols))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["function F L2\n"] * 8


def test_importing_loads_no_parser(tmp_path: Path) -> None:
    """The module, and a plain CLI read, load no tree-sitter: grammars come on demand."""
    (tmp_path / "a.py").write_text("def f():\n    pass\n")
    code = (
        "import sys\n"
        "import readmany_daemon.content.outline\n"
        "from readmany_daemon.cli import main\n"
        f"rc = main(['read', '--no-daemon', '--root', {str(tmp_path)!r}, 'a.py'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')), file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "def f():" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "[]"
