"""Whole-path verdicts of the ignore rules (``IgnoreRules.check`` and
``check_folders_first``): which rule hides one root-relative path, walking the kinds'
frames from the root down to it (git's ``prep_exclude``: an excluded folder decides for
everything below it). The walk and the index use the per-folder frames instead
(``IgnoreRules.enter``, ``classify``)."""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Protocol

from readmany_daemon.rules.frame import RESCUABLE, Excluded, Frame, env_marker, last_match
from readmany_daemon.rules.kinds import (
    ALL,
    DEFAULT_EXCLUDE,
    DENY,
    KIND_BITS,
    KIND_NAMES,
    Filters,
    Verdict,
)
from readmany_daemon.rules.patterns import PatternList
from readmany_daemon.rules.repo import RepoFacts
from readmany_daemon.rules.wildmatch import byte_view


class Rules(Protocol):
    """What the checks use of ``rules.ignore.IgnoreRules`` (named here, not imported:
    that module imports this one)."""

    root: str
    root_prefix: str
    facts: RepoFacts

    def root_frame(self, mask: int = 15) -> Frame: ...

    def down_to_root(self, bit: int) -> tuple[tuple[PatternList, ...], Verdict | None]: ...

    def enter(
        self,
        parent: Frame,
        rel_dir: str,
        excl_bits: int,
        files: Collection[str] | None,
        dirs: Collection[str] | None,
    ) -> tuple[Frame, int]: ...


__all__ = ["check", "check_folders_first"]


def check(rules: Rules, rel: str, is_dir: bool, filters: Filters = ALL) -> Verdict | None:
    """Which rule hides ``rel`` (root-relative POSIX, not ``""``), or ``None``.

    ``is_dir``: whether ``rel`` is a folder (a symlink is not). Kinds are tried in the
    order deny, ignore-file, gitignore, default-exclude; for each, folders above
    ``rel`` are checked first (an excluded folder decides for everything below it,
    git's ``prep_exclude``); ``gitignore``/``default-exclude`` never hide a tracked
    path (a folder: one holding tracked paths). Works for paths that do not exist
    (their ignore files are simply absent)."""
    parts = rel.split("/")
    if ".git" in parts:
        return Verdict("deny", ".git", ".git")
    for bit, _, v in _hits(rules, parts, is_dir, filters.mask):
        if not (bit & RESCUABLE and rules.facts.tracks(rel, is_dir)):
            return v
    return None


def check_folders_first(
    rules: Rules, rel: str, is_dir: bool, filters: Filters = ALL
) -> Verdict | None:
    """``check`` of the shallowest folder above ``rel`` that it hides (each folder
    checked as ``check(folder, True, filters)`` would), else ``check`` of ``rel``.

    The same answer as those calls one after another, in one walk down ``rel``'s
    folders: linear in its depth, where the calls cost its cube (each ``check``
    walks from the root, entering every folder on the way)."""
    parts = rel.split("/")
    n = len(parts)
    git = parts.index(".git") if ".git" in parts else n
    hits = _hits(rules, parts[:git], is_dir if git == n else True, filters.mask)
    top = min((j for _, j, _ in hits), default=n)
    for i in range(max(1, min(top, git) + 1), n):  # the folder of the first i parts
        if git < i:
            return Verdict("deny", ".git", ".git")
        folder = "/".join(parts[:i])
        for bit, j, v in hits:
            if j < i and not (bit & RESCUABLE and rules.facts.tracks(folder, True)):
                return v
    if git < n:
        return Verdict("deny", ".git", ".git")
    for bit, _, v in hits:  # rel itself, as ``check`` judges it
        if not (bit & RESCUABLE and rules.facts.tracks(rel, is_dir)):
            return v
    return None


def _hits(
    rules: Rules, parts: list[str], is_dir: bool, mask: int
) -> list[tuple[int, int, Verdict]]:
    """Per kind of ``mask`` that hides the path ``parts`` (or a folder above it) by a
    pattern or a virtualenv marker, tracked paths aside: ``(kind bit, index of the
    part where it first does (-1: the root itself), verdict)``, in kind order."""
    out = []
    for bit in KIND_BITS:
        if mask & bit:
            hit = _first_hit(rules, bit, parts, is_dir)
            if hit is not None:
                out.append((bit, *hit))
    return out


def _first_hit(
    rules: Rules, bit: int, parts: list[str], is_dir: bool
) -> tuple[int, Verdict] | None:
    k = KIND_BITS.index(bit)
    frame = rules.root_frame(bit | DENY)
    if isinstance(frame.states[k], Excluded):  # the rule of the root or above it
        return -1, rules.down_to_root(bit)[1] or Verdict(KIND_NAMES[bit], "?", "?")
    cur = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        path = cur + part
        d = is_dir if last else True
        st = frame.states[k]
        if not isinstance(st, tuple):
            return None
        hit = last_match(st, rules.root_prefix + byte_view(path), byte_view(part), d)
        if hit is not None and not hit[0].negated:
            return i, hit[1].verdict(hit[0])
        if not d:
            return None
        if bit == DEFAULT_EXCLUDE:
            marker = env_marker(os.path.join(rules.root, path))
            if marker is not None:
                return i, Verdict("default-exclude", "defaultExcludes:" + marker, marker)
        if last:
            return None
        frame, _ = rules.enter(frame, path, 0, None, None)
        cur = path + "/"
    return None
