"""The package's import graph keeps its layers (docs/architecture.md, "The layers").

Read from the source (``ast``, every ``import`` / ``from`` in ``readmany_daemon/**/*.py``,
inside functions and ``TYPE_CHECKING`` blocks too), nothing imported:

1. no import cycles between modules (a cycle is reported as a path);
2. imports go downward by layer: vocabulary < wire < rules < index < content < rank < engine <
   runtime < lsp < mcp < surfaces (sideways within a layer is fine); content does not
   import rules or index; ``route.py`` may be imported by ``mcp/`` and ``cli.py``;
3. third-party seams: pygls/lsprotocol only in lsp/, watchdog only in the runtime's
   watcher, inotify and observer modules, re2/wcmatch only in rules/, charset_normalizer only in
   content's decoder, tree_sitter only in content's outline module, mcp only in mcp/;
4. subpackage ``__init__.py`` files hold no code (the top one: ``__version__`` only);
5. no class is over ``MAX_CLASS_LINES`` (650) lines, counting the lines of the package
   classes it inherits from (``class_sizes``).

An exception would be listed in ``ALLOWED`` with its reason; there is none, and the
lists are not to grow.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "readmany_daemon"
NAME = "readmany_daemon"

LAYERS = [
    "vocabulary",
    "wire",
    "rules",
    "index",
    "content",
    "rank",
    "engine",
    "runtime",
    "lsp",
    "mcp",
    "surfaces",
]
RANK = {layer: i for i, layer in enumerate(LAYERS)}
#: Subpackages are their own layer; these top-level modules belong to one.
TOP_LEVEL = {
    "__init__": "vocabulary",
    "errors": "vocabulary",
    "settings": "vocabulary",
    "logs": "vocabulary",
    "paths": "vocabulary",
    "racy": "vocabulary",
    "roots": "vocabulary",
    "quickjson": "vocabulary",
    "frames": "vocabulary",
    "cli": "surfaces",
    "cli_parser": "surfaces",
    "cli_output": "surfaces",
    "route": "surfaces",
    "client": "surfaces",
    "quickargs": "surfaces",
    "daemon": "surfaces",
    "socketfiles": "surfaces",
    "launch": "surfaces",
    "bridge": "surfaces",
    "__main__": "surfaces",
}
#: Upward imports the plan allows: (importer layer or module, imported module).
UPWARD_OK = {("mcp", f"{NAME}.route"), (f"{NAME}.cli", f"{NAME}.route")}
#: Same-or-lower imports the plan forbids: (importer layer, imported layer).
FORBIDDEN = {("content", "rules"), ("content", "index")}
#: Third-party top-level name -> the module paths (prefixes, relative to the package
#: folder) allowed to import it.
SEAMS = {
    "pygls": ("lsp/",),
    "lsprotocol": ("lsp/",),
    "watchdog": ("runtime/watcher.py", "runtime/inotify.py", "runtime/observer.py"),
    "re2": ("rules/",),
    "wcmatch": ("rules/",),
    "charset_normalizer": ("content/decode.py",),
    "bpe_openai": ("content/tokens.py",),  # loaded by file path there, never imported
    "mcp": ("mcp/sdk.py",),  # mcp/front.py answers before it loads
    "tree_sitter": ("content/outline.py",),
}

#: Layer exceptions: (importer, imported) -> why it is there (none).
ALLOWED: dict[tuple[str, str], str] = {}
#: Allowed cycles, each as the sorted modules of one strongly connected set -> why (none).
ALLOWED_CYCLES: dict[tuple[str, ...], str] = {}
#: Third-party imports outside their seam: (importer, package) -> why (none).
ALLOWED_SEAMS: dict[tuple[str, str], str] = {}
#: ``__init__.py`` files allowed to hold code -> why (none).
ALLOWED_INIT: dict[str, str] = {}


# ------------------------------------------------------------------------------ the graph


def module_name(path: Path, package: Path = PACKAGE) -> str:
    rel = path.relative_to(package).with_suffix("")
    parts = [NAME, *rel.parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    return {module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def _resolve(target: str, names: Mapping[str, Path]) -> str | None:
    """The package's module that ``target`` (a dotted name) is, or lives in."""
    while target:
        if target in names:
            return target
        target = target.rpartition(".")[0]
    return None


def from_module(node: ast.ImportFrom, name: str, is_pkg: bool) -> str:
    """The dotted module a ``from … import`` in module ``name`` (a package's
    ``__init__`` when ``is_pkg``) imports from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports(path: Path, name: str, names: Mapping[str, Path]) -> tuple[set[str], set[str]]:
    """``(package modules, third-party top-level names)`` that file ``path`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    inner: set[str] = set()
    outer: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = from_module(node, name, is_pkg)
            # ``from pkg import sub``: the submodule when there is one, else pkg itself
            targets = [f"{mod}.{alias.name}" for alias in node.names] or [mod]
            if not mod.startswith(NAME):
                targets = [mod]
        for target in targets:
            if target == NAME or target.startswith(NAME + "."):
                got = _resolve(target, names)
                if got is not None and got != name:
                    inner.add(got)
            elif target != "__future__":
                outer.add(target.split(".")[0])
    return inner, outer


def graph(package: Path = PACKAGE) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``(module -> package modules it imports, module -> third-party names)``."""
    names = modules(package)
    edges: dict[str, set[str]] = {}
    third: dict[str, set[str]] = {}
    for name, path in names.items():
        edges[name], third[name] = imports(path, name, names)
    return edges, third


# ------------------------------------------------------------------------------ the checks


def layer(module: str) -> str:
    parts = module.split(".")[1:]
    if len(parts) >= 2 or (parts and parts[0] in RANK and parts[0] not in TOP_LEVEL):
        return parts[0]  # a subpackage's module, or the subpackage itself
    key = parts[0] if parts else "__init__"
    if key not in TOP_LEVEL:
        raise AssertionError(f"{module}: no layer (add it to TOP_LEVEL or move it)")
    return TOP_LEVEL[key]


def layer_violations(edges: Mapping[str, Iterable[str]]) -> set[tuple[str, str]]:
    bad = set()
    for importer, targets in edges.items():
        lo = layer(importer)
        for imported in targets:
            li = layer(imported)
            upward = RANK[li] > RANK[lo] and not (
                (lo, imported) in UPWARD_OK or (importer, imported) in UPWARD_OK
            )
            if upward or (lo, li) in FORBIDDEN:
                bad.add((importer, imported))
    return bad


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every import cycle, one per strongly connected set: a path ``a, b, …, a``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    sccs: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan (the graph is small: recursion is fine)
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1 or v in edges.get(v, ()):
                sccs.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_path(scc, edges) for scc in sccs]


def _path(scc: list[str], edges: Mapping[str, Iterable[str]]) -> list[str]:
    """A shortest cycle through the first module of ``scc``, inside it (breadth first)."""
    start, inside = scc[0], set(scc)
    prev: dict[str, str | None] = {start: None}
    queue = [start]
    for v in queue:  # the list grows while it is walked
        for w in sorted(edges.get(v, ())):
            if w == start:
                path = [v]
                while (p := prev[path[-1]]) is not None:
                    path.append(p)
                return [*reversed(path), start]
            if w in inside and w not in prev:
                prev[w] = v
                queue.append(w)
    return [*scc, start]


def seam_violations(
    third: Mapping[str, Iterable[str]], package: Path = PACKAGE
) -> set[tuple[str, str]]:
    names = modules(package)
    bad = set()
    for module, packages in third.items():
        rel = names[module].relative_to(package).as_posix() if module in names else module
        for top in packages:
            allowed = SEAMS.get(top)
            if allowed is not None and not rel.startswith(allowed):
                bad.add((module, top))
    return bad


def _assigns_version(node: ast.stmt) -> bool:
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    else:
        return False
    return [t.id for t in targets if isinstance(t, ast.Name)] == ["__version__"]


def init_code(path: Path, top: bool) -> list[str]:
    """Statements of an ``__init__.py`` other than its docstring (and, in the top one,
    ``__version__ = …`` and ``from __future__``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if top and _assigns_version(node):
            continue
        found.append(f"line {node.lineno}: {ast.unparse(node)[:60]}")
    return found


# ------------------------------------------------------------------------------ the tests

EDGES, THIRD = graph()


def test_the_graph_is_read() -> None:
    assert EDGES.get(f"{NAME}.cli"), "no imports found in cli.py"
    assert any("msgspec" in names for names in THIRD.values())


def test_no_import_cycles() -> None:
    found = {tuple(sorted(set(c))): c for c in cycles(EDGES)}
    new = {k: v for k, v in found.items() if k not in ALLOWED_CYCLES}
    assert not new, "import cycles:\n" + "\n".join(" -> ".join(c) for c in new.values())


def test_imports_go_down_the_layers() -> None:
    new = sorted(layer_violations(EDGES) - ALLOWED.keys())
    assert not new, "imports against the layer order (docs/architecture.md):\n" + "\n".join(
        f"{a} ({layer(a)}) imports {b} ({layer(b)})" for a, b in new
    )


def test_third_party_packages_stay_behind_their_seams() -> None:
    new = sorted(seam_violations(THIRD) - ALLOWED_SEAMS.keys())
    assert not new, "third-party imports outside their seam:\n" + "\n".join(
        f"{a} imports {b} (allowed in {SEAMS[b]})" for a, b in new
    )


def test_init_files_hold_no_code() -> None:
    bad = {}
    for path in sorted(PACKAGE.rglob("__init__.py")):
        name = module_name(path)
        code = init_code(path, top=name == NAME)
        if code and name not in ALLOWED_INIT:
            bad[name] = code
    assert not bad, f"__init__.py files with code: {bad}"


# ------------------------------------------------------------------------------ self-tests


@pytest.fixture()
def fake(tmp_path: Path) -> Path:
    """A small package tree named like the real one, with a few deliberate faults."""
    pkg = tmp_path / NAME
    files = {
        "__init__.py": '"""Doc."""\n\n__version__ = "1"\n',
        "errors.py": "import os\n",
        "settings.py": f"from {NAME} import errors\n",
        "cli.py": f"from {NAME}.engine import answer\nfrom {NAME}.route import go\n",
        "route.py": f"from {NAME}.engine.answer import answer\n",
        "rules/__init__.py": '"""Empty."""\n',
        "rules/glob.py": "import wcmatch.glob\n",
        "index/__init__.py": '"""Doc."""\nfrom .model import Index\n',
        "index/model.py": f"from {NAME}.rules import glob\nimport re2\n",
        "content/__init__.py": "",
        "content/reader.py": (
            "def late():\n    from readmany_daemon.index.model import Index\n"
            "import charset_normalizer\n"
        ),
        "engine/__init__.py": "",
        "engine/answer.py": f"from {NAME}.content import reader\nfrom {NAME} import cli\n",
        "mcp/__init__.py": "",
        "mcp/sdk.py": f"from {NAME}.route import go\nimport mcp.server\n",
        "mcp/front.py": "def late():\n    import mcp.types\n",
    }
    for rel, text in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def test_the_checks_flag_a_synthetic_graph(fake: Path) -> None:
    edges, third = graph(fake)
    n = NAME
    assert edges[f"{n}.index"] == {f"{n}.index.model"}  # relative import resolved
    assert edges[f"{n}.content.reader"] == {f"{n}.index.model"}  # inside a function
    assert layer_violations(edges) == {
        (f"{n}.content.reader", f"{n}.index.model"),  # content must not import index
        (f"{n}.engine.answer", f"{n}.cli"),  # upward
    }  # cli -> route and mcp -> route are allowed; cli -> engine goes down
    assert cycles(edges) == [[f"{n}.cli", f"{n}.engine.answer", f"{n}.cli"]]
    assert seam_violations(third, fake) == {
        (f"{n}.index.model", "re2"),
        (f"{n}.content.reader", "charset_normalizer"),
        (f"{n}.mcp.front", "mcp"),  # the SDK only in mcp/sdk.py
    }
    assert init_code(fake / "index/__init__.py", top=False) == ["line 2: from .model import Index"]
    assert init_code(fake / "__init__.py", top=True) == []
    assert init_code(fake / "__init__.py", top=False) == ["line 3: __version__ = '1'"]


def test_an_unmapped_top_level_module_is_an_error() -> None:
    with pytest.raises(AssertionError, match="no layer"):
        layer(f"{NAME}.newthing")


def test_the_architecture_map_names_every_module() -> None:
    """docs/architecture.md's module table names each module of the package once, with
    its one concept, and nothing that is gone."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = doc[doc.index("| module | its one concept |") :].split("\n\n", 1)[0]
    named = [line.split("](", 1)[0].removeprefix("| [") for line in table.splitlines()[2:]]
    modules = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" or p.parent == PACKAGE  # subpackages' are empty
    )
    assert sorted(named) == modules
    assert len(named) == len(set(named))


# ------------------------------------------------------------------------------ class sizes

#: House rule (issue 24): no class is over this many lines, counting the lines of the
#: package classes it inherits from.
MAX_CLASS_LINES = 650


def _bindings(tree: ast.Module, name: str, is_pkg: bool) -> dict[str, str]:
    """What each name bound at the top of module ``name`` refers to, as a dotted name in
    the package: its own classes, and what ``import``/``from … import`` bring in."""
    bound: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bound[node.name] = f"{name}.{node.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name.startswith(NAME + "."):
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            mod = from_module(node, name, is_pkg)
            if mod == NAME or mod.startswith(NAME + "."):
                for alias in node.names:
                    bound.setdefault(alias.asname or alias.name, f"{mod}.{alias.name}")
    return bound


def class_sizes(package: Path = PACKAGE) -> dict[str, int]:
    """``module.Class`` -> its lines (its ``class`` line to its last, by ``ast``) plus
    those of every class of the package it inherits from, recursively, each base once.
    A base is found by what its name refers to in its module (a class of that module,
    or one imported from the package, re-exports followed); other bases count nothing."""
    top: dict[str, tuple[int, list[ast.expr], str]] = {}  # dotted class -> (lines, bases, module)
    every: list[tuple[str, ast.ClassDef]] = []
    scopes: dict[str, dict[str, str]] = {}
    for name, path in modules(package).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        scopes[name] = _bindings(tree, name, path.name == "__init__.py")
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                every.append((name, node))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                top[f"{name}.{node.name}"] = (lines, node.bases, name)

    def resolve(expr: ast.expr, module: str) -> str | None:
        head, _, rest = ast.unparse(expr).partition(".")
        target = scopes.get(module, {}).get(head)
        if target is None:
            return None
        dotted = f"{target}.{rest}" if rest else target
        for _ in range(10):  # follow re-exports: ``from a import X`` where a imported X
            if dotted in top:
                return dotted
            mod, _, attr = dotted.rpartition(".")
            dotted = scopes.get(mod, {}).get(attr, "")
            if not dotted:
                return None
        return None

    def bases(bases_of: list[ast.expr], module: str, seen: set[str]) -> None:
        for expr in bases_of:
            got = resolve(expr, module)
            if got is not None and got not in seen:
                seen.add(got)
                bases(top[got][1], top[got][2], seen)

    sizes: dict[str, int] = {}
    for module, node in every:
        assert node.end_lineno is not None
        seen: set[str] = set()
        bases(node.bases, module, seen)
        key = f"{module}.{node.name}"
        size = node.end_lineno - node.lineno + 1 + sum(top[b][0] for b in seen)
        sizes[key] = max(size, sizes.get(key, 0))
    return sizes


def test_no_class_is_over_650_lines_with_its_bases() -> None:
    big = {name: n for name, n in class_sizes().items() if n > MAX_CLASS_LINES}
    assert not big, f"classes over {MAX_CLASS_LINES} lines with their bases: {big}"


def test_class_sizes_count_the_package_bases(tmp_path: Path) -> None:
    pkg = tmp_path / NAME
    (pkg / "index").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "index" / "__init__.py").write_text("")
    (pkg / "index" / "walk.py").write_text("class Walk:\n    a = 1\n    b = 2\n")
    (pkg / "index" / "changes.py").write_text(
        f"from {NAME}.index.walk import Walk\nclass Changes(Walk):\n    c = 3\n"
    )
    (pkg / "index" / "model.py").write_text(
        "from . import changes\nfrom .walk import Walk\nimport json\n"
        "class Index(changes.Changes, Walk, json.JSONDecoder):\n    pass\n"
    )
    sizes = class_sizes(pkg)
    assert sizes[f"{NAME}.index.walk.Walk"] == 3
    assert sizes[f"{NAME}.index.changes.Changes"] == 2 + 3
    assert sizes[f"{NAME}.index.model.Index"] == 2 + 2 + 3  # Walk once; json's counts 0
