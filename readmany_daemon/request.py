"""The engine behind every surface: resolve → load → budget → pack → render (PROTOCOL §3-§5).

``answer(workspace, params)`` is the whole of ``readMany/read``; ``list_files`` is
``readMany/files``. Each stage is a plain function over plain data; per-file problems are
``FileResult`` statuses and codes, never exceptions. Only ``InvalidParams`` escapes (a bad
cursor or exclude pattern), naming the field.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import dataclasses
import errno
import math
import os
import posixpath
import stat as stat_mod
import unicodedata
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import msgspec

from readmany_daemon import content as content_mod
from readmany_daemon.engine.render import (
    Notices,
    Piece,
    continuation_request,
    cut_notice,
    render_parts,
    return_display,
)
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code, InvalidParams, Status
from readmany_daemon.ignore import Filters, GitPatterns
from readmany_daemon.wire.messages import (
    Attachment,
    FileInfo,
    FileResult,
    FilesParams,
    FileSpec,
    FilesResult,
    PackingInfo,
    ReadManyParams,
    ReadManyResult,
    Summary,
    decode_read_params,
    fold_read_params,
)

#: Expansion matches that were omitted or skipped are listed in ``files`` up to this many
#: (PROTOCOL §4); ``summary`` always has the full counts.
MAX_LISTED = 200

_GLOB_MAGIC = frozenset("*?[{")

#: Human words for the rule kinds of ``summary.hidden`` and the flag that lifts each.
_HIDDEN_HINTS = {
    "gitignore": "fileFilteringOptions.respectGitIgnore=false (CLI --no-gitignore)",
    "ignore-file": "fileFilteringOptions.respectIgnoreFiles=false (CLI --no-ignore-files)",
    "default-exclude": "useDefaultExcludes=false (CLI --no-default-excludes)",
    "exclude": "a narrower exclude list",
    "deny": "",
}


# ------------------------------------------------------------------------------ data


@dataclass
class Item:
    """One resolved entry: a file to read, or an entry that already has its answer.

    ``rel`` is workspace-relative (POSIX); ``offset``/``limit`` the line window (1-based);
    ``explicit`` marks a named path (as opposed to a glob or folder match); ``tail`` is
    the last component of the pattern that matched (lower-cased), which decides whether an
    image or PDF it reached may be attached. ``result`` is preset for entries decided at
    resolve time (errors, no-match, ignored).
    """

    label: str
    key: str
    rel: str | None = None
    offset: int | None = None
    limit: int | None = None
    explicit: bool = True
    tail: str = ""
    ignored_by: str | None = None
    result: FileResult | None = None

    def may_attach(self) -> bool:
        """Images and PDFs are attached when named, or matched by a pattern whose
        extension names their type (``shots/*.png``), never by a bare folder or ``**``."""
        if self.explicit:
            return True
        assert self.rel is not None
        return posixpath.splitext(self.rel)[1].lower() in self.tail


@dataclass
class _Expansion:
    """The matches of one glob or folder, kept as a plain list of relative paths so a
    50,000-file expansion costs no per-file objects until a file is looked at."""

    matches: list[str]
    tail: str


class Items(Sequence[Item]):
    """The resolved entries in output order: explicit ``Item``s and ``_Expansion``s,
    indexed as one flat sequence; expansion items are made on first access."""

    def __init__(self, ws: Workspace, absolute: bool) -> None:
        self._ws = ws
        self._absolute = absolute
        self.segments: list[Item | _Expansion] = []
        self.starts: list[int] = []
        self._size = 0
        self._made: dict[int, Item] = {}

    def append(self, segment: Item | _Expansion) -> None:
        self.segments.append(segment)
        self.starts.append(self._size)
        self._size += len(segment.matches) if isinstance(segment, _Expansion) else 1

    def __len__(self) -> int:
        return self._size

    def locate(self, i: int) -> tuple[int, int]:
        """``(segment number, position in it)`` of flat index ``i``."""
        seg = bisect.bisect_right(self.starts, i) - 1
        return seg, i - self.starts[seg]

    def label(self, i: int) -> str:
        """The label of entry ``i`` without making its ``Item``."""
        made = self._made.get(i)
        if made is not None:
            return made.label
        seg, pos = self.locate(i)
        segment = self.segments[seg]
        if isinstance(segment, Item):
            return segment.label
        rel = segment.matches[pos]
        return self._ws.abspath(rel) if self._absolute else rel

    def is_preset(self, i: int) -> bool:
        """Whether entry ``i`` was answered at resolve time (never an expansion match)."""
        segment = self.segments[self.locate(i)[0]]
        return isinstance(segment, Item) and segment.result is not None

    def replace(self, i: int, **changes: Any) -> None:
        """Change one entry (a cursor resuming a cut file at its next offset)."""
        self._made[i] = dataclasses.replace(self[i], **changes)

    @overload
    def __getitem__(self, i: int) -> Item: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Item]: ...
    def __getitem__(self, i: int | slice) -> Item | Sequence[Item]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._size))]
        if not 0 <= i < self._size:
            raise IndexError(i)
        made = self._made.get(i)
        if made is not None:
            return made
        seg, pos = self.locate(i)
        segment = self.segments[seg]
        if isinstance(segment, Item):
            return segment
        rel = segment.matches[pos]
        label = self._ws.abspath(rel) if self._absolute else rel
        item = Item(label=label, key=label, rel=rel, explicit=False, tail=segment.tail)
        self._made[i] = item
        return item


@dataclass
class Loaded:
    """An item after the load stage (``doc`` is None for preset results)."""

    item: Item
    result: FileResult
    text: str | None = None  # windowed content, before any budget cut
    window: content_mod.Window | None = None
    full: str | None = None  # the text the window came from (for a budget re-cut)
    attachment: Attachment | None = None


@dataclass
class Resolved:
    items: Items
    hidden: Counter[str] = field(default_factory=Counter)
    hints: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ cursor


class _Cursor(msgspec.Struct, array_like=True):
    version: int
    params: dict[str, Any]
    remaining: list[tuple[int, int]]  # [start, end) ranges of item indexes
    resume: dict[int, tuple[int, int | None]]  # item index → (offset, limit) of a cut file


def _merge_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, merged ``[start, end)`` ranges."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(r for r in ranges if r[0] < r[1]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def _encode_cursor(
    params: dict[str, Any],
    remaining: Sequence[tuple[int, int]],
    resume: dict[int, tuple[int, int | None]],
) -> str:
    ranges = _merge_ranges(remaining)
    raw = msgspec.json.encode(_Cursor(1, params, ranges, resume))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


_DEFAULT_PARAMS: dict[str, Any] = msgspec.to_builtins(ReadManyParams())


def _non_default(params: ReadManyParams) -> dict[str, Any]:
    """The fields of ``params`` that differ from the defaults (``cursor`` aside), so a
    cursor carries only what the request said."""
    return {
        k: v
        for k, v in msgspec.to_builtins(params).items()
        if k != "cursor" and v != _DEFAULT_PARAMS.get(k)
    }


def _decode_cursor(token: str) -> _Cursor:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        cursor = msgspec.json.decode(raw, type=_Cursor)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise InvalidParams(
            "invalid params: cursor is not a cursor this daemon issued", "$.cursor"
        ) from None
    if cursor.version != 1:
        raise InvalidParams("invalid params: cursor from another version", "$.cursor")
    return cursor


# ------------------------------------------------------------------------------ resolve


def _filters(params: ReadManyParams | FilesParams) -> Filters:
    ffo = params.file_filtering_options
    return Filters(
        respect_gitignore=ffo.respect_git_ignore,
        respect_ignore_files=ffo.respect_ignore_files,
        use_default_excludes=params.use_default_excludes,
    )


def _has_magic(s: str) -> bool:
    return any(c in _GLOB_MAGIC for c in s)


def _to_rel(ws: Workspace, raw: str) -> str | None:
    """Workspace-relative POSIX form of a requested path, lexically normalized; None when
    it leaves the root (by ``..`` or an absolute path elsewhere)."""
    path = raw
    if path.startswith("file:"):
        parsed = urllib.parse.urlparse(path)
        path = urllib.parse.unquote(parsed.path)
    if os.path.isabs(path):
        rel = ws.relpath(posixpath.normpath(path))
        if rel is None:
            # The root may have been given through a symlink: compare real paths too.
            rel = ws.relpath(os.path.realpath(path))
        return rel
    norm = posixpath.normpath(path)
    if norm == ".":
        return ""
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


def _inside(ws: Workspace, rel: str) -> bool:
    """True when ``rel``'s real path (symlinks resolved) stays inside the root."""
    return ws.relpath(_realpath(ws, rel)) is not None


def _realpath(ws: Workspace, rel: str) -> str:
    """``os.path.realpath(ws.abspath(rel))`` for a normalized workspace-relative ``rel``
    (``""`` = the root). The root is a real path already, so only ``rel``'s own
    components are ``lstat``'ed (realpath would walk the root's ancestors too); one
    that is a symbolic link, or missing, hands over to ``os.path.realpath``."""
    if not rel:
        return ws.root
    path = ws.root.rstrip("/")
    for part in rel.split("/"):
        path = f"{path}/{part}"
        try:
            st = os.lstat(path)
        except (OSError, ValueError):
            return os.path.realpath(ws.abspath(rel))
        if stat_mod.S_ISLNK(st.st_mode):
            return os.path.realpath(ws.abspath(rel))
    return path


def _lstat(ws: Workspace, rel: str) -> tuple[str, os.stat_result] | None:
    """lstat ``rel``, trying its NFC and NFD spellings too; returns the spelling that
    exists, None when none does. Other failures (a folder on the way that cannot be
    searched, a symbolic link loop, a name too long) raise their ``OSError``: the entry
    gets the matching code, not ``not-found`` (see ``_path_error``)."""
    for candidate in dict.fromkeys(
        (rel, unicodedata.normalize("NFC", rel), unicodedata.normalize("NFD", rel))
    ):
        try:
            return candidate, os.lstat(ws.abspath(candidate))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return None


def _path_error(raw: str, exc: OSError) -> tuple[str, str]:
    """``(code, message)`` for a requested path whose ``lstat``/``stat`` failed with
    something other than "no such file" (PROTOCOL §4 codes)."""
    if isinstance(exc, PermissionError):
        return (
            Code.PERMISSION_DENIED,
            f"{raw}: permission denied (a folder on its path cannot be searched)",
        )
    if exc.errno == errno.ELOOP:
        return Code.NOT_FOUND, _LOOP_MESSAGE.format(raw)
    reason = exc.strerror or str(exc)
    return Code.FS_ERROR, f"{raw}: file system error: {reason}"


#: A symbolic link that resolves to no file because it loops (a→b→a): like a broken
#: link, ``not-found``, named or reached by an expansion.
_LOOP_MESSAGE = "{} is a symbolic link loop (too many levels of symbolic links)"


def _glob_scope(pattern: str, recursive: bool) -> tuple[str, bool]:
    """The folder a glob pattern can match below (its leading components without glob
    characters) and whether it reaches below that folder's own entries."""
    parts = pattern.strip("/").split("/")
    k = 0
    while k < len(parts) - 1 and not _has_magic(parts[k]):
        k += 1
    rest = parts[k:]
    deep = len(rest) > 1 or (recursive and any("**" in p for p in rest))
    return "/".join(parts[:k]), deep


class _Resolver:
    """Turns requested entries into ordered, de-duplicated ``Item``s (PROTOCOL §3 order)."""

    def __init__(self, ws: Workspace, params: ReadManyParams) -> None:
        self.ws = ws
        self.params = params
        self.filters = _filters(params)
        self.out = Resolved(items=Items(ws, params.absolute_paths))
        self.seen: set[tuple[str, int | None, int | None]] = set()
        self.unseen: list[_Expansion] = []  # expansions not yet in ``seen``
        try:
            self.exclude = GitPatterns(params.exclude) if params.exclude else None
        except ValueError as exc:
            raise InvalidParams(f"invalid params: $.exclude: {exc}", "$.exclude") from None

    def label(self, rel: str) -> str:
        return self.ws.abspath(rel) if self.params.absolute_paths else rel

    def _flush(self) -> None:
        for expansion in self.unseen:
            self.seen.update((m, None, None) for m in expansion.matches)
        self.unseen.clear()

    def add(self, item: Item) -> None:
        """Append ``item`` unless an identical (path, offset, limit) came before."""
        self._flush()
        ident = (item.rel if item.rel is not None else "\0" + item.label, item.offset, item.limit)
        if ident in self.seen:
            return
        self.seen.add(ident)
        self.out.items.append(item)

    def add_matches(self, matches: list[str], tail: str) -> None:
        """Append an expansion's matches, dropping those answered earlier; the
        de-duplication set is only built when a later entry needs it."""
        self._flush()
        if self.seen:
            matches = [m for m in matches if (m, None, None) not in self.seen]
        expansion = _Expansion(matches, tail)
        self.unseen.append(expansion)
        self.out.items.append(expansion)

    def preset_outside(self, raw: str, key: str) -> None:
        """Add ``raw`` as an ``outside-workspace`` error (it resolves out of the root)."""
        message = f"{raw} resolves outside the workspace {self.ws.root}"
        self.preset(raw, key, Status.ERROR, Code.OUTSIDE_WORKSPACE, message)

    def preset(
        self,
        raw: str,
        key: str,
        status: str,
        code: str,
        message: str,
        rel: str | None = None,
        ignored_by: str | None = None,
    ) -> None:
        """Add an entry whose answer is already known (an error, no-match, ignored)."""
        label = self.label(rel) if rel is not None else raw
        result = FileResult(
            path=label,
            status=status,
            source="disk",
            chars=0,
            code=code,
            message=message,
            ignored_by=ignored_by,
        )
        self.add(Item(label=label, key=key, rel=rel, result=result))

    def entry(self, raw: str, offset: int | None, limit: int | None, from_include: bool) -> None:
        key = raw if offset is None and limit is None else _window_key(raw, offset, limit)
        rel = _to_rel(self.ws, raw)
        if rel is None:
            self.preset(
                raw,
                key,
                Status.ERROR,
                Code.OUTSIDE_WORKSPACE,
                f"{raw} is outside the workspace {self.ws.root}",
            )
            return
        try:
            found = (
                _lstat(self.ws, rel)
                if not raw.endswith("/") or rel
                else (rel, os.lstat(self.ws.root))
            )
        except OSError as exc:
            if _has_magic(raw):  # no such literal path: the pattern's own answer
                self.expand(raw, key, "glob", rel)
                return
            code, message = _path_error(raw, exc)
            self.preset(raw, key, Status.ERROR, code, message)
            return
        if found is not None:
            rel, st = found
            try:
                inside = _inside(self.ws, rel)
            except OSError as exc:  # the path changed while it was resolved
                code, message = _path_error(raw, exc)
                self.preset(raw, key, Status.ERROR, code, message)
                return
            if not inside:
                self.preset_outside(raw, key)
                return
            if stat_mod.S_ISLNK(st.st_mode):
                try:
                    st = os.stat(self.ws.abspath(rel))
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        code, message = Code.NOT_FOUND, _LOOP_MESSAGE.format(raw)
                    elif isinstance(exc, FileNotFoundError | NotADirectoryError):
                        code, message = Code.NOT_FOUND, f"{raw} is a broken symbolic link"
                    else:
                        code, message = _path_error(raw, exc)
                    self.preset(raw, key, Status.ERROR, code, message, rel=rel)
                    return
            if stat_mod.S_ISDIR(st.st_mode):
                try:
                    target = self.ws.relpath(_realpath(self.ws, rel))
                except OSError as exc:
                    code, message = _path_error(raw, exc)
                    self.preset(raw, key, Status.ERROR, code, message)
                    return
                if target is None:  # swapped for a link out since the check above
                    self.preset_outside(raw, key)
                    return
                self.expand(raw, key, "dir", target)
                return
            if not stat_mod.S_ISREG(st.st_mode):
                self.preset(
                    raw, key, Status.ERROR, Code.NOT_A_FILE, f"{raw} is not a regular file", rel=rel
                )
                return
            self.explicit(raw, key, rel, offset, limit)
            return
        if _has_magic(raw):
            self.expand(raw, key, "glob", rel)
            return
        self.preset(raw, key, Status.ERROR, Code.NOT_FOUND, f"File not found: {raw}")

    def explicit(self, raw: str, key: str, rel: str, offset: int | None, limit: int | None) -> None:
        ws, f = self.ws, self.filters
        deny = ws.explain(rel, False, Filters(False, False, False))
        if deny is not None:
            self.preset(
                raw,
                key,
                Status.ERROR,
                Code.DENIED,
                f"{raw} is denied by {deny.source} ({deny.pattern}) and is never read",
                rel=rel,
            )
            return
        if f.respect_ignore_files:
            hidden = ws.explain(rel, False, Filters(False, True, False))
            if hidden is not None:
                self.preset(
                    raw,
                    key,
                    Status.SKIPPED,
                    Code.IGNORED,
                    f"{raw} is hidden by {hidden.source}; "
                    "set fileFilteringOptions.respectIgnoreFiles=false to read it",
                    rel=rel,
                    ignored_by=hidden.source,
                )
                return
        soft = ws.explain(
            rel, False, Filters(f.respect_gitignore, False, self.params.use_default_excludes)
        )
        if soft is not None and soft.kind == "gitignore" and ws.rules.is_tracked(rel):
            soft = None
        self.add(
            Item(
                label=self.label(rel),
                key=key,
                rel=rel,
                offset=offset,
                limit=limit,
                explicit=True,
                ignored_by=soft.source if soft else None,
            )
        )

    def expand(self, raw: str, key: str, kind: str, rel: str) -> None:
        hidden: Counter[str] = Counter()
        recursive = self.params.recursive
        try:
            matches = self.ws.expand(kind, rel, self.filters, recursive, hidden)
        except ValueError as exc:
            self.preset(
                raw, key, Status.ERROR, Code.INVALID_PATTERN, f"invalid pattern {raw}: {exc}"
            )
            return
        if self._unlisted(raw, key, kind, rel, recursive):
            return
        if self.exclude is not None:
            kept = [m for m in matches if not self.exclude.match(m)]
            if len(kept) != len(matches):
                hidden["exclude"] += len(matches) - len(kept)
            matches = kept
        self.out.hidden.update(hidden)
        if not matches:
            message = f"{raw} matched no visible file"
            # The counts are hidden files that match and hidden folders in the pattern's
            # scope (not searched: they may or may not hold matches). Deny rules can't be
            # lifted and nearly always mean .git/ alone: not worth a hint.
            liftable = {k: n for k, n in hidden.items() if _HIDDEN_HINTS.get(k)}
            if liftable:
                parts = [
                    f"{n} file(s) or folder(s) hidden by {kind_} rules were not searched"
                    f" (show them with {_HIDDEN_HINTS[kind_]})"
                    for kind_, n in sorted(liftable.items())
                ]
                message += "; " + "; ".join(parts)
            self.preset(raw, raw, Status.SKIPPED, Code.NO_MATCH, message)
            self.out.hints.append(f"[{message}.]")
            return
        self.add_matches(matches, raw.rsplit("/", 1)[-1].lower())

    def _unlisted(self, raw: str, key: str, kind: str, rel: str, recursive: bool) -> bool:
        """Account for folders an expansion covers that could not be listed (no read or
        search permission, an I/O error): their files are unknown, never silently
        missing. A folder named itself, or the folder a glob's literal part names, is an
        ``error`` entry (``permission-denied`` or ``fs-error``; returns True: nothing else
        to add); folders below add a warning line to ``llmContent`` while the rest is
        answered."""
        if kind == "dir":
            scope, deep = rel, recursive
        else:
            scope, deep = _glob_scope(rel, recursive)
        failed = self.ws.index.unlisted_under(scope, deep)
        if not failed:
            return False
        if failed[0][0] == scope:
            _, err, reason = failed[0]
            denied = err in (errno.EACCES, errno.EPERM)
            self.preset(
                raw,
                key,
                Status.ERROR,
                Code.PERMISSION_DENIED if denied else Code.FS_ERROR,
                f"{raw}: the folder cannot be listed ({reason})",
                rel=rel,
            )
            return True
        for folder, _, reason in failed[:_UNLISTED_NAMED]:
            self.out.hints.append(
                f"[Warning: {folder}/ cannot be listed ({reason}); "
                f"its files are missing from {raw}.]"
            )
        if len(failed) > _UNLISTED_NAMED:
            self.out.hints.append(
                f"[Warning: {len(failed) - _UNLISTED_NAMED} more folders cannot be listed; "
                f"their files are missing from {raw}.]"
            )
        return False


#: Unlisted folders named per expansion in ``llmContent`` warnings; the rest are counted.
_UNLISTED_NAMED = 5


def _window_key(key: str, offset: int | None, limit: int | None) -> str:
    start = offset or 1
    end = str(start + limit - 1) if limit else ""
    return f"{key}:{start}-{end}"


def resolve(ws: Workspace, params: ReadManyParams) -> Resolved:
    """Ordered items for ``params``: ``paths``, then ``files``, then ``include``, each in
    request order; a glob or folder contributes its matches sorted by path (byte order);
    a repeated identical (path, offset, limit) keeps its first position (PROTOCOL §3)."""
    r = _Resolver(ws, params)
    for p in params.paths:
        if isinstance(p, FileSpec):
            r.entry(p.path, p.offset, p.limit, False)
        else:
            r.entry(p, None, None, False)
    for spec in params.files:
        r.entry(spec.path, spec.offset, spec.limit, False)
    for pattern in params.include:
        r.entry(pattern, None, None, True)
    return r.out


# ------------------------------------------------------------------------------ load + budget


def _number_lines(text: str, first: int) -> str:
    lines = text.split("\n")
    trailing = lines[-1] == ""
    if trailing:
        lines.pop()
    width = max(6, len(str(first + len(lines))))
    out = "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(lines, start=first))
    return out + ("\n" if trailing else "")


class RequestPaths:
    """Path resolution state for the span of one request.

    ``real_dirs`` memoizes the real path of each parent folder (keyed by its relative
    path), so a glob over thousands of files in a few folders costs one ``lstat`` per
    file instead of one per path component; ``handles`` (``content.FolderHandles``) holds
    descriptors of the real folders below the root, so each file is ``lstat``-ed and
    opened by its name alone (``fstatat``/``openat``), never through a path walked again.
    A folder replaced by a symbolic link during that span is seen as the request saw it
    first; an open always goes through ``O_NOFOLLOW`` checks. Call :meth:`close` (or use
    ``with``) at the end of the request."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.real_dirs: dict[str, tuple[str, str | None]] = {}
        self.handles = content_mod.FolderHandles(ws.root)

    def real_dir(self, head: str) -> tuple[str, str | None]:
        """``(real path, root-relative real path or None when outside)`` of folder
        ``head`` (workspace-relative)."""
        known = self.real_dirs.get(head)
        if known is None:
            real = _realpath(self.ws, head)
            known = self.real_dirs[head] = (real, self.ws.relpath(real))
        return known

    def close(self) -> None:
        """Close the folder descriptors."""
        self.handles.close()

    def __enter__(self) -> RequestPaths:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def real_path(ws: Workspace, rel: str, paths: RequestPaths | None = None) -> str:
    """``os.path.realpath`` of workspace-relative ``rel`` (POSIX, normalized); ``paths``
    memoizes parent folders for one request (:class:`RequestPaths`)."""
    return _real_path_stat(ws, rel, paths)[0]


#: Where a file was ``lstat``-ed through a folder descriptor: (root-relative real folder,
#: file name), to open it the same way.
_At = tuple[str, str]


def _real_path_stat(
    ws: Workspace, rel: str, paths: RequestPaths | None
) -> tuple[str, os.stat_result | None, _At | None]:
    """:func:`real_path` and, when the last component is not a symbolic link, its
    ``lstat`` (then equal to its ``stat``: one system call serves both), else None; and
    where that ``lstat`` was made when it went through a folder descriptor."""
    head, _, name = rel.rpartition("/")
    if name in ("", ".", ".."):
        return os.path.realpath(ws.abspath(rel)), None, None
    if paths is None:
        real_dir, real_rel_dir = _realpath(ws, head), None  # no descriptors to keep
    else:
        real_dir, real_rel_dir = paths.real_dir(head)
    candidate = f"{real_dir}/{name}"
    if paths is not None and real_rel_dir is not None:
        try:
            st = os.stat(name, dir_fd=paths.handles.fd(real_rel_dir), follow_symlinks=False)
        except FileNotFoundError:
            return candidate, None, None  # as realpath: a missing path resolves to itself
        except (OSError, ValueError):
            pass  # the path route below decides, as it did before descriptors
        else:
            if stat_mod.S_ISLNK(st.st_mode):
                return os.path.realpath(candidate), None, None
            return candidate, st, (real_rel_dir, name)
    try:
        st = os.lstat(candidate)
    except (OSError, ValueError):
        return candidate, None, None  # as realpath: a missing path resolves to itself
    if stat_mod.S_ISLNK(st.st_mode):
        return os.path.realpath(candidate), None, None
    return candidate, st, None


def _read_source(
    ws: Workspace,
    item: Item,
    want_full: bool,
    max_lines: int | None,
    max_chars: int | None,
    attach: bool,
    paths: RequestPaths | None = None,
) -> tuple[content_mod.Loaded | None, str | None, str]:
    """The content of ``item`` from the overlay, the cache or the disk, in that order.

    Returns ``(loaded, overlay_text, source)``; exactly one of the first two is set.
    ``paths``: see :class:`RequestPaths`."""
    assert item.rel is not None
    try:
        real, known, at = _real_path_stat(ws, item.rel, paths)
    except OSError as exc:  # the path changed while it was resolved (a racing swap)
        code, message = _path_error(item.label, exc)
        return content_mod.Loaded(kind="error", code=code, message=message), None, "disk"
    real_rel = ws.relpath(real)
    if real_rel is None:
        # A symbolic link (or a folder on the way) that leaves the root: never read.
        outside = content_mod.Loaded(
            kind="error",
            code=Code.OUTSIDE_WORKSPACE,
            message=f"{item.label} resolves outside the workspace {ws.root}",
        )
        return outside, None, "disk"
    if real_rel != item.rel:
        # A symbolic link inside the root: the deny rules hold for where it leads too
        # (a link to .env or .git/config must not read what naming them cannot).
        deny = ws.explain(real_rel, False, Filters(False, False, False))
        if deny is not None:
            denied = content_mod.Loaded(
                kind="error",
                code=Code.DENIED,
                message=(
                    f"{item.label} leads to {real_rel}, which is denied by {deny.source}"
                    f" ({deny.pattern}) and is never read"
                ),
            )
            return denied, None, "disk"
    if ws.overlay is not None:
        buffer = ws.overlay(real)
        if buffer is not None:
            return None, buffer.text, "overlay"
    try:
        st: os.stat_result | None = known or os.stat(real)
    except OSError as exc:
        st = None
        if exc.errno == errno.ELOOP:  # realpath stops at a loop: a→b→a
            loop = content_mod.Loaded(
                kind="error", code=Code.NOT_FOUND, message=_LOOP_MESSAGE.format(item.label)
            )
            return loop, None, "disk"
    if ws.cache is not None and st is not None:
        hit = ws.cache.get(real, st)
        if hit is not None:
            return hit, None, "cache"
    offset, want = item.offset or 1, want_full or attach
    max_bytes = ws.settings.max_file_bytes
    loaded: content_mod.Loaded | None = None
    if at is not None and known is not None and paths is not None:
        try:
            dir_fd = paths.handles.fd(at[0])
        except OSError:
            pass  # the folder changed since its lstat: the path route below decides
        else:
            loaded = content_mod.read_file_at(
                dir_fd,
                at[1],
                known,
                max_file_bytes=max_bytes,
                offset=offset,
                limit=max_lines,
                max_chars=max_chars,
                want_full=want,
                want_bytes=attach,
            )
    if loaded is None:
        loaded = content_mod.read_file(
            real,
            beneath=ws.root,
            max_file_bytes=max_bytes,
            offset=offset,
            limit=max_lines,
            max_chars=max_chars,
            want_full=want,
            want_bytes=attach,
        )
    if ws.cache is not None and loaded.kind == "text" and loaded.complete_text:
        ws.cache.put(real, loaded)
    return loaded, None, "disk"


def load(
    ws: Workspace, item: Item, params: ReadManyParams, paths: RequestPaths | None = None
) -> Loaded:
    """Read one item and cut it to its window and per-file caps (the load and budget
    stages). Never raises for a per-file problem. ``paths``: see :class:`RequestPaths`."""
    if item.result is not None:
        return Loaded(item, item.result)
    assert item.rel is not None
    full_read = params.prefer_full_read
    max_lines = (
        item.limit if item.limit is not None else (None if full_read else params.per_file_max_lines)
    )
    max_chars = None if full_read else params.per_file_max_chars
    want_full = full_read and item.limit is None and (item.offset or 1) == 1
    mime = content_mod.mime_for(item.rel)
    base = FileResult(
        path=item.label, status=Status.OK, source="disk", chars=0, ignored_by=item.ignored_by
    )
    attach = mime is not None and item.may_attach()
    if mime is not None and not attach:
        # An image or PDF reached by a pattern that does not name its type: not read.
        base.status, base.code, base.mime_type = Status.SKIPPED, Code.BINARY, mime
        base.message = f"{item.label} is binary ({mime}); name it explicitly to attach it"
        return Loaded(item, base)
    loaded, overlay_text, source = _read_source(
        ws, item, want_full, max_lines, max_chars, attach, paths
    )
    base.source = source
    encoding: str | None
    if overlay_text is not None:
        text, complete, encoding = overlay_text, True, "utf-8"
    else:
        assert loaded is not None
        if loaded.kind == "error":
            code = loaded.code or Code.FS_ERROR
            status = Status.SKIPPED if code == Code.TOO_LARGE else Status.ERROR
            base.status, base.code, base.message = status, code, loaded.message
            return Loaded(item, base)
        if attach and mime is not None and loaded.data is not None:
            base.mime_type = mime
            base.chars = 0
            base.sha256 = loaded.sha256
            data = base64.b64encode(loaded.data).decode()
            # The model is told in llmContent; the bytes travel as an attachment (seed 001
            # summarizes images in text). Costs no content characters.
            note = f"[{mime} attached: {len(loaded.data):,} bytes]\n"
            attachment = Attachment(path=item.label, mime_type=mime, data=data)
            return Loaded(item, base, text=note, attachment=attachment)
        if loaded.kind == "binary":
            base.status, base.code = Status.SKIPPED, Code.BINARY
            base.mime_type = mime
            base.message = f"{item.label} is binary"
            return Loaded(item, base)
        text = loaded.text or ""
        complete = loaded.complete_text
        encoding = loaded.encoding
        base.sha256 = loaded.sha256
    base.encoding = encoding
    if not complete and loaded is not None and loaded.window is not None:
        # A prefix read of a file over maxFileBytes: the reader's window is exact over
        # the whole file (total lines counted without decoding the rest).
        window = loaded.window
    else:
        known = loaded.total_lines if loaded is not None and complete else None
        window = content_mod.window(text, item.offset or 1, max_lines, max_chars, known)
    return _finish(item, base, window, text, params)


def _finish(
    item: Item,
    base: FileResult,
    window: content_mod.Window,
    source_text: str,
    params: ReadManyParams,
    budget_cut: bool = False,
) -> Loaded:
    """Fill the line fields and the shown text (line numbers, cut notice) of a window.

    A window that covers all the lines asked for (``limit``) is ``ok`` even when the file
    goes on; anything else that stops before the end is ``partial`` with ``nextOffset``.
    """
    offset = item.offset or 1
    windowed = item.offset is not None or item.limit is not None
    shown = window.text
    if params.line_numbers and shown:
        shown = _number_lines(shown, window.line_start)
    base.chars = len(shown)
    whole_window = (
        item.limit is not None
        and window.line_end >= offset + item.limit - 1
        and window.cut_line is None
        and not budget_cut
    )
    cut = (window.next_offset is not None and not whole_window) or window.cut_line is not None
    total = window.total_lines
    if offset > 1 and total is not None and total < offset and not window.text:
        base.status, base.code = Status.ERROR, Code.NOT_FOUND
        base.message = (
            f"offset {offset} is past the end of {item.label} ({window.total_lines} lines)"
        )
        return Loaded(item, base)
    if windowed or cut:
        base.line_start, base.line_end, base.total_lines = (
            window.line_start,
            window.line_end,
            window.total_lines,
        )
    if cut:
        base.status = Status.PARTIAL
        base.next_offset = window.next_offset
        if budget_cut:
            base.code = Code.BUDGET
        notice = cut_notice(base, window.cut_line)
        if notice:
            shown = shown + ("" if not shown or shown.endswith("\n") else "\n") + notice
    return Loaded(item, base, text=shown, window=window, full=source_text)


# ------------------------------------------------------------------------------ pack


@dataclass
class _Plan:
    """A packing decision. ``stop`` is the position in the packing order of the first
    entry that did not fit whole (``len(order)`` when all did); every entry from there on
    is omitted except the ``partial`` one and those answered at resolve time."""

    strategy: str
    order: Sequence[int]
    stop: int
    included: list[int]
    partial: tuple[int, int] | None  # (item index, chars allowed)
    full_success: int
    full_count: int


def _pack(
    order: Sequence[int],
    loaded_at: Callable[[int], Loaded],
    max_files: int,
    max_chars: int,
    strategy: str,
) -> _Plan:
    """Include whole blocks in ``order`` while both totals hold; the first block that does
    not fit may be included partially (at most one); every file after it is omitted
    (block-safe packing, seed 001). Errors and skipped entries cost nothing. Entries
    after the stop are never loaded."""
    included: list[int] = []
    partial: tuple[int, int] | None = None
    files = chars = 0
    full_success = full_count = 0
    for pos, i in enumerate(order):
        lo = loaded_at(i)
        if lo.text is None:
            full_count += lo.result.status == Status.ERROR
            continue
        cost = lo.result.chars
        if files < max_files and chars + cost <= max_chars:
            included.append(i)
            files += 1
            chars += cost
            full_success += 1
            full_count += 1
            continue
        if files < max_files and chars < max_chars:
            partial = (i, max_chars - chars)
        return _Plan(strategy, order, pos, included, partial, full_success, full_count)
    return _Plan(strategy, order, len(order), included, partial, full_success, full_count)


class _Flat(Sequence[int]):
    """The item indexes of sorted ``[start, end)`` ranges as one sequence."""

    def __init__(self, ranges: Sequence[tuple[int, int]]) -> None:
        self.ranges = list(ranges)
        self._starts: list[int] = []
        total = 0
        for a, b in self.ranges:
            self._starts.append(total)
            total += b - a
        self._len = total

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, k: int) -> int: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[int]: ...
    def __getitem__(self, k: int | slice) -> int | Sequence[int]:
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(self._len))]
        if not 0 <= k < self._len:
            raise IndexError(k)
        r = bisect.bisect_right(self._starts, k) - 1
        return self.ranges[r][0] + k - self._starts[r]

    def __iter__(self) -> Iterator[int]:
        for a, b in self.ranges:
            yield from range(a, b)


@dataclass
class _Account:
    """What the answer says about its entries, filled in output order."""

    summary: Summary
    pieces: list[Piece] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    continuations: list[str] = field(default_factory=list)
    remaining: list[tuple[int, int]] = field(default_factory=list)
    resume: dict[int, tuple[int, int | None]] = field(default_factory=dict)
    omitted_labels: list[str] = field(default_factory=list)
    omitted_total: int = 0
    listed_expansion: int = 0
    unlisted_omitted: int = 0
    unlisted_skipped: int = 0

    def count(self, result: FileResult) -> None:
        st = result.status
        if st in (Status.OK, Status.PARTIAL):
            self.summary.read += 1
            self.summary.total_chars += result.chars
            self.summary.truncated += st == Status.PARTIAL
        elif st == Status.OMITTED:
            self.summary.omitted += 1
            self.omitted_total += 1
            if len(self.omitted_labels) <= MAX_LISTED:
                self.omitted_labels.append(result.path)
        elif st == Status.SKIPPED:
            self.summary.skipped += 1
        else:
            self.summary.errors += 1

    def add(self, piece: Piece) -> None:
        """Count ``piece`` and list it, unless it is an omitted or skipped expansion match
        past the first ``MAX_LISTED`` (PROTOCOL §4: large expansions stay small)."""
        self.count(piece.result)
        if not piece.explicit and piece.result.status in (Status.OMITTED, Status.SKIPPED):
            self.listed_expansion += 1
            if self.listed_expansion > MAX_LISTED:
                if piece.result.status == Status.OMITTED:
                    self.unlisted_omitted += 1
                else:
                    self.unlisted_skipped += 1
                return
        self.pieces.append(piece)

    def omit_many(self, items: Items, start: int, end: int, code: str) -> None:
        """Account for expansion matches ``[start, end)``, all omitted with ``code``,
        making ``FileResult``s only for the few that are listed."""
        n = end - start
        if n <= 0:
            return
        self.remaining.append((start, end))
        listable = max(0, MAX_LISTED - self.listed_expansion)
        for i in range(start, min(end, start + listable)):
            self.add(_omitted_piece(items, i, code))
        rest = n - min(n, listable)
        if rest:
            self.listed_expansion += rest
            self.unlisted_omitted += rest
            self.summary.omitted += rest
            self.omitted_total += rest
            room = max(0, MAX_LISTED + 1 - len(self.omitted_labels))
            self.omitted_labels.extend(items.label(i) for i in range(end - rest, end)[:room])


_OMITTED_MESSAGES = {
    Code.BUDGET: "not read: the answer's budget (maxTotalFiles / maxTotalChars) was used up",
    Code.STOPPED: "not read: an earlier file failed and stopOnError is set",
}


def _omitted_piece(items: Items, i: int, code: str) -> Piece:
    item = items[i]
    result = FileResult(
        path=item.label,
        status=Status.OMITTED,
        source="disk",
        chars=0,
        code=code,
        message=_OMITTED_MESSAGES[code],
    )
    return Piece(result, item.key, None, item.explicit)


# ------------------------------------------------------------------------------ answer


def answer(ws: Workspace, params: ReadManyParams) -> ReadManyResult:
    """Answer ``readMany/read`` on ``ws`` (PROTOCOL §3-§5); see :func:`answer_parts`."""
    result, parts = answer_parts(ws, params)
    result.llm_content = "".join(parts)
    return result


def answer_parts(ws: Workspace, params: ReadManyParams) -> tuple[ReadManyResult, list[str]]:
    """Answer ``readMany/read`` on ``ws`` (PROTOCOL §3-§5) with ``llmContent`` left empty
    and returned beside the result as strings to concatenate (``render.render_parts``):
    the daemon encodes and sends a large answer part by part instead of building one
    string of it.

    Work grows with the files read, not with the size of an expansion: the matches of a
    glob stay a list of paths, and entries after the budget's stop are counted and
    listed (up to ``MAX_LISTED``) without being loaded.

    Raises ``InvalidParams`` for a bad cursor or exclude pattern; every per-file problem
    is a ``FileResult`` status instead.
    """
    resume: dict[int, tuple[int, int | None]] = {}
    cursor: _Cursor | None = None
    if params.cursor:
        cursor = _decode_cursor(params.cursor)
        asked = _non_default(params)
        for name in ("paths", "files", "include"):
            if name in asked and asked[name] != cursor.params.get(name):
                raise InvalidParams(
                    f"invalid params: $.{name} differs from the request $.cursor continues; "
                    "send the cursor alone (or with the same request)",
                    f"$.{name}",
                )
        raw_params = dict(cursor.params)
        params = decode_read_params(raw_params)
        resume = cursor.resume
    else:
        raw_params = _non_default(params)
    resolved = resolve(ws, params)
    items = resolved.items
    if cursor is not None:
        ranges = [(max(a, 0), min(b, len(items))) for a, b in _merge_ranges(cursor.remaining)]
        for i, (offset, limit) in resume.items():
            if 0 <= i < len(items):
                items.replace(i, offset=offset, limit=limit)
    else:
        ranges = [(0, len(items))]
    indexes = _Flat([r for r in ranges if r[0] < r[1]])

    cache: dict[int, Loaded] = {}
    with RequestPaths(ws) as paths:

        def loaded_at(i: int) -> Loaded:
            if i not in cache:
                cache[i] = load(ws, items[i], params, paths)
            return cache[i]

        # stopOnError: everything after the first error (in request order) is omitted.
        active: Sequence[int] = indexes
        stopped_at = len(indexes)
        if params.stop_on_error:
            for pos, i in enumerate(indexes):
                if loaded_at(i).result.status == Status.ERROR:
                    stopped_at = pos + 1
                    active = indexes[:stopped_at]
                    break

        totals = (params.max_total_files, params.max_total_chars)
        plan = _pack(active, loaded_at, *totals, "request-order")
        switched = False
        could_gain = plan.full_success < params.max_total_files and plan.stop < len(active)
        if params.packing == "smallest-first" or (
            params.packing == "auto" and could_gain and not params.stop_on_error
        ):
            by_size = sorted(active, key=lambda i: (_size_hint(ws, items[i], cache.get(i)), i))
            alt = _pack(by_size, loaded_at, *totals, "smallest-first")
            if params.packing == "smallest-first" or alt.full_success > plan.full_success:
                switched = params.packing == "auto"
                plan = alt

        # Entries not loaded: after the stop in packing order (budget), or after the error.
        if plan.strategy == "request-order":
            budget_from = plan.stop + (1 if plan.partial is not None else 0)
            omitted_set: set[int] | None = None
        else:
            budget_from = len(active)
            omitted_set = {
                i for i in plan.order[plan.stop :] if plan.partial is None or i != plan.partial[0]
            }

        acc = _Account(Summary(matched=len(indexes), hidden=dict(resolved.hidden)))
        for pos, i in enumerate(indexes):
            if pos >= budget_from:
                break
            if omitted_set is not None and i in omitted_set and not items.is_preset(i):
                acc.remaining.append((i, i + 1))
                acc.add(_omitted_piece(items, i, Code.BUDGET))
                continue
            item = items[i]
            lo = loaded_at(i)
            if plan.partial is not None and plan.partial[0] == i and lo.window is not None:
                lo = _budget_cut(lo, plan.partial[1], params)
                if lo.result.next_offset is not None:
                    acc.remaining.append((i, i + 1))
                    left = (
                        (item.offset or 1) + item.limit - lo.result.next_offset
                        if item.limit
                        else None
                    )
                    acc.resume[i] = (lo.result.next_offset, left)
            res = lo.result
            text = lo.text if res.status in (Status.OK, Status.PARTIAL) else None
            acc.add(Piece(res, item.key, text, item.explicit))
            if lo.attachment is not None:
                acc.attachments.append(lo.attachment)
            if res.status == Status.PARTIAL and res.next_offset is not None:
                acc.continuations.append(
                    f"{res.path}: " + continuation_request(res.path, res.next_offset)
                )
        _account_tail(acc, items, indexes, budget_from, stopped_at)
        acc.summary.estimated_tokens = math.ceil(acc.summary.total_chars / 4)

        # A cursor whenever files were omitted; a budget-cut file alone continues by offset.
        next_cursor = (
            _encode_cursor(raw_params, acc.remaining, acc.resume) if acc.omitted_total else None
        )
        packing = PackingInfo(
            strategy=plan.strategy,
            switched_for_coverage=switched,
            full_included_count=plan.full_count,
            full_included_success_count=plan.full_success,
            partial_included_path=items.label(plan.partial[0]) if plan.partial else None,
            omitted_paths=acc.omitted_labels[:MAX_LISTED],
            omitted_truncated=acc.omitted_total > MAX_LISTED,
        )
        notices = Notices(
            continuations=acc.continuations,
            cursor=next_cursor,
            hints=resolved.hints,
            unlisted_omitted=acc.unlisted_omitted,
            unlisted_skipped=acc.unlisted_skipped,
        )
        files = [p.result for p in acc.pieces]
        for result in files:
            result.path = _wire_safe(result.path)
            if result.message is not None:
                result.message = _wire_safe(result.message)
        for attachment in acc.attachments:
            attachment.path = _wire_safe(attachment.path)
        if packing.partial_included_path is not None:
            packing.partial_included_path = _wire_safe(packing.partial_included_path)
        packing.omitted_paths = [_wire_safe(p) for p in packing.omitted_paths]
        answered = ReadManyResult(
            llm_content="",
            return_display=_wire_safe(return_display(acc.summary, acc.pieces)),
            summary=acc.summary,
            files=files,
            packing=packing,
            clock=ws.clock(),
            attachments=acc.attachments,
            next_cursor=next_cursor,
        )
        return answered, [
            _wire_safe(part) for part in render_parts(params.format, acc.pieces, notices)
        ]


def _wire_safe(text: str) -> str:
    """``text`` as valid Unicode for JSON/UTF-8 output: file names with bytes that are not
    UTF-8 reach the engine as surrogate escapes (``os.fsdecode``), which no encoder
    accepts; each such byte is shown as U+FFFD (as ripgrep and editors show it). Text
    that is valid already (nearly always) is returned as is, after one encode check
    (none for ASCII text)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "replace")
    return text


def _account_tail(
    acc: _Account, items: Items, indexes: _Flat, budget_from: int, stopped_at: int
) -> None:
    """Account for the entries from position ``budget_from`` on, none of them loaded:
    omitted (``budget`` before ``stopped_at``, ``stopped`` after), except the ones
    answered at resolve time, which are reported as they are. Expansion runs are handled
    a whole run at a time."""
    if budget_from >= len(indexes):
        return
    tail_start = indexes[budget_from]
    stop_index = indexes[stopped_at] if stopped_at < len(indexes) else len(items)
    for a, b in indexes.ranges:
        a = max(a, tail_start)
        while a < b:
            seg, _ = items.locate(a)
            seg_end = items.starts[seg + 1] if seg + 1 < len(items.starts) else len(items)
            end = min(b, seg_end)
            segment = items.segments[seg]
            if isinstance(segment, Item):
                if segment.result is not None and a < stop_index:
                    acc.add(Piece(segment.result, segment.key, None, segment.explicit))
                else:
                    code = Code.BUDGET if a < stop_index else Code.STOPPED
                    acc.remaining.append((a, a + 1))
                    acc.add(_omitted_piece(items, a, code))
                a += 1
                continue
            if a < stop_index:
                acc.omit_many(items, a, min(end, stop_index), Code.BUDGET)
            if end > stop_index:
                acc.omit_many(items, max(a, stop_index), end, Code.STOPPED)
            a = end


def _size_hint(ws: Workspace, item: Item, lo: Loaded | None) -> int:
    """Chars of a loaded item, else its size in bytes (a stat), for smallest-first order."""
    if lo is not None:
        return lo.result.chars
    if item.rel is None:
        return 0
    try:
        return os.stat(ws.abspath(item.rel)).st_size
    except OSError:
        return 0


def _budget_cut(lo: Loaded, allowed: int, params: ReadManyParams) -> Loaded:
    """Re-cut the one partial file of an answer to at most ``allowed`` shown characters
    (line numbers included), status ``partial`` with code ``budget``."""
    assert lo.window is not None and lo.full is not None
    item = lo.item
    offset = item.offset or 1
    lines = lo.window.line_end - offset + 1
    raw_allowed = allowed
    while True:
        window = content_mod.window(lo.full, offset, lines, max(raw_allowed, 1))
        window.total_lines = lo.window.total_lines
        total = lo.window.total_lines
        if window.next_offset is None and (total is None or window.line_end < total):
            window.next_offset = window.line_end + 1
        base = msgspec.structs.replace(lo.result, status=Status.OK, code=None, next_offset=None)
        cut = _finish(item, base, window, lo.full, params, budget_cut=True)
        excess = cut.result.chars - allowed
        if excess <= 0 or raw_allowed <= 1:
            return cut
        raw_allowed -= excess  # line numbers took room: cut more raw text


# ------------------------------------------------------------------------------ files


def list_paths(
    ws: Workspace,
    patterns: Sequence[str],
    filters: Filters,
    recursive: bool = True,
    exclude: Sequence[str] = (),
) -> list[str]:
    """Visible files matching ``patterns`` (globs, folders or paths; none = all), sorted by
    bytes. Raises ``InvalidParams`` naming the pattern that is invalid."""
    index = ws.index
    if not patterns:
        paths = index.files(filters)
    else:
        found: set[str] = set()
        for n, raw in enumerate(patterns):
            rel = _to_rel(ws, raw)
            if rel is None:
                raise InvalidParams(
                    f"invalid params: $.patterns[{n}]: {raw} is outside the workspace",
                    f"$.patterns[{n}]",
                )
            if rel == "" or index.is_dir(rel):
                found.update(index.expand_dir(rel, filters, recursive))
            elif index.contains(rel):
                found.add(rel)
            elif _has_magic(rel):
                try:
                    found.update(index.glob(rel, filters, recursive))
                except ValueError as exc:
                    raise InvalidParams(
                        f"invalid params: $.patterns[{n}]: {exc}", f"$.patterns[{n}]"
                    ) from None
        paths = sorted(found, key=_bytes_key)
    if exclude:
        try:
            ex = GitPatterns(exclude)
        except ValueError as exc:
            raise InvalidParams(f"invalid params: $.exclude: {exc}", "$.exclude") from None
        paths = [p for p in paths if not ex.match(p)]
    return paths


def _bytes_key(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def list_files(ws: Workspace, params: FilesParams) -> FilesResult:
    """``readMany/files``: each visible file with its size (bytes) and mtime (ms); a file
    deleted since the index saw it is left out (it is not a file any more)."""
    rels = list_paths(ws, params.patterns, _filters(params), params.recursive, params.exclude)
    prefix = ws.root.rstrip("/") + "/"
    lstat = os.lstat
    infos: list[FileInfo] = []
    for rel in rels:
        try:
            st = lstat(prefix + rel)
        except (OSError, ValueError):
            continue
        infos.append(FileInfo(path=rel, size=st.st_size, mtime_ms=st.st_mtime_ns / 1e6))
    return FilesResult(files=infos, clock=ws.clock())


def read(ws: Workspace, raw_params: Any) -> ReadManyResult:
    """Decode raw params (aliases folded, validated) and answer them."""
    return answer(ws, decode_read_params(fold_read_params(raw_params)))
