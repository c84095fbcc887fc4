"""The resolve stage: requested paths, globs and folders → ordered ``Item``s (PROTOCOL §3).

NFC/NFD spellings, the codes of path errors, and ``_Resolver``, which answers errors,
no-match and ignored entries at resolve time and keeps expansions as plain path lists.
The entries come as ``engine.options.ResolveOptions`` made them: already root-relative
(``paths.to_rel``) and classified as patterns or not (``rules.glob.has_magic``), with
the request's filters and exclude matcher. Real paths confined to the root
(``realpath_of``, ``resolves_inside``) are ``readmany_daemon.paths``.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
import unicodedata
from collections import Counter

from readmany_daemon.engine.items import Expansion, Item, Items, Resolved
from readmany_daemon.engine.options import Entry, ResolveOptions
from readmany_daemon.engine.suggest import closest, did_you_mean
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code, Status
from readmany_daemon.index.model import FOLDER
from readmany_daemon.paths import realpath_of, resolves_inside
from readmany_daemon.rules.glob import has_magic
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.wire.messages import FileResult

#: Human words for the rule kinds of ``summary.hidden`` and the flag that lifts each.
_HIDDEN_HINTS = {
    "gitignore": "fileFilteringOptions.respectGitIgnore=false (CLI --no-gitignore)",
    "ignore-file": "fileFilteringOptions.respectIgnoreFiles=false (CLI --no-ignore-files)",
    "default-exclude": "useDefaultExcludes=false (CLI --no-default-excludes)",
    "exclude": "a narrower exclude list",
    "deny": "",
}


def _lstat(ws: Workspace, rel: str) -> tuple[str, os.stat_result] | None:
    """lstat ``rel``, trying its NFC and NFD spellings too; returns the spelling that
    exists, None when none does. Other failures (a folder on the way that cannot be
    searched, a symbolic link loop, a name too long) raise their ``OSError``: the entry
    gets the matching code, not ``not-found`` (see ``path_error``)."""
    for candidate in dict.fromkeys(
        (rel, unicodedata.normalize("NFC", rel), unicodedata.normalize("NFD", rel))
    ):
        try:
            return candidate, os.lstat(ws.abspath(candidate))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return None


def path_error(raw: str, exc: OSError) -> tuple[str, str]:
    """``(code, message)`` for a requested path whose ``lstat``/``stat`` failed with
    something other than "no such file" (PROTOCOL §4 codes)."""
    if isinstance(exc, PermissionError):
        return (
            Code.PERMISSION_DENIED,
            f"{raw}: permission denied (a folder on its path cannot be searched)",
        )
    if exc.errno == errno.ELOOP:
        return Code.NOT_FOUND, LOOP_MESSAGE.format(raw)
    reason = exc.strerror or str(exc)
    return Code.FS_ERROR, f"{raw}: file system error: {reason}"


#: A symbolic link that resolves to no file because it loops (a→b→a): like a broken
#: link, ``not-found``, named or reached by an expansion.
LOOP_MESSAGE = "{} is a symbolic link loop (too many levels of symbolic links)"


def _glob_scope(pattern: str, recursive: bool) -> tuple[str, bool]:
    """The folder a glob pattern can match below (its leading components without glob
    characters) and whether it reaches below that folder's own entries."""
    parts = pattern.strip("/").split("/")
    k = 0
    while k < len(parts) - 1 and not has_magic(parts[k]):
        k += 1
    rest = parts[k:]
    deep = len(rest) > 1 or (recursive and any("**" in p for p in rest))
    return "/".join(parts[:k]), deep


class _Resolver:
    """Turns requested entries into ordered, de-duplicated ``Item``s (PROTOCOL §3 order)."""

    def __init__(self, ws: Workspace, opts: ResolveOptions) -> None:
        self.ws = ws
        self.opts = opts
        self.filters = opts.filters
        self.exclude = opts.exclude
        self.out = Resolved(items=Items(ws, opts.absolute_paths))
        self.seen: set[
            tuple[str, int | None, int | None, int | None, str | None, str | None, int | None]
        ] = set()
        self.unseen: list[Expansion] = []  # expansions not yet in ``seen``
        self.entry_no = 0  # the request entry being resolved (its index in the request)
        self.visible: list[str] | None = None  # visible files, listed on a first not-found
        #: ``(pattern, its line)`` of each pattern that matched nothing (``no_match_lines``)
        self.no_match: list[tuple[str, str]] = []

    def label(self, rel: str) -> str:
        return self.ws.abspath(rel) if self.opts.absolute_paths else rel

    def _flush(self) -> None:
        for expansion in self.unseen:
            self.seen.update((m, None, None, None, None, None, None) for m in expansion.matches)
        self.unseen.clear()

    def add(self, item: Item) -> None:
        """Append ``item`` unless an identical (path, offset, limit, column, cells,
        symbol, enclosing) came before."""
        self._flush()
        path = item.rel if item.rel is not None else "\0" + item.label
        ident = (
            path,
            item.offset,
            item.limit,
            item.column,
            item.cells,
            item.symbol,
            item.enclosing,
        )
        if ident in self.seen:
            return
        self.seen.add(ident)
        self.out.items.append(item, self.entry_no)

    def add_matches(self, matches: list[str], tail: str) -> None:
        """Append an expansion's matches, dropping those answered earlier; the
        de-duplication set is only built when a later entry needs it."""
        self._flush()
        if self.seen:
            matches = [
                m for m in matches if (m, None, None, None, None, None, None) not in self.seen
            ]
        expansion = Expansion(matches, tail)
        self.unseen.append(expansion)
        self.out.items.append(expansion, self.entry_no)

    def preset_outside(self, raw: str, key: str, rel: str | None = None) -> None:
        """Add ``raw`` as an ``outside-workspace`` error (it resolves out of the root);
        ``rel``: its path in the root (a link out of it), so that a glob matching the
        same link later does not list it again (counted in ``summary.matched`` as the
        glob counts it: ``preset``)."""
        message = f"{raw} resolves outside the workspace {self.ws.root}"
        self.preset(raw, key, Status.ERROR, Code.OUTSIDE_WORKSPACE, message, rel=rel, label=raw)

    def preset(
        self,
        raw: str,
        key: str,
        status: str,
        code: str,
        message: str,
        rel: str | None = None,
        ignored_by: str | None = None,
        names_file: bool = False,
        label: str | None = None,
    ) -> None:
        """Add an entry whose answer is already known (an error, no-match, ignored);
        ``names_file``: the entry is an existing file (denied, ignored), counted in
        ``summary.matched``, and so is any ``rel`` the index lists as a file (a symbolic
        link whatever it leads to: out of the root, to a folder, nowhere), as a glob
        that lists it counts it, whichever entry names it first; ``label``: its path as
        shown (default: ``rel``'s, else ``raw``)."""
        if not names_file and rel is not None and self.ws.index.is_dir(rel) is False:
            names_file = True
        if label is None:
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
        self.add(Item(label=label, key=key, rel=rel, result=result, names_file=names_file))

    def entry(self, e: Entry) -> None:
        """Add requested entry ``e``: a file, a folder's or a glob's matches, or its
        answer when it has one at resolve time (an error, no match, hidden)."""
        raw, offset, limit, column, cells = e.raw, e.offset, e.limit, e.column, e.cells
        windowed = offset is not None or limit is not None or column is not None
        key = _window_key(raw, offset, limit, column) if windowed else raw
        if cells is not None:
            key = f"{key}#cells={cells}"
        if e.symbol is not None:
            key = f"{key}#{e.symbol}"
        elif e.enclosing is not None:
            key = f"{key}#enclosing={e.enclosing}"  # {key}:{start}-{end} once loaded
        rel = e.rel
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
            if e.magic:  # no such literal path: the pattern's own answer
                self.expand(raw, key, "glob", rel)
                return
            code, message = path_error(raw, exc)
            self.preset(raw, key, Status.ERROR, code, message)
            return
        if found is not None:
            rel, st = found
            try:
                inside = resolves_inside(self.ws.root, rel)
            except OSError as exc:  # the path changed while it was resolved
                code, message = path_error(raw, exc)
                self.preset(raw, key, Status.ERROR, code, message)
                return
            if not inside:
                self.preset_outside(raw, key, rel)
                return
            if stat_mod.S_ISLNK(st.st_mode):
                try:
                    st = os.stat(self.ws.abspath(rel))
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        code, message = Code.NOT_FOUND, LOOP_MESSAGE.format(raw)
                    elif isinstance(exc, FileNotFoundError | NotADirectoryError):
                        code, message = Code.NOT_FOUND, f"{raw} is a broken symbolic link"
                    else:
                        code, message = path_error(raw, exc)
                    self.preset(raw, key, Status.ERROR, code, message, rel=rel)
                    return
            if stat_mod.S_ISDIR(st.st_mode):
                try:
                    target = self.ws.relpath(realpath_of(self.ws.root, rel))
                except OSError as exc:
                    code, message = path_error(raw, exc)
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
            self.explicit(raw, key, rel, offset, limit, column, cells, e.symbol, e.enclosing)
            return
        if e.magic:
            self.expand(raw, key, "glob", rel)
            return
        message = f"File not found: {raw}" + did_you_mean(self.suggest(rel))
        self.preset(raw, key, Status.ERROR, Code.NOT_FOUND, message)

    def suggest(self, rel: str) -> list[str]:
        """Labels of the visible files closest to missing ``rel`` (``suggest.closest``):
        those the request's filters show, never a denied or hidden one."""
        if self.visible is None:
            self.visible = self.ws.index.files(self.filters)
        return [self.label(p) for p in closest(rel, self.visible)]

    def explicit(
        self,
        raw: str,
        key: str,
        rel: str,
        offset: int | None,
        limit: int | None,
        column: int | None = None,
        cells: str | None = None,
        symbol: str | None = None,
        enclosing: int | None = None,
    ) -> None:
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
                names_file=True,
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
                    names_file=True,
                )
                return
        soft = ws.explain(rel, False, Filters(f.respect_gitignore, False, f.use_default_excludes))
        if soft is not None and soft.kind == "gitignore" and ws.rules.is_tracked(rel):
            soft = None
        self.add(
            Item(
                label=self.label(rel),
                key=key,
                rel=rel,
                offset=offset,
                limit=limit,
                column=column,
                cells=cells,
                symbol=symbol,
                enclosing=enclosing,
                explicit=True,
                ignored_by=soft.source if soft else None,
            )
        )

    def expand(self, raw: str, key: str, kind: str, rel: str) -> None:
        hidden: Counter[str] = Counter()
        recursive = self.opts.recursive
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
            kept = self.exclude.keep(matches)
            if len(kept) != len(matches):
                hidden["exclude"] += len(matches) - len(kept)
            matches = kept
        files = Counter({k: n for k, n in hidden.items() if not k.endswith(FOLDER)})
        folders = Counter(
            {k.removesuffix(FOLDER): n for k, n in hidden.items() if k.endswith(FOLDER)}
        )
        self.out.hidden.update(files)
        self.out.hidden_folders.update(folders)
        if not matches:
            message = f"{raw} matched no visible file" + _hidden_words(files, folders)
            self.preset(raw, raw, Status.SKIPPED, Code.NO_MATCH, message)
            self.no_match.append((raw, f"[{message}.]"))
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


def _hidden_words(files: Counter[str], folders: Counter[str]) -> str:
    """What an expansion that came back empty says of what rules hid: hidden files
    that match, per kind, and ignored folders in the pattern's scope, not searched (they
    may or may not hold matches), e.g. ``; 1 file(s) hidden by gitignore rules; 6
    ignored folder(s) not searched (show them with …)``. Deny rules can't be lifted and
    nearly always mean .git/ alone: not counted here."""
    liftable = [k for k in _HIDDEN_HINTS if _HIDDEN_HINTS[k] and (files[k] or folders[k])]
    if not liftable:
        return ""
    parts = [f"{files[k]} file(s) hidden by {k} rules" for k in liftable if files[k]]
    n_folders = sum(folders[k] for k in liftable)
    if n_folders:
        parts.append(f"{n_folders} ignored folder(s) not searched")
    show = "; ".join(_HIDDEN_HINTS[k] for k in liftable)
    return "; " + "; ".join(parts) + f" (show them with {show})"


#: Unlisted folders named per expansion in ``llmContent`` warnings; the rest are counted.
_UNLISTED_NAMED = 5


def _window_key(key: str, offset: int | None, limit: int | None, column: int | None) -> str:
    start = offset or 1
    end = str(start + limit - 1) if limit else ""
    at = f":{column}" if column is not None else ""
    return f"{key}:{start}{at}-{end}"


def resolve(ws: Workspace, opts: ResolveOptions) -> Resolved:
    """Ordered items for ``opts.entries`` (the request's ``paths``, then ``files``, then
    ``include``, each in request order); a glob or folder contributes its matches sorted
    by path (byte order); a repeated identical (path, offset, limit, column) keeps its
    first position (PROTOCOL §3)."""
    r = _Resolver(ws, opts)
    for e in opts.entries:
        r.entry(e)
        r.entry_no += 1
    r.out.hints.extend(no_match_lines(r.no_match))
    return r.out


#: Patterns that matched nothing whose own line ``llmContent`` gives (each says which
#: rules hid what and how to lift them); the others are named in one line after them.
NO_MATCH_LINES = 3
#: Characters of that one line's names (then ``and N more``), and of each own line.
NO_MATCH_LINE_CHARS = 400


def no_match_lines(found: list[tuple[str, str]]) -> list[str]:
    """The ``llmContent`` lines of the patterns that matched nothing (``(pattern, its
    line)`` in request order): the first :data:`NO_MATCH_LINES` lines, each cut to
    :data:`NO_MATCH_LINE_CHARS`, then one line naming the others within as many
    characters. So thousands of them take a few hundred characters, inside every
    answer budget (each keeps its ``skipped`` entry, code ``no-match``, in ``files``)."""
    lines = [_clipped(line) for _, line in found[:NO_MATCH_LINES]]
    rest = [raw for raw, _ in found[NO_MATCH_LINES:]]
    if rest:
        names: list[str] = []
        room = NO_MATCH_LINE_CHARS
        for raw in rest:
            room -= len(raw) + 2
            if room < 0 and names:
                break
            names.append(_clipped(raw, NO_MATCH_LINE_CHARS // 2))
        more = f", and {len(rest) - len(names)} more" if len(names) < len(rest) else ""
        lines.append(
            f"[{len(rest)} more pattern(s) matched no visible file: "
            f"{', '.join(names)}{more} (each a skipped entry, code no-match, in files).]"
        )
    return lines


def _clipped(text: str, limit: int = NO_MATCH_LINE_CHARS) -> str:
    """``text`` cut in its middle to at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return text[:half] + "…" + text[len(text) - (limit - 1 - half) :]
