"""The engine behind every surface: resolve → load → budget → pack → render (PROTOCOL §3-§5).

``answer(workspace, params)`` is the whole of ``readMany/read``; ``list_files`` is
``readMany/files``. Each stage is a plain function over plain data; per-file problems are
``FileResult`` statuses and codes, never exceptions. Only ``InvalidParams`` escapes (a bad
cursor or exclude pattern), naming the field.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import math
import os
import posixpath
import stat as stat_mod
import unicodedata
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from readmany_daemon import content as content_mod
from readmany_daemon.errors import Code, InvalidParams, Status
from readmany_daemon.ignore import Filters, GitPatterns
from readmany_daemon.messages import (
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
from readmany_daemon.render import (
    Notices,
    Piece,
    continuation_request,
    cut_notice,
    render,
    return_display,
)
from readmany_daemon.workspace import Workspace

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
    "deny": "nothing (deny rules cannot be lifted)",
}


# ------------------------------------------------------------------------------ data


@dataclass
class Item:
    """One resolved entry: a file to read, or an entry that already has its answer.

    ``rel`` is workspace-relative (POSIX); ``offset``/``limit`` the line window (1-based);
    ``explicit`` marks a named path (as opposed to a glob or folder match); ``attach`` that
    an image or PDF may be attached. ``result`` is preset for entries decided at resolve
    time (errors, no-match, ignored).
    """

    label: str
    key: str
    rel: str | None = None
    offset: int | None = None
    limit: int | None = None
    explicit: bool = True
    attach: bool = False
    ignored_by: str | None = None
    result: FileResult | None = None


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
    items: list[Item]
    hidden: Counter[str] = field(default_factory=Counter)
    hints: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ cursor


class _Cursor(msgspec.Struct, array_like=True):
    version: int
    params: dict[str, Any]
    remaining: list[tuple[int, int]]  # [start, end) ranges of item indexes
    resume: dict[int, tuple[int, int | None]]  # item index → (offset, limit) of a cut file


def _encode_cursor(
    params: dict[str, Any], remaining: Sequence[int], resume: dict[int, tuple[int, int | None]]
) -> str:
    ranges: list[tuple[int, int]] = []
    for i in sorted(remaining):
        if ranges and ranges[-1][1] == i:
            ranges[-1] = (ranges[-1][0], i + 1)
        else:
            ranges.append((i, i + 1))
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
    real = os.path.realpath(ws.abspath(rel))
    return ws.relpath(real) is not None


def _lstat(ws: Workspace, rel: str) -> tuple[str, os.stat_result] | None:
    """lstat ``rel``, trying its NFC and NFD spellings too; returns the spelling that exists."""
    for candidate in dict.fromkeys(
        (rel, unicodedata.normalize("NFC", rel), unicodedata.normalize("NFD", rel))
    ):
        try:
            return candidate, os.lstat(ws.abspath(candidate))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None
    return None


class _Resolver:
    """Turns requested entries into ordered, de-duplicated ``Item``s (PROTOCOL §3 order)."""

    def __init__(self, ws: Workspace, params: ReadManyParams) -> None:
        self.ws = ws
        self.params = params
        self.filters = _filters(params)
        self.out = Resolved(items=[])
        self.seen: set[tuple[str, int | None, int | None]] = set()
        try:
            self.exclude = GitPatterns(params.exclude) if params.exclude else None
        except ValueError as exc:
            raise InvalidParams(f"invalid params: $.exclude: {exc}", "$.exclude") from None

    def label(self, rel: str) -> str:
        return self.ws.abspath(rel) if self.params.absolute_paths else rel

    def add(self, item: Item) -> None:
        ident = (item.rel if item.rel is not None else "\0" + item.label, item.offset, item.limit)
        if ident in self.seen:
            return
        self.seen.add(ident)
        self.out.items.append(item)

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
            path=label, status=status, code=code, message=message, ignored_by=ignored_by
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
        found = (
            _lstat(self.ws, rel) if not raw.endswith("/") or rel else (rel, os.lstat(self.ws.root))
        )
        if found is not None:
            rel, st = found
            if not _inside(self.ws, rel):
                self.preset(
                    raw,
                    key,
                    Status.ERROR,
                    Code.OUTSIDE_WORKSPACE,
                    f"{raw} resolves outside the workspace {self.ws.root}",
                )
                return
            if stat_mod.S_ISLNK(st.st_mode):
                try:
                    st = os.stat(self.ws.abspath(rel))
                except OSError:
                    self.preset(
                        raw, key, Status.ERROR, Code.NOT_FOUND, f"{raw} is a broken symbolic link"
                    )
                    return
            if stat_mod.S_ISDIR(st.st_mode):
                target = self.ws.relpath(os.path.realpath(self.ws.abspath(rel)))
                self.expand(raw, key, "dir", target or "")
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
                attach=True,
                ignored_by=soft.source if soft else None,
            )
        )

    def expand(self, raw: str, key: str, kind: str, rel: str) -> None:
        hidden: Counter[str] = Counter()
        index = self.ws.index
        recursive = self.params.recursive
        try:
            if kind == "dir":
                matches = index.expand_dir(rel, self.filters, recursive, hidden=hidden)
            else:
                matches = index.glob(rel, self.filters, recursive, hidden=hidden)
        except ValueError as exc:
            self.preset(
                raw, key, Status.ERROR, Code.INVALID_PATTERN, f"invalid pattern {raw}: {exc}"
            )
            return
        if self.exclude is not None:
            kept = [m for m in matches if not self.exclude.match(m)]
            if len(kept) != len(matches):
                hidden["exclude"] += len(matches) - len(kept)
            matches = kept
        self.out.hidden.update(hidden)
        if not matches:
            message = f"{raw} matched no visible file"
            if hidden:
                parts = [
                    f"{n} hidden by {kind_} rules (show with {_HIDDEN_HINTS.get(kind_, kind_)})"
                    for kind_, n in sorted(hidden.items())
                ]
                message += ": " + "; ".join(parts)
            self.preset(raw, raw, Status.SKIPPED, Code.NO_MATCH, message)
            self.out.hints.append(f"[{message}.]")
            return
        tail = raw.rsplit("/", 1)[-1].lower()
        for m in matches:
            label = self.label(m)
            mime = content_mod.mime_for(m)
            attach = mime is not None and posixpath.splitext(m)[1].lower() in tail
            self.add(Item(label=label, key=label, rel=m, explicit=False, attach=attach))


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


def _read_source(
    ws: Workspace,
    item: Item,
    want_full: bool,
    max_lines: int | None,
    max_chars: int | None,
    attach: bool,
) -> tuple[content_mod.Loaded | None, str | None, str]:
    """The content of ``item`` from the overlay, the cache or the disk, in that order.

    Returns ``(loaded, overlay_text, source)``; exactly one of the first two is set."""
    assert item.rel is not None
    real = os.path.realpath(ws.abspath(item.rel))
    if ws.relpath(real) is None:
        # A symbolic link (or a folder on the way) that leaves the root: never read.
        outside = content_mod.Loaded(
            kind="error",
            code=Code.OUTSIDE_WORKSPACE,
            message=f"{item.label} resolves outside the workspace {ws.root}",
        )
        return outside, None, "disk"
    if ws.overlay is not None:
        buffer = ws.overlay(real)
        if buffer is not None:
            return None, buffer.text, "overlay"
    if ws.cache is not None:
        try:
            st = os.stat(real)
        except OSError:
            st = None
        if st is not None:
            hit = ws.cache.get(real, st)
            if hit is not None:
                return hit, None, "cache"
    loaded = content_mod.read_file(
        real,
        max_file_bytes=ws.settings.max_file_bytes,
        offset=item.offset or 1,
        limit=max_lines,
        max_chars=max_chars,
        want_full=want_full or attach,
        want_bytes=attach,
    )
    if ws.cache is not None and loaded.kind == "text" and loaded.complete_text:
        ws.cache.put(real, loaded)
    return loaded, None, "disk"


def load(ws: Workspace, item: Item, params: ReadManyParams) -> Loaded:
    """Read one item and cut it to its window and per-file caps (the load and budget
    stages). Never raises for a per-file problem."""
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
    base = FileResult(path=item.label, status=Status.OK, ignored_by=item.ignored_by)
    if mime is not None and not item.attach:
        # An image or PDF reached by a pattern that does not name its type: not read.
        base.status, base.code, base.mime_type = Status.SKIPPED, Code.BINARY, mime
        base.message = f"{item.label} is binary ({mime}); name it explicitly to attach it"
        return Loaded(item, base)
    attach = mime is not None and item.attach
    loaded, overlay_text, source = _read_source(ws, item, want_full, max_lines, max_chars, attach)
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
            return Loaded(
                item, base, attachment=Attachment(path=item.label, mime_type=mime, data=data)
            )
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
        window = content_mod.window(text, item.offset or 1, max_lines, max_chars)
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
    if offset > 1 and window.total_lines < offset and not window.text:
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
    strategy: str
    included: list[int]
    partial: tuple[int, int] | None  # (item index, chars allowed)
    omitted: list[int]
    full_success: int
    full_count: int


def _pack(
    order: Iterable[int],
    loaded_at: Callable[[int], Loaded],
    preset: Callable[[int], bool],
    max_files: int,
    max_chars: int,
    strategy: str,
) -> _Plan:
    """Include whole blocks in ``order`` while both totals hold; the first block that does
    not fit may be included partially (at most one); every file after it is omitted
    (block-safe packing, seed 001). Errors and skipped entries cost nothing, and entries
    answered at resolve time (``preset``) are reported even after the stop."""
    included: list[int] = []
    omitted: list[int] = []
    partial: tuple[int, int] | None = None
    files = chars = 0
    full_success = full_count = 0
    stopped = False
    for i in order:
        if stopped:
            if not preset(i):
                omitted.append(i)
            continue
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
        stopped = True
        if files < max_files and chars < max_chars and partial is None:
            partial = (i, max_chars - chars)
            files += 1
            chars = max_chars
        else:
            omitted.append(i)
    return _Plan(strategy, included, partial, omitted, full_success, full_count)


# ------------------------------------------------------------------------------ answer


def answer(ws: Workspace, params: ReadManyParams) -> ReadManyResult:
    """Answer ``readMany/read`` on ``ws`` (PROTOCOL §3-§5).

    Raises ``InvalidParams`` for a bad cursor or exclude pattern; every per-file problem
    is a ``FileResult`` status instead.
    """
    selection: dict[int, tuple[int, int | None]] | None = None
    chosen: set[int] | None = None
    if params.cursor:
        cursor = _decode_cursor(params.cursor)
        base_params = dict(cursor.params)
        params = decode_read_params(base_params)
        chosen = {i for start, end in cursor.remaining for i in range(start, end)}
        selection = cursor.resume
        raw_params = base_params
    else:
        raw_params = _non_default(params)
    resolved = resolve(ws, params)
    all_items = resolved.items
    indexes = list(range(len(all_items)))
    if chosen is not None:
        indexes = [i for i in indexes if i in chosen]
        for i, (offset, limit) in (selection or {}).items():
            if 0 <= i < len(all_items):
                all_items[i] = dataclasses.replace(all_items[i], offset=offset, limit=limit)

    cache: dict[int, Loaded] = {}

    def loaded_at(i: int) -> Loaded:
        if i not in cache:
            cache[i] = load(ws, all_items[i], params)
        return cache[i]

    # stopOnError: everything after the first error (in request order) is omitted.
    stopped_after: int | None = None
    if params.stop_on_error:
        for i in indexes:
            if loaded_at(i).result.status == Status.ERROR:
                stopped_after = i
                break
    active = [i for i in indexes if stopped_after is None or i <= stopped_after]

    def preset(i: int) -> bool:
        return all_items[i].result is not None

    totals = (params.max_total_files, params.max_total_chars)
    plan = _pack(active, loaded_at, preset, *totals, "request-order")
    switched = False
    if params.packing == "smallest-first" or (
        params.packing == "auto" and (plan.omitted or plan.partial) and not params.stop_on_error
    ):
        by_size = sorted(active, key=lambda i: (_size_hint(ws, all_items[i], cache.get(i)), i))
        alt = _pack(by_size, loaded_at, preset, *totals, "smallest-first")
        if params.packing == "smallest-first" or alt.full_success > plan.full_success:
            switched = params.packing == "auto"
            plan = alt

    omitted = set(plan.omitted)
    pieces: list[Piece] = []
    attachments: list[Attachment] = []
    summary = Summary(matched=len(indexes), hidden=dict(resolved.hidden))
    continuations: list[str] = []
    remaining: list[int] = []
    resume: dict[int, tuple[int, int | None]] = {}
    omitted_labels: list[str] = []
    unlisted_omitted = unlisted_skipped = 0
    listed_expansion = 0
    for i in indexes:
        item = all_items[i]
        if stopped_after is not None and i > stopped_after:
            res = FileResult(
                path=item.label,
                status=Status.OMITTED,
                code=Code.STOPPED,
                message="not read: an earlier file failed and stopOnError is set",
            )
            piece = Piece(res, item.key, None, item.explicit)
            remaining.append(i)
        elif i in omitted:
            res = FileResult(
                path=item.label,
                status=Status.OMITTED,
                code=Code.BUDGET,
                message="not read: the answer's budget (maxTotalFiles / maxTotalChars) was used up",
            )
            piece = Piece(res, item.key, None, item.explicit)
            remaining.append(i)
        else:
            lo = loaded_at(i)
            if plan.partial is not None and plan.partial[0] == i and lo.window is not None:
                lo = _budget_cut(lo, plan.partial[1], params)
                if lo.result.next_offset is not None:
                    remaining.append(i)
                    end = (
                        None
                        if item.limit is None
                        else (item.offset or 1) + item.limit - lo.result.next_offset
                    )
                    resume[i] = (lo.result.next_offset, end)
            res = lo.result
            piece = Piece(
                res,
                item.key,
                lo.text if res.status in (Status.OK, Status.PARTIAL) else None,
                item.explicit,
            )
            if lo.attachment is not None:
                attachments.append(lo.attachment)
            if res.status == Status.PARTIAL and res.next_offset is not None:
                continuations.append(
                    f"{res.path}: " + continuation_request(res.path, res.next_offset)
                )
        st = piece.result.status
        if st in (Status.OK, Status.PARTIAL):
            summary.read += 1
            summary.total_chars += piece.result.chars
            summary.truncated += st == Status.PARTIAL
        elif st == Status.OMITTED:
            summary.omitted += 1
            omitted_labels.append(piece.result.path)
        elif st == Status.SKIPPED:
            summary.skipped += 1
        else:
            summary.errors += 1
        if not item.explicit and st in (Status.OMITTED, Status.SKIPPED):
            listed_expansion += 1
            if listed_expansion > MAX_LISTED:
                if st == Status.OMITTED:
                    unlisted_omitted += 1
                else:
                    unlisted_skipped += 1
                continue
        pieces.append(piece)
    summary.estimated_tokens = math.ceil(summary.total_chars / 4)

    # A cursor whenever files were omitted; a budget-cut file alone continues by offset.
    next_cursor = _encode_cursor(raw_params, remaining, resume) if omitted_labels else None
    packing = PackingInfo(
        strategy=plan.strategy,
        switched_for_coverage=switched,
        full_included_count=plan.full_count,
        full_included_success_count=plan.full_success,
        partial_included_path=all_items[plan.partial[0]].label if plan.partial else None,
        omitted_paths=omitted_labels[:MAX_LISTED],
        omitted_truncated=len(omitted_labels) > MAX_LISTED,
    )
    notices = Notices(
        continuations=continuations,
        cursor=next_cursor,
        hints=resolved.hints,
        unlisted_omitted=unlisted_omitted,
        unlisted_skipped=unlisted_skipped,
    )
    return ReadManyResult(
        llm_content=render(params.format, pieces, notices),
        return_display=return_display(summary, pieces),
        summary=summary,
        files=[p.result for p in pieces],
        packing=packing,
        clock=ws.clock(),
        attachments=attachments,
        next_cursor=next_cursor,
    )


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
        if window.next_offset is None and window.line_end < lo.window.total_lines:
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
    """``readMany/files``: each visible file with its size (bytes) and mtime (ms)."""
    infos: list[FileInfo] = []
    for rel in list_paths(ws, params.patterns, _filters(params), params.recursive, params.exclude):
        try:
            st = os.lstat(ws.abspath(rel))
        except OSError:
            continue  # deleted since the index saw it: not a file any more
        infos.append(FileInfo(path=rel, size=st.st_size, mtime_ms=st.st_mtime_ns / 1e6))
    return FilesResult(files=infos, clock=ws.clock())


def read(ws: Workspace, raw_params: Any) -> ReadManyResult:
    """Decode raw params (aliases folded, validated) and answer them."""
    return answer(ws, decode_read_params(fold_read_params(raw_params)))
