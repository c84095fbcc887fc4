"""Outlines: a file's symbols (classes, functions, methods, headings …) with their lines.

The one concept here is :func:`outline`: text + path → :class:`Outline`, the symbols of
the file with 1-based inclusive line ranges and their nesting depth, or the reason there
is none. It is also the tree-sitter seam: ``tree_sitter`` and the grammar wheels
(``tree-sitter-python``, ``-javascript``, ``-typescript``, ``-go``, ``-rust``, ``-java``,
``-c``, ``-cpp``, ``-ruby``, ``-bash``, ``-markdown``) are imported here and nowhere else,
lazily: importing this module loads none of them; each grammar is loaded and its query
compiled on the first outline in its language, once per process (thread-safe).

* Code: the queries of :mod:`readmany_daemon.content.outline_queries` pick the definition
  nodes; nesting comes from their ranges (a ``function`` directly inside a ``class`` or
  ``interface`` is a ``method``). Decorators and ``export`` belong to their definition.
  What a function or method defines in its body is left out: local to it, and a tenth
  of the outline's tokens over the standard library (8.4 % of the files' tokens in all,
  against 10.1 % with them).
* Markdown: ATX and setext headings from tree-sitter-markdown's block grammar, which
  follows CommonMark (fenced and indented code, HTML blocks, multi-line setext headings),
  outside block quotes and lists. A heading runs to the line before the next heading of
  the same or a higher level (or to the end); ``depth`` counts its open parent headings.
* Broken source: tree-sitter recovers from errors; the outline holds what still parses.

:class:`OutlineCache` keeps outlines by a hash of the text, so a warm outline costs a
hash. :func:`render_outline` is the compact text form (one line a symbol).

Units: lines are 1-based and inclusive, counted by ``"\\n"`` only (the line model of
:mod:`readmany_daemon.content.lines`); sizes in bytes are of the text encoded as UTF-8.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

import msgspec

from readmany_daemon.content.lines import count_lines
from readmany_daemon.content.outline_queries import QUERIES, REFERENCE_KINDS

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Query, QueryPredicate, Tree

__all__ = [
    "MAX_ERROR_WIDTH",
    "MAX_OUTLINE_BYTES",
    "PARSE_SECONDS",
    "Outline",
    "OutlineCache",
    "Symbol",
    "Tags",
    "language_for",
    "outline",
    "outline_and_tags",
    "outline_key",
    "render_outline",
    "set_parse_clock",
    "tags",
]

#: Texts larger than this (bytes of UTF-8) get no outline (a reason instead): tree-sitter
#: parses code at roughly 5-20 MB/s, so this bounds one outline to a fraction of a second.
MAX_OUTLINE_BYTES: Final = 4 * 1024 * 1024
#: Parsing stops (no outline) after this many seconds plus this many per byte: ~10x
#: the normal rate (10-25 ms for 100 KB of code); binary or junk input can be 50x slower.
PARSE_SECONDS: Final = 0.1
PARSE_SECONDS_PER_BYTE: Final = 1e-6
#: Bytes handed to the parser at a time.
_CHUNK: Final = 1 << 20
#: An ERROR node with more children than this means no outline. tree-sitter's query
#: cursor takes time quadratic in some error shapes (long runs of unclosed brackets:
#: 20,000 bytes of ``-(`` take 0.6 s, 60,000 take 6 s), and the Python binding offers no
#: way to stop it (0.26.1: ``matches``' progress callback crashes). Broken real code
#: stays far below: at most 660 over 120 damaged standard-library modules.
MAX_ERROR_WIDTH: Final = 2_000
#: A symbol's name is cut to this many characters (a C++ declarator can be a long line).
MAX_NAME_CHARS: Final = 120

#: File extension (lower case, with the dot) → language.
EXTENSIONS: Final[dict[str, str]] = {
    **dict.fromkeys((".py", ".pyi", ".pyw"), "python"),
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx"), "javascript"),
    **dict.fromkeys((".ts", ".mts", ".cts"), "typescript"),
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    **dict.fromkeys((".c", ".h"), "c"),
    **dict.fromkeys((".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++"), "cpp"),
    **dict.fromkeys((".rb", ".rake", ".gemspec"), "ruby"),
    **dict.fromkeys((".sh", ".bash"), "bash"),
    **dict.fromkeys((".md", ".markdown", ".mdown", ".mkd"), "markdown"),
}
#: Whole file names (no telling extension) → language.
FILENAMES: Final[dict[str, str]] = {
    **dict.fromkeys(("Rakefile", "Gemfile", "Guardfile", "Vagrantfile"), "ruby"),
    **dict.fromkeys((".bashrc", ".bash_profile", ".profile", "PKGBUILD"), "bash"),
}
#: ``#!`` interpreter (the program's base name, versions stripped) → language.
_SHEBANGS: Final[dict[str, str]] = {
    "python": "python",
    "node": "javascript",
    "ruby": "ruby",
    "sh": "bash",
    "bash": "bash",
}
_SHEBANG: Final = re.compile(r"#![ \t]*(?:\S*/)?(?:env[ \t]+(?:-\S+[ \t]+)*)?([A-Za-z]+)")
#: Language → (grammar module, function returning its language pointer).
_GRAMMARS: Final[dict[str, tuple[str, str]]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "bash": ("tree_sitter_bash", "language"),
    "markdown": ("tree_sitter_markdown", "language"),
}
_MARKDOWN_QUERY: Final = "[(atx_heading) (setext_heading)] @heading"
#: Nodes that belong to the definition they wrap (decorators, ``export``, ``const``).
_WRAPPERS: Final = frozenset(
    {
        "decorated_definition",
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
        "template_declaration",
    }
)
#: Wrappers that may hold several definitions (``const a = …, b = …``): kept apart then.
_MULTI: Final = frozenset({"lexical_declaration", "variable_declaration"})
#: Nodes before a definition that belong to it (Rust's ``#[…]`` attributes).
_ATTRIBUTES: Final = frozenset({"attribute_item"})
#: Comments an attribute may stand above (``#[inline]``, then ``/// doc``).
_COMMENTS: Final = frozenset({"line_comment", "block_comment"})
#: Kinds whose bodies are not outlined (what a function defines inside is local to it).
_BODIES: Final = frozenset({"function", "method"})
#: Kinds whose direct ``function`` children are methods.
_METHOD_HOSTS: Final = frozenset({"class", "interface"})


class Symbol(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """One symbol of an outline (on the wire: ``{name, kind, lineStart, lineEnd, depth}``),
    or one line of a bounded outline that stands for several
    (:func:`readmany_daemon.content.outline_fit.fit_outline`).

    * ``name``: as written (Go methods ``(*T).Name``, Rust impls ``impl Trait for Type``,
      Ruby singleton methods ``self.name``), whitespace runs folded to one space, cut to
      :data:`MAX_NAME_CHARS` characters.
    * ``kind``: a lower-case LSP SymbolKind name (``class``, ``function``, ``method``,
      ``module``, ``namespace``, ``interface``, ``enum``, ``constant``, ``variable``) or
      ``heading``; the mapping per language is in
      :mod:`readmany_daemon.content.outline_queries`.
    * ``line_start``/``line_end``: 1-based, inclusive; decorators and ``export`` included.
    * ``depth``: 0 at the top level, +1 per enclosing symbol (per parent heading).
    * ``count``: how many symbols the line stands for: 1 for a symbol; for a parent whose
      deeper levels are collapsed into its line, 1 + those; for a folded run
      (``name`` ``"first … last"``), all its symbols (on the wire only when not 1).
    * ``note``: what a line standing for several holds, by kind (``"41 methods"``,
      ``"128 functions"``); ``""`` for a symbol. Rendered in parentheses after the lines.
    """

    name: str
    kind: str
    line_start: int
    line_end: int
    depth: int
    count: int = 1
    note: str = ""


class Outline(msgspec.Struct, frozen=True):
    """The outline of one text: ``symbols`` in document order (a parent before its
    children), for ``language`` (``None`` when unknown).

    ``reason`` is set exactly when no outline could be made (``symbols`` is then empty):
    ``"no grammar for .xyz"``, a grammar that is not installed, a text over
    :data:`MAX_OUTLINE_BYTES`, an error too wide to query (:data:`MAX_ERROR_WIDTH`). A
    parsed file with no symbols has ``reason=None``.
    ``lines`` is the text's line count.

    Made by the same parse, for reads by structure (:mod:`readmany_daemon.content.spans`):
    ``inner`` holds the symbols local to a function's or method's body, which the
    outline leaves out (document order, ``depth`` counted over both tuples); ``tops``
    the 1-based inclusive lines of each top-level syntax node (a statement, a
    definition; comments left out; a Markdown section's blocks), in order.
    """

    language: str | None
    symbols: tuple[Symbol, ...] = ()
    reason: str | None = None
    lines: int = 0
    inner: tuple[Symbol, ...] = ()
    tops: tuple[tuple[int, int], ...] = ()

    def overlapping(self, first: int, last: int) -> tuple[Symbol, ...]:
        """The symbols whose lines overlap ``first..last`` (1-based, inclusive), in order.

        A symbol's enclosing symbols overlap wherever it does, so the result keeps each
        symbol's parents; e.g. the part of a file not shown after line ``k`` is
        ``overlapping(k + 1, outline.lines)``. Empty when ``first > last``.
        """
        return tuple(s for s in self.symbols if s.line_start <= last and s.line_end >= first)

    def nbytes(self) -> int:
        """Bytes of memory it holds, estimated: 300, plus 200 a symbol (of ``symbols``
        and ``inner``) and its name's length, plus 80 a top-level node's lines."""
        names = sum(200 + len(s.name) for s in (*self.symbols, *self.inner))
        return 300 + names + 80 * len(self.tops)


def render_outline(symbols: Sequence[Symbol]) -> str:
    """The compact text form: one line a symbol, ``"  " * depth + "kind name Lstart-end"``
    (``Lstart`` alone for a one-line symbol), then `` (note)`` for a line that stands for
    several (``class Parser L300-1900 (41 methods)``), each line ending in ``"\\n"``;
    ``""`` for no symbols."""
    out = []
    for s in symbols:
        end = f"-{s.line_end}" if s.line_end != s.line_start else ""
        note = f" ({s.note})" if s.note else ""
        out.append(f"{'  ' * s.depth}{s.kind} {s.name} L{s.line_start}{end}{note}\n")
    return "".join(out)


def language_for(path: str, text: str = "") -> str | None:
    """The outline language of ``path`` (a file path or name, any separator): by its
    extension (:data:`EXTENSIONS`), its name (:data:`FILENAMES`), else by a ``#!`` line
    at the start of ``text``; ``None`` when none applies."""
    name = path.replace("\\", "/").rpartition("/")[2]
    stem, dot, ext = name.rpartition(".")
    lang = EXTENSIONS.get("." + ext.lower()) if dot and stem else None
    lang = lang or FILENAMES.get(name)
    if lang is None and text.startswith("#!"):
        m = _SHEBANG.match(text, 0, 200)
        if m:
            lang = _SHEBANGS.get(m.group(1).rstrip("0123456789"))
    return lang


class _Grammar(msgspec.Struct, frozen=True):
    language: Language
    query: Query


#: The clock of the parse time limits (seconds): the wall clock; a niced worker making
#: outlines ahead counts its own CPU time instead (:func:`set_parse_clock`).
_clock: Callable[[], float] = time.perf_counter


def set_parse_clock(clock: Callable[[], float]) -> None:
    """Count the parse time limits (:data:`PARSE_SECONDS`) on ``clock`` (seconds) in this
    process: ``time.process_time`` in a low-priority worker, whose wall time is mostly
    waiting, so that it stops the parses the daemon would stop (``rank.ahead``)."""
    global _clock
    _clock = clock


_grammars: dict[str, _Grammar | str] = {}
_grammars_lock = threading.Lock()


def _grammar(lang: str) -> _Grammar | str:
    """The loaded grammar and compiled query of ``lang``, or why it cannot be had; loaded
    on first use, once per process (under a lock: compiling a query takes milliseconds)."""
    got = _grammars.get(lang)
    if got is not None:
        return got
    with _grammars_lock:
        got = _grammars.get(lang)
        if got is None:
            got = _grammars[lang] = _load(lang)
    return got


def _load(lang: str) -> _Grammar | str:
    import tree_sitter

    module, func = _GRAMMARS[lang]
    try:
        pointer = getattr(importlib.import_module(module), func)()
    except ImportError:
        return f"the {lang} grammar is not installed ({module.replace('_', '-')})"
    language = tree_sitter.Language(pointer)
    text = _MARKDOWN_QUERY if lang == "markdown" else QUERIES[lang]
    return _Grammar(language, tree_sitter.Query(language, text))


def outline_key(data: bytes, lang: str) -> bytes:
    """The key of an outline of ``data`` (a text as UTF-8) in language ``lang``: BLAKE2b
    of 128 bits, personalized by the language (16 bytes). :class:`OutlineCache` and a
    store of outlines made ahead (``rank.ahead``) keep outlines under it."""
    return hashlib.blake2b(data, digest_size=16, person=lang.encode()[:16]).digest()


def outline(
    text: str,
    path: str,
    *,
    cache: OutlineCache | None = None,
    stored: Callable[[bytes], Outline | None] | None = None,
) -> Outline:
    """The outline of ``text``, the content of the file ``path`` (whose name picks the
    language, :func:`language_for`).

    Never raises on any text (binary-looking, broken or partial source): what tree-sitter
    recovers is outlined. No outline, with ``reason`` set, for a language without a
    grammar (``"no grammar for .xyz"``), a text over :data:`MAX_OUTLINE_BYTES`, or one so
    broken that querying it could take seconds (:data:`MAX_ERROR_WIDTH`), or whose parse
    runs over its time budget (:data:`PARSE_SECONDS`). With a
    ``cache``, an outline of the same text in the same language is made once. An outline
    neither ``cache`` holds is asked of ``stored`` (by :func:`outline_key`; default:
    ``cache.stored``) before it is made: outlines made ahead of the request.
    """
    lang = language_for(path, text)
    if lang is None:
        name = path.replace("\\", "/").rpartition("/")[2]
        stem, dot, ext = name.rpartition(".")
        return Outline(None, reason=f"no grammar for {'.' + ext if dot and stem else name}")
    data = text.encode("utf-8", "replace")
    if len(data) > MAX_OUTLINE_BYTES:
        return Outline(
            lang,
            reason=f"too large to outline: {len(data):,} bytes, over {MAX_OUTLINE_BYTES:,}",
            lines=count_lines(text),
        )
    if stored is None and cache is not None:
        stored = cache.stored
    if cache is None and stored is None:
        return _make(lang, data, text)
    key = outline_key(data, lang)
    got = cache.get(key) if cache is not None else None
    if got is None:
        got = stored(key) if stored is not None else None
        if got is None:
            got = _make(lang, data, text)
        if cache is not None:
            cache.put(key, got)
    return got


def _make(lang: str, data: bytes, text: str, trees: list[Tree] | None = None) -> Outline:
    """The outline of ``data`` (``text`` as UTF-8) in ``lang``; the tree parsed, if any,
    is appended to ``trees``."""
    import tree_sitter

    lines = count_lines(text)
    grammar = _grammar(lang)
    if isinstance(grammar, str):
        return Outline(lang, reason=grammar, lines=lines)
    if not data:
        return Outline(lang)
    budget = PARSE_SECONDS + len(data) * PARSE_SECONDS_PER_BYTE
    deadline = _clock() + budget
    try:  # a parse stopped by its progress callback raises ValueError("Parsing failed")
        tree = tree_sitter.Parser(grammar.language).parse(
            lambda offset, _point: data[offset : offset + _CHUNK],
            progress_callback=lambda _offset, _error: _clock() > deadline,
        )
    except ValueError:
        return Outline(lang, reason=f"too slow to parse: over {budget * 1000:,.0f} ms", lines=lines)
    if trees is not None:
        trees.append(tree)
    if tree.root_node.has_error and (width := _widest_error(tree.root_node)) > MAX_ERROR_WIDTH:
        reason = f"too broken to outline: an error spans {width:,} nodes"
        return Outline(lang, reason=reason, lines=lines)
    matches = tree_sitter.QueryCursor(grammar.query).matches(tree.root_node, _predicates(data))
    tops = _tops(tree.root_node, data)
    if lang == "markdown":
        return Outline(lang, _headings(data, matches, lines), lines=lines, tops=tops)
    symbols, inner = _symbols(data, matches)
    return Outline(lang, symbols, lines=lines, inner=inner, tops=tops)


@functools.lru_cache(maxsize=16)
def _name_pattern(regex: str) -> re.Pattern[bytes]:
    return re.compile(regex.encode())


def _predicates(data: bytes) -> QueryPredicate:
    """The query predicates the outline queries use (``outline_queries``), evaluated on
    ``data``, the parsed bytes: ``(#name-match? @capture "REGEX")`` holds when the
    first node of ``capture`` has text that ``REGEX`` matches (``re.search``). Any other
    predicate holds. (tree-sitter's ``#match?`` reads the text through the parse's read
    callback, the whole text for each match.)"""

    def check(
        predicate: str,
        args: Sequence[tuple[str, str]],
        pattern_index: int,
        captures: dict[str, list[Node]],
    ) -> bool:
        if predicate != "name-match?" or len(args) != 2:
            return True
        nodes = captures.get(args[0][0])
        if not nodes:
            return False
        node = nodes[0]
        return _name_pattern(args[1][0]).search(data[node.start_byte : node.end_byte]) is not None

    return check


def _tops(root: Node, data: bytes) -> tuple[tuple[int, int], ...]:
    """The lines of each top-level syntax node under ``root`` (comments left out; Rust's
    ``#[…]`` attributes part of the item after them, as in its symbol; a Markdown
    ``section``'s own blocks in its place), in document order."""
    out: list[tuple[int, int]] = []
    stack = list(reversed(root.named_children))
    attributed: int | None = None  # the first line of the attributes before the next item
    while stack:
        node = stack.pop()
        if node.type == "section":
            stack.extend(reversed(node.named_children))
        elif node.type in _ATTRIBUTES:
            if attributed is None:
                attributed = node.start_point[0] + 1
        elif (
            node.type != "comment"
            and node.type not in _COMMENTS
            and node.end_byte > node.start_byte
        ):
            start = node.start_point[0] + 1 if attributed is None else attributed
            out.append((start, _line_end(node, data)))
            attributed = None
    return tuple(out)


def _widest_error(root: Node) -> int:
    """The most children of one ERROR node under ``root``, or a number over
    :data:`MAX_ERROR_WIDTH` as soon as one has more (only nodes with errors are visited)."""
    widest = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR":
            widest = max(widest, node.child_count)
            if widest > MAX_ERROR_WIDTH:
                break
        stack.extend(c for c in node.children if c.has_error)
    return widest


def _line_end(node: Node, data: bytes) -> int:
    """The 1-based last line of ``node`` (an end at column 0 is the line before). A
    comment after its last statement is not part of it (Python's ``ast`` draws the
    same line: tree-sitter's Python ``block`` holds the comments up to the dedent);
    the tree is walked for it only when ``node``'s last line starts with a comment
    (``data``: the parsed bytes)."""
    line = data.rfind(b"\n", node.start_byte, node.end_byte) + 1
    if not data[max(line, node.start_byte) : node.end_byte].lstrip().startswith((b"#", b"//")):
        row, col = node.end_point
        return max(node.start_point[0] + 1, row + 1 if col else row)
    last = node
    while (kids := [c for c in last.children if c.end_byte > c.start_byte]) and (
        kids[-1].type == "comment" or kids[-1].end_byte == last.end_byte
    ):
        code = [c for c in kids if c.type != "comment"]
        if not code:
            break
        last = code[-1]
    row, col = last.end_point
    return max(node.start_point[0] + 1, row + 1 if col else row)


def _text(data: bytes, node: Node | None) -> str:
    """The text of ``node`` in ``data``, whitespace folded, cut to a name's length (sliced
    here: a tree parsed from a callback reads ``node.text`` through it, 1 MiB a call)."""
    if node is None:
        return ""
    raw = data[node.start_byte : min(node.end_byte, node.start_byte + 4 * MAX_NAME_CHARS)]
    name = " ".join(raw.decode("utf-8", "replace").split())
    return name[:MAX_NAME_CHARS]


def _name(data: bytes, kind: str, caps: dict[str, list[Node]]) -> str:
    """The shown name of a match's symbol (see :class:`Symbol`)."""
    node = caps["name"][0]
    # C/C++: the name is inside the declarator chain (pointers, references, parameters)
    while node.type != "function_declarator" and node.type.endswith("declarator"):
        node = node.child_by_field_name("declarator") or node.named_children[0]
    if node.type == "function_declarator":
        node = node.child_by_field_name("declarator") or node
    name = _text(data, node)
    if "receiver" in caps:
        recv = _text(data, caps["receiver"][0])
        name = f"{recv}.{name}" if kind == "method" and recv == "self" else f"({recv}).{name}"
    if "trait" in caps:
        name = f"impl {_text(data, caps['trait'][0])} for {name}"
    elif caps["name"][0].parent is not None and caps["name"][0].parent.type == "impl_item":
        name = f"impl {name}"
    return name


def _symbols(
    data: bytes, matches: list[tuple[int, dict[str, list[Node]]]]
) -> tuple[tuple[Symbol, ...], tuple[Symbol, ...]]:
    """The outline's symbols and those local to a function's body (``Outline.inner``)."""
    found: dict[tuple[int, int], tuple[int, int, str, str]] = {}
    for _, caps in matches:
        if "name" not in caps:
            continue
        for kind, nodes in caps.items():
            if kind in ("name", "receiver", "trait"):
                continue
            node = nodes[0]
            outer = node
            while (parent := outer.parent) is not None and parent.type in _WRAPPERS:
                if parent.type in _MULTI and parent.named_child_count != 1:
                    break
                outer = parent
            key = (node.start_byte, node.end_byte)
            if key not in found:
                first = outer
                prev = outer.prev_named_sibling
                while prev is not None and (prev.type in _ATTRIBUTES or prev.type in _COMMENTS):
                    if prev.type in _ATTRIBUTES:  # comments only between attributes
                        first = prev
                    prev = prev.prev_named_sibling
                start = first.start_point[0] + 1
                found[key] = (start, _line_end(outer, data), kind, _name(data, kind, caps))
    # depth from containment of line ranges, a parent before its children
    order = sorted(found.items(), key=lambda kv: (kv[0][0], -kv[0][1]))
    stack: list[tuple[int, str]] = []  # (end byte, kind) of the open symbols
    out: list[Symbol] = []
    inner: list[Symbol] = []
    for (_, end_b), (start, end, kind, name) in order:
        while stack and stack[-1][0] < end_b:
            stack.pop()
        if kind == "function" and stack and stack[-1][1] in _METHOD_HOSTS:
            kind = "method"
        # local to a function's body: the body's business, not the outline's
        local = any(k in _BODIES for _, k in stack)
        (inner if local else out).append(Symbol(name, kind, start, end, len(stack)))
        stack.append((end_b, kind))
    return tuple(out), tuple(inner)


_CLOSING_HASHES: Final = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")


def _headings(
    data: bytes, matches: list[tuple[int, dict[str, list[Node]]]], lines: int
) -> tuple[Symbol, ...]:
    found = []
    for _, caps in matches:
        node = caps["heading"][0]
        parent = node.parent
        while parent is not None and parent.type == "section":
            parent = parent.parent
        if parent is None or parent.type != "document":
            continue  # inside a block quote or a list item
        marker = node.children[-1] if node.type == "setext_heading" else node.children[0]
        level = 1 if marker.type.startswith(("setext_h1", "atx_h1")) else 2
        if node.type == "atx_heading":
            level = int(marker.type[5])  # atx_h<level>_marker
            content = node.child_by_field_name("heading_content")
            name = _CLOSING_HASHES.sub("", _text(data, content)).strip()
        else:
            name = _text(data, node.child_by_field_name("heading_content") or node.children[0])
        found.append((node.start_point[0] + 1, level, name))
    out: list[Symbol] = []
    stack: list[tuple[int, int]] = []  # (level, index in out) of the open headings
    for start, level, name in found:
        while stack and stack[-1][0] >= level:
            _, i = stack.pop()
            out[i] = msgspec.structs.replace(out[i], line_end=max(out[i].line_start, start - 1))
        stack.append((level, len(out)))
        out.append(Symbol(name, "heading", start, max(start, lines), len(stack) - 1))
    return tuple(out)


class OutlineCache:
    """Outlines kept by a hash of their text and language (BLAKE2b, 128 bits): a
    thread-safe LRU bounded by ``max_bytes`` (bytes of memory, ``Outline.nbytes``).
    ``hits``/``misses`` count
    :meth:`get` results. ``stored``: where :func:`outline` looks for an outline this
    cache lacks before making it (``rank.ahead.AheadStore.outline``, set by the
    daemon's ranking; None: nowhere)."""

    def __init__(self, max_bytes: int = 8 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.stored: Callable[[bytes], Outline | None] | None = None
        self.hits = 0
        self.misses = 0
        self._bytes = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, tuple[Outline, int]] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, key: bytes) -> Outline | None:
        """The outline stored under ``key``, made most recently used; ``None`` if absent."""
        with self._lock:
            got = self._entries.get(key)
            if got is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return got[0]

    def put(self, key: bytes, value: Outline) -> None:
        """Store ``value`` under ``key``, evicting the least recently used to fit."""
        size = value.nbytes()
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self.max_bytes:
                return
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._bytes -= self._entries.popitem(last=False)[1][1]


class Tags(msgspec.Struct, frozen=True):
    """What one file defines and what it names (the tags of a references graph, as
    Aider's repo map): ``defines``, the lower-case names of its outline's symbols (the
    last identifier of each: ``(*T).Name`` -> ``name``); ``names``, the lower-case
    identifiers it uses, each once (its nodes of ``REFERENCE_KINDS``), definitions'
    names included. Both empty without a grammar or an outline."""

    defines: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()


_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_reference_queries: dict[str, Query | None] = {}


def _reference_query(lang: str, grammar: _Grammar) -> Query | None:
    import tree_sitter

    with _grammars_lock:
        if lang not in _reference_queries:
            kinds = [k for k in REFERENCE_KINDS if grammar.language.id_for_node_kind(k, True)]
            text = "[" + " ".join(f"({k})" for k in kinds) + "] @ref"
            _reference_queries[lang] = tree_sitter.Query(grammar.language, text) if kinds else None
        return _reference_queries[lang]


def tags(text: str, path: str, *, cache: OutlineCache | None = None) -> Tags:
    """The :class:`Tags` of ``text`` (the content of file ``path``): definitions from its
    :func:`outline` (cached in ``cache`` by content), references from one more parse.
    Never raises; ``Tags()`` when the language has no grammar or the text no outline
    (too large, too broken, too slow: the limits of :func:`outline`)."""
    found = outline(text, path, cache=cache)
    return _tags_from(found, text, None)


def outline_and_tags(text: str, path: str) -> tuple[Outline, Tags]:
    """``(outline(text, path), tags(text, path))`` from one parse rather than two: the
    tree parsed for the outline is queried for the references too (the same values;
    what the daemon's pass making them ahead uses, ``rank.ahead``)."""
    lang = language_for(path, text)
    data = text.encode("utf-8", "replace")
    if lang is None or len(data) > MAX_OUTLINE_BYTES:
        return outline(text, path), Tags()
    trees: list[Tree] = []
    found = _make(lang, data, text, trees)
    return found, _tags_from(found, text, trees[0] if trees else None)


def _tags_from(found: Outline, text: str, tree: Tree | None) -> Tags:
    """The tags of ``text`` whose outline is ``found``; its references from ``tree`` (the
    parse of ``text`` as UTF-8) when given, else from a parse made here."""
    import tree_sitter

    lang = found.language
    if lang is None or found.reason is not None or lang == "markdown":
        return Tags()
    defines = frozenset(
        m[-1].lower() for s in (*found.symbols, *found.inner) if (m := _IDENTIFIER.findall(s.name))
    )
    grammar = _grammar(lang)
    if isinstance(grammar, str):
        return Tags(defines)
    query = _reference_query(lang, grammar)
    if query is None:
        return Tags(defines, defines)
    data = text.encode("utf-8", "replace")
    if tree is None:
        deadline = _clock() + PARSE_SECONDS + len(data) * PARSE_SECONDS_PER_BYTE
        try:
            tree = tree_sitter.Parser(grammar.language).parse(
                lambda offset, _point: data[offset : offset + _CHUNK],
                progress_callback=lambda _offset, _error: _clock() > deadline,
            )
        except ValueError:
            return Tags(defines, defines)
    captured = tree_sitter.QueryCursor(query).captures(tree.root_node).get("ref", [])
    names = {data[n.start_byte : n.end_byte].decode("utf-8", "replace").lower() for n in captured}
    return Tags(defines, frozenset(names | defines))
