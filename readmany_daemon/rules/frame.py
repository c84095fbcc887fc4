"""Frames: the rules that apply to the entries of one folder, per rule kind (a frame is
shared by folders whose rules are the same), and the matching helpers the rule engine
and its whole-path checks share (``rules/ignore.py``, ``rules/checks.py``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Final

from readmany_daemon.rules.git import TrackedSet
from readmany_daemon.rules.kinds import DEFAULT_EXCLUDE, GITIGNORE, KIND_BITS
from readmany_daemon.rules.patterns import Pattern, PatternList

__all__ = [
    "K_DEFAULT",
    "K_DENY",
    "K_GIT",
    "K_IGNORE_FILE",
    "RESCUABLE",
    "Excluded",
    "Frame",
    "State",
    "env_marker",
    "last_match",
    "same_rules",
]

#: Kinds that never hide a tracked path (git: a tracked file is never ignored).
RESCUABLE: Final = GITIGNORE | DEFAULT_EXCLUDE
K_DENY, K_IGNORE_FILE, K_GIT, K_DEFAULT = 0, 1, 2, 3  # indexes into a state tuple


class Excluded:
    """A kind's state below a folder that kind excludes (kept only because the folder
    holds tracked paths): every untracked path below is hidden by that kind."""

    __slots__ = ("rel",)

    def __init__(self, rel: str) -> None:
        self.rel = rel


State = tuple[PatternList, ...] | Excluded | None  # lists (deepest first) | excluded | off


class Frame:
    """Per-kind states for the entries of one folder, plus its repository context.

    ``states[k]`` for kind index k (deny, ignore-file, gitignore, default-exclude): a tuple
    of pattern lists (deepest folder first), an ``Excluded`` marker, or ``None`` (kind off).
    Frames are shared between folders whose rules are the same.
    """

    __slots__ = ("_q", "_ready", "excl_mask", "lists", "mask", "states", "tracked")

    def __init__(
        self, states: tuple[State, State, State, State], tracked: TrackedSet | None
    ) -> None:
        self.states = states
        self.tracked = tracked
        self.mask = 0
        self.excl_mask = 0
        #: every pattern list active for this frame (all kinds in lists mode)
        self.lists: tuple[PatternList, ...] = tuple(
            lst for st in states if isinstance(st, tuple) for lst in st
        )
        for k, st in enumerate(states):
            if st is not None:
                self.mask |= KIND_BITS[k]
            if isinstance(st, Excluded):
                self.excl_mask |= KIND_BITS[k]
        self._ready = False
        self._q: tuple[Any, Any] = (None, None)


def last_match(
    lists: Iterable[PatternList], path: str, name: str, is_dir: bool
) -> tuple[Pattern, PatternList] | None:
    """The deciding pattern over ``lists`` (precedence order) for top-relative ``path``
    (byte view) with basename ``name``: git's ``last_matching_pattern_from_lists``."""
    for lst in lists:
        pat = lst.last_match(path, name, is_dir)
        if pat is not None:
            return pat, lst
    return None


def env_marker(folder: str) -> str | None:
    """``"pyvenv.cfg"`` if ``folder`` is a virtualenv, ``"conda-meta/"`` if a conda env."""
    if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
        return "pyvenv.cfg"
    if os.path.isdir(os.path.join(folder, "conda-meta")):
        return "conda-meta/"
    return None


def same_rules(a: Frame, b: Frame) -> bool:
    """Whether two frames apply the same rules: the same pattern lists (by identity:
    the rules cache them per file), the same excluded-kind markers, the same tracked
    set."""
    if a is b:
        return True
    if a.tracked is not b.tracked:
        return False
    for x, y in zip(a.states, b.states, strict=True):
        if x is y:
            continue
        if isinstance(x, tuple) and isinstance(y, tuple):
            if len(x) != len(y) or any(p is not q for p, q in zip(x, y, strict=True)):
                return False
        elif x is None or y is None or isinstance(x, tuple) or isinstance(y, tuple):
            return False
        if getattr(x, "rel", None) != getattr(y, "rel", None):  # two Excluded markers
            return False
    return True
