"""``readmany mcp`` end to end: the official SDK's stdio client talks to the real process.

Each test starts ``python -m readmany_daemon mcp --root TMP`` (``--no-daemon`` through
``READMANY_NO_DAEMON``, from the ``env`` fixture) and speaks MCP to it with
``mcp.client.stdio.stdio_client`` + ``ClientSession``; one test goes through the shared
daemon (started by the server, stopped by the test's finalizer).
"""

from __future__ import annotations

import base64
import datetime
import itertools
import json
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from readmany_daemon.content import tokens
from tests.helpers import write_tree

REPO = Path(__file__).resolve().parents[2]


def _png() -> bytes:
    """A valid 1x1 RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def _dump(obj: Any) -> Any:
    """An SDK model as its wire (camelCase) dict, whatever the SDK's major version."""
    return obj.model_dump(by_alias=True, mode="json", exclude_none=True)


def roots_callback(roots: list[Path]) -> Any:
    """A client's ``list_roots_callback`` that answers ``roots`` (``file:`` URIs, each
    named by its last component)."""
    import mcp.types as types

    async def list_roots(context: Any) -> Any:
        return types.ListRootsResult.model_validate(
            {"roots": [{"uri": p.as_uri(), "name": p.name} for p in roots]}
        )

    return list_roots


@asynccontextmanager
async def mcp_session(
    env: dict[str, str],
    *args: str,
    cwd: Path | None = None,
    roots: list[Path] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized session with ``readmany mcp ARGS`` (a new process)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "readmany_daemon", "mcp", *args],
        env=env,
        cwd=str(cwd or REPO),
    )
    timeout: Any = 60.0
    if version("mcp").startswith("1."):  # SDK 1.x takes a timedelta
        timeout = datetime.timedelta(seconds=60)
    kwargs: dict[str, Any] = {"read_timeout_seconds": timeout}
    if roots is not None:
        kwargs["list_roots_callback"] = roots_callback(roots)
    with open(Path(env["HOME"]) / "mcp-stderr.log", "a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as streams,
            ClientSession(streams[0], streams[1], **kwargs) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``tools/call`` as the wire dict (content, structuredContent, isError)."""
    result = _dump(await session.call_tool(name, arguments))
    result.setdefault("isError", False)
    return result


async def read(session: ClientSession, **arguments: Any) -> dict[str, Any]:
    """``read_many_files`` that must succeed: the wire dict."""
    result = await call(session, "read_many_files", arguments)
    assert not result["isError"], result["content"][0]["text"]
    return result


def text(result: dict[str, Any]) -> str:
    first = result["content"][0]
    assert first["type"] == "text"
    out: str = first["text"]
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(
        root,
        {
            "README.md": "# demo\n",
            "src/a.py": "print('a')\n",
            "src/b.py": "print('b')\n",
            "src/pkg/c.py": "print('c')\n",
            "node_modules/dep/index.js": "module.exports = 1\n",
            "build/out.js": "built\n",
            ".gitignore": "build/\n",
        },
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


# ------------------------------------------------------------------------------- tools


async def test_tools_are_listed_with_schemas(env: dict[str, str], tree: Path) -> None:
    async with mcp_session(env, "--root", str(tree)) as session:
        tools = {t["name"]: t for t in (_dump(t) for t in (await session.list_tools()).tools)}
    assert set(tools) == {"read_many_files", "list_files", "changed_since"}
    schema = tools["read_many_files"]["inputSchema"]
    props = schema["properties"]
    for name in (
        "paths",
        "files",
        "include",
        "exclude",
        "recursive",
        "useDefaultExcludes",
        "perFileMaxLines",
        "perFileMaxChars",
        "maxTotalFiles",
        "maxTotalChars",
        "preferFullRead",
        "packing",
        "stopOnError",
        "format",
        "lineNumbers",
        "absolutePaths",
        "root",
        "sync",
        "cursor",
        "fileFilteringOptions",
    ):
        assert name in props, name
    # only canonical names are advertised (the aliases are accepted, see the next test)
    for alias in ("per_file_max_lines", "max_total_chars", "file_filtering_options"):
        assert alias not in props, alias
    assert props["maxTotalTokens"]["default"] == 20000
    assert props["maxTotalChars"]["default"] == 50000
    assert tools["read_many_files"]["_meta"] == {"anthropic/maxResultSizeChars": 500000}
    assert schema.get("additionalProperties", True) is not False
    assert "required" not in schema
    # every ReadManyParams field is described
    import msgspec

    from readmany_daemon.mcp.schema import NOT_ADVERTISED
    from readmany_daemon.wire.messages import ReadManyParams

    for f in msgspec.structs.fields(ReadManyParams):
        assert (f.encode_name in props) != (f.encode_name in NOT_ADVERTISED), f.encode_name
    for tool in tools.values():
        assert tool["outputSchema"]["type"] == "object"
        assert tool["annotations"]["readOnlyHint"] is True
    desc = tools["read_many_files"]["description"]
    assert "cursor" in desc and "offset" in desc and "maxTotalTokens" in desc
    assert "clock" in tools["changed_since"]["description"]
    assert tools["list_files"]["inputSchema"]["properties"]["patterns"]["type"] == "array"


async def test_reads_a_real_tree_in_every_reference_shape(env: dict[str, str], tree: Path) -> None:
    async with mcp_session(env, "--root", str(tree)) as session:
        # 002: globs and folders; ignored and default-excluded files stay out
        r = await read(session, paths=["src/", "README.md", "**/*.js"])
        body = text(r)
        assert "--- src/a.py ---\nprint('a')\n" in body
        assert "--- src/pkg/c.py ---" in body and "--- README.md ---\n# demo\n" in body
        assert "node_modules" not in body and "build/out.js" not in body
        s = r["structuredContent"]
        assert [f["path"] for f in s["files"] if f["status"] == "ok"] == [
            "src/a.py",
            "src/b.py",
            "src/pkg/c.py",
            "README.md",
        ]
        assert s["summary"]["read"] == 4
        assert "llmContent" not in s and "returnDisplay" not in s  # the text is sent once

        # 003: snake_case budgets and filter aliases, passed through unchanged
        r = await read(
            session,
            paths=["**/*.js"],
            per_file_max_lines=1,
            file_filtering_options={"respect_git_ignore": False, "respect_qwen_ignore": True},
        )
        assert [f["path"] for f in r["structuredContent"]["files"]] == ["build/out.js"]

        # 001: pi's files with a line window, heredoc framing
        r = await read(
            session,
            files=[{"path": "src/a.py", "offset": 1, "limit": 1}],
            format="heredoc",
            stopOnError=False,
        )
        assert text(r).startswith("@src/a.py\n<<'PINE_1_")

        # 000: absolute paths inside the root, json results keyed by the path as asked
        asked = str(tree / "src" / "b.py")
        r = await read(session, paths=[asked, str(tree / "gone.py")], format="json")
        results = json.loads(text(r))["results"]
        assert results[asked] == {"status": "ok", "content": "print('b')\n"}
        assert results[str(tree / "gone.py")]["code"] == "not-found"

        listed = await call(session, "list_files", {"patterns": ["src/**/*.py"]})
        assert not listed["isError"]
        assert text(listed).splitlines()[1:] == ["src/a.py", "src/b.py", "src/pkg/c.py"]
        files = listed["structuredContent"]["files"]
        assert files[0]["path"] == "src/a.py" and files[0]["size"] == len("print('a')\n")
        assert listed["structuredContent"]["total"] == 3
        capped = await call(session, "list_files", {"limit": 2})
        assert capped["structuredContent"]["truncated"] is True
        assert len(capped["structuredContent"]["files"]) == 2
        assert "more not listed" in text(capped)


async def test_budgets_cursor_and_offset_continuation(env: dict[str, str], tree: Path) -> None:
    write_tree(tree, {f"many/f{i:02}.txt": f"file {i}\n" for i in range(25)})
    write_tree(tree, {"big.py": "".join(f"line {i}\n" for i in range(1, 501))})
    async with mcp_session(env, "--root", str(tree)) as session:
        first = await read(session, paths=["many/*.txt"], max_total_files=10)
        s = first["structuredContent"]
        assert s["summary"]["read"] == 10 and s["summary"]["omitted"] == 15
        cursor = s["nextCursor"]
        assert cursor in text(first)
        seen = [f["path"] for f in s["files"] if f["status"] == "ok"]
        pages = 1
        while cursor:
            assert pages < 5, "the cursor does not end"
            page = await read(session, cursor=cursor)  # the cursor alone continues
            ps = page["structuredContent"]
            seen += [f["path"] for f in ps["files"] if f["status"] == "ok"]
            cursor = ps.get("nextCursor")
            pages += 1
        assert pages == 3
        assert seen == [f"many/f{i:02}.txt" for i in range(25)]

        cut = await read(session, paths=["big.py"])
        (f,) = cut["structuredContent"]["files"]
        assert f["status"] == "partial" and f["lineEnd"] == 200 and f["nextOffset"] == 201
        assert "Continue with offset=201" in text(cut)
        more = await read(session, files=[{"path": "big.py", "offset": f["nextOffset"]}])
        body = text(more)
        assert "line 201\n" in body and "line 200\n" not in body
        assert more["structuredContent"]["files"][0]["lineStart"] == 201


async def test_images_and_pdfs_come_back_as_content(env: dict[str, str], tree: Path) -> None:
    png = _png()
    write_tree(tree, {"img/logo.png": png, "doc.pdf": PDF})
    async with mcp_session(env, "--root", str(tree)) as session:
        r = await read(session, paths=["img/logo.png", "doc.pdf", "src/a.py"])
    kinds = [c["type"] for c in r["content"]]
    assert kinds == ["text", "image", "resource"]
    image = r["content"][1]
    assert image["mimeType"] == "image/png" and base64.b64decode(image["data"]) == png
    resource = r["content"][2]["resource"]
    assert resource["mimeType"] == "application/pdf"
    assert resource["uri"] == (tree / "doc.pdf").resolve().as_uri()
    assert base64.b64decode(resource["blob"]) == PDF
    atts = r["structuredContent"]["attachments"]
    assert [a["path"] for a in atts] == ["img/logo.png", "doc.pdf"]
    assert all("data" not in a for a in atts)  # the bytes are sent once, as content


def _tokens(obj: Any) -> int:
    """The o200k count of ``obj`` as compact JSON (how a client sizes a result)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # bpe_openai's own import
        import bpe_openai

    enc = bpe_openai.get_encoding("o200k_base")
    return len(enc.encode_ordinary(json.dumps(obj, separators=(",", ":"), ensure_ascii=False)))


def _code(i: int) -> str:
    """About 8,000 characters of Python-like text (about 4 characters a token)."""
    return "".join(
        f"def handler_{i}_{n}(request, value={n}):\n    return value * {n}\n\n" for n in range(160)
    )


async def test_the_default_answer_fits_the_clients(env: dict[str, str], tree: Path) -> None:
    """With no budget of its own a broad read answers within the tool budgets (50,000
    characters of content, 20,000 tokens) and the whole result within 25,000 tokens;
    a call's own maxTotalChars wins."""
    write_tree(tree, {f"lib/m{i:02}.py": _code(i) for i in range(40)})
    async with mcp_session(env, "--root", str(tree)) as session:
        r = await read(session, paths=["lib/*.py"], maxTotalFiles=40)
        s = r["structuredContent"]
        assert s["summary"]["totalChars"] <= 50000 < 40 * len(_code(0))
        assert s["summary"]["omitted"] > 0 and s["nextCursor"]
        assert "llmContent" not in s
        # maxTotalTokens bounds llmContent's o200k count (PROTOCOL §3); the whole
        # result, as JSON, stays within what the client keeps.
        assert _tokens(text(r)) <= 20000 * 1.1 and tokens.count(text(r)) <= 20000
        assert len(text(r)) <= 50000  # the whole text, file names and notices included
        assert _tokens(r) <= 25000
        assert all("outline" not in f for f in s["files"])  # outlines: in the text only
        # omitted files are named once, in packing.omittedPaths, not as entries
        assert all(f["status"] != "omitted" for f in s["files"])
        assert len(s["packing"]["omittedPaths"]) == s["summary"]["omitted"]
        # the call asks for more: its own budgets win (snake_case spelling too)
        more = await read(
            session,
            paths=["lib/*.py"],
            max_total_files=40,
            max_total_chars=400000,
            maxTotalTokens=200000,
        )
        assert more["structuredContent"]["summary"]["read"] == 40
        assert len(text(more)) > 50000


async def test_text_whose_json_escapes_weigh_is_asked_again_smaller(
    env: dict[str, str], tree: Path
) -> None:
    """The budgets count the text's tokens; as JSON each quote, backslash and newline is
    escaped and costs more: a page whose whole result passes 25,000 tokens is asked
    again with smaller budgets, a cursor's page too (its cursor made again for them),
    and every line still comes once."""
    plain = "".join(f"plain words line number {i} of the ordinary file\n" for i in range(3000))
    dense = '"""\\"\n' * 8000  # lines of `"""\"`: each character escaped on the wire
    write_tree(tree, {"a_plain.txt": plain, "b_dense.txt": dense})
    async with mcp_session(env, "--root", str(tree)) as session:
        r = await read(session, paths=["*.txt"], preferFullRead=True)
        seen: dict[str, list[tuple[int, int]]] = {}
        for _ in range(40):
            assert _tokens(r) <= 25000
            assert tokens.count(text(r)) <= 20000
            for f in r["structuredContent"]["files"]:
                if f["status"] in ("ok", "partial"):
                    seen.setdefault(f["path"], []).append(
                        (f.get("lineStart") or 1, f.get("lineEnd") or f["totalLines"])
                    )
            cursor = r["structuredContent"].get("nextCursor")
            if not cursor:
                break
            r = await read(session, cursor=cursor)
        for path, total in (("a_plain.txt", 3000), ("b_dense.txt", 8000)):
            spans = seen[path]
            assert spans[0][0] == 1 and spans[-1][1] == total, spans
            assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(spans)), spans
        # a structure of many entries: asked again smaller, never below the minimums
        write_tree(tree, {f"pkg{i % 30:02}/d{i % 7}/f{i:05}.txt": f"x{i}\n" for i in range(1500)})
        r = await read(session, paths=["**/f*.txt"], maxTotalFiles=1000)
        assert not r.get("isError"), text(r)
        assert _tokens(r) <= 25000 and r["structuredContent"]["nextCursor"]


async def test_the_whole_text_fits_when_names_and_notices_weigh(
    env: dict[str, str], tree: Path
) -> None:
    """Many files with long names: the framing and the notices count toward the 50,000
    characters a client keeps in the conversation, on every page of a cursor chain."""
    deep = "a_rather_long_folder_name/" * 4
    write_tree(
        tree,
        {f"{deep}module_with_a_long_name_{i:04}.py": _code(i)[: 1500 + i] for i in range(300)},
    )
    async with mcp_session(env, "--root", str(tree)) as session:
        r = await read(session, paths=["**/*.py"], maxTotalFiles=200)
        pages = 0
        while True:
            pages += 1
            assert len(text(r)) <= 50000
            assert tokens.count(text(r)) <= 20000
            cursor = r["structuredContent"].get("nextCursor")
            if not cursor or pages == 4:
                break
            r = await read(session, cursor=cursor)
        assert pages == 4


async def test_thousands_of_missing_paths_keep_the_result_within_25000_tokens(
    env: dict[str, str], tree: Path
) -> None:
    """Each missing path is an entry with its message (and a did-you-mean): past what
    the result holds, entries without content are left out of structuredContent and
    counted in filesLeftOut; the text and the summary still count them all."""
    write_tree(tree, {f"lib/module{i:03}.py": "x = 1\n" for i in range(50)})
    async with mcp_session(env, "--root", str(tree)) as session:
        missing = [f"nosuch/dir{i}/modle{i}.py" for i in range(1500)]
        r = await read(session, paths=["lib/module001.py", *missing])
        s = r["structuredContent"]
        assert _tokens(r) <= 25000
        assert s["summary"]["errors"] == 1500 and s["filesLeftOut"] > 0
        assert len(s["files"]) + s["filesLeftOut"] == 1501
        assert s["files"][0]["path"] == "lib/module001.py" and s["files"][0]["status"] == "ok"
        assert "1500" in text(r) or "more error" in text(r)


async def test_attachments_that_do_not_fit_are_named_not_dropped(
    env: dict[str, str], tree: Path
) -> None:
    """An image whose base64 would push the result past 25,000 tokens is left out with a
    notice naming it and the call that gets it; that call brings it."""
    import random

    rng = random.Random(7)
    big = _png() + bytes(rng.randrange(256) for _ in range(90_000))  # ~120k base64 chars
    write_tree(tree, {"img/big.png": big, "img/small.png": _png()})
    async with mcp_session(env, "--root", str(tree)) as session:
        r = await read(session, paths=["img/small.png", "img/big.png", "src/a.py"])
        assert [c["type"] for c in r["content"]] == ["text", "image"]
        assert _tokens(r) <= 25000
        body = text(r)
        assert "img/big.png (image/png" in body and "left out" in body
        atts = r["structuredContent"]["attachments"]
        assert [(a["path"], a.get("omitted", False)) for a in atts] == [
            ("img/small.png", False),
            ("img/big.png", True),
        ]
        ask = json.loads(body[body.index('{"paths"') : body.rindex("}") + 1])
        assert ask["paths"] == ["img/big.png"]
        got = await read(session, **ask)
        (image,) = [c for c in got["content"] if c["type"] == "image"]
        assert base64.b64decode(image["data"]) == big


def _conforms(result: dict[str, Any], tool: dict[str, Any]) -> None:
    """``result``'s structuredContent is valid against ``tool``'s outputSchema (MCP: a
    structured result must conform to it)."""
    import jsonschema

    jsonschema.validators.validator_for(tool["outputSchema"]).check_schema(tool["outputSchema"])
    jsonschema.validate(result["structuredContent"], tool["outputSchema"])


@pytest.mark.parametrize("how", ["flag", "environment"])
async def test_structured_text_puts_each_tools_text_into_structured_content(
    env: dict[str, str], tree: Path, how: str
) -> None:
    """``--structured-text`` (or ``READMANY_MCP_STRUCTURED_TEXT``): VS Code gives the
    model a result's structuredContent in place of its text blocks, so each tool's text
    is in it too, as ``llmContent``, declared in the output schemas; without it the
    structured content carries no text (as the other clients get it)."""
    write_tree(tree, {"img/logo.png": _png()})
    args = ["--root", str(tree)]
    if how == "flag":
        args.append("--structured-text")
    else:
        env = {**env, "READMANY_MCP_STRUCTURED_TEXT": "true"}
    async with mcp_session(env, *args) as session:
        tools = {t["name"]: t for t in (_dump(t) for t in (await session.list_tools()).tools)}
        r = await read(session, paths=["src/a.py", "README.md", "img/logo.png"])
        listed = await call(session, "list_files", {"patterns": ["src/"]})
        first = await call(session, "changed_since", {})
    for tool in tools.values():
        prop = tool["outputSchema"]["properties"]["llmContent"]
        assert prop == {"type": "string"}
        assert "llmContent" not in tool["outputSchema"].get("required", [])
    s = r["structuredContent"]
    assert next(iter(s)) == "llmContent" and s["llmContent"] == text(r)
    assert "--- src/a.py ---\nprint('a')\n" in s["llmContent"]
    assert "--- README.md ---\n# demo\n" in s["llmContent"]
    # The text block stays (other clients read it); the image still follows as content.
    assert [c["type"] for c in r["content"]] == ["text", "image"]
    assert s["files"][0]["path"] == "src/a.py" and s["summary"]["read"] == 3
    _conforms(r, tools["read_many_files"])
    assert "src/a.py\n" in listed["structuredContent"]["llmContent"]
    assert listed["structuredContent"]["llmContent"] == text(listed)
    _conforms(listed, tools["list_files"])
    assert first["structuredContent"]["llmContent"] == text(first)
    assert "isFreshInstance" in first["structuredContent"]["llmContent"]
    _conforms(first, tools["changed_since"])


async def test_without_structured_text_the_structured_content_has_no_text(
    env: dict[str, str], tree: Path
) -> None:
    async with mcp_session(env, "--root", str(tree)) as session:
        tools = [_dump(t) for t in (await session.list_tools()).tools]
        r = await read(session, paths=["src/a.py"])
        listed = await call(session, "list_files", {})
    assert all("llmContent" not in t["outputSchema"]["properties"] for t in tools)
    assert "llmContent" not in r["structuredContent"]
    assert "llmContent" not in listed["structuredContent"]
    _conforms(r, tools[0])


async def test_bad_arguments_are_tool_errors_naming_the_field(
    env: dict[str, str], tree: Path
) -> None:
    async with mcp_session(env, "--root", str(tree)) as session:
        cases: list[tuple[str, dict[str, Any], str]] = [
            (
                "read_many_files",
                {"paths": ["src/a.py"], "per_file_max_lines": 0},
                "perFileMaxLines",
            ),
            ("read_many_files", {"paths": ["src/a.py"], "maxTotalChars": "many"}, "maxTotalChars"),
            ("read_many_files", {"paths": ["src/a.py"], "bogus": 1}, "bogus"),
            ("read_many_files", {"files": [{"path": "a", "offset": -1}]}, "offset"),
            ("read_many_files", {}, "paths"),
            ("read_many_files", {"paths": ["x"], "root": "/"}, "root"),
            ("read_many_files", {"cursor": "not-a-cursor"}, "cursor"),
            ("list_files", {"limit": 0}, "limit"),
            ("list_files", {"patterns": "src"}, "patterns"),
            ("changed_since", {"clock": 5}, "clock"),
            ("no_such_tool", {}, "no_such_tool"),
        ]
        for name, arguments, field in cases:
            result = await call(session, name, arguments)
            assert result["isError"] is True, (name, arguments)
            assert field in text(result), (field, text(result))
        # a missing file is an ok answer with a per-file error, and the server still serves
        ok = await read(session, paths=["missing.py", "src/a.py"])
        files = ok["structuredContent"]["files"]
        assert files[0]["status"] == "error" and files[0]["code"] == "not-found"
        assert files[1]["status"] == "ok"
        assert ok["structuredContent"]["summary"]["errors"] == 1


async def test_answers_reflect_writes(env: dict[str, str], tree: Path) -> None:
    async with mcp_session(env, "--root", str(tree)) as session:
        base = await call(session, "changed_since", {})
        assert base["structuredContent"]["isFreshInstance"] is True
        assert "src/a.py" in base["structuredContent"]["changed"]
        clock = base["structuredContent"]["clock"]

        (tree / "notes.md").write_text("first\n")
        assert "first\n" in text(await read(session, paths=["notes.md"]))
        (tree / "notes.md").write_text("second\n")  # same size, same second
        assert "second\n" in text(await read(session, paths=["notes.md"]))

        before = await read(session, paths=["src/**/*.py"])
        assert len(before["structuredContent"]["files"]) == 3
        write_tree(tree, {"src/pkg/new.py": "print('new')\n", "src/d.py": "print('d')\n"})
        after = await read(session, paths=["src/**/*.py"])
        paths = [f["path"] for f in after["structuredContent"]["files"]]
        assert "src/pkg/new.py" in paths and "src/d.py" in paths
        assert "print('new')" in text(after)
        listed = await call(session, "list_files", {"patterns": ["src/pkg/"]})
        assert "src/pkg/new.py" in text(listed).splitlines()

        assert "--- notes.md ---" in text(await read(session, paths=["*.md"]))
        with open(tree / ".gitignore", "a") as f:  # in place: no folder's mtime changes
            f.write("notes.md\n")
        assert "--- notes.md ---" not in text(await read(session, paths=["*.md"]))

        (tree / "src" / "b.py").unlink()
        delta = await call(session, "changed_since", {"clock": clock})
        ds = delta["structuredContent"]
        assert ds["isFreshInstance"] is False
        assert {".gitignore", "src/pkg/new.py", "src/d.py"} <= set(ds["changed"])
        assert "notes.md" not in ds["changed"]  # created, then hidden by .gitignore
        assert "src/a.py" not in ds["changed"]
        assert "src/b.py" in ds["deleted"]
        assert ds["clock"] != clock


# ------------------------------------------------------------------------------- roots


async def test_root_comes_from_the_clients_roots(
    env: dict[str, str], tree: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    write_tree(other, {"x.txt": "from other\n"})
    async with mcp_session(env, roots=[tree, other]) as session:
        r = await read(session, paths=["src/a.py"])
        assert "print('a')" in text(r)
        r = await read(session, paths=["x.txt"], root="other")  # a root by name
        assert "from other" in text(r)
        r = await read(session, paths=["c.py"], root=str(tree / "src" / "pkg"))  # inside one
        assert "print('c')" in text(r)
        outside = await call(session, "read_many_files", {"paths": ["x"], "root": str(tmp_path)})
        assert outside["isError"] and "root" in text(outside)
    # no roots from the client: the current directory
    async with mcp_session(env, cwd=other) as session:
        assert "from other" in text(await read(session, paths=["x.txt"]))


def test_a_missing_root_is_a_usage_error(env: dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "readmany_daemon", "mcp", "--root", str(tmp_path / "nope")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------ daemon


@pytest.fixture
def daemon_env(env: dict[str, str]) -> Any:
    """``env`` with the daemon allowed; whatever daemon the test starts is stopped."""
    e = dict(env)
    e.pop("READMANY_NO_DAEMON", None)
    yield e
    subprocess.run(
        [sys.executable, "-m", "readmany_daemon", "stop"],
        env=e,
        capture_output=True,
        timeout=60,
        check=False,
    )


def _daemon_pid(env: dict[str, str]) -> int | None:
    proc = subprocess.run(
        [sys.executable, "-m", "readmany_daemon", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        return None
    pid: int = json.loads(proc.stdout)["pid"]
    return pid


async def _until(condition: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := await anyio.to_thread.run_sync(condition)):
        assert time.monotonic() < deadline, "timed out"
        await anyio.sleep(0.05)
    return value


async def test_through_the_shared_daemon(daemon_env: dict[str, str], tree: Path) -> None:
    assert _daemon_pid(daemon_env) is None
    async with mcp_session(daemon_env, "--root", str(tree)) as session:
        first = await read(session, paths=["src/a.py"])  # no daemon yet: answered here
        assert "print('a')" in text(first)
        pid = await _until(lambda: _daemon_pid(daemon_env))  # ...and the daemon started

        def by_daemon(result: dict[str, Any]) -> bool:
            instance = result["structuredContent"]["clock"].split(":")[0]
            return instance.split(".")[0] == f"{pid:x}"

        r = await read(session, paths=["src/**/*.py"], per_file_max_lines=1)
        assert by_daemon(r)
        assert [f["path"] for f in r["structuredContent"]["files"]] == [
            "src/a.py",
            "src/b.py",
            "src/pkg/c.py",
        ]
        (tree / "src" / "a.py").write_text("print('A')\n")
        r = await read(session, paths=["src/a.py"])
        assert by_daemon(r) and "print('A')" in text(r)
        bad = await call(session, "read_many_files", {"paths": ["x"], "max_total_files": 0})
        assert bad["isError"] and "maxTotalFiles" in text(bad)
        listed = await call(session, "list_files", {"patterns": ["src/*.py"]})
        assert text(listed).splitlines()[1:] == ["src/a.py", "src/b.py"]
        delta = await call(session, "changed_since", {"clock": r["structuredContent"]["clock"]})
        assert not delta["isError"] and "clock" in delta["structuredContent"]
