"""The listing: the visible paths of walked folder records under a mask of rule kinds,
in byte order, walking on demand what only a kind the request turned off hid.

``Listing`` holds no state of its own: it reads the record store (``store.py``) and asks
the walker (``walk.py``) for throw-away records of folders the index never entered; the
index (``model.py``) answers its queries through it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from readmany_daemon.index.records import ALL_MASK, DirRecord, sort_keys
from readmany_daemon.index.store import FolderRecords
from readmany_daemon.index.walk import IndexWalk
from readmany_daemon.rules.ignore import Frame, IgnoreRules
from readmany_daemon.rules.kinds import KIND_BITS, KIND_NAMES

__all__ = ["FOLDER", "Listing", "first_kind", "merged_hidden"]


class _Free(NamedTuple):
    """A folder ``Listing.emit`` walks on demand: ``rel``, the ``frame`` it is entered
    from (restricted to the request's kinds) and the kinds ``bits`` excluding it."""

    rel: str
    frame: Frame
    bits: int


#: One step of ``Listing.emit``: a run of paths to append, a walked folder ``(records,
#: rel, record)``, or a folder to walk on demand.
_Job = list[str] | tuple[dict[str, DirRecord], str, DirRecord] | _Free


def _emit_all(
    records: dict[str, DirRecord], rel: str, rec: DirRecord, recursive: bool, out: list[str]
) -> None:
    """``Listing.emit`` with every kind applied, nothing counted or filtered (the whole
    listing's path, kept tight): the files of ``rec`` (folder ``rel``) and with
    ``recursive`` those below it, appended to ``out`` in byte order, depth first over an
    explicit stack of runs of paths (lists) and folders ``(rel, record)``."""
    stack: list[list[str] | tuple[str, DirRecord]] = [(rel, rec)]
    pop = stack.pop
    while stack:
        job = pop()
        if isinstance(job, list):
            out += job
            continue
        at, folder = job
        prefix = at + "/" if at else ""
        entries = folder.entries
        if not folder.ndirs:
            out += [prefix + k for k in entries]
            continue
        if not recursive and at == rel:
            out += [prefix + k for k in entries if k[-1] != "/"]
            continue
        later: list[list[str] | tuple[str, DirRecord]] = []
        run = out  # where files go: ``out`` until the first sub-folder, then a new run
        for key in entries:
            if key[-1] != "/":
                if not run and run is not out:
                    later.append(run)
                run.append(prefix + key)
            else:
                sub = prefix + key[:-1]
                later.append((sub, records[sub]))
                run = []
        later.reverse()
        stack += later


def first_kind(mask: int) -> str:
    """The name of the first kind in ``mask`` in the order deny, ignore-file, gitignore,
    default-exclude (``"deny"`` for none)."""
    for bit in KIND_BITS:
        if mask & bit:
            return KIND_NAMES[bit]
    return "deny"


#: The suffix of a ``hidden`` counter's key that counts folders a kind hid (not entered,
#: so their files are unknown), beside the kind's own key that counts hidden files:
#: ``{"gitignore": 1, "default-exclude/": 6}``.
FOLDER = "/"


def merged_hidden(counter: Counter[str]) -> dict[str, int]:
    """A ``hidden`` counter with its folder counts added to their kind's file counts."""
    out: Counter[str] = Counter()
    for key, n in counter.items():
        out[key.removesuffix(FOLDER)] += n
    return dict(out)


class Listing:
    """The paths of ``store``'s records visible under a mask of kinds (``emit``), folders
    the index pruned walked on demand by ``walker`` into throw-away records
    (``walk_emit``), with ``rules``' cached ignore files of unwatched folders dropped
    first (``forget_unwatched``). Not thread-safe: called under the root's lock."""

    def __init__(
        self, root: str, rules: IgnoreRules, store: FolderRecords, walker: IndexWalk
    ) -> None:
        self.root = root
        self.rules = rules
        self.store = store
        self.walker = walker

    def _restricted(self, frame: Frame, mask: int) -> Frame:
        if frame.mask & ~mask == 0:
            return frame
        states = tuple(st if KIND_BITS[k] & mask else None for k, st in enumerate(frame.states))
        return Frame((states[0], states[1], states[2], states[3]), frame.tracked)

    def emit(
        self,
        records: dict[str, DirRecord],
        rel: str,
        rec: DirRecord,
        mask: int,
        recursive: bool,
        out: list[str],
        counter: Counter[str] | None,
        keep: Callable[[str], bool] | None,
    ) -> None:
        """Append the files of ``rec`` (folder ``rel``) visible under ``mask``, and with
        ``recursive`` those below it, in byte order. Folders pruned by kinds outside
        ``mask`` are walked on demand into throw-away dicts.

        Depth first over an explicit stack, never recursing per folder level (a tree may
        be thousands of folders deep, past Python's recursion limit): each folder's
        entries are emitted in order until its first sub-folder, the rest is pushed
        (reversed) as jobs: a run of paths (a list), a walked folder ``(records, rel,
        rec)`` or a folder to walk on demand ``(rel, frame, excluded kinds)``."""
        if mask == ALL_MASK and counter is None and keep is None:
            _emit_all(records, rel, rec, recursive, out)
            return
        stack: list[_Job] = [(records, rel, rec)]
        first = True
        while stack:
            job = stack.pop()
            if isinstance(job, list):
                out += job
                continue
            if isinstance(job, _Free):
                sub, frame, bits = job
                self.forget_unwatched(sub)
                temp: dict[str, DirRecord] = {}
                hidden_self = self.walker.walk([(sub, frame, bits & mask, 0, None)], temp)
                got = temp.get(sub)
                if got is not None:
                    stack.append((temp, sub, got))
                elif counter is not None and hidden_self & mask:
                    counter[first_kind(hidden_self & mask) + FOLDER] += 1
                continue
            recs, at, folder = job
            deep = recursive or not first
            later = self._entries(recs, at, folder, mask, deep, out, counter, keep)
            first = False
            if later:
                later.reverse()
                stack += later

    def _entries(
        self,
        records: dict[str, DirRecord],
        rel: str,
        rec: DirRecord,
        mask: int,
        recursive: bool,
        out: list[str],
        counter: Counter[str] | None,
        keep: Callable[[str], bool] | None,
    ) -> list[_Job]:
        """``emit``'s step for one folder under ``mask``, counting into ``counter`` and
        filtering by ``keep``: appends its files up to its first sub-folder to ``out`` and
        returns the jobs after it, in order."""
        prefix = rel + "/" if rel else ""
        keys = list(rec.entries)
        extra = False
        allowed: set[str] = set()
        for name, m in rec.hidden:
            if m & mask:
                if counter is not None and (keep is None or keep(prefix + name)):
                    counter[first_kind(m & mask)] += 1
            else:
                keys.append(name)
                extra = True
        for name, m in rec.pruned:
            if m & mask:
                if (
                    counter is not None
                    and recursive
                    and (keep is None or keep(prefix + name + "/"))
                ):
                    counter[first_kind(m & mask) + FOLDER] += 1
            elif recursive:
                keys.append(name + "/")
                allowed.add(name)
                extra = True
        if extra:
            sort_keys(keys)
        later: list[_Job] = []
        run = out  # where files go: ``out`` until the first sub-folder, then a new run
        for key in keys:
            if key[-1] != "/":
                path = prefix + key
                if keep is None or keep(path):
                    if not run and run is not out:
                        later.append(run)
                    run.append(path)
                continue
            if not recursive:
                continue
            name = key[:-1]
            sub = prefix + name
            if keep is not None and not keep(sub + "/"):
                continue
            run = []  # files after a sub-folder start a new run
            if name not in allowed:
                later.append((records, sub, records[sub]))
                continue
            frame = self._restricted(rec.frame, mask)
            _, r = self.rules.classify(frame, sub, name, True)
            later.append(_Free(sub, frame, r))
        return later

    def walk_emit(
        self,
        rel: str,
        frame: Frame,
        bits: int,
        mask: int,
        recursive: bool,
        out: list[str],
        counter: Counter[str] | None,
        keep: Callable[[str], bool] | None,
    ) -> None:
        """Walk folder ``rel`` into temporary records (entered from ``frame`` with the
        excluded kinds ``bits``) and emit its files; a folder hidden itself is counted."""
        temp: dict[str, DirRecord] = {}
        hidden_self = self.walker.walk([(rel, frame, bits, 0, None)], temp)
        rec = temp.get(rel)
        if rec is None:
            if counter is not None and hidden_self & mask:
                counter[first_kind(hidden_self & mask) + FOLDER] += 1
            return
        self.emit(temp, rel, rec, mask, recursive, out, counter, keep)

    def forget_unwatched(self, rel: str) -> None:
        """Drop the rules' cached ignore files at and below the first folder on the way
        to ``rel`` that is not walked: nothing watches such folders, so an on-demand walk
        must read their ignore files afresh."""
        records = self.store.dirs
        anc = rel
        top = rel
        while anc and anc not in records:
            top = anc
            anc = anc.rpartition("/")[0]
        if top not in records:
            self.rules.forget_dir(top)
