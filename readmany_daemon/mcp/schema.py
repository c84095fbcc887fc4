"""The agent tools as clients show them: names, descriptions, input and output schemas,
generated from the wire Structs (``wire/messages.py``).

- ``read_many_files`` → ``readMany/read``; ``list_files`` → ``readMany/files``;
  ``changed_since`` → ``readMany/changedSince`` (MCP ``tools/list``);
- ``vscode_input_schema``: the VS Code Language Model Tool's ``inputSchema``
  (``contributes.languageModelTools`` in editors/vscode/package.json, rewritten by
  ``python -m readmany_daemon.mcp.schema PACKAGE_JSON``; ``--check`` only compares).

Every client re-sends tool definitions to the model on every turn, so the schemas are
lean: ``msgspec.json.schema`` of the Structs with references inlined; titles,
docstrings, ``null`` branches, empty or false defaults and bounds of 1 left out; each
field described once (``messages.FIELD_DOCS``); each surface's own defaults (the tool
budgets: ``Settings.tool_max_total_tokens`` / ``tool_max_total_chars``). Only canonical
camelCase names are advertised; the decoder accepts every alias (PROTOCOL §3). Output
schemas type the top-level members; nested objects name only their required members.
``tests/unit/mcp/test_schema.py`` pins the result against a golden file and its sizes.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from readmany_daemon.settings import Settings
from readmany_daemon.wire import messages, replies

READ_TOOL = "read_many_files"
FILES_TOOL = "list_files"
CHANGED_TOOL = "changed_since"

#: Paths listed by ``list_files`` / ``changed_since`` unless ``limit`` says otherwise.
DEFAULT_LIST_LIMIT = 1000

#: ``_meta["anthropic/maxResultSizeChars"]`` of the read tool: Claude Code keeps a tool
#: result up to this many characters in the conversation instead of moving it to a file
#: (its own default is 50,000; 500,000 is the most it accepts). A call that raises
#: ``maxTotalChars`` / ``maxTotalTokens`` gets its answer inline up to this size.
MAX_RESULT_SIZE_CHARS = 500_000

#: The read tool's ``structuredContent`` members (``ReadManyResult`` without the text:
#: ``llmContent`` and ``returnDisplay`` are the content block, attachments go without
#: their data).
READ_STRUCTURED = (
    "files",
    "summary",
    "packing",
    "clock",
    "attachments",
    "nextCursor",
    "createdPaths",
    "stale",
    "changes",
)

READ_DESCRIPTION = """\
Read many files in one call: paths, folders, globs (`src/**/*.ts`). Ignored and binary \
files are skipped; images and PDFs named exactly are attached. End notices say what \
was cut and how to continue (`files: [{"path": "a.py", "offset": 201}]`; \
`{"cursor": "..."}` alone, or with the same focus); raise maxTotalTokens for more."""

FILES_DESCRIPTION = """\
List the workspace's files as read_many_files' globs and folders see them (ignore rules \
and default excludes applied), optionally only those matching `patterns`; no content. \
The text is one path a line, sorted; structured content adds size (bytes), mtime (ms) \
and a `clock` for changed_since."""

CHANGED_DESCRIPTION = """\
Files created, modified or deleted since the `clock` of an earlier answer, and a new \
clock for next time: re-read only what changed. An empty or unknown clock answers \
`isFreshInstance: true` with every visible file as changed (a baseline)."""

INSTRUCTIONS = """\
readmany reads many workspace files at once, exactly and within budgets. Use \
read_many_files to read several files, a folder or a glob in one call (follow its \
offset / cursor notices to continue), list_files to see which files exist, and \
changed_since to learn what changed since an earlier answer."""

_LIMIT = {
    "type": "integer",
    "minimum": 1,
    "default": DEFAULT_LIST_LIMIT,
    "description": "Most paths in the answer.",
}

# --------------------------------------------------------------------------- generation


def _structs(cls: type) -> dict[str, type]:
    """``cls`` and every Struct its fields name, by class name."""
    found: dict[str, type] = {}

    def walk(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            if tp.__name__ in found:
                return
            found[tp.__name__] = tp
            for f in msgspec.structs.fields(tp):
                walk(f.type)
        for arg in typing.get_args(tp):
            walk(arg)

    walk(cls)
    return found


def _enums(cls: type) -> dict[str, list[Any]]:
    """Wire name -> the values of a ``Literal`` field, in declared order (msgspec sorts
    them)."""
    out: dict[str, list[Any]] = {}
    for f in msgspec.structs.fields(cls):
        tp = f.type
        if typing.get_origin(tp) in (typing.Union, types.UnionType):  # ``Literal | None``
            tp = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
        if typing.get_origin(tp) is typing.Literal:
            out[f.encode_name] = list(typing.get_args(tp))
    return out


def _trivial(node: Any) -> Any:
    """``node`` without the bounds every client assumes: ``minimum: 1`` of a count and
    ``minLength: 1`` of a path (the decoder still enforces them, naming the field)."""
    if isinstance(node, list):
        return [_trivial(n) for n in node]
    if not isinstance(node, dict):
        return node
    return {
        k: _trivial(v)
        for k, v in node.items()
        if not (k in ("minimum", "minLength") and v == 1 and not isinstance(v, bool))
    }


def _non_null(node: dict[str, Any]) -> dict[str, Any]:
    """``{"anyOf": [X, {"type": "null"}], …}`` → ``X`` with the other keys; a
    ``null`` default dropped (an absent member means the same)."""
    branches = node.get("anyOf")
    if branches and {"type": "null"} in branches:
        rest = [b for b in branches if b != {"type": "null"}]
        node = {k: v for k, v in node.items() if k != "anyOf"}
        node = {**rest[0], **node} if len(rest) == 1 else {"anyOf": rest, **node}
    if node.get("default", 0) is None:
        node = {k: v for k, v in node.items() if k != "default"}
    return node


class _Inputs:
    """One input-schema generation: the Structs' definitions and the surface's choices."""

    def __init__(self, cls: type, strict: bool) -> None:
        self.defs = msgspec.json.schema_components([cls])[1]
        self.classes = _structs(cls)
        self.strict = strict

    def node(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.node(n) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self.struct(ref.rsplit("/", 1)[1])
        return {k: self.node(v) for k, v in node.items()}

    def struct(self, name: str, defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
        raw = self.defs[name]
        enums = _enums(self.classes[name])
        props: dict[str, Any] = {}
        for key, prop in raw["properties"].items():
            prop = _non_null(_trivial(self.node(prop)))
            if key in enums:
                values = enums[key]
                kind = {"type": "string"} if all(isinstance(v, str) for v in values) else {}
                prop = {**kind, "enum": values, **{k: v for k, v in prop.items() if k != "enum"}}
            if prop.get("default") is False or prop.get("default") in ([], {}):
                prop.pop("default")
            if "$ref" in raw["properties"][key]:
                prop.pop("default", None)  # a nested object's: its members have them
            branches = prop.get("anyOf")
            if branches and {b.get("type") for b in branches} == {"string", "integer"}:
                # A string or an integer (a cell range, or one cell): advertised as the
                # string, a form every client's schema subset takes; both are accepted.
                string = next(b for b in branches if b.get("type") == "string")
                prop = {**string, **{k: v for k, v in prop.items() if k != "anyOf"}}
            # Patterns (a sha256, a cell range) are the server's to check: it names the
            # field of a bad value; the description says the form.
            prop.pop("pattern", None)
            if defaults and key in defaults:
                prop["default"] = defaults[key]
            doc = messages.FIELD_DOCS[key]
            if doc is not None:
                prop["description"] = doc
            props[key] = prop
        out: dict[str, Any] = {"type": "object", "properties": props}
        if raw.get("required"):
            out["required"] = list(raw["required"])
        if self.strict:
            out["additionalProperties"] = False
        return out


def input_schema(
    cls: type,
    defaults: Mapping[str, Any] | None = None,
    *,
    strict: bool = False,
    plain: Sequence[str] = (),
) -> dict[str, Any]:
    """The input schema of request Struct ``cls`` (``ReadManyParams``, ``FilesParams``,
    ``ChangedSinceParams``).

    ``defaults``: this surface's defaults (canonical names) over the Struct's.
    ``strict``: ``additionalProperties: false`` on every object (only where the client
    never sees another spelling). ``plain``: array fields whose items may be a string or
    an object advertised with strings only (``paths``: its ``{path, offset}`` entries are
    what ``files`` is for; both are accepted). Raises ``KeyError`` for a field without a
    description in ``messages.FIELD_DOCS``.
    """
    gen = _Inputs(cls, strict)
    schema = gen.struct(cls.__name__, defaults)
    for key in plain:
        items = schema["properties"][key]["items"]
        schema["properties"][key]["items"] = items["anyOf"][0]
    return schema


def _lean(node: Any, defs: Mapping[str, Any], depth: int) -> Any:
    """An output-schema node: types only (no titles, docstrings, defaults), references
    inlined; an object below ``depth`` levels names only its required members (none:
    ``{"type": "object"}``)."""
    if isinstance(node, dict) and "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[1]]
    if not isinstance(node, dict):
        return node
    if "anyOf" in node:
        types = [b.get("type") for b in node["anyOf"]]
        if all(isinstance(t, str) for t in types):
            return {"type": types}
        given = [b for b in node["anyOf"] if b.get("type") != "null"]
        if len(given) == 1:  # an optional object: the object (absent when it has none)
            return _lean(given[0], defs, depth)
    if node.get("type") == "object":
        names = list(node.get("properties", ())) if depth > 0 else node.get("required", [])
        if not names:
            return {"type": "object"}
        props = {k: _lean(node["properties"][k], defs, depth - 1) for k in names}
        out: dict[str, Any] = {"type": "object", "properties": props}
        if node.get("required"):
            out["required"] = node["required"]
        return out
    if node.get("type") == "array":
        return {"type": "array", "items": _lean(node.get("items", {}), defs, depth)}
    return {k: v for k, v in node.items() if k in ("type", "enum")}


#: The optional members of a ``files`` entry the read tool's ``outputSchema`` names: a
#: ranked answer's (PROTOCOL §4 "Focus").
RANKED_FILE = ("rank", "why")


def output_schema(
    cls: type,
    keep: Sequence[str] | None = None,
    extra: Mapping[str, Any] | None = None,
    drop: Mapping[str, Sequence[str]] | None = None,
    full: Sequence[str] = (),
    named: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The MCP ``outputSchema`` of result Struct ``cls``: an object (MCP requires
    ``type: object`` at the top) of the members ``keep`` (default all) and ``extra``,
    typed; a nested object (or array item) names only its required members, except the
    members ``full`` names, which name all theirs, and the optional members ``named``
    gives for an array member's items (member -> names). ``drop`` names members of an
    item Struct left out (by Struct name)."""
    defs = dict(msgspec.json.schema_components([cls])[1])
    for name, members in (drop or {}).items():
        d = defs[name]
        props = {k: v for k, v in d["properties"].items() if k not in members}
        required = [k for k in d.get("required", []) if k not in members]
        defs[name] = {**d, "properties": props, "required": required}
    top = defs[cls.__name__]
    names = list(top["properties"]) if keep is None else list(keep)
    props = {k: _lean(top["properties"][k], defs, 1 if k in full else 0) for k in names}
    for k in set(names) - set(top.get("required", ())):
        # An optional member is left out when it has no value (``omit_defaults``), never
        # sent as null: no ``null`` branch (the Inspector's --strict check warns on one).
        kinds = props[k].get("type")
        if isinstance(kinds, list) and "null" in kinds:
            rest = [t for t in kinds if t != "null"]
            props[k] = {**props[k], "type": rest[0] if len(rest) == 1 else rest}
    for member, optional in (named or {}).items():
        ref = top["properties"][member]["items"]["$ref"].rsplit("/", 1)[1]
        item = props[member]["items"]
        for k in optional:
            lean = _lean(defs[ref]["properties"][k], defs, 0)
            kinds = [t for t in lean.get("type", ()) if t != "null"]
            item["properties"][k] = {"type": kinds[0]} if len(kinds) == 1 else lean
    out: dict[str, Any] = {"type": "object", "properties": {**props, **(extra or {})}}
    required = [k for k in top.get("required", []) if k in names]
    if required:
        out["required"] = required
    return out


def tool_budgets(settings: Settings | None = None) -> dict[str, int | str]:
    """The agent tools' own defaults (canonical names): ``maxTotalTokens`` from the
    setting ``toolMaxTotalTokens``; ``maxTotalChars`` (content) and ``maxAnswerChars``
    (the whole text) from ``toolMaxTotalChars``; and ``packing: "outlines"`` (what does
    not fit comes as outlines; PROTOCOL §4)."""
    s = Settings() if settings is None else settings
    return {
        "maxTotalTokens": s.tool_max_total_tokens,
        "maxTotalChars": s.tool_max_total_chars,
        "maxAnswerChars": s.tool_max_total_chars,
        "packing": "outlines",
    }


def with_tool_budgets(args: Mapping[str, Any], settings: Settings | None = None) -> dict[str, Any]:
    """A tool call's arguments (canonical names, aliases folded) with the tool budgets
    under its own values. A call that asks for more than the budgets (a larger
    ``maxTotalChars`` or ``maxTotalTokens``) and sets no ``maxAnswerChars`` gets no
    ``maxAnswerChars``: the text may then grow with what it asked for."""
    budgets = tool_budgets(settings)
    asks_more = False
    for name in ("maxTotalChars", "maxTotalTokens"):
        own, default = args.get(name), budgets[name]
        if isinstance(own, int) and isinstance(default, int) and own > default:
            asks_more = True
    if asks_more and "maxAnswerChars" not in args:
        del budgets["maxAnswerChars"]
    return {**budgets, **args}


#: ``ReadManyParams`` fields the tools do not advertise (the wire and the CLI take
#: them; the tools' footprint makes room for them first: docs/mcp.md).
NOT_ADVERTISED: tuple[str, ...] = ()


def _advertised(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the fields of :data:`NOT_ADVERTISED`."""
    for key in NOT_ADVERTISED:
        schema["properties"].pop(key, None)
    return schema


def read_input_schema(settings: Settings | None = None) -> dict[str, Any]:
    """``read_many_files``' input schema: ``ReadManyParams`` with the tool budgets."""
    return _advertised(
        input_schema(messages.ReadManyParams, tool_budgets(settings), plain=("paths",))
    )


def vscode_input_schema(settings: Settings | None = None) -> dict[str, Any]:
    """The VS Code tool's ``inputSchema``: ``ReadManyParams`` with the tool budgets, strict
    (VS Code shows the model no other spelling)."""
    return _advertised(
        input_schema(messages.ReadManyParams, tool_budgets(settings), strict=True, plain=("paths",))
    )


#: The output-schema member of each tool's text under ``mcpStructuredText``.
STRUCTURED_TEXT = {"llmContent": {"type": "string"}}


def with_structured_text(output: dict[str, Any]) -> dict[str, Any]:
    """``output`` (an ``outputSchema``) with ``llmContent``, the tool's text, as its first
    member, optional (``mcpStructuredText``: the structured content then carries it)."""
    return {**output, "properties": {**STRUCTURED_TEXT, **output["properties"]}}


def tool_definitions(settings: Settings | None = None) -> list[dict[str, Any]]:
    """The three tools as ``tools/list`` entries (camelCase, as on the wire), with the
    budgets of ``settings`` (default: the defaults) as the read tool's defaults; with
    ``mcpStructuredText`` each output schema names ``llmContent`` (the text) too."""
    hints = {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    listing = {"total": {"type": "integer"}, "truncated": {"type": "boolean"}}
    files_input = input_schema(messages.FilesParams)
    files_input["properties"]["limit"] = _LIMIT
    changed_input = input_schema(messages.ChangedSinceParams)
    del changed_input["required"]  # the tool's clock is optional: none is a baseline
    changed_input["properties"]["limit"] = _LIMIT
    strings = {"type": "array", "items": {"type": "string"}}
    changed_output = {
        "type": "object",
        "properties": {
            "clock": {"type": "string"},
            "isFreshInstance": {"type": "boolean"},
            "changed": strings,
            "deleted": strings,
            **listing,
        },
        "required": ["clock", "isFreshInstance", "changed", "deleted"],
    }
    read_output = output_schema(
        messages.ReadManyResult,
        READ_STRUCTURED,
        # ``stale``: its items' members are named in the description of the result
        # (docs/mcp.md), not here: ``tools/list`` stays within 8,000.
        extra={
            "filesLeftOut": {"type": "integer"},
            "stale": {"type": "array"},
            "staleTruncated": {"type": "boolean"},
        },
        drop={"Attachment": ("data",)},
        full=("summary",),  # the counters (PROTOCOL §4: which add up to matched)
        named={"files": RANKED_FILE},
    )
    # summary.ranking always has its three members: saying so would cost 52 characters
    # of every turn's tools/list.
    read_output["properties"]["summary"]["properties"]["ranking"].pop("required", None)
    tools: list[dict[str, Any]] = [
        {
            "name": READ_TOOL,
            "title": "Read many files",
            "description": READ_DESCRIPTION,
            "inputSchema": read_input_schema(settings),
            "outputSchema": read_output,
            "annotations": hints,
            "_meta": {"anthropic/maxResultSizeChars": MAX_RESULT_SIZE_CHARS},
        },
        {
            "name": FILES_TOOL,
            "title": "List files",
            "description": FILES_DESCRIPTION,
            "inputSchema": files_input,
            "outputSchema": output_schema(replies.FilesResult, extra=listing),
            "annotations": hints,
        },
        {
            "name": CHANGED_TOOL,
            "title": "Files changed since a clock",
            "description": CHANGED_DESCRIPTION,
            "inputSchema": changed_input,
            "outputSchema": changed_output,
            "annotations": {**hints, "idempotentHint": False},
        },
    ]
    changes = tools[0]["outputSchema"]["properties"]["changes"]
    changes["properties"] = {k: {"type": v["type"]} for k, v in changes["properties"].items()}
    del changes["required"]  # members typed, not their items: the footprint (docs/mcp.md)
    if settings is not None and settings.mcp_structured_text:
        for tool in tools:
            tool["outputSchema"] = with_structured_text(tool["outputSchema"])
    return tools


# ------------------------------------------------------------------ the VS Code manifest


def vscode_manifest(text: str, settings: Settings | None = None) -> str:
    """package.json ``text`` with its ``languageModelTools[0].inputSchema`` generated
    (2-space JSON, as npm writes it)."""
    manifest = json.loads(text)
    manifest["contributes"]["languageModelTools"][0]["inputSchema"] = vscode_input_schema(settings)
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m readmany_daemon.mcp.schema [--check] PACKAGE_JSON``: rewrite the VS Code
    tool's input schema in place, or (``--check``) exit 1 when it differs."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    if len(paths) != 1:
        print("usage: python -m readmany_daemon.mcp.schema [--check] PACKAGE_JSON", file=sys.stderr)
        return 2
    with open(paths[0], encoding="utf-8") as f:
        text = f.read()
    wanted = vscode_manifest(text)
    if wanted == text:
        return 0
    if check:
        print(f"{paths[0]}: the tool's inputSchema is not the generated one", file=sys.stderr)
        return 1
    with open(paths[0], "w", encoding="utf-8") as f:
        f.write(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
