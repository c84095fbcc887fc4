"""Benchmark: redaction hides secrets, and only secrets, at a small cost (issue 23 item 6).

Usage::

    python bench/bench_redact.py [--runs 5] [--skip-warm] [--skip-cold]

The trees (``tests/redact_measure.py``): Django 5.2's sdist, the running interpreter's
standard library (``site-packages/`` aside) and typescript 5.9's ``lib/*.js``, fetched
once into the test cache (``tests/sdists.py``). Measures, and prints as one Markdown
table (also ``bench/results/redact-latest.json``):

1. false positives: every text file of each tree through ``engine.redact.redact``; a
   redacted line is a false positive unless each value hidden on it is a provider
   format, a 40-character value of an AWS secret key name or part of a private-key
   block, or lies in a test or doc file and looks random (``redact_measure``). Target:
   0 over Django and the standard library (typescript is shown too);
2. recall: the 43 credentials of ``tests.helpers.planted_credentials`` (every kind of
   PROTOCOL §4's table, Django's startproject key, a URL password without a user, an
   Authorization header), seeds 0 and 1. Target: 43/43;
3. the scan alone: seconds in ``redact`` over every text file of the three trees, MB/s
   (UTF-8 bytes);
4. warm full read through a server: a private ``readmany serve --socket`` (its content
   cache 2 GiB) holds the three trees; each is read whole (``**``, ``preferFullRead``,
   budgets lifted) with ``redactSecrets`` true and false, interleaved after one warm-up
   read of each; the time to the answer's last byte, summed over the trees. Target:
   redaction adds ≤ 10 %;
5. cold full read in process: ``readmany read --no-daemon`` of each tree (a new
   process, nothing cached but the OS's page cache), with and without
   ``--no-redact-secrets``, interleaved, stdout drained; summed over the trees. Target:
   redaction adds ≤ 25 %.

Medians of ``--runs`` rounds; the verdicts are on wall time, and the CPU time of the
processes doing the work (the daemon; each ``--no-daemon`` process, from ``wait4``) is
shown beside it, steadier on a loaded machine. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import REPO_ROOT, python_env, table, write_results

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.redact_measure import real_trees, recall, scan

#: Targets (issue 23 item 6).
WARM_TARGET = 0.10
COLD_TARGET = 0.25
#: Budgets lifted for the full reads.
HUGE = 10**15
#: The standard library's installed packages are not part of it.
EXCLUDES = {"stdlib": ["site-packages/"]}


def _read_params(name: str, redact: bool) -> dict[str, Any]:
    return {
        "paths": ["**"],
        "exclude": EXCLUDES.get(name, []),
        "preferFullRead": True,
        "maxTotalFiles": HUGE,
        "maxTotalChars": HUGE,
        "redactSecrets": redact,
    }


def measure_warm(trees: dict[str, Path], runs: int) -> dict[str, Any]:
    """(4): the three trees read whole through one private daemon, redaction on and off,
    interleaved; seconds per round summed over the trees."""
    from bench_daemon import Daemon, _BigAnswer, _summary_of, private_home

    times: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    summaries: dict[str, Any] = {}
    with private_home("rmr") as home:
        daemon = Daemon(home)
        daemon.env["READMANY_CACHE_BYTES"] = str(2 << 30)
        daemon.start()
        clients: dict[str, Any] = {}
        try:
            clients.update((name, daemon.connect(root)) for name, root in trees.items())
            pid = int(next(iter(clients.values())).request("readMany/status", {})["pid"])
            msg = 0
            for round_ in range(runs + 1):  # round 0 warms the index, cache and scans
                order = (True, False) if round_ % 2 == 0 else (False, True)
                for on in order:
                    total = 0.0
                    cpu_before = _cpu_seconds(pid)
                    for name, client in clients.items():
                        msg += 1
                        seconds, body = _BigAnswer(client).request(_read_params(name, on), msg)
                        summaries[f"{name} redact={on}"] = _summary_of(body)
                        del body
                        total += seconds
                    if round_:
                        times[on].append(total)
                        cpu[on].append(_cpu_seconds(pid) - cpu_before)
        finally:
            for client in clients.values():
                client.exit()
            daemon.stop()
    return {
        **_costs(times, cpu),
        "summaries": summaries,
    }


def measure_cold(trees: dict[str, Path], runs: int) -> dict[str, Any]:
    """(5): ``readmany read --no-daemon`` of each tree, redaction on and off,
    interleaved; seconds per round summed over the trees."""
    env = python_env()
    times: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    out_bytes: dict[str, int] = {}

    def argv(name: str, root: Path, on: bool) -> list[str]:
        args = [sys.executable, "-m", "readmany_daemon", "read", "--no-daemon"]
        args += ["--root", str(root), "--prefer-full-read"]
        args += ["--max-total-files", str(HUGE), "--max-total-chars", str(HUGE)]
        for pattern in EXCLUDES.get(name, []):
            args += ["--exclude", pattern]
        if not on:
            args.append("--no-redact-secrets")
        return [*args, "**"]

    for round_ in range(runs + 1):  # round 0 warms the page cache
        order = (True, False) if round_ % 2 == 0 else (False, True)
        for on in order:
            total = total_cpu = 0.0
            for name, root in trees.items():
                seconds, cpu_s, size, code = _drained(argv(name, root, on), root, env)
                if code != 0:
                    raise RuntimeError(f"readmany read --no-daemon of {name}: exit {code}")
                out_bytes[f"{name} redact={on}"] = size
                total += seconds
                total_cpu += cpu_s
            if round_:
                times[on].append(total)
                cpu[on].append(total_cpu)
    return {
        **_costs(times, cpu),
        "stdout_bytes": out_bytes,
    }


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system, seconds) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _costs(times: dict[bool, list[float]], cpu: dict[bool, list[float]]) -> dict[str, Any]:
    """Wall and CPU seconds with and without redaction, their medians and what
    redaction adds (a fraction)."""
    return {
        "with_s": times[True],
        "without_s": times[False],
        "with_median_s": statistics.median(times[True]),
        "without_median_s": statistics.median(times[False]),
        "added": _added(times),
        "cpu_with_s": cpu[True],
        "cpu_without_s": cpu[False],
        "cpu_added": _added(cpu),
    }


def _added(samples: dict[bool, list[float]]) -> float:
    """What redaction adds: median with over median without, less one."""
    return statistics.median(samples[True]) / statistics.median(samples[False]) - 1


def _drained(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int, int]:
    """``argv`` run with its stdout going to a pipe drained here: (wall seconds, CPU
    seconds of the process, bytes, exit status)."""
    buf = bytearray(1 << 20)
    total = 0
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    while n := proc.stdout.readinto(buf):
        total += n
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_utime + usage.ru_stime, total, code


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-warm", action="store_true", help="skip the warm read (4)")
    ap.add_argument("--skip-cold", action="store_true", help="skip the cold read (5)")
    args = ap.parse_args(argv)
    trees = real_trees()
    started = time.perf_counter()
    scans = scan(trees)
    rows: list[dict[str, Any]] = []
    for name, s in scans.items():
        fp = len(s.false_positives)
        target = "0" if name in ("django", "stdlib") else "(shown)"
        rows.append(
            {
                "measure": f"false positives, {name} ({s.files:,} text files)",
                "value": f"{fp} of {s.redacted} redacted lines",
                "target": target,
                "result": _verdict(fp == 0) if target == "0" else "-",
            }
        )
    found = [recall(seed) for seed in (0, 1)]
    rows.append(
        {
            "measure": "recall, planted credentials (seeds 0 and 1)",
            "value": " and ".join(f"{f}/{n}" for f, n, _ in found),
            "target": "43/43",
            "result": _verdict(all(f == n == 43 for f, n, _ in found)),
        }
    )
    scanned = sum(s.bytes for s in scans.values())
    seconds = sum(s.seconds for s in scans.values())
    rows.append(
        {
            "measure": f"scan alone (engine.redact.redact), {scanned / 1e6:.1f} MB",
            "value": f"{seconds:.2f} s, {scanned / 1e6 / seconds:.0f} MB/s",
            "target": "-",
            "result": "-",
        }
    )
    payload: dict[str, Any] = {
        "runs": args.runs,
        "scan": {
            name: {
                "files": s.files,
                "chars": s.chars,
                "bytes": s.bytes,
                "seconds": s.seconds,
                "redacted_lines": s.redacted,
                "false_positives": s.false_positives,
            }
            for name, s in scans.items()
        },
        "recall": [{"found": f, "total": n, "missed": m} for f, n, m in found],
    }
    if not args.skip_warm:
        warm = payload["warm"] = measure_warm(trees, args.runs)
        rows.append(
            {
                "measure": "warm full read of the 3 trees via a server, redact on / off",
                "value": f"{warm['with_median_s'] * 1000:,.0f} / "
                f"{warm['without_median_s'] * 1000:,.0f} ms ({warm['added'] * 100:+.1f} %); "
                f"daemon CPU {warm['cpu_added'] * 100:+.1f} %",
                "target": f"≤ +{WARM_TARGET * 100:.0f} %",
                "result": _verdict(warm["added"] <= WARM_TARGET),
            }
        )
    if not args.skip_cold:
        cold = payload["cold"] = measure_cold(trees, args.runs)
        rows.append(
            {
                "measure": "cold full read of the 3 trees, --no-daemon, redact on / off",
                "value": f"{cold['with_median_s'] * 1000:,.0f} / "
                f"{cold['without_median_s'] * 1000:,.0f} ms ({cold['added'] * 100:+.1f} %); "
                f"CPU {cold['cpu_added'] * 100:+.1f} %",
                "target": f"≤ +{COLD_TARGET * 100:.0f} %",
                "result": _verdict(cold["added"] <= COLD_TARGET),
            }
        )
    print(table(rows))
    for name, s in scans.items():
        for line in s.false_positives[:20]:
            print(f"false positive, {name}: {line[:160]}")
    for f, n, missed in found:
        for credential in missed:
            print(f"missed: {credential[0][:12]}… ({f}/{n})")
    print(f"\n({time.perf_counter() - started:.0f} s)")
    write_results("redact", {"rows": rows, **payload})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
