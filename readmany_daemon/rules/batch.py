"""The per-level classifier both walkers share: which entries of one level of folders
some ignore pattern may hide, found in batches.

The index walk (``index/walk.py``) and the cold git-seeded listing (``index/gitlist.py``)
go down a tree one level of folders at a time. For a level, ``level_candidates`` narrows
every entry to the few that need a precise verdict (``IgnoreRules.classify_soft``); every
other entry is visible under its folder's frame. This follows git's own rules
(``dir.c``): an entry is excluded only by a matching pattern that is not negated (the
last matching line of ``last_matching_pattern_from_lists``), so an entry no positive
pattern of its frame matches is never hidden by a pattern; a pattern without ``/``
(``PATTERN_FLAG_NODIR``) is matched against the basename (``match_basename``), any other
against the path relative to the ignore file's folder (``match_pathname``); a pattern
with a trailing ``/`` (``PATTERN_FLAG_MUSTBEDIR``) matches folders only, so files and
folders are matched apart. The rules above the ignore files are not decided here: the
``.git`` entries (``deny``), a kind that excludes the folder itself (``Frame.excl_mask``,
git's ``prep_exclude``) and virtualenv markers are the walkers' to apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from readmany_daemon.rules.ignore import Frame, IgnoreRules
from readmany_daemon.rules.wildmatch import byte_view, from_byte_view

__all__ = ["LevelItem", "level_candidates"]

#: One folder of a level: ``(rel, frame, files, folders)``: its root-relative path
#: (``""`` = the root), the frame of its entries (``IgnoreRules.enter``), and the names of
#: the files and of the sub-folders to judge (plain ``str``, surrogate escapes allowed).
LevelItem = tuple[str, Frame, Sequence[str], Sequence[str]]


def level_candidates(
    rules: IgnoreRules, level: Sequence[LevelItem]
) -> list[tuple[set[str] | None, set[str] | None]]:
    """Per folder of ``level`` (same order): ``(files, folders)``, the names of its files
    and of its sub-folders that some positive pattern of its frame may match (a
    superset: ``IgnoreRules.classify_soft`` decides), ``None`` where there is none.

    Basename patterns are matched once per distinct name (``NameMatcher.hits``), the
    lists every frame of the level shares (the root's, mostly) once over all the level's
    names; patterns that need the whole path run as one regex pass per frame over the
    top-relative byte-view paths of its folders (``IgnoreRules.quick``). A name holding a
    newline is always a candidate where its frame has path patterns (the pass is over
    newline-joined paths). Costs no system call."""
    out: list[tuple[set[str] | None, set[str] | None]] = [(None, None)] * len(level)
    groups: dict[int, tuple[Frame, list[int]]] = {}
    for i, item in enumerate(level):
        fr = item[1]
        g = groups.get(id(fr))
        if g is None:
            groups[id(fr)] = (fr, [i])
        else:
            g[1].append(i)
    if not groups:
        return out
    # distinct names per frame, and per pattern list (all frames share the root lists)
    per_group: list[tuple[Frame, list[int], set[str], set[str]]] = []
    all_f: set[str] = set()
    all_d: set[str] = set()
    for fr, idxs in groups.values():
        gf: set[str] = set()
        gd: set[str] = set()
        for i in idxs:
            gf.update(level[i][2])
            gd.update(level[i][3])
        all_f |= gf
        all_d |= gd
        per_group.append((fr, idxs, gf, gd))
    # lists active in every frame of the level (the root's, mostly) are matched once
    # over all the level's names; the others over their frames' names
    common = frozenset(per_group[0][0].lists).intersection(*(g[0].lists for g in per_group[1:]))
    cm = rules.name_matcher(common)
    common_f = cm.hits(all_f, False)
    common_d = cm.hits(all_d, True)
    for fr, idxs, gf, gd in per_group:
        hf, hd = common_f, common_d
        for lst in fr.lists:
            if lst in common:
                continue
            m = rules.name_matcher(frozenset((lst,)))
            xf = m.hits(gf, False)
            xd = m.hits(gd, True)
            if xf:
                hf = hf | xf
            if xd:
                hd = hd | xd
        for i in idxs:
            files, dirnames = level[i][2], level[i][3]
            cf = hf.intersection(files) if hf and files and not hf.isdisjoint(files) else None
            cd = (
                hd.intersection(dirnames)
                if hd and dirnames and not hd.isdisjoint(dirnames)
                else None
            )
            if cf or cd:
                out[i] = (cf or None, cd or None)
        pf, pd = rules.quick(fr)
        for path_rx, slot in ((pf, 2), (pd, 3)):
            if path_rx is not None:
                _path_hits(rules, level, idxs, slot, path_rx, out)
    return out


def _path_hits(
    rules: IgnoreRules,
    level: Sequence[LevelItem],
    idxs: list[int],
    slot: int,
    path_rx: Any,
    out: list[tuple[set[str] | None, set[str] | None]],
) -> None:
    """Add to ``out`` the names (files: ``slot`` 2, folders: 3) of the folders ``idxs``
    whose top-relative path ``path_rx`` (a multi-line regex, ``IgnoreRules.quick``)
    matches."""
    rp = rules.root_prefix_str
    parts: list[str] = []
    count = 0
    for i in idxs:
        item = level[i]
        names = item[2] if slot == 2 else item[3]
        if not names:
            continue
        rel = item[0]
        top = rp + (rel + "/" if rel else "")
        parts.append(top + ("\n" + top).join(names))
        count += len(names)
    if not parts:
        return
    blob = "\n".join(parts)
    if not blob.isascii():
        blob = byte_view(blob)
    lines: list[str] = path_rx.findall(blob)
    if blob.count("\n") != count - 1:
        lines.extend(_newline_names(rules, level, idxs, slot))
    if not lines:
        return
    at = {rules.root_prefix + byte_view(level[i][0] + "/" if level[i][0] else ""): i for i in idxs}
    k = slot - 2
    for line in lines:
        d, _, n = line.rpartition("/")
        j = at.get(d + "/" if d else "")
        if j is None:
            continue  # a piece of a name holding a newline: that name is a candidate
        got = out[j]
        names_set = got[k]
        if names_set is None:
            names_set = set()
            out[j] = (names_set, got[1]) if k == 0 else (got[0], names_set)
        names_set.add(from_byte_view(n))


def _newline_names(
    rules: IgnoreRules, level: Sequence[LevelItem], idxs: list[int], slot: int
) -> list[str]:
    """Top-relative byte-view paths of the names holding a newline (always candidates)."""
    out: list[str] = []
    for i in idxs:
        rel, _, files, folders = level[i]
        for n in files if slot == 2 else folders:
            if "\n" in n:
                out.append(rules.root_prefix + byte_view((rel + "/" if rel else "") + n))
    return out
