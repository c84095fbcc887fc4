"""Redaction measured on real trees (issue 23 item 6), for the slow test and the benchmark.

- ``real_trees()``: ``{"django": …, "stdlib": …, "typescript": …}``, the folders measured:
  Django 5.2's sdist (``tests.sdists.django_tree``), the running interpreter's standard
  library (``sysconfig.get_paths()["stdlib"]``, ``site-packages/`` aside) and typescript
  5.9's ``lib/*.js`` (``tests.sdists.npm_tree``).
- ``text_files(name, root)``: ``(relative path, text)`` of every text file of a tree
  (UTF-8 without NUL; ``__pycache__``, ``.git`` and ``site-packages`` aside).
- ``false_positive(path, original, shown)``: whether a redacted line counts as a false
  positive, by the issue's definition, judged apart from the rules that redacted it.
- ``scan(trees)``: every text file through ``engine.redact.redact``: files, characters,
  UTF-8 bytes, seconds, redacted lines and false positives per tree.
- ``recall(seed)``: the 43 credentials of ``tests.helpers.planted_credentials`` through
  ``redact``: ``(found, total, missed)``.
"""

from __future__ import annotations

import math
import os
import re
import sysconfig
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from readmany_daemon.engine.redact import redact
from tests.helpers import planted_credentials
from tests.sdists import django_tree, npm_tree

__all__ = ["TreeScan", "false_positive", "real_trees", "recall", "scan", "text_files"]

#: The placeholder a redacted value becomes (PROTOCOL §4).
_SENTINEL = re.compile(r"«redacted:[a-z0-9-]+:[0-9a-f]{8}»")
#: Documented provider formats, as fixed prefixes (PROTOCOL §4's table).
_PROVIDER = re.compile(
    r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{22,}"
    r"|gl(?:pat|ptt|dt|rt|ft|soat|cbt|oas)-[\w-]{20,}|xox[abposre]-[A-Za-z0-9-]{10,}"
    r"|xapp-\d-[A-Za-z0-9-]{10,}|(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}"
    r"|AIza[\w-]{35}|sk-[\w-]{20,}|eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*"
)
_AWS_SECRET_NAME = re.compile(r"(?i)secret_?access_?key")
_IDENTIFIER_OR_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_TEST_FOLDERS = frozenset({"tests", "test", "docs", "doc"})


def real_trees() -> dict[str, Path]:
    """The three trees measured (see the module); downloads Django's sdist and
    typescript's tarball into the test cache on first use."""
    return {
        "django": django_tree(),
        "stdlib": Path(sysconfig.get_paths()["stdlib"]),
        "typescript": npm_tree("typescript", "5.9") / "lib",
    }


def text_files(name: str, root: Path) -> Iterator[tuple[str, str]]:
    """``(path relative to root, text)`` of each text file of tree ``name`` (for
    ``typescript``: its ``*.js`` files), in walk order."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".git", "site-packages"))
        if name == "typescript" and Path(folder) != root:
            continue
        for file in sorted(files):
            if name == "typescript" and not file.endswith(".js"):
                continue
            path = Path(folder, file)
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if "\0" not in text:
                yield path.relative_to(root).as_posix(), text


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def _random_looking(value: str) -> bool:
    """The issue's test: 8 characters or more, not only digits, not an identifier or a
    dotted name, and at least 3 bits a character."""
    return (
        len(value) >= 8
        and not value.isdigit()
        and not _IDENTIFIER_OR_DOTTED.fullmatch(value)
        and _entropy(value) >= 3.0
    )


def _values(original: str, shown: str) -> list[str]:
    """The values of ``original`` that ``shown`` (the same line, redacted) replaced."""
    pieces = _SENTINEL.split(shown)
    pattern = "(.*?)".join(re.escape(p) for p in pieces)
    m = re.fullmatch(pattern, original, re.DOTALL)
    return list(m.groups()) if m else [original]


def _in_private_key(lines: list[str], index: int) -> bool:
    """Whether line ``index`` (0-based) is part of a private-key block: after a BEGIN …
    PRIVATE KEY line with no END line between, or on a line holding both markers."""
    if "PRIVATE KEY" in lines[index]:
        return True
    for back in range(index - 1, max(-1, index - 200), -1):
        if "PRIVATE KEY" in lines[back]:
            return "BEGIN" in lines[back]
    return False


def false_positive(path: str, lines: list[str], index: int, shown: str) -> bool:
    """Whether redacted line ``index`` (0-based) of the file at ``path`` (its lines
    as on disk), shown as ``shown``, is a false positive. It is not when each value
    hidden on it is a documented provider format, a 40-character value of an AWS secret
    key name, or part of a private-key block; or the file lies under a tests/test/docs/
    doc folder (or is a test_*.py or *_tests.py file) and the value looks random (8
    characters or more, not only digits, not an identifier or dotted name, 3 bits a
    character or more)."""
    original = lines[index]
    parts = path.split("/")
    name = parts[-1]
    testish = bool(_TEST_FOLDERS.intersection(parts[:-1])) or (
        name.endswith(".py") and (name.startswith("test_") or name.endswith("_tests.py"))
    )
    for value in _values(original, shown):
        core = value.strip()
        if _PROVIDER.fullmatch(core) or _in_private_key(lines, index):
            continue
        if len(core) == 40 and _AWS_SECRET_NAME.search(original):
            continue
        if testish and _random_looking(core):
            continue
        return True
    return False


@dataclass
class TreeScan:
    """One tree through ``redact``: ``files`` and ``chars`` scanned, ``bytes`` (UTF-8),
    ``seconds`` spent in ``redact``, ``redacted`` lines and the ``false_positives``
    (``path:line: text``)."""

    files: int = 0
    chars: int = 0
    bytes: int = 0
    seconds: float = 0.0
    redacted: int = 0
    false_positives: list[str] = field(default_factory=list)


def scan(trees: Mapping[str, Path]) -> dict[str, TreeScan]:
    """Every text file of ``trees`` through ``engine.redact.redact``, per tree."""
    out: dict[str, TreeScan] = {}
    for name, root in trees.items():
        result = out[name] = TreeScan()
        for rel, text in text_files(name, root):
            started = time.perf_counter()
            redacted = redact(text)
            result.seconds += time.perf_counter() - started
            result.files += 1
            result.chars += len(text)
            result.bytes += len(text.encode("utf-8", "surrogatepass"))
            if not redacted.lines:
                continue
            lines = text.split("\n")
            shown = redacted.text.split("\n")
            for line in sorted({n for n, _ in redacted.lines}):
                result.redacted += 1
                if false_positive(rel, lines, line - 1, shown[line - 1]):
                    result.false_positives.append(f"{rel}:{line}: {lines[line - 1].strip()}")
    return out


def recall(seed: int = 0) -> tuple[int, int, list[tuple[str, ...]]]:
    """``(found, total, missed)`` over ``planted_credentials(seed)``: a credential is
    found when none of its values is left in its file's redacted text."""
    files, credentials = planted_credentials(seed)
    shown = "\n".join(redact(text).text for text in files.values())
    missed = [c for c in credentials if any(value in shown for value in c)]
    return len(credentials) - len(missed), len(credentials), missed
