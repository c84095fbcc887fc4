"""The agent tools' schemas: generated from the wire Structs, pinned, small.

``golden/mcp_tools_list.json`` holds every tool's name, title, description, input and
output schema, annotations and ``_meta``, plus the server's instructions, as
``tools/list`` shows them with the default settings. Regenerate it after a deliberate
change with ``python -m tests.unit.mcp.test_schema`` and review the diff.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readmany_daemon.mcp import schema
from readmany_daemon.mcp.schema import INSTRUCTIONS, tool_definitions
from readmany_daemon.settings import Settings
from readmany_daemon.wire import messages

GOLDEN = Path(__file__).parent / "golden" / "mcp_tools_list.json"
PACKAGE_JSON = Path(__file__).resolve().parents[3] / "editors" / "vscode" / "package.json"

#: Issue targets (compact JSON): the whole ``tools/list`` result, and the read tool's
#: description plus input schema. Measured with the next issue's fields added (receipts,
#: redaction, notebook cells: about 450 characters more), both still hold. The read
#: tool's output schema names the summary's counters (issue 23: 377 characters more,
#: 7,555 in all).
TOOLS_LIST_MAX = 8000
READ_TOOL_MAX = 3500


def _listed() -> dict[str, Any]:
    return {"instructions": INSTRUCTIONS, "tools": tool_definitions()}


def _golden_text() -> str:
    return json.dumps(_listed(), indent=2, ensure_ascii=False) + "\n"


def _compact(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":")))


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def test_tools_list_matches_the_golden_file() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    listed = _listed()
    assert [t["name"] for t in listed["tools"]] == [t["name"] for t in golden["tools"]]
    for got, want in zip(listed["tools"], golden["tools"], strict=True):
        assert got == want, got["name"]
    assert listed == golden


def test_tools_list_keeps_the_golden_key_order() -> None:
    """Byte for byte, key order included (what a client shows the model)."""
    assert _golden_text() == GOLDEN.read_text(encoding="utf-8")


def test_sizes_hold() -> None:
    tools = tool_definitions()
    assert _compact({"tools": tools}) <= TOOLS_LIST_MAX
    read = tools[0]
    assert read["name"] == schema.READ_TOOL
    assert len(read["description"]) + _compact(read["inputSchema"]) <= READ_TOOL_MAX


def test_only_canonical_names_are_advertised() -> None:
    """Every property name is camelCase (no alias spelling), and the read tool's are
    exactly ``ReadManyParams``' fields, in order."""
    for tool in tool_definitions():
        for node in _walk(tool["inputSchema"]):
            for name in node.get("properties", {}):
                assert re.fullmatch(r"[a-z][A-Za-z0-9]*", name), (tool["name"], name)
    fields = [f.encode_name for f in msgspec.structs.fields(messages.ReadManyParams)]
    advertised = [name for name in fields if name not in schema.NOT_ADVERTISED]
    assert list(tool_definitions()[0]["inputSchema"]["properties"]) == advertised


#: What issue 25's two fields (``focus``, ``order``) may take of the read tool's part,
#: and what its answer fields (``rank``, ``why``, ``summary.ranking``) may take of the
#: output schema (characters, compact JSON).
FOCUS_INPUT_MAX = 250
FOCUS_OUTPUT_MAX = 250


def test_focus_and_order_are_advertised_within_their_allowance() -> None:
    """Both tools advertise ``focus`` (1 to 2,000 characters) and ``order`` (its values
    in declared order); their texts take at most :data:`FOCUS_INPUT_MAX` characters, the
    answer's ranking fields at most :data:`FOCUS_OUTPUT_MAX` of ``tools/list``."""
    assert schema.NOT_ADVERTISED == ()
    for props in (
        tool_definitions()[0]["inputSchema"]["properties"],
        schema.vscode_input_schema()["properties"],
    ):
        assert props["order"]["enum"] == ["request-order", "rank", "stable"]
        assert props["focus"]["type"] == "string" and props["focus"]["maxLength"] == 2000
        assert "cursor" in props["focus"]["description"]
    props = tool_definitions()[0]["inputSchema"]["properties"]
    spent = _compact({"focus": props["focus"], "order": props["order"]}) - 2
    assert spent <= FOCUS_INPUT_MAX
    out = tool_definitions()[0]["outputSchema"]["properties"]
    ranking = out["summary"]["properties"]["ranking"]
    assert set(ranking["properties"]) == {"signals", "indexedFiles", "pendingFiles"}
    item = out["files"]["items"]["properties"]
    assert item["rank"] == {"type": "integer"} and item["why"] == {"type": "string"}
    added = {"ranking": ranking, "rank": item["rank"], "why": item["why"]}
    assert _compact(added) - 2 <= FOCUS_OUTPUT_MAX


def test_every_request_field_is_described_once() -> None:
    """Each field of the request Structs has its entry in ``FIELD_DOCS`` (``None``: the
    name says it), and no entry names a field that does not exist."""
    names: set[str] = set()
    for cls in (
        messages.FileSpec,
        messages.FileFilteringOptions,
        messages.Known,
        messages.ReadManyParams,
        messages.ChangesSpec,
        messages.FilesParams,
        messages.ChangedSinceParams,
    ):
        names |= {f.encode_name for f in msgspec.structs.fields(cls)}
    assert names == set(messages.FIELD_DOCS)
    for doc in messages.FIELD_DOCS.values():
        assert doc is None or (doc.endswith(".") and len(doc) <= 80), doc


def test_the_tool_budgets_are_the_read_tools_defaults() -> None:
    props = tool_definitions()[0]["inputSchema"]["properties"]
    assert props["maxTotalTokens"]["default"] == 20000
    assert props["maxTotalTokens"]["minimum"] == messages.MIN_TOTAL_TOKENS
    assert props["maxTotalChars"]["default"] == 50000
    assert props["perFileMaxLines"]["default"] == 200  # the protocol's, unchanged
    assert props["packing"]["default"] == "outlines"  # the tools' own (PROTOCOL §4 "Outlines")
    mine = Settings(tool_max_total_tokens=30000, tool_max_total_chars=90000)
    props = tool_definitions(mine)[0]["inputSchema"]["properties"]
    assert (props["maxTotalTokens"]["default"], props["maxTotalChars"]["default"]) == (
        30000,
        90000,
    )


def test_enums_keep_their_declared_order() -> None:
    props = tool_definitions()[0]["inputSchema"]["properties"]
    assert props["format"]["enum"] == ["separator", "heredoc", "xml", "json"]
    assert props["packing"]["enum"] == ["auto", "request-order", "smallest-first", "outlines"]


def test_the_read_tool_declares_its_result_size() -> None:
    read = tool_definitions()[0]
    assert read["_meta"] == {"anthropic/maxResultSizeChars": schema.MAX_RESULT_SIZE_CHARS}
    out = read["outputSchema"]["properties"]
    assert "llmContent" not in out and "returnDisplay" not in out
    assert "data" not in out["attachments"]["items"]["properties"]


def test_structured_text_declares_llm_content_in_every_output_schema() -> None:
    """``mcpStructuredText``: each output schema names ``llmContent`` first, optional;
    the rest as without it (the default list stays the golden one)."""
    plain = tool_definitions(Settings())
    assert plain == tool_definitions()
    with_text = tool_definitions(Settings(mcp_structured_text=True))
    for got, want in zip(with_text, plain, strict=True):
        out = got["outputSchema"]
        assert next(iter(out["properties"])) == "llmContent"
        assert out["properties"]["llmContent"] == {"type": "string"}
        assert "llmContent" not in out.get("required", [])
        rest = {k: v for k, v in out["properties"].items() if k != "llmContent"}
        assert {**out, "properties": rest} == want["outputSchema"]
        assert {k: v for k, v in got.items() if k != "outputSchema"} == {
            k: v for k, v in want.items() if k != "outputSchema"
        }
    assert _compact({"tools": with_text}) <= TOOLS_LIST_MAX


def test_the_read_tool_names_the_summary_counters() -> None:
    """``summary``'s counters, those that add up to ``matched`` and ``noMatch``,
    ``hidden`` and ``hiddenFolders`` beside them (PROTOCOL §4), are in the output schema."""
    out = tool_definitions()[0]["outputSchema"]["properties"]["summary"]["properties"]
    for name in ("matched", "read", "omitted", "skipped", "errors", "unchanged", "noMatch"):
        assert out[name] == {"type": "integer"}, name
    assert out["hidden"] == out["hiddenFolders"] == {"type": "object"}


def test_the_sdk_passes_the_tools_through_unchanged() -> None:
    """``mcp.types.Tool`` neither drops nor adds a field of the definitions (``_meta``
    included)."""
    import mcp.types as types

    for tool in tool_definitions():
        dumped = types.Tool.model_validate(tool).model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
        assert dumped == tool


def test_the_vscode_manifest_holds_the_generated_schema() -> None:
    """editors/vscode/package.json's tool ``inputSchema`` is the generated one (rewrite it
    with ``python -m readmany_daemon.mcp.schema editors/vscode/package.json``)."""
    text = PACKAGE_JSON.read_text(encoding="utf-8")
    assert schema.vscode_manifest(text) == text
    assert schema.main(["--check", str(PACKAGE_JSON)]) == 0
    manifest = json.loads(text)
    props = manifest["contributes"]["languageModelTools"][0]["inputSchema"]["properties"]
    mcp_props = tool_definitions()[0]["inputSchema"]["properties"]
    assert list(props) == list(mcp_props)
    assert props["maxTotalChars"]["default"] == 50000


def test_main_rewrites_a_stale_manifest(tmp_path: Path) -> None:
    stale = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    stale["contributes"]["languageModelTools"][0]["inputSchema"] = {"type": "object"}
    path = tmp_path / "package.json"
    path.write_text(json.dumps(stale, indent=2) + "\n", encoding="utf-8")
    assert schema.main(["--check", str(path)]) == 1
    assert schema.main([str(path)]) == 0
    assert schema.main(["--check", str(path)]) == 0
    assert schema.main([]) == 2


@pytest.mark.parametrize("name", ["paths", "files", "maxTotalTokens", "cursor"])
def test_generated_fields_carry_their_description(name: str) -> None:
    prop = tool_definitions()[0]["inputSchema"]["properties"][name]
    assert prop["description"] == messages.FIELD_DOCS[name]


def test_receipts_are_described_as_of_whole_files() -> None:
    """A ``partial`` entry has a ``sha256`` too (of the whole file): the advertised
    description must say that only a file held whole is a receipt (PROTOCOL §4)."""
    prop = tool_definitions()[0]["inputSchema"]["properties"]["known"]
    assert "whole" in prop["description"]


if __name__ == "__main__":
    GOLDEN.write_text(_golden_text(), encoding="utf-8")


def test_no_null_branches() -> None:
    """docs/mcp.md: no ``null`` branches in any schema (an optional member is left out
    when it has no value; the Inspector's ``--strict`` check warns on a null type)."""
    for tool in tool_definitions():
        for key in ("inputSchema", "outputSchema"):
            for node in _walk(tool.get(key, {})):
                kinds = node.get("type")
                assert kinds != "null" and "null" not in (kinds or []), (tool["name"], key, node)
                assert {"type": "null"} not in node.get("anyOf", []), (tool["name"], key, node)
