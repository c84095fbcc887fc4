"""docs/architecture.md's "Threads and locks" names every thread and lock of the package.

Read from the source (``ast``, nothing imported): every creation of a thread
(``threading.Thread``, ``concurrent.futures.ThreadPoolExecutor``) and of a lock, condition
or event (``threading.Lock``, ``RLock``, ``Condition``, ``Event``, ``Semaphore``,
``BoundedSemaphore``, ``Barrier``), called or given as a dataclass ``default_factory``.
Each one is a *place*: its module (the path below ``readmany_daemon/``) and its owner:

- assigned to ``self.x`` in a method of class ``C``, or a field ``x`` of class ``C``:
  ``C.x``;
- assigned to module-level name ``x``: ``x``;
- otherwise, a thread by its ``target`` (``self.f`` in class ``C`` is ``C.f``), anything
  else by the function it is made in (``C.f`` or ``f``).

A lock made as the argument of another (``Condition(Lock())``) is that one's place.
The section must hold one table row that names both the module and the owner (as
`` `module` `` and `` `owner` ``); and every row that starts with a package module names
a place that exists, so that the page stays true both ways.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "readmany_daemon"
DOC = PACKAGE.parent / "docs" / "architecture.md"
HEADING = "## Threads and locks"

#: The names whose creation makes a place, by the module they come from.
THREADS = {"Thread", "ThreadPoolExecutor"}
LOCKS = {"Lock", "RLock", "Condition", "Event", "Semaphore", "BoundedSemaphore", "Barrier"}
SOURCES = {"threading": THREADS | LOCKS, "concurrent.futures": {"ThreadPoolExecutor"}}

#: Threads that libraries start for the package: the section names each (no ``ast``
#: finds them). watchdog's inotify reader and 7.1.1's dispatcher (``runtime/inotify.py``),
#: its observer off Linux (``runtime/observer.py``), the asyncio loop of each server,
#: and anyio's worker threads under the MCP SDK.
LIBRARY_THREADS = ("InotifyFD", "InotifyFD-Dispatcher", "Observer", "asyncio", "anyio")

Place = tuple[str, str]  # (module path below the package, owner)


def _creator(node: ast.expr, modules: dict[str, str], names: dict[str, str]) -> str | None:
    """The thread or lock name ``node`` refers to (``threading.Lock``, or ``Lock``
    imported from ``threading``), else None."""
    if isinstance(node, ast.Attribute):
        source = modules.get(ast.unparse(node.value))
        if source is not None and node.attr in SOURCES[source]:
            return node.attr
    if isinstance(node, ast.Name):
        return names.get(node.id)
    return None


def _aliases(tree: ast.Module) -> tuple[dict[str, str], dict[str, str]]:
    """``(module as spelled here -> source module, local name -> creator name)``."""
    modules: dict[str, str] = {}
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in SOURCES:
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module in SOURCES:
            for alias in node.names:
                if alias.name in SOURCES[node.module]:
                    names[alias.asname or alias.name] = alias.name
    return modules, names


def _owner(made: ast.AST, what: str, parents: dict[ast.AST, ast.AST]) -> str:
    """The owner of the thread or lock made at ``made`` (see the module docstring)."""
    scopes: list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef] = []
    statement: ast.AST | None = None
    node = made
    while node in parents:
        node = parents[node]
        if statement is None and isinstance(node, ast.stmt):
            statement = node
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            scopes.insert(0, node)
    cls = next((s.name for s in reversed(scopes) if isinstance(s, ast.ClassDef)), None)
    target: ast.expr | None = None
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, ast.AnnAssign):
        target = statement.target
    value = getattr(statement, "value", None)
    if target is not None and value is made:
        self_attr = isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self"
        if self_attr and cls is not None:
            return f"{cls}.{target.attr}"
        if isinstance(target, ast.Name):
            if not scopes:
                return target.id
            if isinstance(scopes[-1], ast.ClassDef):
                return f"{scopes[-1].name}.{target.id}"
    if what in THREADS and isinstance(made, ast.Call):
        for kw in made.keywords:
            if kw.arg == "target":
                text = ast.unparse(kw.value)
                if text.startswith("self.") and cls is not None:
                    text = cls + text[len("self") :]
                return text
    return ".".join(s.name for s in scopes)


def places_in(path: Path, rel: str) -> set[Place]:
    """Every place (module ``rel``, owner) where file ``path`` makes a thread or a lock."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    modules, names = _aliases(tree)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: set[Place] = set()
    for node in ast.walk(tree):
        made: ast.AST | None = None
        what = None
        if isinstance(node, ast.Call):
            what, made = _creator(node.func, modules, names), node
            outer = parents.get(node)
            if isinstance(outer, ast.Call) and _creator(outer.func, modules, names):
                continue  # ``Condition(Lock())``: the condition's place
        elif isinstance(node, ast.keyword) and node.arg == "default_factory":
            what, made = _creator(node.value, modules, names), parents[node]
        if what is not None and made is not None:
            found.add((rel, _owner(made, what, parents)))
    return found


@functools.cache
def places(package: Path = PACKAGE) -> frozenset[Place]:
    """Every place of the package (see the module docstring); read once."""
    found: set[Place] = set()
    for path in sorted(package.rglob("*.py")):
        found |= places_in(path, path.relative_to(package).as_posix())
    return frozenset(found)


def section(doc: str) -> str:
    """The text of the section headed ``HEADING`` (up to the next ``## `` heading)."""
    assert HEADING + "\n" in doc, f"docs/architecture.md has no section {HEADING!r}"
    body = doc.split(HEADING + "\n", 1)[1]
    return body.split("\n## ", 1)[0]


def _rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def _names(row: str) -> set[str]:
    """The code spans of a table row."""
    return set(re.findall(r"`([^`]+)`", row))


def missing(found: frozenset[Place], text: str) -> list[Place]:
    """The places no row of ``text`` names (module and owner on one row)."""
    rows = [_names(row) for row in _rows(text)]
    return sorted(p for p in found if not any(p[0] in r and p[1] in r for r in rows))


def stale(found: frozenset[Place], text: str, package: Path = PACKAGE) -> list[str]:
    """Rows whose first cell starts with a module (`` `x.py` ``) that is not in
    ``package``, or that names no place of ``found`` in that module."""
    bad = []
    for row in _rows(text):
        first = row.strip("|").split("|", 1)[0].strip()
        spans = re.findall(r"`([^`]+)`", first)
        if not first.startswith("`") or not spans[0].endswith(".py"):
            continue
        if not (package / spans[0]).is_file():
            bad.append(row)  # a module that is gone
            continue
        module, owners = spans[0], set(spans[1:])
        if not any(p == (module, o) for p in found for o in owners):
            bad.append(row)
    return bad


# ------------------------------------------------------------------------------ the tests


def test_the_places_are_found() -> None:
    found = places()
    assert ("runtime/roots.py", "RootEntry.lock") in found  # a dataclass default_factory
    assert ("runtime/service.py", "Service.executor") in found  # a thread pool
    assert ("runtime/watcher.py", "Watcher._thread") in found


def test_the_section_names_every_thread_and_lock() -> None:
    text = section(DOC.read_text(encoding="utf-8"))
    gone = missing(places(), text)
    assert not gone, (
        f"docs/architecture.md {HEADING!r} has no row naming these (module, owner) places; "
        "add each with who holds it, what it guards and the lock order:\n"
        + "\n".join(f"`{m}` `{o}`" for m, o in gone)
    )


def test_the_section_names_no_place_that_is_gone() -> None:
    text = section(DOC.read_text(encoding="utf-8"))
    bad = stale(places(), text)
    assert not bad, f"rows of {HEADING!r} naming no thread or lock of their module:\n" + (
        "\n".join(bad)
    )


def test_the_section_names_the_threads_libraries_start() -> None:
    text = section(DOC.read_text(encoding="utf-8"))
    absent = [name for name in LIBRARY_THREADS if name not in text]
    assert not absent, f"{HEADING!r} does not name: {absent}"


# ------------------------------------------------------------------------------ self-test


@pytest.fixture()
def fake(tmp_path: Path) -> Path:
    """A small package that makes threads and locks in each way the rules name."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text(
        "import threading\n"
        "from dataclasses import dataclass, field\n"
        "from threading import Lock as L\n"
        "_lock = L()\n"
        "@dataclass\n"
        "class Entry:\n"
        "    lock: threading.Lock = field(default_factory=threading.Lock)\n"
        "class Worker:\n"
        "    def __init__(self):\n"
        "        self.cond = threading.Condition(threading.Lock())\n"
        "        self.thread = threading.Thread(target=self.run)\n"
        "    def run(self):\n"
        "        got = threading.Event()\n"
        "        threading.Thread(target=self.run).start()\n"
    )
    (pkg / "sub" / "b.py").write_text(
        "import concurrent.futures\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "def go():\n"
        "    pool = ThreadPoolExecutor()\n"
        "    lock = Lock()  # not threading's: a name of its own\n"
        "class Pool:\n"
        "    executor = concurrent.futures.ThreadPoolExecutor()\n"
    )
    return pkg


def test_the_rules_name_a_synthetic_package(fake: Path) -> None:
    found = places(fake)
    assert found == {
        ("a.py", "_lock"),
        ("a.py", "Entry.lock"),
        ("a.py", "Worker.cond"),
        ("a.py", "Worker.thread"),
        ("a.py", "Worker.run"),
        ("sub/b.py", "go"),
        ("sub/b.py", "Pool.executor"),
    }
    text = (
        "| `a.py` `_lock`, `Entry.lock` | x |\n"
        "| `a.py` `Worker.cond` | x |\n"
        "| `a.py` `Worker.thread`, `Worker.run` | x |\n"
        "| `a.py` `Worker.gone` | x |\n"
        "| watchdog's `InotifyFD` | x |\n"
    )
    assert missing(found, text) == [("sub/b.py", "Pool.executor"), ("sub/b.py", "go")]
    assert stale(found, text, fake) == ["| `a.py` `Worker.gone` | x |"]
