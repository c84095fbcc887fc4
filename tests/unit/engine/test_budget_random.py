"""10,000 random requests under token budgets (issue 13 item 2, "Never over budget").

Over a generated tree (mixed sizes, long lines, unicode, errors), each request draws
patterns, windows, a format, a packing and budgets at random (seeded), and the answer is
checked against the exact o200k count of its whole ``llmContent``."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.content import tokens
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code, Status
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import write_tree

REQUESTS = int(os.environ.get("READMANY_TOKEN_REQUESTS", "10000"))
WORDS = [
    "def",
    "x",
    "=",
    "return",
    "日本語",
    "ünï",
    "🎉",
    "<a>",
    "]]>",
    '"',
    "\\",
    "\t",
    "  ",
    "\r",
]


def tree(root: Path, rng: random.Random) -> list[str]:
    files: dict[str, str | bytes] = {}
    for d in range(6):
        for i in range(rng.randrange(5, 30)):
            kind = rng.random()
            if kind < 0.1:  # one long line
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1000, 6000)))
            elif kind < 0.15:
                text = ""
            else:
                lines = rng.randrange(1, 250)
                text = "".join(
                    " ".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 25))) + "\n"
                    for _ in range(lines)
                )
            files[f"d{d}/{'n' * rng.randrange(0, 40)}f{i:02}.{rng.choice(['py', 'md', 'txt'])}"] = (
                text
            )
    files["bin/blob.dat"] = b"\x00\x01" * 100
    write_tree(root, files)
    past = time.time_ns() - 3600 * 10**9
    for name in files:
        os.utime(root / name, ns=(past, past))
    return sorted(k for k in files if not k.startswith("bin/"))


def request(rng: random.Random, names: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    shape = rng.random()
    if shape < 0.4:
        params["paths"] = [rng.choice(["**", "d1/*", "d*/*.py", "**/*.md", "d2", "bin/*"])]
    else:
        specs: list[Any] = []
        for _ in range(rng.randrange(1, 12)):
            name = rng.choice([*names, "missing.txt"])
            if rng.random() < 0.5:
                spec: dict[str, Any] = {"path": name, "offset": rng.randrange(1, 50)}
                if rng.random() < 0.5:
                    spec["limit"] = rng.randrange(1, 300)
                if rng.random() < 0.2:
                    spec["column"] = rng.randrange(1, 5000)
                specs.append(spec)
            else:
                specs.append(name)
        params["files" if all(isinstance(s, dict) for s in specs) else "paths"] = specs
    params["format"] = rng.choice(["separator", "heredoc", "xml", "json"])
    params["packing"] = rng.choice(["auto", "request-order", "smallest-first", "outlines"])
    params["maxTotalTokens"] = rng.choice(
        [1000, 1200, 2000, 5000, 20000, rng.randrange(1000, 30000)]
    )
    if rng.random() < 0.5:
        params["maxTotalChars"] = rng.randrange(100, 200_000)
    if rng.random() < 0.5:
        params["maxTotalFiles"] = rng.randrange(1, 60)
    if rng.random() < 0.3:
        params["perFileMaxTokens"] = rng.randrange(1, 5000)
    if rng.random() < 0.3:
        params["perFileMaxChars"] = rng.randrange(1, 40000)
    if rng.random() < 0.2:
        params["preferFullRead"] = True
    params["lineNumbers"] = rng.random() < 0.3
    params["stopOnError"] = rng.random() < 0.1
    return params


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_ten_thousand_random_requests_stay_within_their_budgets(tmp_path: Path) -> None:
    rng = random.Random(20_13)
    names = tree(tmp_path, rng)
    ws = Workspace.open(str(tmp_path), Settings(), cache=ContentCache(256 << 20))
    for n in range(REQUESTS):
        params = request(rng, names)
        r = answer(ws, decode_read_params(params))
        exact = tokens.count(r.llm_content)
        why = f"request {n}: {params}"
        assert exact <= r.summary.estimated_tokens <= params["maxTotalTokens"], why
        assert r.summary.total_chars <= params.get("maxTotalChars", 200_000), why
        assert r.summary.read <= params.get("maxTotalFiles", 20), why
        cut = [f for f in r.files if f.status == Status.PARTIAL and f.code == Code.BUDGET]
        assert len(cut) <= 1, why
        for f in r.files:  # files given as outlines: only under packing "outlines"
            if f.status == Status.OMITTED and f.outline is not None:
                assert params["packing"] == "outlines" and f.code == Code.BUDGET, why
        if cut:
            assert r.packing.partial_included_path == cut[0].path, why
