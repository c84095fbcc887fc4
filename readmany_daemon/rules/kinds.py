"""Rule kinds: the four kinds of ignore rule a request can switch, ``Filters`` (which
kinds a request applies) and ``Verdict`` (which rule hides a path).

Kinds, checked in this order (the first kind that hides a path explains it): ``deny``,
``ignore-file``, ``gitignore``, ``default-exclude``; ``rules/ignore.py`` says what each
holds and how they layer.
"""

from __future__ import annotations

from typing import Final, NamedTuple

import msgspec

__all__ = [
    "ALL",
    "DEFAULT_EXCLUDE",
    "DENY",
    "GITIGNORE",
    "IGNORE_FILE",
    "KIND_BITS",
    "KIND_NAMES",
    "Filters",
    "Verdict",
]

#: Kind bits, in evaluation order. A ``mask`` is an ``int`` holding some of them.
DENY: Final = 1
IGNORE_FILE: Final = 2
GITIGNORE: Final = 4
DEFAULT_EXCLUDE: Final = 8
KIND_BITS: Final = (DENY, IGNORE_FILE, GITIGNORE, DEFAULT_EXCLUDE)
KIND_NAMES: Final = {
    DENY: "deny",
    IGNORE_FILE: "ignore-file",
    GITIGNORE: "gitignore",
    DEFAULT_EXCLUDE: "default-exclude",
}


class Filters(NamedTuple):
    """Which rule kinds apply to a request; ``deny`` always applies (PROTOCOL §3)."""

    respect_gitignore: bool = True
    respect_ignore_files: bool = True
    use_default_excludes: bool = True

    @property
    def mask(self) -> int:
        """The enabled kinds as a bit mask (``DENY`` always set)."""
        return (
            DENY
            | (IGNORE_FILE if self.respect_ignore_files else 0)
            | (GITIGNORE if self.respect_gitignore else 0)
            | (DEFAULT_EXCLUDE if self.use_default_excludes else 0)
        )


ALL: Final = Filters()


class Verdict(msgspec.Struct, frozen=True):
    """Why a path is hidden.

    ``kind``: ``"deny" | "ignore-file" | "gitignore" | "default-exclude"``.
    ``source``: the rule's origin with a 1-based line: ``"pkg/.gitignore:3"`` (path relative
    to the workspace root, POSIX), ``".git/info/exclude:1"``, an absolute path for a file
    outside the root (``core.excludesFile``, a worktree's ``info/exclude``, a ``.gitignore``
    above the root), ``"defaultExcludes:node_modules/"``, ``"denyPatterns:*.pem"``,
    ``".git"``.
    ``pattern``: the pattern line as written (without its line end).
    """

    kind: str
    source: str
    pattern: str
