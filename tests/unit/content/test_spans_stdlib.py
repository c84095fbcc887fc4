"""Symbol spans against Python's own ``ast`` (issue 26: 1,000 random functions, methods
and classes of the standard library, every span exact).

``lineStart`` is the first decorator's line, else the ``def``/``class`` line;
``lineEnd`` is ``end_lineno`` (a comment after the last statement is not part of it).
Definitions inside a function's body are not in the outline and not drawn; a name
defined twice answers with its first definition.
"""

from __future__ import annotations

import ast
import random
import sysconfig
import warnings
from pathlib import Path

from readmany_daemon.content.outline import Outline, outline
from readmany_daemon.content.spans import Span, find_symbol

SAMPLES = 1000
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _defs(body: list[ast.stmt], prefix: str, out: dict[str, tuple[int, int]]) -> None:
    """Every definition reachable without entering a function body, by dotted path, the
    first one of each path kept (statements like ``if`` and ``try`` are looked into)."""
    for node in body:
        if isinstance(node, _DEFS):
            path = f"{prefix}{node.name}"
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out.setdefault(path, (start, node.end_lineno or node.lineno))
            if isinstance(node, ast.ClassDef):
                _defs(node.body, path + ".", out)
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                stmts = [s for c in inner for s in c.body] if field == "cases" else inner
                kept = [n for n in stmts if isinstance(n, ast.stmt | ast.excepthandler)]
                _defs(kept, prefix, out)


def _read(p: Path) -> tuple[str, dict[str, tuple[int, int]]] | None:
    """The text of standard-library file ``p`` and its definitions by path; None for a
    file ``ast`` cannot parse (test data in Python 2, broken on purpose, not UTF-8)."""
    try:
        text = p.read_text(encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    defs: dict[str, tuple[int, int]] = {}
    _defs(tree.body, "", defs)
    return text, defs


def _outline(text: str, name: str) -> Outline:
    """The outline of ``text``, parsed again when a busy machine ran it over its time
    budget (``PARSE_SECONDS``: a limit of the daemon, not of the spans)."""
    for _ in range(5):
        got = outline(text, name)
        if not (got.reason or "").startswith("too slow"):
            break
    return got


def test_a_thousand_stdlib_symbols_have_their_ast_spans() -> None:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts)
    rng = random.Random(26)
    read: dict[Path, tuple[str, dict[str, tuple[int, int]]] | None] = {}
    checked = 0
    wrong = []
    while checked < SAMPLES:
        path = rng.choice(files)
        if path not in read:
            read[path] = _read(path)
        got_file = read[path]
        if got_file is None or not got_file[1]:
            continue
        text, defs = got_file
        name = rng.choice(sorted(defs))
        got = find_symbol(_outline(text, path.name), name)
        want = defs[name]
        checked += 1
        if not isinstance(got, Span) or (got.start, got.end) != want:
            shown = got if isinstance(got, list) else (got.start, got.end)
            wrong.append((str(path), name, want, shown))
    assert checked == SAMPLES
    assert wrong == []
