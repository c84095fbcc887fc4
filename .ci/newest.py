"""The default suite on the newest releases the pins in pyproject.toml allow.

The README's test command installs the recorded versions (constraints.txt); users of
``pipx install .`` get whatever is newest. This run installs the newest into a venv of
its own, names every package whose version differs from the record, runs the default
suite, and when it fails, finds the package to blame: each differing package in turn is
put back to its recorded version and the failed tests run again; a package whose
recorded version makes them pass is named. Exit status: the suite's.

Usage: python3 .ci/newest.py VENV_DIR
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _versions(python: Path) -> dict[str, str]:
    out = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return _parse(out)


def _parse(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, _, ver = line.partition("==")
            found[_canon(name.split(";")[0].strip())] = ver.split(";")[0].strip()
    return found


def _pytest(python: Path, *args: str) -> int:
    cmd = [str(python), "-m", "pytest", "-q", "-o", "cache_dir=.ci-newest-cache", *args]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, check=False).returncode


def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", *args], cwd=ROOT, check=True)


def main() -> int:
    venv = Path(sys.argv[1]).resolve()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    _pip(python, "--upgrade", "pip")
    _pip(python, "--upgrade", "-e", ".[test]")
    recorded = _parse((ROOT / "constraints.txt").read_text(encoding="utf-8"))
    newest = _versions(python)
    differ = {n: (recorded[n], v) for n, v in sorted(newest.items()) if recorded.get(n, v) != v}
    added = sorted(n for n in newest if n not in recorded)
    for name, (old, new) in differ.items():
        print(f"newest: {name} {new} (recorded {old})")
    for name in added:
        print(f"newest: {name} {newest[name]} (not recorded)")
    if not differ and not added:
        print("newest: every package is at its recorded version")
    code = _pytest(python)
    if code == 0:
        return 0
    blamed = []
    for name, (old, new) in differ.items():
        _pip(python, "--no-deps", f"{name}=={old}")
        if _pytest(python, "--lf", "-x") == 0:
            blamed.append(f"{name} {new} (the tests that fail pass with the recorded {old})")
        _pip(python, "--no-deps", f"{name}=={new}")
    if blamed:
        for line in blamed:
            print(f"newest: a release that breaks users: {line}", flush=True)
    else:
        print("newest: the suite fails on the newest releases; no single package is to blame")
    return code


if __name__ == "__main__":
    sys.exit(main())
