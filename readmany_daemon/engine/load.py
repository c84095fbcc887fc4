"""The load stage: one item's text from the overlay, the cache or the disk, confined.

``RequestPaths`` keeps, for one request, the real path of each parent folder and
descriptors of the real folders below the root, so files are ``lstat``-ed and opened by
name (``fstatat``/``openat``, ``O_NOFOLLOW``), never through a path walked again.
``load`` reads one ``Item`` and cuts it to its window and per-file caps (``budget.finish``);
``Loads`` loads the items of one request on first use, each at most once.
"""

from __future__ import annotations

import base64
import errno
import os
import stat as stat_mod
from dataclasses import dataclass

from readmany_daemon.content import lines as content_lines
from readmany_daemon.content import reader
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.content.outline import Outline
from readmany_daemon.engine import notebook
from readmany_daemon.engine.budget import finish, kept_tokens, token_cut, tokens_of
from readmany_daemon.engine.diffview import changed_view, text_hunks
from readmany_daemon.engine.items import Item, Items, LoadedItem
from readmany_daemon.engine.options import LoadOptions
from readmany_daemon.engine.outlines import outline_of
from readmany_daemon.engine.receipts import Receipts, text_sha256
from readmany_daemon.engine.redact import redact_cached
from readmany_daemon.engine.resolve import LOOP_MESSAGE, path_error
from readmany_daemon.engine.symbols import span_item
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code, Status
from readmany_daemon.index.gitdiff import ChangeSet, FileChange
from readmany_daemon.paths import realpath_of
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.wire.messages import Attachment, FileResult, Redaction


class RequestPaths:
    """Path resolution state for the span of one request.

    ``real_dirs`` memoizes the real path of each parent folder (keyed by its relative
    path), so a glob over thousands of files in a few folders costs one ``lstat`` per
    file instead of one per path component; ``handles`` (``content.reader.FolderHandles``) holds
    descriptors of the real folders below the root, so each file is ``lstat``-ed and
    opened by its name alone (``fstatat``/``openat``), never through a path walked again.
    A folder replaced by a symbolic link during that span is seen as the request saw it
    first; an open always goes through ``O_NOFOLLOW`` checks. Call :meth:`close` (or use
    ``with``) at the end of the request."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.real_dirs: dict[str, tuple[str, str | None]] = {}
        self.handles = reader.FolderHandles(ws.root)

    def real_dir(self, head: str) -> tuple[str, str | None]:
        """``(real path, root-relative real path or None when outside)`` of folder
        ``head`` (workspace-relative)."""
        known = self.real_dirs.get(head)
        if known is None:
            real = realpath_of(self.ws.root, head)
            known = self.real_dirs[head] = (real, self.ws.relpath(real))
        return known

    def close(self) -> None:
        """Close the folder descriptors."""
        self.handles.close()

    def __enter__(self) -> RequestPaths:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Where a file was ``lstat``-ed through a folder descriptor: (root-relative real folder,
#: file name), to open it the same way.
_At = tuple[str, str]


def _real_path_stat(
    ws: Workspace, rel: str, paths: RequestPaths | None
) -> tuple[str, os.stat_result | None, _At | None]:
    """``os.path.realpath`` of workspace-relative ``rel`` (POSIX, normalized; ``paths``
    memoizes parent folders for one request) and, when the last component is not a
    symbolic link, its ``lstat`` (then equal to its ``stat``: one system call serves
    both), else None; and where that ``lstat`` was made when it went through a folder
    descriptor."""
    head, _, name = rel.rpartition("/")
    if name in ("", ".", ".."):
        return os.path.realpath(ws.abspath(rel)), None, None
    if paths is None:
        real_dir, real_rel_dir = realpath_of(ws.root, head), None  # no descriptors to keep
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
    read: reader.ReadOptions,
    paths: RequestPaths | None = None,
) -> tuple[reader.FileRead | None, str | None, str]:
    """The content of ``item`` from the overlay, the cache or the disk, in that order,
    read as ``read`` says.

    Returns ``(loaded, overlay_text, source)``; exactly one of the first two is set.
    ``paths``: see :class:`RequestPaths`. Calls ``ws.checkpoint`` first (once per item
    loaded), which raises when the request was cancelled."""
    assert item.rel is not None
    if ws.checkpoint is not None:
        ws.checkpoint()
    try:
        real, known, at = _real_path_stat(ws, item.rel, paths)
    except OSError as exc:  # the path changed while it was resolved (a racing swap)
        code, message = path_error(item.label, exc)
        return reader.FileRead(kind="error", code=code, message=message), None, "disk"
    real_rel = ws.relpath(real)
    if real_rel is None:
        # A symbolic link (or a folder on the way) that leaves the root: never read.
        outside = reader.FileRead(
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
            denied = reader.FileRead(
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
            loop = reader.FileRead(
                kind="error", code=Code.NOT_FOUND, message=LOOP_MESSAGE.format(item.label)
            )
            return loop, None, "disk"
    if ws.cache is not None and st is not None:
        hit = ws.cache.get(real, st)
        if hit is not None:
            return hit, None, "cache"
    loaded: reader.FileRead | None = None
    if at is not None and known is not None and paths is not None:
        try:
            dir_fd = paths.handles.fd(at[0])
        except OSError:
            pass  # the folder changed since its lstat: the path route below decides
        else:
            loaded = reader.read_file_at(dir_fd, at[1], known, read)
    if loaded is None:
        loaded = reader.read_file(real, read, beneath=ws.root)
    if ws.cache is not None and loaded.kind == "text" and loaded.complete_text:
        ws.cache.put(real, loaded)
    return loaded, None, "disk"


@dataclass
class _Text:
    """A file's text as the load steps pass it on: ``text`` (all of it when
    ``complete``, else a prefix of a file over ``maxFileBytes``), what the reader gave
    (``loaded``: None for an open buffer's text), and whether a step replaced part of
    it (``changed``: secrets redacted, a notebook's payloads masked)."""

    text: str
    complete: bool
    loaded: reader.FileRead | None
    changed: bool = False


def load(
    ws: Workspace,
    item: Item,
    opts: LoadOptions,
    paths: RequestPaths | None = None,
    change: tuple[str, FileChange] | None = None,
) -> LoadedItem:
    """Read one item and cut it to its window and per-file caps (the load and budget
    stages): read → text → redact → notebook → mask → window → finish. Never raises
    for a per-file problem. ``paths``: see :class:`RequestPaths`. ``change``: the base's
    commit id and the item's change since it, for a changed file of a ``changes`` read
    asked without a window (shown as ``engine.diffview`` says; a new file is read
    whole)."""
    if item.result is not None:
        return LoadedItem(item, item.result)
    assert item.rel is not None
    mime = reader.mime_for(item.rel)
    base = FileResult(
        path=item.label, status=Status.OK, source="disk", chars=0, ignored_by=item.ignored_by
    )
    attach = mime is not None and item.may_attach()
    if mime is not None and not attach:
        # An image or PDF reached by a pattern that does not name its type: not read.
        base.status, base.code, base.mime_type = Status.SKIPPED, Code.BINARY, mime
        base.message = f"{item.label} is binary ({mime}); name it explicitly to attach it"
        return LoadedItem(item, base)
    read = opts.read_options(item, attach)
    got = _as_text(ws, item, base, mime if attach else None, _read_source(ws, item, read, paths))
    if isinstance(got, LoadedItem):
        return got
    notes: tuple[str, ...] = ()
    if (item.symbol is not None or item.enclosing is not None) and item.offset is None:
        # A cursor resuming a cut span has its window already. Made before any redaction:
        # the outline kept with the cache entry's own text.
        counted = got.loaded.total_lines if got.loaded is not None else None
        spanned = span_item(
            item, base, got.text, got.complete, outline_of(ws, got.text, item.label), counted
        )
        if isinstance(spanned, LoadedItem):
            return spanned
        item, notes = spanned.item, spanned.notes
        read = opts.read_options(item, attach)
        if not got.complete:
            # Over maxFileBytes: the prefix read from line 1 need not hold the span's
            # lines; read the file again at the span's window.
            got = _as_text(
                ws, item, base, mime if attach else None, _read_source(ws, item, read, paths)
            )
            if isinstance(got, LoadedItem):
                return got
    as_read = got.text
    if got.text and opts.redact:
        _redact(ws, base, got)
    if change is not None and _shows_change(item, change[1], got):
        # The outline of the text as read (kept with the cache entry's own text).
        outline = outline_of(ws, as_read, item.label)
        hunks = text_hunks(change[1], got.loaded.encoding if got.loaded else None)
        return changed_view(item, base, got.text, as_read, outline, hunks, opts, change[0])
    if item.cells is not None or _raw_notebook(item):
        done = _notebook(item, base, got, opts)
        if done is not None:
            return done
    if _raw_notebook(item) and got.text:
        _mask(ws, base, got)
    window = _window(got, read)
    return _finish(ws, item, base, window, got.text, opts, notes)


def _shows_change(item: Item, change: FileChange, got: _Text) -> bool:
    """Whether a changed file is shown as its changes: not a new file, asked without a
    window, cells or a span, read whole (not over ``maxFileBytes``), not a notebook (its
    JSON lines are no text to show: it comes as its cells)."""
    windowed = item.offset is not None or item.limit is not None or item.column is not None
    picked = item.cells is not None or item.symbol is not None or item.enclosing is not None
    plain = not windowed and not picked and not _raw_notebook(item)
    return not change.new and plain and got.complete


def _as_text(
    ws: Workspace,
    item: Item,
    base: FileResult,
    mime: str | None,
    source: tuple[reader.FileRead | None, str | None, str],
) -> _Text | LoadedItem:
    """The text ``_read_source`` gave, with ``base``'s source, encoding, ``sha256`` and
    replaced bytes set; or the finished entry when there is no text to show: an error,
    a binary file, an image or PDF to attach (``mime``: attached when the bytes came)."""
    loaded, overlay_text, base.source = source
    if overlay_text is not None:
        base.encoding = "utf-8"
        # Of the buffer's UTF-8 bytes; none past maxFileBytes (receipts).
        base.sha256 = text_sha256(overlay_text, ws.settings.max_file_bytes)
        return _Text(overlay_text, True, None)
    assert loaded is not None
    if loaded.kind == "error":
        code = loaded.code or Code.FS_ERROR
        status = Status.SKIPPED if code == Code.TOO_LARGE else Status.ERROR
        base.status, base.code, base.message = status, code, loaded.message
        return LoadedItem(item, base)
    if mime is not None and loaded.data is not None:
        base.mime_type = mime
        base.chars = 0
        base.sha256 = loaded.sha256
        data = base64.b64encode(loaded.data).decode()
        # The model is told in llmContent; the bytes travel as an attachment (seed 001
        # summarizes images in text). Costs no content characters.
        note = f"[{mime} attached: {len(loaded.data):,} bytes]\n"
        attachment = Attachment(path=item.label, mime_type=mime, data=data)
        return LoadedItem(item, base, text=note, attachment=attachment)
    if loaded.kind == "binary":
        base.status, base.code = Status.SKIPPED, Code.BINARY
        base.mime_type = mime
        base.message = f"{item.label} is binary"
        return LoadedItem(item, base)
    if (loaded.size or 0) <= ws.settings.max_file_bytes:
        base.sha256 = loaded.sha256  # files over maxFileBytes have none (receipts)
    base.replaced_bytes = loaded.replaced_bytes or None
    base.encoding = loaded.encoding
    return _Text(loaded.text or "", loaded.complete_text, loaded)


def _redact(ws: Workspace, base: FileResult, got: _Text) -> None:
    """Replace ``got``'s secrets (``redactSecrets``) before any window is cut: windows,
    caps and budgets count what is shown; ``sha256`` stays the hash of the bytes on
    disk. The redacted lines go to ``base.redactions``."""
    shown = redact_cached(got.text, ws.cache)
    if shown.lines:
        got.text, got.changed = shown.text, True
        base.redactions = [Redaction(line, kind) for line, kind in shown.lines]


def _raw_notebook(item: Item) -> bool:
    """Whether ``item`` is a notebook asked for without ``cells``."""
    assert item.rel is not None
    return item.cells is None and notebook.is_notebook(item.rel)


def _notebook(item: Item, base: FileResult, got: _Text, opts: LoadOptions) -> LoadedItem | None:
    """A notebook shown as its cells (``cells`` asked, or the whole notebook without a
    window: ``engine.notebook``); an ``out-of-range`` error for ``cells`` on a file that
    is not one; None to show the text as lines."""
    windowed = item.offset is not None or item.limit is not None or item.column is not None
    if item.cells is None and windowed:
        return None
    nb = notebook.view(got.text, item.label, item.explicit, item.cells) if got.complete else None
    if nb is not None:
        return notebook.finish(item, base, nb, opts, got.text)
    if item.cells is not None:
        base.status, base.code, base.sha256 = Status.ERROR, Code.OUT_OF_RANGE, None
        base.message = f"cells applies to a Jupyter notebook's JSON; {item.label} is not one"
        return LoadedItem(item, base)
    return None


def _mask(ws: Workspace, base: FileResult, got: _Text) -> None:
    """A notebook's raw JSON lines: each base64 payload becomes a placeholder inside
    its string (lines and their count kept; chars and budgets count what is shown)."""
    masked = notebook.mask_cached(got.text, ws.cache)
    if masked.lines:
        got.text, got.changed = masked.text, True
        if base.redactions:
            base.redactions = _still_redacted(base.redactions, got.text, masked.lines)


def _window(got: _Text, read: reader.ReadOptions) -> content_lines.Window:
    """The window of ``got`` that ``read`` asks for."""
    loaded = got.loaded
    if not got.complete and loaded is not None and loaded.window is not None:
        # A prefix read of a file over maxFileBytes: the reader's window is exact over
        # the whole file (total lines counted without decoding the rest); cut again
        # from the redacted (or masked) prefix, which holds the same lines.
        if not got.changed:
            return loaded.window
        return content_lines.window_of(
            got.text,
            read.offset,
            read.limit,
            read.max_chars,
            loaded.total_lines,
            False,
            read.column,
        )
    known = loaded.total_lines if loaded is not None and got.complete else None
    return content_lines.window(
        got.text, read.offset, read.limit, read.max_chars, known, read.column
    )


def _finish(
    ws: Workspace,
    item: Item,
    base: FileResult,
    window: content_lines.Window,
    text: str,
    opts: LoadOptions,
    notes: tuple[str, ...] = (),
) -> LoadedItem:
    """``window`` of ``text`` finished (``budget.finish``, the outline of its rest made
    on first use; ``notes``, a span's notice lines, after its position notice) and cut
    to ``perFileMaxTokens``."""
    memo: list[Outline] = []

    def outline_for() -> Outline:
        if not memo:
            memo.append(outline_of(ws, text, item.label))
        return memo[0]

    done = finish(item, base, window, text, opts, outline_for=outline_for, notes=notes)
    if opts.per_file_max_tokens is not None and done.window is not None:
        # perFileMaxTokens: a per-file cap like perFileMaxChars (partial, no code).
        done = token_cut(done, opts.per_file_max_tokens, opts, ws.cache, budget=False)
    return done


def _still_redacted(
    redactions: list[Redaction], text: str, masked: tuple[int, ...]
) -> list[Redaction] | None:
    """``redactions`` less those on a line whose base64 payload (where they were found)
    is now a placeholder and holds no sentinel any more."""
    touched = set(masked)
    if not any(r.line in touched for r in redactions):
        return redactions
    lines = text.split("\n")
    kept = [
        r
        for r in redactions
        if r.line not in touched or (r.line <= len(lines) and "«redacted:" in lines[r.line - 1])
    ]
    return kept or None


class Loads:
    """The items of one request, each loaded (``load``) on first use and at most once:
    entries past the budget's stop are never read."""

    def __init__(
        self,
        ws: Workspace,
        items: Items,
        opts: LoadOptions,
        paths: RequestPaths,
        changes: ChangeSet | None = None,
    ) -> None:
        self._changes = changes
        self._ws = ws
        self._items = items
        self._opts = opts
        self._paths = paths
        self._loaded: dict[int, LoadedItem] = {}
        self._receipts = Receipts(ws, opts.known, redacting=opts.redact)

    def __call__(self, i: int) -> LoadedItem:
        """Item ``i`` loaded (``unchanged`` when the request's receipt for it holds)."""
        if i not in self._loaded:
            item = self._items[i]
            change = None
            if self._changes is not None and item.rel in self._changes.files:
                change = self._changes.base, self._changes.files[item.rel]
            lo = load(self._ws, item, self._opts, self._paths, change)
            if self._receipts:
                lo = self._receipts.settle(lo)
            self._loaded[i] = lo
        return self._loaded[i]

    @property
    def cache(self) -> ContentCache | None:
        """The workspace's content cache (None for a bare workspace)."""
        return self._ws.cache

    def tokens(self, lo: LoadedItem) -> int:
        """The o200k tokens of ``lo``'s shown text as the request's format writes it
        (``budget.tokens_of``, kept with the cache entry)."""
        return tokens_of(lo, self._opts, self._ws.cache)

    def kept_tokens(self, lo: LoadedItem) -> int | None:
        """:meth:`tokens` when known without counting (``budget.kept_tokens``), else None."""
        return kept_tokens(lo, self._opts, self._ws.cache)

    def outline(self, lo: LoadedItem) -> Outline:
        """The outline of ``lo``'s whole text (``lo.full``), cached by content."""
        return outline_of(self._ws, lo.full or "", lo.item.label)

    def peek(self, i: int) -> LoadedItem | None:
        """Item ``i`` if it has been loaded already, else None."""
        return self._loaded.get(i)
