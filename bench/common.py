"""Helpers shared by the benchmarks: timing subprocesses, Markdown tables, JSON results.

These machines are noisy, so every number is a median of several runs, reported with its
min and max, and commands that are compared run interleaved (``run_interleaved``), each
round in a rotated order, so a burst of background load hits all of them alike.
Standard library only.
"""

from __future__ import annotations

import compileall
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: Where results go by default (gitignored).
RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: Benchmark trees live here by default (gitignored).
TREES_DIR = Path(__file__).resolve().parent / ".trees"
#: The repository root, put on PYTHONPATH for ``python -m readmany_daemon``.
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Command:
    """A command to time: ``argv`` run in ``cwd``; ``sep`` splits its output into paths."""

    label: str
    argv: tuple[str, ...]
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    sep: bytes = b"\n"

    def display(self) -> str:
        """The command as a shell line, for tables."""
        return " ".join(_quote(arg) for arg in self.argv)


def _quote(arg: str) -> str:
    """Shell-quote an argument only when it needs it (``'!.git'``)."""
    if arg and all(c.isalnum() or c in "-_./=:,@+" for c in arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"


@dataclass(frozen=True)
class Sample:
    """One run: wall seconds, exit status, captured stdout and the tail of stderr."""

    seconds: float
    returncode: int
    stdout: bytes
    stderr: str


@dataclass(frozen=True)
class Timing:
    """The wall times of one command over several runs, in seconds."""

    label: str
    cmd: tuple[str, ...]
    runs: tuple[float, ...]
    returncode: int = 0
    stderr: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def median(self) -> float:
        """Median of the runs."""
        return statistics.median(self.runs)

    @property
    def min(self) -> float:
        """Fastest run."""
        return min(self.runs)

    @property
    def max(self) -> float:
        """Slowest run."""
        return max(self.runs)

    def p(self, q: float) -> float:
        """The ``q``-th percentile (0-100) of the runs, linearly interpolated."""
        ordered = sorted(self.runs)
        if len(ordered) == 1:
            return ordered[0]
        pos = (len(ordered) - 1) * q / 100
        low = int(pos)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)

    @property
    def ok(self) -> bool:
        """Whether every run exited 0."""
        return self.returncode == 0

    def to_json(self) -> dict[str, object]:
        """JSON-ready builtins, times in milliseconds."""
        return {
            "label": self.label,
            "cmd": list(self.cmd),
            "runs_ms": [round(s * 1000, 3) for s in self.runs],
            "median_ms": round(self.median * 1000, 3),
            "min_ms": round(self.min * 1000, 3),
            "max_ms": round(self.max * 1000, 3),
            "p90_ms": round(self.p(90) * 1000, 3),
            "returncode": self.returncode,
            **self.extra,
        }


def time_once(command: Command, capture: bool = True) -> Sample:
    """Run ``command`` once and measure its wall time.

    stdout goes to a pipe that is drained (``capture``) or to ``/dev/null``; stderr is
    always captured and its last line kept.
    """
    start = time.perf_counter()
    proc = subprocess.run(
        list(command.argv),
        cwd=command.cwd,
        env=None if command.env is None else dict(command.env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - start
    lines = proc.stderr.decode(errors="replace").strip().splitlines()
    return Sample(seconds, proc.returncode, proc.stdout or b"", lines[-1] if lines else "")


def run_median(
    cmd: Sequence[str],
    runs: int = 5,
    warmup: int = 1,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    label: str | None = None,
    capture: bool = True,
) -> Timing:
    """Time ``cmd`` ``runs`` times after ``warmup`` untimed runs; see ``Timing``."""
    command = Command(label or " ".join(cmd), tuple(cmd), cwd, env)
    return run_interleaved([command], runs=runs, warmup=warmup, capture=capture)[0][0]


def run_interleaved(
    commands: Sequence[Command],
    runs: int = 5,
    warmup: int = 1,
    capture: bool = True,
) -> list[tuple[Timing, bytes]]:
    """Time several commands in the same rounds, rotating their order every round.

    Returns, per command and in order, its ``Timing`` and the stdout of its last run.
    A failing run is still timed; ``Timing.returncode`` keeps the last non-zero status.
    """
    if runs < 1:
        raise ValueError("runs must be at least 1")
    for _ in range(warmup):
        for command in commands:
            time_once(command, capture)
    times: list[list[float]] = [[] for _ in commands]
    status = [0] * len(commands)
    stderr = [""] * len(commands)
    last = [b""] * len(commands)
    for round_ in range(runs):
        for offset in range(len(commands)):
            i = (round_ + offset) % len(commands)
            sample = time_once(commands[i], capture)
            times[i].append(sample.seconds)
            last[i] = sample.stdout
            if sample.returncode != 0:
                status[i] = sample.returncode
                stderr[i] = sample.stderr
    return [
        (Timing(c.label, c.argv, tuple(times[i]), status[i], stderr[i]), last[i])
        for i, c in enumerate(commands)
    ]


def _numeric(cell: str) -> bool:
    """Whether a table cell reads as a number (``12.5``, ``1,024``, ``1.20x``)."""
    try:
        float(cell.replace(",", "").rstrip("x%"))
    except ValueError:
        return False
    return True


def table(rows: Sequence[Mapping[str, object]]) -> str:
    """A Markdown table of ``rows`` (keys of the first row are the header).

    Columns whose cells all read as numbers (or are empty / ``-``) are right-aligned.
    """
    if not rows:
        return ""
    headers = list(rows[0])
    cells = [[_cell(row.get(h, "")) for h in headers] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    right = [
        all(_numeric(r[i]) or r[i] in ("", "-") for r in cells)
        and any(_numeric(r[i]) for r in cells)
        for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        padded = (
            v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True)
        )
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            "-" * (w + 1) + ":" if r else "-" * (w + 2) for w, r in zip(widths, right, strict=True)
        )
        + "|"
    )
    return "\n".join([line(headers), rule, *(line(r) for r in cells)])


def _cell(value: object) -> str:
    """A table cell: floats with one decimal, ints with thousands separators."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value).replace("|", "\\|")


def tool_version(argv: Sequence[str]) -> str | None:
    """First line of ``argv``'s output (e.g. ``["rg", "--version"]``), or None."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).decode(errors="replace").strip()
    return text.splitlines()[0] if text else None


def machine_info() -> dict[str, object]:
    """What the numbers depend on: platform, CPUs, Python, load at the time of the run."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def write_results(
    name: str, payload: Mapping[str, object], results_dir: Path | None = None
) -> Path:
    """Write ``payload`` plus ``machine_info()`` as JSON; return the timestamped file.

    Writes ``<results_dir>/<name>-<UTC timestamp>.json`` and a copy as
    ``<name>-latest.json``.
    """
    folder = RESULTS_DIR if results_dir is None else results_dir
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    data = {
        "benchmark": name,
        "time": now.isoformat(timespec="seconds"),
        "machine": machine_info(),
        **payload,
    }
    text = json.dumps(data, indent=2, default=str) + "\n"
    path = folder / f"{name}-{now:%Y%m%d-%H%M%S}.json"
    path.write_text(text, encoding="utf-8")
    (folder / f"{name}-latest.json").write_text(text, encoding="utf-8")
    return path


def reap(proc: subprocess.Popen[Any], wait: float = 30.0, grace: float = 10.0) -> None:
    """Wait up to ``wait`` s for ``proc`` (asked to stop already) to exit, then SIGTERM
    it and wait ``grace`` s more, then SIGKILL it."""
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@functools.cache
def compile_package() -> None:
    """Write the working copy's bytecode, as an install has it (pip compiles at install
    time). Without it, with ``PYTHONDONTWRITEBYTECODE`` set or sources edited since the
    last run, every ``python -m readmany_daemon`` compiles them again and the cold
    figures time the compiler (~0.1 s a run)."""
    compileall.compile_dir(str(REPO_ROOT / "readmany_daemon"), quiet=1)


def python_env() -> dict[str, str]:
    """The environment with the repository root first on PYTHONPATH, the package's
    bytecode written (:func:`compile_package`).

    So ``python -m readmany_daemon`` runs this working copy whether or not it is installed.
    """
    compile_package()
    env = dict(os.environ)
    parts = [str(REPO_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


_RECEIVED = bytearray()


def receive_body(sock: Any, buf: bytearray, length: int) -> memoryview:
    """The ``length``-byte body of a message whose first bytes may already sit in
    ``buf`` (they are taken out of it), the rest read from ``sock``.

    Received into one buffer kept across calls, grown when a body is larger: a
    long-lived client reuses its buffers, as the readers of the pipelines measured
    beside readmany do (``time_drained`` reads into one 1 MiB buffer), so the time is
    the delivery of the answer, not the first touch of a fresh gigabyte (~280,000 page
    faults). The view is valid until the next call."""
    global _RECEIVED
    if len(_RECEIVED) < length:
        _RECEIVED = bytearray(length)
    view = memoryview(_RECEIVED)[:length]
    have = min(len(buf), length)
    view[:have] = buf[:have]
    del buf[:have]
    while have < length:
        got = sock.recv_into(view[have:], min(length - have, 1 << 22))
        if not got:
            raise ConnectionError("the daemon closed the connection")
        have += got
    return view
