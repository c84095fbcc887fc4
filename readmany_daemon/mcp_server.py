"""``readmany mcp``: the Model Context Protocol server, on stdio (PROTOCOL §1).

Three tools, thin adapters over the same engine as every other surface:

- ``read_many_files`` → ``readMany/read``. Its input schema is ``ReadManyParams``
  (PROTOCOL §3) *with* the reference tools' spellings (``per_file_max_lines``,
  ``file_filtering_options.respect_git_ignore``, ``respect_sii_ignore``, …), so a call
  made for any of the four reference tools works unchanged. The result is
  ``llmContent`` as text, image attachments as image content, PDFs as embedded blob
  resources, and the whole ``ReadManyResult`` as structured content.
- ``list_files`` → ``readMany/files``; ``changed_since`` → ``readMany/changedSince``.

Answers come from the shared per-user daemon, asked the way the CLI asks it
(``cli._daemon_answer``: a short session per call, a daemon of another version
replaced); when none runs the call is answered in this process and the daemon is
started in the background for the next one (``cli._autostart``). ``--no-daemon`` (or
``READMANY_NO_DAEMON``) answers in this process only, from a long-lived ``Workspace``
per root kept fresh by stat checks (``_Freshness``).

The workspace root is ``--root``, else the client's MCP roots (``roots/list``, when the
client declares the roots capability), else the current directory. A request's ``root``
may name one of those roots or a folder inside one; nothing outside them is opened.

Bad arguments come back as a tool result with ``isError: true`` whose text names the
field (the engine's ``InvalidParams`` message); a per-file problem is part of an ok
result. Nothing but protocol goes to stdout; logs go to stderr.

Works with the official ``mcp`` SDK 2.x (``Server(on_list_tools=…, on_call_tool=…)``)
and 1.x from 1.10 (the decorator API; structured content needs 1.10).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import logging
import os
import posixpath
import stat as stat_mod
import sys
import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from readmany_daemon import __version__
from readmany_daemon.errors import InvalidParams, ReadManyError, RootNotFound

log = logging.getLogger("readmany.mcp")

SERVER_NAME = "readmany"
READ_TOOL = "read_many_files"
FILES_TOOL = "list_files"
CHANGED_TOOL = "changed_since"

#: Paths listed by ``list_files`` / ``changed_since`` unless ``limit`` says otherwise.
DEFAULT_LIST_LIMIT = 1000

#: How long to wait for the client's answer to ``roots/list`` (s).
ROOTS_TIMEOUT = 5.0

#: Mtime granularity assumed by the stat checks (as ``content.ContentCache``: FAT's 2 s,
#: which also covers the lag of Linux's coarse file-time clock).
RACY_NS = 2_000_000_000

#: Snapshots kept per root for ``changed_since`` answered in this process.
SNAPSHOTS_KEPT = 4

# ------------------------------------------------------------------------------ schemas

_BUDGETS = (
    "Budgets: each file is cut at perFileMaxLines (200) lines / perFileMaxChars (20000) "
    "characters unless preferFullRead; the whole answer holds at most maxTotalFiles (20) "
    "files and maxTotalChars (200000) characters."
)

READ_DESCRIPTION = f"""\
Read many files in one call: exact paths, folders (their files) and glob patterns \
(`src/**/*.ts`, `{{a,b}}/*.md`), relative to the workspace root. Use it instead of \
several single-file reads: to read a known list of files, a whole folder, or every file \
a glob matches. Paths can also be given as `files: [{{"path", "offset", "limit"}}]` \
for a line window (offset is the 1-based first line, limit a line count).

{_BUDGETS} Nothing is dropped silently: the text ends with notices of what was cut, \
omitted, skipped or failed, and how to ask for the rest:
- a cut file ends with `[Showing lines 1-200 of 2500. Continue with offset=201.]`: \
call again with `files: [{{"path": "that/file", "offset": 201}}]`;
- when the totals left files out, the answer carries a cursor \
(`structuredContent.nextCursor`, also quoted in the text): call again with only \
`{{"cursor": "..."}}` for the next page of the same request.

Globs and folders skip git-ignored files, `.readmanyignore`d files, default excludes \
(node_modules, .venv, build caches…) and binary files; a path named exactly is read \
even when git-ignored. Images and PDFs named exactly come back as attachments. \
A missing or unreadable file is reported in the answer (status `error`), not as a \
failure of the call; invalid arguments fail with a message naming the field. \
Argument names of other read-many tools are accepted too (`per_file_max_lines`, \
`file_filtering_options.respect_git_ignore`, …)."""

FILES_DESCRIPTION = """\
List the files of the workspace (what read_many_files' globs and folders would see: \
.gitignore, .readmanyignore and default excludes applied), optionally only those \
matching `patterns` (globs, folders or paths). Use it to find which files exist, or what \
a glob matches, before reading them; it reads no content. The text is one \
workspace-relative path a line, sorted; the structured content adds each file's size \
(bytes) and mtime (ms) and a `clock` for changed_since. At most `limit` paths \
(default 1000) are returned; narrow the patterns when `truncated` is true."""

CHANGED_DESCRIPTION = """\
Which files were created, modified or deleted since an earlier `clock`. Pass the clock \
of an earlier changed_since answer (or of list_files / read_many_files); the answer \
lists the changed and deleted workspace-relative paths and a new clock to pass next \
time. Use it to re-read only what changed instead of everything. An empty or unknown \
clock (first call, another server, a restart) answers `isFreshInstance: true` with \
every visible file as changed: a baseline. At most `limit` paths (default 1000) per \
list."""

INSTRUCTIONS = """\
readmany reads many workspace files at once, exactly and within budgets. Use \
read_many_files to read several files, a folder or a glob in one call (follow its \
offset / cursor notices to continue), list_files to see which files exist, and \
changed_since to learn what changed since an earlier answer."""


def _bool(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def _int(description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "description": description}


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


_FILE_SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "file path, relative to the root"},
        "offset": _int("1-based first line to read"),
        "limit": _int("number of lines to read (replaces perFileMaxLines for this file)"),
    },
    "required": ["path"],
}

_FILTERS: dict[str, Any] = {
    "type": "object",
    "description": "which ignore rules apply to globs and folders",
    "properties": {
        "respectGitIgnore": _bool(
            "apply .gitignore, .git/info/exclude and core.excludesFile (default true)"
        ),
        "respectIgnoreFiles": _bool(
            "apply .readmanyignore and configured ignore files (default true)"
        ),
        "respect_git_ignore": _bool("alias of respectGitIgnore"),
        "respect_sii_ignore": _bool("alias of respectIgnoreFiles"),
        "respect_gemini_ignore": _bool("alias of respectIgnoreFiles"),
        "respect_qwen_ignore": _bool("alias of respectIgnoreFiles"),
    },
}

#: ``ReadManyParams`` (PROTOCOL §3) with its aliases. No ``required`` and no
#: ``additionalProperties: false``: at least one of paths/files/include/cursor must hold
#: an entry, and the engine checks that (naming the field) along with everything else.
READ_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "paths": {
            "type": "array",
            "items": {"anyOf": [{"type": "string"}, _FILE_SPEC]},
            "description": (
                "paths, folders (their files) or glob patterns relative to the root "
                "(absolute paths inside the root work too), e.g. "
                '["src/**/*.ts", "README.md", "docs/"]; an entry may also be '
                '{"path", "offset", "limit"}'
            ),
        },
        "files": {
            "type": "array",
            "items": _FILE_SPEC,
            "description": 'files with optional line windows: [{"path": "a.py", "offset": 201}]',
        },
        "include": _strings("more patterns, merged with paths"),
        "exclude": _strings(
            "gitignore-syntax patterns removed from glob and folder matches, "
            'e.g. ["**/*.log", "temp/"]'
        ),
        "recursive": _bool(
            "false: a folder gives only its own files and ** acts as * (default true)"
        ),
        "useDefaultExcludes": _bool(
            "skip node_modules, .venv, __pycache__, build caches… in globs and folders "
            "(default true)"
        ),
        "fileFilteringOptions": _FILTERS,
        "perFileMaxLines": _int("lines kept per file unless preferFullRead (default 200)"),
        "perFileMaxChars": _int("characters kept per file unless preferFullRead (default 20000)"),
        "maxTotalFiles": _int("files whose content is included in the answer (default 20)"),
        "maxTotalChars": _int("characters of file content in the whole answer (default 200000)"),
        "preferFullRead": _bool("lift the per-file limits; the totals still hold (default false)"),
        "packing": {
            "type": "string",
            "enum": ["auto", "request-order", "smallest-first"],
            "description": (
                "which files the totals keep: auto (request order, switching to smallest-first "
                "when that includes more whole files), request-order or smallest-first"
            ),
        },
        "stopOnError": _bool("stop at the first file that fails (default false)"),
        "format": {
            "type": "string",
            "enum": ["separator", "heredoc", "xml", "json"],
            "description": "how files are framed in the text (default separator: --- path ---)",
        },
        "lineNumbers": _bool("prefix each line with its 1-based number (default false)"),
        "absolutePaths": _bool("label files by absolute path (default false)"),
        "root": {
            "type": "string",
            "description": (
                "which workspace root (name, path or file: URI, or a folder inside one) "
                "paths resolve against; default the first"
            ),
        },
        "sync": {
            "type": "string",
            "enum": ["auto", "stat", "none"],
            "description": (
                "freshness: auto (default) reflects every write finished before the call"
            ),
        },
        "cursor": {
            "type": "string",
            "description": (
                "the nextCursor of an earlier answer: continue that request where its "
                "budget stopped"
            ),
        },
        # The reference tools' spellings (seed 003); any snake_case name is folded too.
        "per_file_max_lines": _int("alias of perFileMaxLines"),
        "per_file_max_chars": _int("alias of perFileMaxChars"),
        "max_total_files": _int("alias of maxTotalFiles"),
        "max_total_chars": _int("alias of maxTotalChars"),
        "prefer_full_read": _bool("alias of preferFullRead"),
        "file_filtering_options": {**_FILTERS, "description": "alias of fileFilteringOptions"},
    },
}

_LIMIT = _int(f"at most this many paths in the answer (default {DEFAULT_LIST_LIMIT})")

FILES_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "patterns": _strings(
            "globs, folders or paths relative to the root; none lists every visible file"
        ),
        "exclude": _strings("gitignore-syntax patterns to leave out"),
        "recursive": _bool(
            "false: a folder gives only its own files and ** acts as * (default true)"
        ),
        "useDefaultExcludes": _bool("skip node_modules, .venv, build caches… (default true)"),
        "fileFilteringOptions": _FILTERS,
        "file_filtering_options": {**_FILTERS, "description": "alias of fileFilteringOptions"},
        "root": READ_INPUT_SCHEMA["properties"]["root"],
        "limit": _LIMIT,
    },
}

CHANGED_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "clock": {
            "type": "string",
            "description": "the clock of an earlier answer; empty or omitted for a baseline",
        },
        "root": READ_INPUT_SCHEMA["properties"]["root"],
        "limit": _LIMIT,
    },
}

_LISTING_EXTRA: dict[str, Any] = {
    "total": {"type": "integer", "description": "how many paths matched"},
    "truncated": {"type": "boolean", "description": "true when limit cut the list"},
}

CHANGED_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "clock": {"type": "string"},
        "isFreshInstance": {"type": "boolean"},
        "changed": {"type": "array", "items": {"type": "string"}},
        "deleted": {"type": "array", "items": {"type": "string"}},
        **_LISTING_EXTRA,
    },
    "required": ["clock", "isFreshInstance", "changed", "deleted"],
}


def _strip_docs(node: Any) -> Any:
    """A JSON schema without msgspec's titles and docstring descriptions."""
    if isinstance(node, dict):
        return {k: _strip_docs(v) for k, v in node.items() if k not in ("title", "description")}
    if isinstance(node, list):
        return [_strip_docs(v) for v in node]
    return node


def struct_output_schema(struct: type, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON schema of a result Struct as an MCP ``outputSchema``: an object schema at
    the top (MCP requires ``type: object`` there), its other types under ``$defs``."""
    import msgspec

    raw = _strip_docs(msgspec.json.schema(struct))
    defs = dict(raw["$defs"])
    top = dict(defs.pop(struct.__name__))
    if extra:
        top["properties"] = {**top["properties"], **extra}
    if defs:
        top["$defs"] = defs
    return top


def tool_definitions() -> list[dict[str, Any]]:
    """The three tools as ``tools/list`` entries (camelCase, as on the wire)."""
    from readmany_daemon.messages import FilesResult, ReadManyResult

    hints = {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    return [
        {
            "name": READ_TOOL,
            "title": "Read many files",
            "description": READ_DESCRIPTION,
            "inputSchema": READ_INPUT_SCHEMA,
            "outputSchema": struct_output_schema(ReadManyResult),
            "annotations": {"title": "Read many files", **hints},
        },
        {
            "name": FILES_TOOL,
            "title": "List files",
            "description": FILES_DESCRIPTION,
            "inputSchema": FILES_INPUT_SCHEMA,
            "outputSchema": struct_output_schema(FilesResult, _LISTING_EXTRA),
            "annotations": {"title": "List files", **hints},
        },
        {
            "name": CHANGED_TOOL,
            "title": "Files changed since a clock",
            "description": CHANGED_DESCRIPTION,
            "inputSchema": CHANGED_INPUT_SCHEMA,
            "outputSchema": CHANGED_OUTPUT_SCHEMA,
            "annotations": {
                "title": "Files changed since a clock",
                **hints,
                "idempotentHint": False,
            },
        },
    ]


# -------------------------------------------------------------------------------- roots


@dataclass(frozen=True)
class Root:
    """One workspace root: ``path`` is absolute and symlink-resolved."""

    path: str
    name: str
    uri: str


def uri_to_path(uri: str) -> str | None:
    """The local path of a ``file:`` URI (RFC 8089), or None for any other URI."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return urllib.parse.unquote(parsed.path) or None


def make_root(path: str, name: str | None = None) -> Root:
    from readmany_daemon.client import path_to_uri

    real = os.path.realpath(path)
    return Root(real, name or os.path.basename(real) or real, path_to_uri(real))


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def resolve_root(raw: Any, roots: Sequence[Root]) -> str:
    """The folder a request's ``root`` names: one of ``roots`` (by name, path or URI), or
    a folder inside one (absolute, ``file:`` URI, or relative to the first root); None
    is the first root. Raises ``InvalidParams`` naming ``$.root``."""
    if raw is None:
        return roots[0].path
    if not isinstance(raw, str):
        raise InvalidParams(
            f"invalid params: Expected `str`, got `{type(raw).__name__}` - at `$.root`", "$.root"
        )
    for r in roots:
        if raw in (r.name, r.uri, r.path):
            return r.path
    path = uri_to_path(raw) if raw.startswith("file:") else raw
    if not path:
        raise RootNotFound(f"invalid params: $.root: {raw!r} is not a file: URI", "$.root")
    real = os.path.realpath(os.path.join(roots[0].path, path))
    if not any(_inside(real, r.path) for r in roots):
        listed = ", ".join(r.path for r in roots)
        raise RootNotFound(
            f"invalid params: $.root: {raw!r} is outside the workspace roots ({listed})", "$.root"
        )
    if not os.path.isdir(real):
        raise RootNotFound(f"invalid params: $.root: {raw!r} is not a folder", "$.root")
    return real


def _cursor_root(cursor: Any) -> Any:
    """The ``root`` a cursor's request named (None when it names none or is no cursor:
    the engine refuses a bad cursor itself, naming ``$.cursor``)."""
    if not isinstance(cursor, str) or not cursor:
        return None
    from readmany_daemon import request

    try:
        return request._decode_cursor(cursor).params.get("root")
    except InvalidParams:
        return None


# ---------------------------------------------------------------------- in-process engine


def _under_any(rel: str, tops: set[str]) -> bool:
    """Whether folder ``rel`` is one of ``tops`` or below one (``""`` is the root)."""
    while True:
        if rel in tops:
            return True
        if not rel:
            return False
        rel = rel.rpartition("/")[0]


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


class _Freshness:
    """Keeps a long-lived in-process index current without a watcher (PROTOCOL §6, the
    stat route). Before each request (``sync``) a walked folder is re-walked when its
    ignore files changed, or when it is stale: its mtime differs from the one recorded
    when it was listed (an entry was added, removed or renamed), or it is racy, its
    mtime lying within ``RACY_NS`` of when it was listed, so that a later change in the
    same timestamp tick would not show (git's racy rule). The index's own ``is_stale``
    decides where it has one. A change of git's index file re-walks everything. File
    contents need nothing here: the content cache is validated by stat.

    ``known`` maps each walked folder to (a time before it was listed, its ignore-file
    stamps); ``baseline`` records the folders a request walked."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.names = (".gitignore", *ws.settings.ignore_file_names)
        self.known: dict[str, tuple[int, tuple[Any, ...]]] = {}
        self.started = 0

    def _ignore_stamp(self, rel_dir: str) -> tuple[Any, ...]:
        base = self.ws.abspath(rel_dir)
        out: list[Any] = []
        for name in self.names:
            try:
                out.append((name, *_stat_key(os.stat(os.path.join(base, name)))))
            except OSError:
                continue
        return tuple(out)

    def _stale(self, index: Any, rel: str) -> bool:
        entry = self.known.get(rel)
        if entry is None:
            return True  # listed before we could note when: trust it no further
        listed, stamp = entry
        if stamp != self._ignore_stamp(rel):
            return True
        own = getattr(index, "is_stale", None)
        if own is not None:
            return bool(own(rel))
        try:
            mtime = os.stat(self.ws.abspath(rel)).st_mtime_ns
        except OSError:
            return True
        return mtime != index.dir_mtime(rel) or mtime >= listed - RACY_NS

    def sync(self) -> None:
        """Before a request: re-walk what changed since it was listed."""
        self.started = time.time_ns()
        ws = self.ws
        if "index" not in ws.__dict__:
            return  # not walked yet: its first walk will be fresh
        index = ws.index
        if hasattr(index, "stat_checks"):
            index.stat_checks = True  # the index's own stat route, where it has one
        stale = [rel for rel in index.walked_dirs() if self._stale(index, rel)]
        if index.rules.tracked_changed():
            stale = [""]
        if not stale:
            return
        done: set[str] = set()
        before = time.time_ns()
        for rel in sorted(stale, key=lambda r: (r.count("/"), r)):
            if not _under_any(rel, done):
                index.refresh(rel)
                done.add(rel)
        for sub in index.walked_dirs():
            if _under_any(sub, done):
                self.known[sub] = (before, self._ignore_stamp(sub))

    def baseline(self) -> None:
        """After a request: note the folders it walked (listed after ``started``)."""
        if "index" in self.ws.__dict__:
            for rel in self.ws.index.walked_dirs():
                if rel not in self.known:
                    self.known[rel] = (self.started, self._ignore_stamp(rel))


@dataclass
class _Snapshot:
    taken_ns: int
    files: dict[str, tuple[int, int, int, int]]
    digests: dict[str, str] = field(default_factory=dict)  # racy files: sha256 of content


@dataclass
class _LocalRoot:
    ws: Any
    fresh: _Freshness
    lock: threading.Lock = field(default_factory=threading.Lock)
    snapshots: OrderedDict[str, _Snapshot] = field(default_factory=OrderedDict)
    minted: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


def _digest(path: str, limit: int) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
                limit -= len(chunk)
                if limit < 0:
                    return None
    except OSError:
        return None
    return h.hexdigest()


class LocalBackend:
    """Answers in this process: one long-lived ``Workspace`` per root, sharing one
    content cache; each root's requests run one at a time (its lock)."""

    def __init__(self) -> None:
        from readmany_daemon.content import ContentCache
        from readmany_daemon.settings import load_settings

        self.settings, warnings = load_settings()
        for w in warnings:
            log.warning("%s", w)
        self.cache = ContentCache(self.settings.cache_bytes)
        self._roots: dict[str, _LocalRoot] = {}
        self._lock = threading.Lock()

    def _root(self, path: str) -> _LocalRoot:
        from readmany_daemon.workspace import Workspace

        with self._lock:
            lr = self._roots.get(path)
            if lr is None:
                try:
                    ws = Workspace.open(path, self.settings, cache=self.cache)
                except OSError as exc:
                    raise RootNotFound(f"invalid params: $.root: {exc}", "$.root") from None
                lr = self._roots[path] = _LocalRoot(ws, _Freshness(ws))
            return lr

    def clear(self) -> None:
        """Forget every workspace (the daemon answers now)."""
        with self._lock:
            self._roots.clear()

    def read(self, params: dict[str, Any], root: str) -> Any:
        from readmany_daemon import request
        from readmany_daemon.messages import decode_read_params, to_builtins

        decoded = decode_read_params(params)
        lr = self._root(root)
        with lr.lock:
            if decoded.sync != "none":
                lr.fresh.sync()
            answer = request.answer(lr.ws, decoded)
            lr.fresh.baseline()
        return to_builtins(answer)

    def files(self, params: dict[str, Any], root: str) -> Any:
        from readmany_daemon import request
        from readmany_daemon.messages import decode_files_params, to_builtins

        decoded = decode_files_params(params)
        lr = self._root(root)
        with lr.lock:
            lr.fresh.sync()
            answer = request.list_files(lr.ws, decoded)
            lr.fresh.baseline()
        return to_builtins(answer)

    def changed_since(self, params: dict[str, Any], root: str) -> Any:
        """``readMany/changedSince`` without a watcher: a stat snapshot of every visible
        file per clock handed out (the last ``SNAPSHOTS_KEPT``), compared with a new
        one. Racy files (modified within ``RACY_NS`` of a snapshot) are compared by
        content hash, so a change in the same timestamp tick is not missed."""
        from readmany_daemon import request
        from readmany_daemon.ignore import Filters

        clock = params.get("clock") or ""
        lr = self._root(root)
        with lr.lock:
            ws = lr.ws
            lr.fresh.sync()
            started = time.time_ns()
            paths = request.list_paths(ws, [], Filters(True, True, True))
            lr.fresh.baseline()
            snap = _Snapshot(started, {})
            for rel in paths:
                try:
                    st = os.lstat(ws.abspath(rel))
                except OSError:
                    continue  # deleted since the index listed it
                snap.files[rel] = _stat_key(st)
                if st.st_mtime_ns >= started - RACY_NS and stat_mod.S_ISREG(st.st_mode):
                    digest = _digest(ws.abspath(rel), self.settings.max_file_bytes)
                    if digest is not None:
                        snap.digests[rel] = digest
            old = lr.snapshots.get(clock)
            if old is None:
                changed, deleted = list(snap.files), []
            else:
                changed = [
                    p
                    for p, key in snap.files.items()
                    if old.files.get(p) != key
                    or (p in old.digests and old.digests[p] != snap.digests.get(p))
                    or (p not in old.digests and key[0] >= old.taken_ns - RACY_NS)
                ]
                deleted = sorted(
                    (p for p in old.files if p not in snap.files),
                    key=lambda p: p.encode("utf-8", "surrogateescape"),
                )
            new_clock = f"{ws.clock()}.{next(lr.minted)}"
            lr.snapshots[new_clock] = snap
            while len(lr.snapshots) > SNAPSHOTS_KEPT:
                lr.snapshots.popitem(last=False)
        return {
            "clock": new_clock,
            "isFreshInstance": old is None,
            "changed": changed,
            "deleted": deleted,
        }

    def call(self, method: str, params: dict[str, Any], root: str) -> Any:
        if method == "readMany/read":
            return self.read(params, root)
        if method == "readMany/files":
            return self.files(params, root)
        return self.changed_since(params, root)


# ------------------------------------------------------------------------------ daemon


class DaemonBackend:
    """Asks the shared daemon as ``readmany read`` does (``cli._daemon_answer``), and
    answers in process (``LocalBackend``) when it cannot, starting the daemon in the
    background for the next call (``cli._autostart``; at most once per
    ``RESPAWN_AFTER`` s while it starts)."""

    RESPAWN_AFTER = 30.0

    def __init__(self, local: LocalBackend) -> None:
        self.local = local
        self._spawned_at: float | None = None
        self._lock = threading.Lock()
        self.answered_by_daemon = 0

    def call(self, method: str, params: dict[str, Any], root: str) -> Any:
        from readmany_daemon import cli

        args = argparse.Namespace(root=root, no_daemon=False)
        answer = cli._daemon_answer(args, method, params)
        if answer is not None:
            self.answered_by_daemon += 1
            self.local.clear()
            return answer
        result = self.local.call(method, params, root)
        if not args.no_daemon:  # the daemon failed midway: it runs, do not start another
            with self._lock:
                now = time.monotonic()
                due = self._spawned_at is None or now - self._spawned_at > self.RESPAWN_AFTER
                if due:
                    self._spawned_at = now
            if due:
                cli._autostart(args)
        return result


# --------------------------------------------------------------------- results as content


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def read_content(answer: Mapping[str, Any], root: str) -> list[dict[str, Any]]:
    """``llmContent`` as text; image attachments as image content; other attachments
    (PDFs) as embedded blob resources with a ``file:`` URI."""
    from readmany_daemon.client import path_to_uri

    content = [_text(answer.get("llmContent", ""))]
    for att in answer.get("attachments") or []:
        mime = att.get("mimeType", "application/octet-stream")
        if mime.startswith("image/"):
            content.append({"type": "image", "data": att["data"], "mimeType": mime})
        else:
            path = att.get("path", "")
            full = path if os.path.isabs(path) else posixpath.join(root, path)
            content.append(
                {
                    "type": "resource",
                    "resource": {"uri": path_to_uri(full), "mimeType": mime, "blob": att["data"]},
                }
            )
    return content


def _cap(items: list[str], limit: int) -> tuple[list[str], bool]:
    return items[:limit], len(items) > limit


def files_answer(listed: Mapping[str, Any], limit: int) -> tuple[str, dict[str, Any]]:
    files = list(listed.get("files") or [])
    total = len(files)
    shown = files[:limit]
    structured = {
        "files": shown,
        "clock": listed.get("clock", ""),
        "total": total,
        "truncated": total > limit,
    }
    lines = [f"{total} file{'s' if total != 1 else ''} (clock {structured['clock']})"]
    lines += [f["path"] for f in shown]
    if total > limit:
        lines.append(f"[{total - limit} more not listed: narrow the patterns or raise limit.]")
    return "\n".join(lines) + "\n", structured


def changed_answer(delta: Mapping[str, Any], limit: int) -> tuple[str, dict[str, Any]]:
    changed, cut_c = _cap(list(delta.get("changed") or []), limit)
    deleted, cut_d = _cap(list(delta.get("deleted") or []), limit)
    total = len(delta.get("changed") or []) + len(delta.get("deleted") or [])
    structured = {
        "clock": delta.get("clock", ""),
        "isFreshInstance": bool(delta.get("isFreshInstance")),
        "changed": changed,
        "deleted": deleted,
        "total": total,
        "truncated": cut_c or cut_d,
    }
    lines = [f"clock: {structured['clock']} (pass it to changed_since next time)"]
    if structured["isFreshInstance"]:
        lines.append(
            "isFreshInstance: the clock was empty or unknown here, so every visible file "
            f"is listed as changed ({len(delta.get('changed') or [])} files)."
        )
    lines.append(f"changed ({len(delta.get('changed') or [])}):")
    lines += [f"  {p}" for p in changed]
    if cut_c:
        lines.append(f"  [{len(delta['changed']) - limit} more not listed: raise limit.]")
    lines.append(f"deleted ({len(delta.get('deleted') or [])}):")
    lines += [f"  {p}" for p in deleted]
    if cut_d:
        lines.append(f"  [{len(delta['deleted']) - limit} more not listed: raise limit.]")
    return "\n".join(lines) + "\n", structured


# ----------------------------------------------------------------------------- the app


class ToolFailure(Exception):
    """A tool call that failed as a whole: its text goes back with ``isError: true``."""


def _limit(args: dict[str, Any]) -> int:
    value = args.pop("limit", None)
    if value is None:
        return DEFAULT_LIST_LIMIT
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidParams(
            f"invalid params: Expected `int` >= 1, got `{value!r}` - at `$.limit`", "$.limit"
        )
    return value


def _object(arguments: Any) -> dict[str, Any]:
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise InvalidParams("invalid params: expected an object", "$")
    return dict(arguments)


class ReadManyMcp:
    """The tools, independent of the SDK: ``call(name, arguments, ask_roots)`` returns
    ``(content, structured)`` or raises ``ToolFailure`` / ``InvalidParams``."""

    def __init__(self, root: str | None = None, no_daemon: bool = False) -> None:
        self.fixed = [make_root(root)] if root is not None else None
        self._roots: list[Root] | None = self.fixed
        self.local = LocalBackend()
        disabled = os.environ.get("READMANY_NO_DAEMON", "") not in ("", "0")
        self.daemon = (
            None if (no_daemon or disabled or os.name != "posix") else DaemonBackend(self.local)
        )

    @property
    def backend(self) -> LocalBackend | DaemonBackend:
        return self.daemon if self.daemon is not None else self.local

    def roots_changed(self) -> None:
        """The client's roots changed: ask again at the next call."""
        if self.fixed is None:
            self._roots = None

    async def roots(self, ask: Callable[[], Any]) -> list[Root]:
        """``--root``, else the client's roots (``ask()`` returns file: URIs with names,
        or None when the client has none to give), else the current directory."""
        if self._roots is not None:
            return self._roots
        found: list[Root] = []
        for uri, name in await ask() or []:
            path = uri_to_path(uri)
            if path and os.path.isdir(path):
                found.append(make_root(path, name))
            else:
                log.warning("ignoring MCP root %s: not a local folder", uri)
        self._roots = found or [make_root(os.getcwd())]
        return self._roots

    async def call(
        self, name: str, arguments: Any, ask: Callable[[], Any]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        import anyio.to_thread

        from readmany_daemon.messages import fold_read_params

        args = _object(arguments)
        roots = await self.roots(ask)
        backend = self.backend
        if name == READ_TOOL:
            params = fold_read_params(args)
            raw_root = params.get("root")
            if raw_root is None:
                raw_root = _cursor_root(params.get("cursor"))
            root = resolve_root(raw_root, roots)
            params["root"] = root
            answer = await anyio.to_thread.run_sync(backend.call, "readMany/read", params, root)
            return read_content(answer, root), answer
        if name == FILES_TOOL:
            limit = _limit(args)
            root = resolve_root(args.get("root"), roots)
            args["root"] = root
            listed = await anyio.to_thread.run_sync(backend.call, "readMany/files", args, root)
            text, structured = files_answer(listed, limit)
            return [_text(text)], structured
        if name == CHANGED_TOOL:
            limit = _limit(args)
            unknown = sorted(set(args) - {"clock", "root"})
            if unknown:
                raise InvalidParams(
                    f"invalid params: Object contains unknown field `{unknown[0]}` - at `$`",
                    f"$.{unknown[0]}",
                )
            clock = args.get("clock")
            if clock is not None and not isinstance(clock, str):
                raise InvalidParams(
                    f"invalid params: Expected `str`, got `{type(clock).__name__}` - at `$.clock`",
                    "$.clock",
                )
            root = resolve_root(args.get("root"), roots)
            params = {"clock": clock or "", "root": root}
            delta = await anyio.to_thread.run_sync(
                backend.call, "readMany/changedSince", params, root
            )
            text, structured = changed_answer(delta, limit)
            return [_text(text)], structured
        raise ToolFailure(f"unknown tool {name!r}: use {READ_TOOL}, {FILES_TOOL} or {CHANGED_TOOL}")

    async def call_tool(self, name: str, arguments: Any, ask: Callable[[], Any]) -> dict[str, Any]:
        """``call`` as a ``CallToolResult`` (camelCase dict): failures become
        ``isError: true`` with one readable line, never an exception."""
        try:
            content, structured = await self.call(name, arguments, ask)
        except (ToolFailure, ReadManyError) as exc:
            return {"content": [_text(str(exc))], "isError": True}
        except Exception as exc:  # the tool boundary: report, keep serving, keep the trace
            log.exception("%s failed", name)
            return {
                "content": [
                    _text(f"readmany: internal error in {name}: {exc!r} (see the server log)")
                ],
                "isError": True,
            }
        return {"content": content, "structuredContent": structured, "isError": False}


# --------------------------------------------------------------------------- SDK wiring


def _sdk_major() -> int:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("mcp").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 2


async def _client_roots(session: Any) -> list[tuple[str, str | None]] | None:
    """The client's roots as (uri, name), or None when it does not offer roots or does
    not answer within ``ROOTS_TIMEOUT``."""
    import anyio
    import mcp.types as types

    caps = getattr(session, "client_capabilities", None)  # SDK 2.x
    if caps is None:
        params = getattr(session, "client_params", None)
        caps = getattr(params, "capabilities", None)
    if caps is None or getattr(caps, "roots", None) is None:
        return None
    if getattr(session, "can_send_request", True) is False:
        return None
    try:
        with anyio.fail_after(ROOTS_TIMEOUT):
            if hasattr(session, "client_capabilities"):
                # 2.x: the typed request (``list_roots`` warns: roots are deprecated in the
                # 2026-07-28 protocol, which this path never speaks).
                result = await session.send_request(types.ListRootsRequest(), types.ListRootsResult)
            else:
                result = await session.list_roots()
    except Exception as exc:  # the client's problem, not ours: fall back to the cwd
        log.warning("roots/list failed (%r); using the current directory", exc)
        return None
    return [(str(r.uri), getattr(r, "name", None)) for r in result.roots]


def build_server(app: ReadManyMcp) -> Any:
    """An SDK ``Server`` serving ``app``'s tools (SDK 2.x handlers, or 1.x decorators)."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    tools = [types.Tool.model_validate(t) for t in tool_definitions()]

    if _sdk_major() >= 2:

        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=tools)

        async def call_tool(ctx: Any, params: Any) -> Any:
            result = await app.call_tool(
                params.name, params.arguments, lambda: _client_roots(ctx.session)
            )
            return types.CallToolResult.model_validate(result)

        async def roots_changed(ctx: Any, params: Any) -> None:
            app.roots_changed()

        server = Server(
            SERVER_NAME,
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )
        server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, roots_changed
        )
        return server

    # SDK 1.x (typed against 2.x here, hence ``Any``)
    legacy: Any = Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS)

    @legacy.list_tools()  # type: ignore[untyped-decorator]
    async def _list_tools() -> list[Any]:
        return tools

    @legacy.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def _call_tool(name: str, arguments: dict[str, Any]) -> Any:
        session = legacy.request_context.session
        result = await app.call_tool(name, arguments, lambda: _client_roots(session))
        if result["isError"]:
            raise ToolFailure(result["content"][0]["text"])  # 1.x: isError with this text
        content: list[Any] = [types.TextContent.model_validate(result["content"][0])]
        for block in result["content"][1:]:
            cls = types.ImageContent if block["type"] == "image" else types.EmbeddedResource
            content.append(cls.model_validate(block))
        return content, result["structuredContent"]

    async def _roots_changed(_: Any) -> None:
        app.roots_changed()

    legacy.notification_handlers[types.RootsListChangedNotification] = _roots_changed
    return legacy


async def serve(app: ReadManyMcp) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(app)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run(root: str | None = None, no_daemon: bool = False) -> int:
    """``readmany mcp``: serve until the client closes stdin; returns the exit code."""
    import anyio

    if root is not None and not os.path.isdir(root):
        raise RootNotFound(f"--root: no such folder: {root}", "root")
    if not logging.getLogger().handlers:
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.WARNING,
            format="readmany mcp: %(levelname)s: %(message)s",
        )
    app = ReadManyMcp(root, no_daemon)
    anyio.run(serve, app)
    return 0
