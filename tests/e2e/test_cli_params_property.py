"""``readmany read --no-daemon --params JSON`` on any params: a clean exit, never a traceback.

PROTOCOL §1: exit 0 when answered, 2 for usage errors and invalid params, 1 when the
answer could not be produced; an error is one line on stderr. Each example is a real
``python -m readmany_daemon`` process in a small tree (the strategies are the in-process
property tests', ``tests/unit/lsp/test_handlers_params.py``), so the count stays modest.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.unit.lsp.test_handlers_params import TREE, json_values, near_valid

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for rel, data in TREE.items():
        p = root / os.fsdecode(rel.encode("latin-1"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def run_cli(readmany: Run, tree: Path, raw: Any) -> subprocess.CompletedProcess[str]:
    """``readmany read --no-daemon --json --params JSON`` in ``tree``; checks the exit
    code and stderr and returns the finished run."""
    text = json.dumps(raw)  # ASCII: lone surrogates and NUL travel as \\u escapes
    proc = readmany("read", "--no-daemon", "--json", "--params", text, cwd=tree, check=False)
    assert proc.returncode in (0, 1, 2), (raw, proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, (raw, proc.stderr)
    if proc.returncode == 0:
        answer = json.loads(proc.stdout)
        assert isinstance(answer["llmContent"], str) and isinstance(answer["files"], list)
    else:
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("readmany: "), (raw, proc.stderr)
        if proc.returncode == 2:
            assert "invalid params" in lines[0] or "--params" in lines[0], lines
    return proc


CLI = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@CLI
@given(raw=st.one_of(near_valid, near_valid, json_values))
@example(raw={"paths": ["a\x00b"]})
@example(raw={"paths": ["\ud800"]})
@example(raw={"paths": ["a.txt"], "fileFilteringOptions": [1]})
@example(raw={"paths": ["a.txt"], "a\nb": 1})
@example(raw={"paths": ["a.txt", "../x", "/etc/passwd", "[abc", "{a,b", "\\", "***"]})
def test_cli_params_exit_cleanly(readmany: Run, tree: Path, raw: Any) -> None:
    run_cli(readmany, tree, raw)


def test_cli_refusal_is_one_line_naming_the_field(readmany: Run, tree: Path) -> None:
    proc = run_cli(readmany, tree, {"paths": ["a.txt"], "format": "a\nb", "bogus": 1})
    assert proc.returncode == 2 and "$.format" in proc.stderr and "'a\\nb'" in proc.stderr
    proc = run_cli(readmany, tree, {"paths": ["a.txt"], "bo\ngus": 1})
    assert proc.returncode == 2 and "bo\\ngus" in proc.stderr
    proc = run_cli(readmany, tree, {"paths": ["d/\x00*"]})
    assert proc.returncode == 2 and "$.paths[0]" in proc.stderr and "NUL" in proc.stderr
    proc = run_cli(readmany, tree, {"paths": ["a.txt", "../x"]})
    assert proc.returncode == 0
    files = {f["path"]: f["status"] for f in json.loads(proc.stdout)["files"]}
    assert files == {"a.txt": "ok", "../x": "error"}
