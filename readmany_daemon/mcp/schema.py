"""The MCP tools as ``tools/list`` shows them: names, descriptions, input schemas.

- ``read_many_files`` → ``readMany/read``. Its input schema is ``ReadManyParams``
  (PROTOCOL §3) *with* the reference tools' spellings (``per_file_max_lines``,
  ``file_filtering_options.respect_git_ignore``, ``respect_sii_ignore``, …), so a call
  made for any of the four reference tools works unchanged.
- ``list_files`` → ``readMany/files``; ``changed_since`` → ``readMany/changedSince``.

The input schemas are written by hand (they repeat the defaults and aliases of
``wire/messages.py``); the output schemas are generated from the result Structs.
``tests/unit/test_mcp_schema.py`` pins all of it against a golden file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

READ_TOOL = "read_many_files"
FILES_TOOL = "list_files"
CHANGED_TOOL = "changed_since"

#: Paths listed by ``list_files`` / ``changed_since`` unless ``limit`` says otherwise.
DEFAULT_LIST_LIMIT = 1000

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
        "column": _int("1-based character of line offset where reading starts (a cut line)"),
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
        "redactSecrets": _bool(
            "false: show secrets (keys, tokens, passwords) as they are, not as "
            "«redacted:…» placeholders (default: the redactSecrets setting, true)"
        ),
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
    from readmany_daemon.wire.messages import FilesResult, ReadManyResult

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
