"""Which files a ``changes`` read answers (PROTOCOL §3 "What changed since a commit").

:func:`resolve_changes` asks git what differs from the base (``index.gitdiff``) and
makes the request's items of the changed files that exist now: the rules of any read
hide what they hide (deny, ``.gitignore`` for untracked files, ignore files, default
excludes, the request's ``exclude``: counted in ``summary.hidden``, never read); the
request's ``paths``/``files``/``include``, when given, are resolved as in any read and
narrow the changed files (an entry that names no changed file gives nothing; one that
names no file at all keeps its error or ``no-match`` entry, as in any read). Without
entries the changed files are one expansion, in byte order of their paths.
:func:`changes_result` is the result's ``changes``: the base's id, the visible files
deleted and the renames (git's, ``git diff -M``).
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from readmany_daemon.engine.items import Expansion, Item, Items, Resolved
from readmany_daemon.engine.options import ChangesOptions, ResolveOptions
from readmany_daemon.engine.resolve import resolve
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code, InvalidParams
from readmany_daemon.index.gitdiff import ChangeSet, NotAWorkTree, changes_since
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.wire.messages import ChangesResult, Renamed


def change_set(ws: Workspace, changes: ChangesOptions) -> ChangeSet:
    """What differs between ``changes.base`` and the working tree of ``ws``'s root.
    Raises ``InvalidParams`` naming ``$.changes`` when git cannot say."""
    try:
        return changes_since(ws.root, changes.base)
    except NotAWorkTree as exc:
        raise InvalidParams(f"invalid params: $.changes: {exc}", "$.changes") from None


def _hidden_by(ws: Workspace, rel: str, filters: Filters) -> str | None:
    """The kind of the rule that hides ``rel`` from a read (as an expansion's match),
    or None when it is visible; a file git tracks is not hidden by ``.gitignore``."""
    verdict = ws.explain(rel, False, filters)
    if verdict is None:
        return None
    if verdict.kind == "gitignore" and ws.rules.is_tracked(rel):
        return None
    return verdict.kind


def _visible(
    ws: Workspace, opts: ResolveOptions, paths: list[str], hidden: Counter[str]
) -> list[str]:
    """``paths`` less those the rules or the request's ``exclude`` hide (counted by kind
    in ``hidden``)."""
    shown = []
    for rel in paths:
        kind = _hidden_by(ws, rel, opts.filters)
        if kind is None:
            shown.append(rel)
        else:
            hidden[kind] += 1
    if opts.exclude is not None and shown:
        kept = opts.exclude.keep(shown)
        hidden["exclude"] += len(shown) - len(kept)
        shown = kept
    return shown


def resolve_changes(ws: Workspace, opts: ResolveOptions, changes: ChangeSet) -> Resolved:
    """The items of a ``changes`` read: the changed files that exist now, as the rules
    and the request's entries leave them (see the module)."""
    hidden: Counter[str] = Counter()
    files = [rel for rel in changes.files if ws.index.is_dir(rel) is not True]
    visible = _visible(ws, opts, files, hidden)
    if not opts.entries:
        items = Items(ws, opts.absolute_paths)
        if visible:
            items.append(Expansion(visible, ""))
        return Resolved(items=items, hidden=hidden, hints=_hints(changes, visible))
    wanted = set(visible)
    every = resolve(ws, opts)
    items = Items(ws, opts.absolute_paths)
    named_changed = False  # an entry named a changed file
    for segment, entry in zip(every.items.segments, every.items.entries, strict=True):
        if isinstance(segment, Item):
            if segment.rel is not None and segment.rel in changes.files:
                items.append(segment, entry)  # a changed file, or one named and denied
                named_changed = True
            elif segment.result is not None and segment.result.code in _NAMES_NO_FILE:
                items.append(segment, entry)  # a fault of the entry itself: never dropped
        else:
            kept = [m for m in segment.matches if m in wanted]
            if kept:
                items.append(Expansion(kept, segment.tail), entry)
                named_changed = True
    shown = [rel for rel in visible if rel in wanted]
    # (``every.hints``: the lines of its patterns that matched nothing)
    hints = [*every.hints, *_hints(changes, shown if named_changed else [])]
    return Resolved(items=items, hidden=hidden, hints=hints)


#: Codes of an entry that names no file of the tree at all (a path that does not exist,
#: one out of the root, a bad pattern, one that matched nothing, a folder that cannot be
#: listed): answered in a ``changes`` read too, as in any read, never silently dropped.
_NAMES_NO_FILE: Final = frozenset(
    {
        Code.NOT_FOUND,
        Code.OUTSIDE_WORKSPACE,
        Code.NOT_A_FILE,
        Code.INVALID_PATTERN,
        Code.NO_MATCH,
        Code.PERMISSION_DENIED,
        Code.FS_ERROR,
    }
)


def _hints(changes: ChangeSet, visible: list[str]) -> list[str]:
    if visible:
        return []
    return [f"[No visible file changed since {changes.base[:12]}.]"]


def changes_result(ws: Workspace, opts: ResolveOptions, changes: ChangeSet) -> ChangesResult:
    """The result's ``changes``: the base's commit id, the deleted files and the renames
    whose paths the rules do not hide (a hidden path is not named)."""
    ignored: Counter[str] = Counter()
    deleted = _visible(ws, opts, list(changes.deleted), ignored)
    renamed = [
        Renamed(from_=a, to=b)
        for a, b in changes.renamed
        if _visible(ws, opts, [a, b], ignored) == [a, b]
    ]
    return ChangesResult(base=changes.base, deleted=deleted, renamed=renamed)
