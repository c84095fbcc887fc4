"""``packing: "outlines"`` on a real tree (issue 23 item 1): Django 5.2's sdist under
git (``tests.sdists.django_tree``), ``**/*.py`` with the MCP read tool's defaults.

The checks are ``bench/bench_outlines_packing.py --walk``'s (``walk_report``): the whole
cursor walk takes at most 1.2 times the calls of ``auto``'s; every page but the last
uses at least half of ``maxAnswerChars`` or of ``maxTotalTokens``, or holds
``maxTotalFiles`` files; no file is cut by the budget to fewer than 200 characters while
more than 10,000 answer characters and 10 % of the tokens are left; page 1 gives at
least 90 % of ``auto``'s files (at most one fewer) and 80 % of its answer characters for
every ``maxTotalChars`` in {40,000 … 200,000} and ``maxAnswerChars`` in {20,000,
50,000, 100,000}. Slow: it walks 2,819 files twice and answers 30 first pages.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.sdists import django_tree

BENCH = Path(__file__).resolve().parents[3] / "bench"

pytestmark = pytest.mark.slow


def _bench() -> ModuleType:
    """``bench/bench_outlines_packing.py`` (bench/ is not a package; its ``common``
    module is found beside it)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    name = "readmany_bench_outlines_packing"
    spec = importlib.util.spec_from_file_location(name, BENCH / "bench_outlines_packing.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_outlines_packing_meets_its_targets_on_django() -> None:
    figures, misses = _bench().walk_report(django_tree())
    assert figures["outlines calls"] <= 1.2 * figures["auto calls"], figures
    assert misses == [], misses[:20]
