"""Benchmark: what an outline costs (content/outline.py), in time and in tokens.

Usage::

    python bench/bench_outline.py [--runs 21] [--stdlib DIR] [--quick] [--django]

Measures, in this process:

* **cold**: one outline of a generated ~100 KB Python file and of a ~100 KB TypeScript
  file (realistic shapes: classes, methods, docstrings, comments, nested blocks; fixed
  seed), each run on a new text so nothing is cached; the grammar is loaded first and its
  one-time cost (import, ``Language``, compiling the query) is shown apart. Wall time
  (``perf_counter``) and this thread's CPU time (``thread_time``, which other processes
  on a busy machine inflate far less), medians of ``--runs``; beside it, interleaved, the
  bare tree-sitter parse of the same text (the floor). Target: CPU median ≤ 20 ms.
* **warm**: the same text again through an ``OutlineCache`` (hash + lookup).
* **Markdown**: a ~100 KB Markdown file (headings, fenced code, lists), for information.
* **tokens**: every ``.py`` file of the standard library (``sysconfig``'s ``stdlib``,
  minus ``site-packages``), outlined and rendered with ``render_outline``; the o200k
  tokens (``bpe_openai``, ``encode_ordinary``) of all renderings over those of all the
  files. Target: ≤ 10 %.

* **coverage** (PROTOCOL §4, the outline budget): ``typing.py``, ``argparse.py`` and
  ``inspect.py`` of the standard library (and with ``--django`` Django 5.2's
  ``db/models/fields/__init__.py``, from ``tests/sdists.py``: fetched once), each read
  as a user reads it through the engine: the default read (200 lines shown),
  ``perFileMaxLines: 3``, and given as its outline (``packing: "outlines"``). Judged
  against ``ast``: of the top-level definitions after the part shown, how many the
  outline names, how many it names or covers (inside a folded run's lines), and whether
  it reaches the last one. Beside it, in the same run, the baseline: the rule before
  (the symbols in file order until 4,000 characters, or the characters shown, ran out).
  Target: coverage 100 % and the end reached, in at most 4,000 characters.

Prints Markdown tables and writes ``bench/results/outline-latest.json``. Nothing is
asserted: the exit status is 0 unless ``--strict`` and a target FAILs.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import REPO_ROOT, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from readmany_daemon.content.outline import OutlineCache, outline, render_outline

TARGET_COLD_MS = 20.0
TARGET_TOKEN_SHARE = 0.10

WORDS = [
    "account",
    "buffer",
    "cache",
    "client",
    "config",
    "cursor",
    "data",
    "event",
    "file",
    "frame",
    "handler",
    "index",
    "item",
    "key",
    "layer",
    "limit",
    "line",
    "message",
    "node",
    "option",
    "owner",
    "packet",
    "path",
    "queue",
    "record",
    "request",
    "result",
    "route",
    "session",
    "shape",
    "socket",
    "state",
    "stream",
    "table",
    "task",
    "token",
    "value",
    "window",
    "worker",
]


def _name(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(parts))


def _camel(rng: random.Random, parts: int = 2) -> str:
    return "".join(rng.choice(WORDS).title() for _ in range(parts))


def gen_python(size: int, seed: int) -> str:
    """About ``size`` bytes of Python laid out as real modules are."""
    rng = random.Random(seed)
    out = ['"""A generated module for the outline benchmark."""\n', "import os\nimport sys\n\n"]
    out.append(f"DEFAULT_{_name(rng).upper()} = {rng.randint(1, 999)}\n\n")
    while sum(map(len, out)) < size:
        cls = _camel(rng)
        out.append(f"\n@dataclass\nclass {cls}({_camel(rng)}):\n")
        out.append(f'    """{rng.choice(WORDS).title()} of {rng.choice(WORDS)}s.\n\n')
        out.append('    Keeps the state of one request between its stages.\n    """\n\n')
        out.append(f"    {_name(rng).upper()} = {rng.randint(0, 99)}\n\n")
        for _ in range(rng.randint(3, 9)):
            fn, a, b = _name(rng), rng.choice(WORDS), rng.choice(WORDS)
            out.append(f"    def {fn}(self, {a}: int, {b}: str | None = None) -> bool:\n")
            out.append(f'        """Return whether {a} fits {b}."""\n')
            for _ in range(rng.randint(2, 8)):
                out.append(
                    rng.choice(
                        [
                            f"        if {a} > self.{_name(rng)}:\n            return False\n",
                            f"        for {b}_item in self.{_name(rng)}({a}):\n"
                            f"            self.{_name(rng)}.append({b}_item)\n",
                            f"        # {rng.choice(WORDS)} before {rng.choice(WORDS)}\n",
                            f"        {_name(rng)} = {{'{a}': {a}, '{b}': {b}}}\n",
                            f"        try:\n            os.{rng.choice(WORDS)}({a})\n"
                            f"        except OSError as exc:\n"
                            f"            raise ValueError(f'{{exc}}') from exc\n",
                        ]
                    )
                )
            out.append("        return True\n\n")
        out.append(f"\ndef {_name(rng)}(*args: object) -> None:\n")
        out.append(f"    print(*args, file=sys.stderr)  # {rng.choice(WORDS)}\n\n")
    return "".join(out)


def gen_typescript(size: int, seed: int) -> str:
    """About ``size`` bytes of TypeScript: interfaces, classes, functions, arrows."""
    rng = random.Random(seed)
    out = ['import { EventEmitter } from "events";\n\n']
    out.append(f"export const MAX_{_name(rng).upper()} = {rng.randint(1, 999)};\n\n")
    while sum(map(len, out)) < size:
        iface = _camel(rng)
        out.append(f"export interface {iface} {{\n")
        for _ in range(rng.randint(2, 6)):
            out.append(f"  {rng.choice(WORDS)}{_camel(rng, 1)}: string;\n")
        out.append("}\n\n/** A generated class. */\n")
        out.append(f"export class {_camel(rng)} extends EventEmitter implements {iface} {{\n")
        out.append(f"  private readonly {rng.choice(WORDS)} = new Map<string, number>();\n\n")
        for _ in range(rng.randint(3, 9)):
            a, b = rng.choice(WORDS), rng.choice(WORDS)
            out.append(f"  async {rng.choice(WORDS)}{_camel(rng)}({a}: number, {b}?: string)")
            out.append(": Promise<boolean> {\n")
            for _ in range(rng.randint(2, 8)):
                out.append(
                    rng.choice(
                        [
                            f"    if ({a} > this.{rng.choice(WORDS)}.size) {{\n"
                            "      return false;\n    }\n",
                            f"    for (const item of [{a}, {a} + 1]) {{\n"
                            f"      this.emit('{b}', item);\n    }}\n",
                            f"    // {rng.choice(WORDS)} before {rng.choice(WORDS)}\n",
                            f"    const {rng.choice(WORDS)}Map = {{ {a}, {b} }};\n",
                            f"    try {{\n      await this.{rng.choice(WORDS)}({a});\n"
                            "    } catch (err) {\n      throw new Error(String(err));\n    }\n",
                        ]
                    )
                )
            out.append("    return true;\n  }\n\n")
        out.append("}\n\n")
        out.append(f"export const {rng.choice(WORDS)}{_camel(rng)} = (x: number) => x * 2;\n\n")
    return "".join(out)


def gen_markdown(size: int, seed: int) -> str:
    rng = random.Random(seed)
    out = ["# Guide\n\n"]
    while sum(map(len, out)) < size:
        out.append(f"{'#' * rng.randint(2, 4)} {rng.choice(WORDS).title()} {rng.choice(WORDS)}\n\n")
        out.append(" ".join(rng.choice(WORDS) for _ in range(60)) + ".\n\n")
        out.append("```python\n# not a heading\nprint(1)\n```\n\n- one\n- two\n\n")
    return "".join(out)


def timed(fn: Callable[[], object], runs: int) -> tuple[list[float], list[float]]:
    """Wall and thread-CPU milliseconds of ``runs`` calls."""
    wall, cpu = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.thread_time()
        fn()
        cpu.append((time.thread_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)
    return wall, cpu


def _bare_parser(path: str) -> Callable[[bytes], object]:
    """tree-sitter's own parse of the language of ``path``: the floor of an outline."""
    import tree_sitter

    from readmany_daemon.content import outline as mod

    lang = mod.language_for(path)
    assert lang is not None
    grammar = mod._grammar(lang)
    assert not isinstance(grammar, str)
    return tree_sitter.Parser(grammar.language).parse


def cold_rows(runs: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for label, path, gen, target in [
        ("Python", "bench.py", gen_python, TARGET_COLD_MS),
        ("TypeScript", "bench.ts", gen_typescript, TARGET_COLD_MS),
        ("Markdown", "bench.md", gen_markdown, None),
    ]:
        w, c = time.perf_counter(), time.thread_time()
        outline("x\n", path)  # load the grammar, compile the query
        first = ((time.perf_counter() - w) * 1000, (time.thread_time() - c) * 1000)
        texts = [gen(100_000, seed) for seed in range(runs)]
        parse = _bare_parser(path)
        wall, cpu, base = [], [], []
        for text in texts:  # interleaved: the outline, then the bare parse of the same text
            w, c = timed(lambda: outline(text, path), 1)  # noqa: B023
            wall += w
            cpu += c
            base += timed(lambda: parse(text.encode()), 1)[1]  # noqa: B023
        cache = OutlineCache()
        outline(texts[0], path, cache=cache)
        warm, _ = timed(lambda: outline(texts[0], path, cache=cache), runs)  # noqa: B023
        got = outline(texts[0], path)
        med = statistics.median(cpu)
        rows.append(
            {
                "outline": f"{label}, {len(texts[0].encode()):,} B, {len(got.symbols)} symbols",
                "cold wall ms (median, min-max)": f"{med:.1f} ({min(wall):.1f}-{max(wall):.1f})",
                "cold CPU ms": f"{statistics.median(cpu):.1f}",
                "bare parse CPU ms": f"{statistics.median(base):.1f}",
                "÷ parse": f"{statistics.median(cpu) / statistics.median(base):.2f}x",
                "warm ms": f"{statistics.median(warm):.3f}",
                "grammar load, once ms": f"{first[0]:.1f}",
                "target": f"≤ {target:.0f} ms" if target else "info",
                "result": ("PASS" if med <= target else "FAIL") if target else "info",
            }
        )
    return rows


def stdlib_row(root: Path) -> dict[str, object]:
    import bpe_openai

    enc = bpe_openai.get_encoding("o200k_base")
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts)
    file_tokens = outline_tokens = symbols = 0
    reasons: dict[str, int] = {}
    seconds = 0.0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        start = time.perf_counter()
        got = outline(text, path.name)
        seconds += time.perf_counter() - start
        if got.reason:
            key = got.reason.split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
        symbols += len(got.symbols)
        file_tokens += len(enc.encode_ordinary(text))
        outline_tokens += len(enc.encode_ordinary(render_outline(got.symbols)))
    share = outline_tokens / file_tokens if file_tokens else 0.0
    return {
        "files": len(files),
        "symbols": symbols,
        "file tokens": file_tokens,
        "outline tokens": outline_tokens,
        "share": f"{share:.2%}",
        "outline seconds (all files)": round(seconds, 2),
        "no outline": ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items())) or "none",
        "target": f"≤ {TARGET_TOKEN_SHARE:.0%}",
        "result": "PASS" if share <= TARGET_TOKEN_SHARE else "FAIL",
    }


COVERAGE_FILES = ("typing.py", "argparse.py", "inspect.py")
DJANGO_FILE = "django/db/models/fields/__init__.py"
#: The reads each file is judged under (label → request params beside ``paths``).
READS: dict[str, dict[str, object]] = {
    "default read (200 lines)": {},
    "perFileMaxLines 3": {"perFileMaxLines": 3},
    "given as its outline": {"packing": "outlines", "maxTotalFiles": 1},
}


def _file_order_baseline(symbols: list[Any], cap: int, head: str) -> list[Any]:
    """The rule before: the symbols in file order while ``cap`` characters hold."""
    used, shown = len(head), []
    for sym in symbols:
        line = render_outline([sym])
        if used + len(line) + 24 > cap:  # room for "[… and N more symbols.]"
            break
        used += len(line)
        shown.append(sym)
    return shown


def coverage_rows(files: list[tuple[str, Path]]) -> list[dict[str, object]]:
    """One row per (file, read): see the module's **coverage**."""
    import shutil
    import tempfile

    from readmany_daemon.engine.answer import answer
    from readmany_daemon.engine.workspace import Workspace
    from readmany_daemon.settings import Settings
    from readmany_daemon.wire.decode import decode_read_params
    from tests.helpers import outline_coverage

    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, path in files:
            text = path.read_text(encoding="utf-8")
            root = Path(tmp) / label.replace("/", "_")
            root.mkdir()
            shutil.copy(path, root / "f.py")
            (root / "a.py").write_text("x = 1\n" * 300)
            whole = outline(text, "f.py")
            for read, extra in READS.items():
                paths = ["a.py", "f.py"] if "packing" in extra else ["f.py"]
                params = decode_read_params({"paths": paths, "format": "json", **extra})
                r = answer(Workspace.open(str(root), Settings()), params)
                f = next(x for x in r.files if x.path == "f.py")
                entries = f.outline or []
                if f.status == "omitted":
                    first, chars = 1, 10**9
                    lines = f"{whole.lines:,} lines"
                    head = f"[Outline only, not the content ({lines}; not read: budget):]\n"
                else:
                    assert f.line_end is not None
                    first = f.line_end if f.next_column is not None else f.line_end + 1
                    chars = f.chars
                    head = f"[Outline of lines {first}-{whole.lines} (not shown):]\n"
                doc = json.loads(r.llm_content)["results"]
                body = next(v for k, v in doc.items() if k.startswith("f.py"))
                body = body.get("content") or body.get("outline") or ""
                block = body[body.index("[Outline ") :] if "[Outline " in body else ""
                cov = outline_coverage(text, entries, first)
                symbols = list(whole.overlapping(first, whole.lines))
                old = outline_coverage(
                    text, _file_order_baseline(symbols, min(4000, chars), head), first
                )
                ok = cov.missed == [] and cov.reaches_end and len(block) <= 4000
                rows.append(
                    {
                        "file": label,
                        "read": read,
                        "top-level defs": cov.defs,
                        "named": cov.named,
                        "covered": f"{cov.fraction:.0%}",
                        "last line reached": cov.last_line,
                        "block chars": len(block),
                        "baseline named": old.named,
                        "baseline covered": f"{old.fraction:.0%}",
                        "baseline last line": old.last_line,
                        "reaches the end": "yes" if cov.reaches_end else "no",
                        "baseline reaches it": "yes" if old.reaches_end else "no",
                        "result": "PASS" if ok else "FAIL",
                    }
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    ap.add_argument("--quick", action="store_true", help="3 runs, the stdlib's top level only")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target FAILs")
    ap.add_argument("--django", action="store_true", help="add Django's fields/__init__.py")
    ap.add_argument("--coverage-only", action="store_true", help="only the coverage table")
    args = ap.parse_args(argv)
    files = [(name, args.stdlib / name) for name in COVERAGE_FILES]
    if args.django:
        from tests.sdists import django_tree

        files.append((DJANGO_FILE, django_tree() / DJANGO_FILE))
    covered = coverage_rows(files)
    print(table(covered))
    print()
    if args.coverage_only:
        write_results("outline", {"coverage": covered})
        return 1 if args.strict and any(r["result"] == "FAIL" for r in covered) else 0
    runs = 3 if args.quick else args.runs
    cold = cold_rows(runs)
    print(table(cold))
    stdlib = args.stdlib
    row = stdlib_row(stdlib) if not args.quick else stdlib_row(stdlib / "json")
    print()
    print(table([row]))
    write_results("outline", {"cold": cold, "stdlib": row, "coverage": covered, "runs": runs})
    failed = any(r["result"] == "FAIL" for r in [*cold, row, *covered])
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
