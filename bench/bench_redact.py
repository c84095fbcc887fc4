"""Benchmark: what redacting secrets costs a warm full read of the standard library.

Usage::

    python bench/bench_redact.py [--runs 7]

Opens the running interpreter's standard library folder
(``sysconfig.get_paths()["stdlib"]``) in-process with a content cache, as the daemon
holds a root, and reads every ``.py`` file in it (``site-packages/`` aside) in one
``readMany/read`` with ``preferFullRead`` and totals large enough for all of them. After
one warm-up read of each kind, it times, interleaved round by round, the same request
with ``redactSecrets`` true and false: the difference of the medians is redaction's cost
on a warm read (target ≤ 10 %). Also times ``engine.redact.redact`` alone over every
file's text, once (the cold scan: what the first read of each file pays), in MB/s, and
counts what the two answers differ by (files and lines redacted). Prints one Markdown
table and writes ``bench/results/redact-latest.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import sysconfig
import time
from typing import Any

from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.redact import redact
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.messages import ReadManyParams

#: The target (issue 14 item 4): redaction adds at most this share to a warm full read.
TARGET = 0.10


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    root = sysconfig.get_paths()["stdlib"]
    ws = Workspace.open(root, Settings(), cache=ContentCache(1 << 30))

    def params(on: bool) -> ReadManyParams:
        return ReadManyParams(
            paths=["**/*.py"],
            exclude=["site-packages/"],
            prefer_full_read=True,
            max_total_files=1_000_000,
            max_total_chars=1 << 40,
            redact_secrets=on,
        )

    results: dict[bool, Any] = {}
    times: dict[bool, list[float]] = {True: [], False: []}
    for on in (True, False):  # warm-up: the index, the cache, the redactions kept
        results[on] = answer(ws, params(on))
    for i in range(args.runs):
        for on in (True, False) if i % 2 == 0 else (False, True):
            t = time.perf_counter()
            results[on] = answer(ws, params(on))
            times[on].append((time.perf_counter() - t) * 1000)
    with_ms, without_ms = statistics.median(times[True]), statistics.median(times[False])
    redacted = [f for f in results[True].files if f.redactions]
    lines = sum(len(f.redactions or ()) for f in redacted)
    texts = []
    for f in results[False].files:
        with open(f"{root}/{f.path}", encoding=f.encoding or "utf-8", errors="replace") as fh:
            texts.append(fh.read())
    chars = sum(len(t) for t in texts)
    t = time.perf_counter()
    for text in texts:
        redact(text)
    scan_s = time.perf_counter() - t
    share = (with_ms - without_ms) / without_ms
    rows = [
        {
            "read": f"warm full read, {results[False].summary.read:,} .py files, "
            f"{results[False].summary.total_chars / 1e6:.1f} M chars",
            "redactSecrets=false ms": without_ms,
            "redactSecrets=true ms": with_ms,
            "added": f"{share * 100:+.1f}%",
            "target": f"≤ {TARGET * 100:.0f}%: {'PASS' if share <= TARGET else 'FAIL'}",
        },
        {
            "read": f"cold scan alone (engine.redact.redact), {chars / 1e6:.1f} M chars",
            "redactSecrets=false ms": "-",
            "redactSecrets=true ms": scan_s * 1000,
            "added": f"{chars / 1e6 / scan_s:.0f} M chars/s",
            "target": "-",
        },
    ]
    print(table(rows))
    print(f"\nredacted: {lines} line(s) in {len(redacted)} file(s)")
    write_results(
        "redact",
        {
            "rows": rows,
            "runs": args.runs,
            "with_ms": times[True],
            "without_ms": times[False],
            "redacted_files": [f.path for f in redacted],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
