"""The tests mirror the package (docs/architecture.md, "Tests"; issue 24 item 7).

Read from the file tree, nothing imported:

1. every folder in ``tests/unit/`` is named after a subpackage of ``readmany_daemon``
   (a folder holding an ``__init__.py``) and is a package itself, so two subpackages'
   ``test_decode.py`` never clash;
2. every ``tests/unit/<sub>/test_<x>.py`` or ``test_<x>_<aspect>.py`` names a module
   ``readmany_daemon/<sub>/<x>.py`` that exists, and lies directly in ``<sub>/``;
3. every ``tests/unit/test_<x>[_<aspect>].py`` names a top-level module
   ``readmany_daemon/<x>.py``, or is one of the cross-cutting files in ``CROSS_CUTTING``;
4. no Python file below ``tests/`` is over ``MAX_LINES`` lines (split by aspect instead,
   moving whole test functions).

A test of a module goes where the module is: ``readmany_daemon/engine/paging.py`` is
tested in ``tests/unit/engine/test_paging.py``. Tests of the real process go in
``tests/e2e/``, which is not mirrored.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "readmany_daemon"
TESTS = REPO / "tests"
UNIT = TESTS / "unit"

#: Lines a file below ``tests/`` may hold (issue 24 item 7).
MAX_LINES = 800
#: Files in ``tests/unit/`` that pin no one module: the package's import graph, this
#: layout, the session guard (tests/session_guard.py), the real sdists' unpacking
#: (tests/sdists.py) and the benchmark scripts (bench/).
CROSS_CUTTING = {
    "test_layers.py",
    "test_test_layout.py",
    "test_session_guard.py",
    "test_sdists.py",
    "test_bench_smoke.py",
    "test_architecture_doc.py",
}
#: Files a test folder holds besides its tests.
NOT_TESTS = {"__init__.py", "conftest.py"}


def subpackages() -> set[str]:
    """Names of the package's subpackages (``wire``, ``rules``, … ``mcp``)."""
    return {p.parent.name for p in PACKAGE.glob("*/__init__.py")}


def names_a_module(test_file: Path, modules: set[str]) -> bool:
    """Whether ``test_<x>.py`` or ``test_<x>_<aspect>.py`` names one of ``modules`` (module
    names without ``.py``; a module's own name may hold ``_``, as ``outline_fit``)."""
    rest = test_file.stem.removeprefix("test_")
    return test_file.stem.startswith("test_") and any(
        rest == m or rest.startswith(m + "_") for m in modules
    )


def python_files(top: Path) -> list[Path]:
    """Every ``.py`` file below ``top``, caches and installed editor packages left out."""
    skip = {"__pycache__", "node_modules", ".venv"}
    return sorted(p for p in top.rglob("*.py") if not skip.intersection(p.parts))


def test_every_unit_test_folder_is_a_subpackage_and_a_package() -> None:
    subs = subpackages()
    folders = [p for p in UNIT.iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert folders, "tests/unit/ has no subpackage folders"
    strangers = sorted(p.name for p in folders if p.name not in subs)
    assert not strangers, f"tests/unit/ folders that name no subpackage: {strangers}"
    bare = sorted(p.name for p in folders if not (p / "__init__.py").is_file())
    assert not bare, f"tests/unit/ folders without an __init__.py: {bare}"


def test_every_subpackage_test_file_names_a_module_of_its_subpackage() -> None:
    wrong: list[str] = []
    for sub in sorted(subpackages()):
        folder = UNIT / sub
        if not folder.is_dir():
            continue
        modules = {p.stem for p in (PACKAGE / sub).glob("*.py")} - {"__init__"}
        for path in python_files(folder):
            if path.name in NOT_TESTS and path.parent == folder:
                continue
            if path.parent != folder or not names_a_module(path, modules):
                wrong.append(str(path.relative_to(REPO)))
    assert not wrong, (
        "test files that name no module of their subpackage "
        f"(tests/unit/<sub>/test_<module>[_<aspect>].py): {wrong}"
    )


def test_every_top_level_unit_test_file_names_a_top_level_module() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    wrong = sorted(
        p.name
        for p in UNIT.glob("*.py")
        if p.name not in NOT_TESTS
        and p.name not in CROSS_CUTTING
        and not names_a_module(p, modules)
    )
    assert not wrong, (
        "tests/unit/ files that name no top-level module: move them to "
        f"tests/unit/<sub>/, or list a cross-cutting one in CROSS_CUTTING: {wrong}"
    )


def test_no_file_below_tests_is_over_the_line_limit() -> None:
    sizes = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in python_files(TESTS)}
    over = {str(p.relative_to(REPO)): n for p, n in sizes.items() if n > MAX_LINES}
    assert not over, f"files over {MAX_LINES} lines (split them by aspect): {over}"


def test_the_rules_reject_what_they_should() -> None:
    modules = {"outline", "outline_fit", "reader"}
    assert names_a_module(Path("test_outline_fit.py"), modules)
    assert names_a_module(Path("test_reader_folders.py"), modules)
    assert names_a_module(Path("test_outline.py"), modules)
    assert not names_a_module(Path("test_content.py"), modules)
    assert not names_a_module(Path("test_readers.py"), modules)
    assert not names_a_module(Path("reader_test.py"), modules)
