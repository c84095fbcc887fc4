"""Token budgets through the real CLI process: ``--max-total-tokens``, ``--per-file-max-tokens``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from readmany_daemon.content import tokens
from tests.helpers import write_tree

ReadJson = Callable[..., dict[str, Any]]


def make(root: Path) -> None:
    body = "".join(f"def f{i}(x):\n    return x * {i}  # ünïcode ✓\n" for i in range(60))
    write_tree(root, {f"src/m{i:02}.py": body for i in range(30)})


def test_max_total_tokens_holds_and_the_cursor_continues(
    tmp_path: Path, read_json: ReadJson
) -> None:
    make(tmp_path)
    seen: list[str] = []
    r = read_json(tmp_path, "src/*.py", "--max-total-tokens", "3000", "--format", "xml")
    pages = 0
    while True:
        pages += 1
        assert tokens.count(r["llmContent"]) <= r["summary"]["estimatedTokens"] <= 3000
        cut = [f for f in r["files"] if f["status"] == "partial"]
        assert len(cut) <= 1 and all(f["code"] == "budget" for f in cut)
        seen += [f["path"] for f in r["files"] if f["status"] in ("ok", "partial")]
        if "nextCursor" not in r:
            break
        r = read_json(tmp_path, "--cursor", r["nextCursor"])
    assert pages > 3 and sorted(set(seen)) == [f"src/m{i:02}.py" for i in range(30)]


def test_per_file_max_tokens_and_the_minimum(
    tmp_path: Path, read_json: ReadJson, readmany: Any
) -> None:
    make(tmp_path)
    r = read_json(tmp_path, "src/m00.py", "--per-file-max-tokens", "100")
    (f,) = r["files"]
    assert f["status"] == "partial" and f["nextOffset"] > 1 and "code" not in f
    body = r["llmContent"].split("---\n", 1)[1].rsplit("\n[Showing", 1)[0]
    assert tokens.count(body) <= 100
    proc = readmany(
        "read",
        "--no-daemon",
        "--root",
        str(tmp_path),
        "src",
        "--max-total-tokens",
        "999",
        check=False,
    )
    assert proc.returncode == 2 and "maxTotalTokens" in proc.stderr
    raw = read_json(tmp_path, "--params", json.dumps({"paths": ["src"], "max_total_tokens": 1000}))
    assert tokens.count(raw["llmContent"]) <= 1000
