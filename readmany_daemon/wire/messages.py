"""Wire types: the method names, the params of every method and ``readMany/read``'s
result as msgspec Structs (PROTOCOL §2-§4; the other methods' results are
``wire.replies``').

Raw params become these Structs once, at the edge (``wire.decode``); everything past it
works on them. ``FIELD_DOCS`` is each request field's one-line description (the agent
tools' schemas are generated from these Structs and it). ``to_builtins`` turns results
back into JSON-ready builtins, and ``wire_safe`` makes a label valid UTF-8 for them (a
file name with bytes that are not UTF-8). The ``nextCursor`` codec is ``wire.cursor``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

# ------------------------------------------------------------------------- method names

#: The server's name: the ``serverInfo`` name (LSP and MCP) and the
#: ``workspace/configuration`` section.
SERVER_NAME = "readmany"

#: The JSON-RPC methods of the readmany protocol (PROTOCOL §2), the same strings for
#: every adapter.
READ = "readMany/read"
FILES = "readMany/files"
STATUS = "readMany/status"
CHANGED_SINCE = "readMany/changedSince"
RESCAN = "readMany/rescan"
#: Ends the shared daemon (``readmany stop``, replacing a daemon of another version).
STOP_DAEMON = "readMany/stopDaemon"

# ------------------------------------------------------------------------------- params

Positive = Annotated[int, msgspec.Meta(ge=1)]
NonNegative = Annotated[int, msgspec.Meta(ge=0)]
Pattern = Annotated[str, msgspec.Meta(min_length=1)]
#: A SHA-256 digest as 64 hex digits (either case).
Sha256 = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{64}$")]
#: A 1-based inclusive cell range of a notebook: ``"4"`` or ``"3-7"``.
CellRange = Annotated[str, msgspec.Meta(pattern="^[1-9][0-9]{0,8}(-[1-9][0-9]{0,8})?$")]
#: The smallest accepted ``maxTotalTokens``: below it no answer could carry its own
#: framing and notices (PROTOCOL §3).
MIN_TOTAL_TOKENS = 1000
TotalTokens = Annotated[int, msgspec.Meta(ge=MIN_TOTAL_TOKENS)]
#: The smallest accepted ``maxAnswerChars``: room for the framing, notices and a cursor
#: (at most 1,000 characters) of an answer (PROTOCOL §3).
MIN_ANSWER_CHARS = 4000
AnswerChars = Annotated[int, msgspec.Meta(ge=MIN_ANSWER_CHARS)]

#: A symbol's path (``FileSpec.symbol``): not empty.
SymbolName = Annotated[str, msgspec.Meta(min_length=1)]

Packing = Literal["auto", "request-order", "smallest-first", "outlines"]
#: ``order`` (PROTOCOL §3): how the delivered files are laid out; ``"rank"`` needs
#: ``focus`` (refused naming ``$.order`` without it).
Order = Literal["request-order", "rank", "stable"]
#: The longest ``focus`` (characters), PROTOCOL §3 ``focus``.
MAX_FOCUS_CHARS = 2000
#: ``focus``: free text, identifiers or paths the task is about, 1 to 2,000 characters.
Focus = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_FOCUS_CHARS)]
Format = Literal["separator", "heredoc", "xml", "json"]
Sync = Literal["auto", "stat", "none"]


class FileSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One file with an optional line window (the pi ``read_many`` shape, seed 001).

    ``offset`` is the 1-based first line; ``limit`` a count of lines. A window with
    ``limit`` replaces ``perFileMaxLines`` for this file. ``column`` is the 1-based
    character of line ``offset`` where the window starts (a cut long line's
    ``nextColumn``). ``cells`` (a ``.ipynb`` only) is a 1-based inclusive range of its
    cells, ``"3-7"`` or ``"4"``, or one cell as a JSON integer (``4``; the decoder turns
    it into ``"4"``, ``wire.decode``) (``engine.notebook``).

    ``symbol`` reads one symbol's lines: the outline's names joined by ``.`` (``::`` and
    ``#`` accepted), outermost first, or a Markdown heading's text; ``enclosing`` (a
    1-based line) reads the innermost function, method, class or section that holds it
    (``content.spans``, PROTOCOL §3 "Symbols and enclosing blocks"). ``symbol``,
    ``enclosing``, a line window (``offset``/``limit``/``column``) and ``cells`` exclude
    each other (``wire.decode``). ``None`` is "not given".
    """

    path: Pattern
    offset: Positive | None = None
    limit: Positive | None = None
    column: Positive | None = None
    cells: CellRange | Positive | None = None
    symbol: SymbolName | None = None
    enclosing: Positive | None = None


class Known(msgspec.Struct, forbid_unknown_fields=True):
    """A receipt the caller holds (``engine.receipts``): a path as an answer labelled it
    (or any spelling of it a request accepts) and the ``sha256`` that answer gave."""

    path: Pattern
    sha256: Sha256


class FileFilteringOptions(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """Which ignore rules apply to expansions (seed 003 ``file_filtering_options``)."""

    respect_git_ignore: bool = True
    respect_ignore_files: bool = True


#: A git revision (``ChangesSpec.base``): not empty.
Revision = Annotated[str, msgspec.Meta(min_length=1)]


class ChangesSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``changes`` (PROTOCOL §3 "What changed since a commit"): read the files that
    differ between ``base`` (a commit, branch or tag git knows; default ``HEAD``) and
    the working tree, staged or not, and the untracked files git does not ignore
    (``index.gitdiff``, ``engine.changed``). ``paths``/``files``/``include`` may then be
    empty; when given they narrow the changed files."""

    #: None: ``HEAD``.
    base: Revision | None = None


class ReadManyParams(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    """``readMany/read`` params (PROTOCOL §3). Defaults are the protocol's."""

    paths: list[Pattern | FileSpec] = msgspec.field(default_factory=list)
    files: list[FileSpec] = msgspec.field(default_factory=list)
    include: list[Pattern] = msgspec.field(default_factory=list)
    exclude: list[Pattern] = msgspec.field(default_factory=list)
    recursive: bool = True
    use_default_excludes: bool = True
    file_filtering_options: FileFilteringOptions = msgspec.field(
        default_factory=FileFilteringOptions
    )
    per_file_max_lines: Positive = 200
    per_file_max_chars: Positive = 20000
    max_total_files: Positive = 20
    max_total_chars: Positive = 200000
    max_total_tokens: TotalTokens | None = None
    per_file_max_tokens: Positive | None = None
    max_answer_chars: AnswerChars | None = None
    prefer_full_read: bool = False
    packing: Packing = "auto"
    #: None (or absent): ``"request-order"``.
    order: Order | None = None
    #: What the task is about: the matched files are ranked by it (PROTOCOL §3 ``focus``).
    focus: Focus | None = None
    stop_on_error: bool = False
    format: Format = "separator"
    line_numbers: bool = False
    absolute_paths: bool = False
    root: str | None = None
    sync: Sync = "auto"
    cursor: str | None = None
    known: list[Known] = msgspec.field(default_factory=list)
    #: Replace credential values (keys, tokens, passwords) in the answer by
    #: ``«redacted:<kind>:<hash>»`` sentinels; ``None``: the ``redactSecrets`` setting.
    redact_secrets: bool | None = None
    #: What changed since a commit (``ChangesSpec``); None: a plain read.
    changes: ChangesSpec | None = None


class FilesParams(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    """``readMany/files`` params: patterns (globs, folders or paths; none = everything)."""

    patterns: list[Pattern] = msgspec.field(default_factory=list)
    root: str | None = None
    exclude: list[Pattern] = msgspec.field(default_factory=list)
    recursive: bool = True
    use_default_excludes: bool = True
    file_filtering_options: FileFilteringOptions = msgspec.field(
        default_factory=FileFilteringOptions
    )


class ChangedSinceParams(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    """``readMany/changedSince`` params (PROTOCOL §2, §6): ``clock``, the opaque clock
    of an earlier answer (``""`` or one this daemon did not mint: a baseline,
    ``isFreshInstance: true``), and the ``root`` (as in ``ReadManyParams``) to answer
    for when the clock names none."""

    clock: str
    root: str | None = None


class RescanParams(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    """``readMany/rescan`` params (PROTOCOL §2): the ``root`` to walk again (as in
    ``ReadManyParams``; none: the connection's first folder)."""

    root: str | None = None


class StatusParams(msgspec.Struct, forbid_unknown_fields=True):
    """``readMany/status`` params (PROTOCOL §2): none, ``{}``."""


class StopDaemonParams(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    """``readMany/stopDaemon`` params (PROTOCOL §1, the shared daemon only): the
    ``reason`` its exit line in the log names (``"readmany stop"``)."""

    reason: str | None = None


#: One short description per request field (canonical camelCase names, every field of
#: ``FileSpec``, ``FileFilteringOptions``, ``ReadManyParams``, ``ChangesSpec``, ``FilesParams`` and
#: ``ChangedSinceParams``): the tool schemas (``mcp/schema.py``: MCP ``tools/list`` and
#: the VS Code tool) are generated from these Structs and take their descriptions from
#: here. ``None``: the name says it all (every client re-sends the schemas to the model
#: on every turn).
FIELD_DOCS: dict[str, str | None] = {
    "path": None,
    "offset": "1-based first line.",
    "limit": "Line count.",
    "column": "Start character, 1-based.",
    "cells": 'Notebook cells: "3-7".',
    "symbol": 'A symbol: "Class.method".',
    "enclosing": "A line: read the block around it.",
    "sha256": None,
    "respectGitIgnore": "Apply .gitignore.",
    "respectIgnoreFiles": "Apply .readmanyignore.",
    "paths": "Files, folders or globs.",
    "files": "Files with windows.",
    "include": "More globs.",
    "exclude": "Patterns to leave out.",
    "recursive": "false: not into subfolders.",
    "useDefaultExcludes": "Skip node_modules etc.",
    "fileFilteringOptions": None,
    "perFileMaxLines": None,
    "perFileMaxChars": None,
    "maxTotalFiles": None,
    "maxTotalChars": None,
    "maxTotalTokens": "Tokens in all.",
    "perFileMaxTokens": None,
    "maxAnswerChars": None,
    "preferFullRead": "Lift the per-file limits.",
    "packing": "outlines: outline what is left.",
    "order": "rank: needs focus; stable: same each call.",
    "focus": "The task; top-ranked files fill the budget. Resend with cursor.",
    "stopOnError": None,
    "format": None,
    "lineNumbers": None,
    "absolutePaths": None,
    "root": "A root or folder in one.",
    "sync": "auto: see prior writes.",
    "cursor": "nextCursor; send it alone (beside the same focus, if one).",
    "known": "Files you hold whole: not resent.",
    "redactSecrets": "false: show secrets as they are.",
    "patterns": "Globs, folders or paths; none: every file.",
    "clock": "The clock of an earlier answer; none: a baseline.",
    "changes": "Changes since base, default HEAD.",
    "base": None,
}


# ---------------------------------------------------------------------------- results


class Redaction(msgspec.Struct, rename="camel"):
    """A line of the shown text that holds a ``«redacted:<kind>:<hash>»`` sentinel in
    place of a secret (PROTOCOL §4 "Secrets"): ``line`` is 1-based in the file."""

    line: int
    kind: str


class OutlineSymbol(msgspec.Struct, rename="camel", omit_defaults=True):
    """One line of a file's outline (PROTOCOL §4 "Outlines"): ``kind`` a lower-case LSP
    SymbolKind name (``class``, ``function``, ``method``, …), ``heading``, or ``symbol``
    for a folded run of several kinds; ``line_start`` and ``line_end`` 1-based and
    inclusive; ``depth`` 0 at the top level, +1 per enclosing symbol.

    ``count``: how many symbols the line stands for (on the wire only when not 1): a
    parent whose deeper levels collapsed into its line counts itself and them
    (``class Parser L300-1900 (41 methods)``: 42); a folded run of siblings, ``name``
    ``"first … last"``, counts all it holds (``filler_0033 … filler_0160``: 128)."""

    name: str
    kind: str
    line_start: int
    line_end: int
    depth: int
    count: int = 1


class FileResult(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """One answered entry (PROTOCOL §4). Line numbers are 1-based and inclusive.

    ``source`` and ``chars`` have no default so that they are always on the wire (the
    protocol has them in every entry; ``omit_defaults`` drops a field equal to its
    default): ``"disk"`` and ``0`` for an entry that was not read. ``replaced_bytes`` is
    set only when some bytes of UTF-8 text were invalid (each shown as U+FFFD).
    ``next_column`` is set when line ``line_end`` was cut short: its rest starts at that
    1-based character (ask ``offset=line_end, column=next_column``)."""

    path: str
    status: str
    source: str
    chars: int
    code: str | None = None
    message: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    total_lines: int | None = None
    next_offset: int | None = None
    next_column: int | None = None
    #: The symbol shown (``FileSpec.symbol`` or ``enclosing``), as the outline spells it.
    symbol: str | None = None
    encoding: str | None = None
    replaced_bytes: int | None = None
    mime_type: str | None = None
    ignored_by: str | None = None
    sha256: str | None = None
    #: Lines shown with a secret replaced, in line order (absent when none).
    redactions: list[Redaction] | None = None
    #: The symbols of the lines not shown: of a cut file, its unseen lines; of a file
    #: ``omitted`` under ``packing: "outlines"``, the file (absent otherwise).
    outline: list[OutlineSymbol] | None = None
    #: The line spans a changed file shows (a ``changes`` read), ``[start, end]`` each,
    #: 1-based and inclusive, in line order (absent otherwise).
    spans: list[list[int]] | None = None
    #: A ranked answer's place of this entry, 1-based (best first), and why it ranked
    #: there (at most 80 characters): PROTOCOL §4 "Focus". Absent without ``focus``.
    rank: int | None = None
    why: str | None = None


class Attachment(msgspec.Struct, rename="camel"):
    """An image or PDF named explicitly: ``data`` is base64 of the file's bytes."""

    path: str
    mime_type: str
    data: str


class RankingInfo(msgspec.Struct, rename="camel", kw_only=True):
    """How a ranked answer was ranked (PROTOCOL §4 "Focus"): the ``signals`` that ranked
    (of ``"content"``, ``"names"``, ``"references"``, ``"recency"``), the files the
    full-text index holds (``indexed_files``) and the files whose part of the ranking is
    still to be made (``pending_files``: still to add to the full-text index, or, in the
    daemon, tags the reference graph needs still to parse; 0 once complete)."""

    signals: list[str]
    indexed_files: int
    pending_files: int


class Summary(msgspec.Struct, rename="camel", kw_only=True):
    """Counts over the whole answer (PROTOCOL §4). ``matched`` counts files: explicit
    paths that exist and expansion matches, so that ``matched = read + omitted +
    skipped + unchanged + errors`` less the errors of entries that name no file
    (``not-found``, ``outside-workspace``, ``not-a-file``, ``invalid-pattern``, a folder
    that cannot be listed). ``noMatch`` counts patterns that matched nothing (in neither
    ``matched`` nor ``skipped``). ``hidden`` maps an ignore-rule kind to the files it
    hid from the expansions, among the folders entered; ``hiddenFolders`` maps a kind to
    the ignored folders not entered (their files unknown). ``estimatedTokens``: o200k
    tokens of ``llmContent`` (an upper bound)."""

    matched: int = 0
    read: int = 0
    truncated: int = 0
    omitted: int = 0
    skipped: int = 0
    errors: int = 0
    unchanged: int = 0
    total_chars: int = 0
    estimated_tokens: int = 0
    hidden: dict[str, int] = msgspec.field(default_factory=dict)
    no_match: int = 0
    hidden_folders: dict[str, int] = msgspec.field(default_factory=dict)
    #: A ranked answer's ranking (a request with ``focus``); absent (``UNSET``, never
    #: ``null``) otherwise.
    ranking: RankingInfo | msgspec.UnsetType = msgspec.UNSET


class PackingInfo(msgspec.Struct, rename="camel", kw_only=True):
    """How the totals were applied (seed 001 ``details.packing``).
    ``fullIncludedCount`` counts the entries given whole (``ok``): not a file cut by a
    per-file cap (``partial``), not an error."""

    strategy: str = "request-order"
    switched_for_coverage: bool = False
    full_included_count: int = 0
    full_included_success_count: int = 0
    partial_included_path: str | None = None
    omitted_paths: list[str] = msgspec.field(default_factory=list)
    omitted_truncated: bool = False


class StaleFile(msgspec.Struct, rename="camel"):
    """A file this session was given that changed since (PROTOCOL §4, "Stale files"):
    ``path`` labelled as ``files[].path`` labels it (absolute for another root),
    ``change`` ``"modified"`` (its bytes no longer hash to the ``sha256`` given) or
    ``"deleted"``."""

    path: str
    change: Literal["modified", "deleted"]


class Renamed(msgspec.Struct, kw_only=True):
    """A file git found renamed since the base (``changes.renamed``): root-relative
    ``from`` (its path at the base) and ``to`` (its path now)."""

    from_: str = msgspec.field(name="from")
    to: str


class ChangesResult(msgspec.Struct, kw_only=True):
    """``changes`` of a ``changes`` read's result (PROTOCOL §4): the ``base``'s commit id
    (40 or 64 hex digits), the visible files deleted since (root-relative, sorted) and
    those renamed (git's rename detection, ``git diff -M``)."""

    base: str
    deleted: list[str]
    renamed: list[Renamed]


class ReadManyResult(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """``readMany/read`` result (PROTOCOL §4).

    ``attachments`` and ``stale`` have no default so that they are always on the wire,
    ``[]`` when empty (``omit_defaults`` drops a field equal to its default);
    ``nextCursor`` is there only when files were omitted. ``stale``: the files this
    session was given that changed since (``runtime.ledger``; a one-shot call keeps no
    ledger: ``[]``), at most 200, then ``staleTruncated: true``."""

    llm_content: str
    return_display: str
    summary: Summary
    files: list[FileResult]
    packing: PackingInfo
    clock: str
    attachments: list[Attachment]
    stale: list[StaleFile]
    next_cursor: str | None = None
    stale_truncated: bool = False
    #: Files created, since the page before, in the part of the request order a cursor
    #: had already delivered: the chain will not deliver them; ask for them by path.
    created_paths: list[str] = msgspec.field(default_factory=list)
    #: A ``changes`` read's base, deleted and renamed files (absent otherwise).
    changes: ChangesResult | None = None


def to_builtins(obj: Any) -> Any:
    """JSON-ready builtins for a result Struct (omitting absent optional fields)."""
    return msgspec.to_builtins(obj)


def wire_safe(text: str) -> str:
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
