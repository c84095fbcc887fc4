"""The options each stage takes, derived once from the request at the engine's edge.

``answer_parts`` turns the wire ``ReadManyParams`` into :class:`Options`
(:func:`options_for`) before any stage runs: what to resolve (:class:`ResolveOptions`),
how to read and show each file (:class:`LoadOptions`), the budget
(:class:`BudgetOptions`) and the page (:class:`PageOptions`). The lower layers'
helpers a request needs (the cursor's stamp, the exclude matcher, which entries are
patterns, the entries' and receipts' root-relative paths) are asked here, once; the
stages read plain fields and never the wire params again.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

from readmany_daemon.content.reader import ReadOptions
from readmany_daemon.engine.items import Item
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams
from readmany_daemon.index.gitdiff import NotAWorkTree, UnknownBase, base_commit
from readmany_daemon.paths import to_rel
from readmany_daemon.rules.glob import has_magic
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.rules.patterns import GitPatterns
from readmany_daemon.wire.cursor import Continuation, CursorStamp, ReadRequest, cursor_stamp
from readmany_daemon.wire.messages import ChangesSpec, FilesParams, FileSpec, ReadManyParams

_S = TypeVar("_S", bound=msgspec.Struct)

#: ``packing`` as a stage applies it (PROTOCOL §3; later pages go in request order).
Packing = Literal["auto", "request-order", "smallest-first", "outlines"]
#: ``order`` as the stages apply it (PROTOCOL §3): ``"rank"`` only with ``focus``.
Order = Literal["request-order", "rank", "stable"]


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """One requested entry (of ``paths``, ``files`` or ``include``, in that order), as
    sent: ``raw`` the path, folder or glob; ``offset``/``limit`` (lines), ``column``
    (1-based character) and ``cells`` (a notebook's range, as a string) its window;
    ``symbol`` (a symbol's path) or ``enclosing`` (a 1-based line) the span it asks for.
    ``rel`` is ``raw`` root-relative (``paths.to_rel``: None when it is outside the
    root); ``magic`` whether ``raw`` holds glob characters (``rules.glob.has_magic``)."""

    raw: str
    rel: str | None
    magic: bool
    offset: int | None = None
    limit: int | None = None
    column: int | None = None
    cells: str | None = None
    symbol: str | None = None
    enclosing: int | None = None


class ResolveOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What to resolve (the resolve stage, PROTOCOL §3): the ``entries`` in request
    order, the rule kinds that hide files (``filters``), whether folders and ``**``
    reach below their own entries (``recursive``), whether labels are absolute paths
    (``absolute_paths``) and the request's ``exclude`` matcher (None without one)."""

    entries: tuple[Entry, ...]
    filters: Filters
    recursive: bool
    absolute_paths: bool
    exclude: GitPatterns | None


class LoadOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How to read and show each file (the load and budget stages, PROTOCOL §3-§4).

    ``max_file_bytes`` (bytes, the ``maxFileBytes`` setting); ``prefer_full_read``;
    ``per_file_max_lines`` (lines), ``per_file_max_chars`` (characters) and
    ``per_file_max_tokens`` (o200k tokens, None: no cap) the per-file caps;
    ``line_numbers`` and ``format`` how the shown text is written; ``redact`` whether
    secrets are redacted (the request's ``redactSecrets``, else the setting: PROTOCOL
    §4 "Secrets"); ``known`` the request's receipts by root-relative path (sha256 in
    lower case; the last one of a path counts, those outside the root are left out)."""

    max_file_bytes: int
    prefer_full_read: bool
    per_file_max_lines: int
    per_file_max_chars: int
    per_file_max_tokens: int | None
    line_numbers: bool
    format: str
    redact: bool
    known: dict[str, str]

    def read_options(self, item: Item, attach: bool) -> ReadOptions:
        """The ``ReadOptions`` of ``item``: its window, capped by ``perFileMaxLines`` and
        ``perFileMaxChars`` unless ``preferFullRead``, the whole text wanted only with
        ``preferFullRead`` and no window; ``attach``: the bytes too (an image or PDF)."""
        full_read = self.prefer_full_read
        limit = item.limit
        if limit is None and not full_read:
            limit = self.per_file_max_lines
        offset, column = item.offset or 1, item.column or 1
        want_full = full_read and item.limit is None and offset == 1 and column == 1
        return ReadOptions(
            max_file_bytes=self.max_file_bytes,
            offset=offset,
            limit=limit,
            max_chars=None if full_read else self.per_file_max_chars,
            want_full=want_full or attach,
            want_bytes=attach,
            column=column,
        )


class BudgetOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The budget of one page (the pack stage and the answer's retries, PROTOCOL §3):
    ``packing`` as this page applies it (a later page of a cursor walk goes in request
    order unless it outlines), ``max_total_files``, ``max_total_chars`` (characters of
    content), ``max_total_tokens`` (o200k tokens of the answer, None: none),
    ``max_answer_chars`` (characters of ``llmContent``, None: none),
    ``per_file_max_tokens``, ``stop_on_error``, and the ``format`` and
    ``line_numbers`` the framing and the smallest cut depend on. ``order``: how the
    files are laid out and fill the budget; ``"stable"`` fills it in the root's stable
    order (``index.stable_order``) and ``packing`` does not apply. ``focus``: the
    request's ``focus`` (1 to 2,000 characters; None: not given): the files then fill
    the budget in rank order (``engine.focus``), ``order`` only lays them out, and
    ``packing`` is ``"auto"`` or ``"outlines"`` (``smallest-first`` would undo the
    ranking: PROTOCOL §3 ``focus``)."""

    packing: Packing
    order: Order
    focus: str | None
    max_total_files: int
    max_total_chars: int
    max_total_tokens: int | None
    max_answer_chars: int | None
    per_file_max_tokens: int | None
    stop_on_error: bool
    format: str
    line_numbers: bool

    @property
    def budgeted(self) -> bool:
        """Whether a token budget or cap applies (every text is then counted exactly)."""
        return self.max_total_tokens is not None or self.per_file_max_tokens is not None


class PageOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The page (PROTOCOL §4 "Cursors"): the real ``root`` the request is answered in,
    the ``continuation`` of the cursor sent (None on a first page), and the ``stamp``
    every ``nextCursor`` of this request carries (``wire.cursor.cursor_stamp``)."""

    root: str
    continuation: Continuation | None
    stamp: CursorStamp


class ChangesOptions(msgspec.Struct, frozen=True, kw_only=True):
    """A ``changes`` read (PROTOCOL §3 "What changed since a commit"): ``base``, the
    commit id the request's ``changes.base`` named when its first page was answered (a
    cursor carries the id, so later pages diff against the same commit while the branch
    moves), and ``asked``, the revision as the first page sent it."""

    base: str
    asked: str


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """A request's options, one part per stage (see the module); ``changes`` only for a
    ``changes`` read."""

    resolve: ResolveOptions
    load: LoadOptions
    budget: BudgetOptions
    page: PageOptions
    changes: ChangesOptions | None = None


def options_for(ws: Workspace, request: ReadRequest) -> Options:
    """The :class:`Options` of ``request`` answered in ``ws``. Raises ``InvalidParams``
    naming ``$.changes`` for a ``changes`` read of a root in no git work tree and
    ``$.changes.base`` for a base git does not know, ``$.cursor`` for a cursor made in
    another root or for another request (its digest differs from the request's stamp),
    then ``$.exclude`` for a bad exclude pattern."""
    params = request.params
    cont = request.continuation
    if params.order == "rank" and params.focus is None:
        raise InvalidParams('invalid params: $.order: "rank" needs focus', "$.order")
    order: Order = params.order or "request-order"
    changes = _changes_options(ws, params)
    if changes is not None:
        # The cursor holds the commit id, not the revision: its pages agree while the
        # branch moves (a later page's params name the id, which resolves to itself).
        params = msgspec.structs.replace(params, changes=ChangesSpec(base=changes.base))
    stamp = cursor_stamp(ws.root, params)
    if cont is not None and cont.digest != stamp.digest:
        raise InvalidParams(
            "invalid params: $.cursor belongs to another root or another request; "
            "send it alone, in the root it came from",
            "$.cursor",
        )
    try:
        exclude = GitPatterns(params.exclude) if params.exclude else None
    except ValueError as exc:
        raise InvalidParams(f"invalid params: $.exclude: {exc}", "$.exclude") from None
    entries = [
        Entry(
            raw=spec.path,
            magic=has_magic(spec.path),
            rel=to_rel(ws.root, spec.path),
            offset=spec.offset,
            limit=spec.limit,
            column=spec.column,
            cells=None if spec.cells is None else str(spec.cells),  # a JSON 4 is "4"
            symbol=spec.symbol,
            enclosing=spec.enclosing,
        )
        if isinstance(spec, FileSpec)
        else Entry(raw=spec, magic=has_magic(spec), rel=to_rel(ws.root, spec))
        for spec in [*params.paths, *params.files, *params.include]
    ]
    known: dict[str, str] = {}
    for receipt in params.known:
        rel = to_rel(ws.root, receipt.path)
        if rel:
            known[rel] = receipt.sha256.lower()
    resolve = ResolveOptions(
        entries=tuple(entries),
        filters=filters_for(params),
        recursive=params.recursive,
        absolute_paths=params.absolute_paths,
        exclude=exclude,
    )
    # Later pages go in request order, whatever the first one did (outlines go on);
    # with focus every page fills in rank order, and smallest first does not apply.
    later = cont is not None and params.packing != "outlines"
    packing: Packing = params.packing
    if params.focus is not None:
        packing = "outlines" if packing == "outlines" else "auto"
    elif later:
        packing = "request-order"
    return Options(
        resolve=resolve,
        load=_load_options(ws, params, known),
        budget=_taken(
            BudgetOptions,
            params,
            packing=packing,
            order=order,
        ),
        page=PageOptions(root=ws.root, continuation=cont, stamp=stamp),
        changes=changes,
    )


def _changes_options(ws: Workspace, params: ReadManyParams) -> ChangesOptions | None:
    """The :class:`ChangesOptions` of a ``changes`` read (git resolves its base once,
    here), None for any other read."""
    if params.changes is None:
        return None
    asked = params.changes.base or "HEAD"
    try:
        return ChangesOptions(base=base_commit(ws.root, asked), asked=asked)
    except NotAWorkTree as exc:
        raise InvalidParams(
            f"invalid params: $.changes: the root is not in a git work tree ({exc})", "$.changes"
        ) from None
    except UnknownBase:
        if params.changes.base is None:  # HEAD by default: a repository with no commit yet
            raise InvalidParams(
                "invalid params: $.changes: the repository has no commit yet (HEAD names "
                "none); give changes.base, or commit first",
                "$.changes",
            ) from None
        raise InvalidParams(
            f"invalid params: $.changes.base: git knows no commit, branch or tag {asked!r}",
            "$.changes.base",
        ) from None


def filters_for(params: ReadManyParams | FilesParams) -> Filters:
    """The ignore-rule ``Filters`` a request asks for (its ``fileFilteringOptions`` and
    ``useDefaultExcludes``)."""
    ffo = params.file_filtering_options
    return Filters(
        respect_gitignore=ffo.respect_git_ignore,
        respect_ignore_files=ffo.respect_ignore_files,
        use_default_excludes=params.use_default_excludes,
    )


def _load_options(ws: Workspace, params: ReadManyParams, known: dict[str, str]) -> LoadOptions:
    redact = params.redact_secrets
    return _taken(
        LoadOptions,
        params,
        max_file_bytes=ws.settings.max_file_bytes,
        redact=ws.settings.redact_secrets if redact is None else redact,
        known=known,
    )


def _taken(cls: type[_S], params: ReadManyParams, **given: Any) -> _S:
    """A ``cls`` of the fields ``given``, the others taken as they are from the params'
    fields of the same name."""
    names = [name for name in cls.__struct_fields__ if name not in given]
    return cls(**{name: getattr(params, name) for name in names}, **given)
