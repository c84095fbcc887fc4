"""``readmany mcp``'s in-process backend (``readmany_daemon.mcp.local``), without a process:
a thin wrapper over a watcher-less ``Service`` (its freshness is tested in
``test_service.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from readmany_daemon.mcp.local import LocalBackend


def test_answers_through_a_service_without_watcher_or_snapshots(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\n")
    old = 1_000_000_000
    os.utime(tmp_path / "a.py", (old, old))
    backend = LocalBackend()
    service = backend.service
    assert (service.watch, service.snapshots, service.warm_cache) == (False, False, False)
    root = os.path.realpath(tmp_path)
    base = backend.call("readMany/changedSince", {"clock": ""}, root)
    assert base["isFreshInstance"] and base["changed"] == ["a.py"]
    assert "a\n" in backend.call("readMany/read", {"paths": ["a.py"]}, root)["llmContent"]

    (tmp_path / "a.py").write_text("A\n")  # in place, same size: no folder mtime moves
    os.utime(tmp_path / "a.py", (old + 1, old + 1))
    assert "A\n" in backend.call("readMany/read", {"paths": ["a.py"]}, root)["llmContent"]
    delta = backend.call("readMany/changedSince", {"clock": base["clock"]}, root)
    assert (delta["isFreshInstance"], delta["changed"], delta["deleted"]) == (False, ["a.py"], [])
    files = backend.call("readMany/files", {}, root)["files"]
    assert [f["path"] for f in files] == ["a.py"]
    assert [e.ws.root for e in service.roots()] == [root]

    backend.clear()
    assert service.roots() == []
    service.close()


# ---- the read tool's CallToolResult (mcp/result.py) --------------------------------------


def _answer(attachments: list[dict[str, str]]) -> dict[str, object]:
    return {
        "llmContent": "--- a.py ---\nx = 1\n",
        "returnDisplay": "Read 1 file",
        "summary": {"matched": 3, "read": 1, "omitted": 2},
        "files": [
            {"path": "a.py", "status": "ok", "source": "disk", "chars": 6},
            {"path": "b.py", "status": "omitted", "source": "disk", "chars": 0, "code": "budget"},
        ],
        "packing": {"omittedPaths": ["b.py", "c.py"], "omittedTruncated": False},
        "clock": "1:2",
        "attachments": attachments,
    }


def test_structured_content_does_not_repeat_the_text() -> None:
    import base64

    from readmany_daemon.mcp.result import read_result

    data = base64.b64encode(b"\x89PNG tiny").decode()
    content, structured = read_result(
        _answer([{"path": "i.png", "mimeType": "image/png", "data": data}]), "/r"
    )
    assert content == [
        {"type": "text", "text": "--- a.py ---\nx = 1\n"},
        {"type": "image", "data": data, "mimeType": "image/png"},
    ]
    assert "llmContent" not in structured and "returnDisplay" not in structured
    assert structured["attachments"] == [{"path": "i.png", "mimeType": "image/png"}]
    assert [f["path"] for f in structured["files"]] == ["a.py"]  # b.py: packing names it
    assert structured["packing"]["omittedPaths"] == ["b.py", "c.py"]


def test_an_attachment_over_the_ceiling_is_named_with_the_call_that_gets_it() -> None:
    import base64
    import json
    import random

    from readmany_daemon.mcp.result import count_tokens, read_result, result_ceiling

    rng = random.Random(3)
    big = base64.b64encode(bytes(rng.randrange(256) for _ in range(60_000))).decode()
    small = base64.b64encode(b"GIF89a").decode()
    answer = _answer(
        [
            {"path": "big.png", "mimeType": "image/png", "data": big},
            {"path": "s.gif", "mimeType": "image/gif", "data": small},
            {"path": "d.pdf", "mimeType": "application/pdf", "data": small},
        ]
    )
    ceiling = result_ceiling(20000)
    assert ceiling == 25000 and result_ceiling(60000) == 65000
    content, structured = read_result(answer, "/r", ceiling)
    whole = {"content": content, "structuredContent": structured, "isError": False}
    assert count_tokens(json.dumps(whole, separators=(",", ":"), ensure_ascii=False)) <= ceiling
    assert [c["type"] for c in content] == ["text", "image", "resource"]  # later ones still fit
    assert content[2]["resource"]["uri"] == "file:///r/d.pdf"
    text = content[0]["text"]
    assert "big.png (image/png, 60000 bytes, about" in text and "within 25000 tokens" in text
    ask = json.loads(text[text.index('{"paths"') : text.rindex("}") + 1])
    assert ask["paths"] == ["big.png"] and result_ceiling(ask["maxTotalTokens"]) > count_tokens(big)
    assert [a.get("omitted", False) for a in structured["attachments"]] == [True, False, False]
    # with that budget it comes back
    content, structured = read_result(answer, "/r", result_ceiling(ask["maxTotalTokens"]))
    assert [c["type"] for c in content] == ["text", "image", "image", "resource"]
    assert not any(a.get("omitted") for a in structured["attachments"])


def test_structured_text_carries_the_final_text_and_fits_as_without_it() -> None:
    """``mcpStructuredText``: ``llmContent`` is the text block's text, the notice of an
    attachment left out included; what fits is the same as without it (the ceiling
    counts the text once: a client's model reads it from one place)."""
    import base64
    import random

    from readmany_daemon.mcp.result import read_result

    rng = random.Random(3)
    big = base64.b64encode(bytes(rng.randrange(256) for _ in range(60_000))).decode()
    small = base64.b64encode(b"GIF89a").decode()
    answer = _answer(
        [
            {"path": "big.png", "mimeType": "image/png", "data": big},
            {"path": "s.gif", "mimeType": "image/gif", "data": small},
        ]
    )
    plain_content, plain = read_result(answer, "/r")
    content, structured = read_result(answer, "/r", structured_text=True)
    assert content == plain_content
    assert next(iter(structured)) == "llmContent"
    assert (
        structured["llmContent"] == content[0]["text"]
        and "big.png (image/png" in content[0]["text"]
    )
    assert {k: v for k, v in structured.items() if k != "llmContent"} == plain
    _, small_only = read_result(_answer([]), "/r", structured_text=True)
    assert small_only["llmContent"] == "--- a.py ---\nx = 1\n"


def test_a_notebook_image_left_out_is_asked_for_by_its_cell() -> None:
    import base64
    import json
    import random

    from readmany_daemon.mcp.result import count_tokens, read_result

    rng = random.Random(5)
    images = [base64.b64encode(rng.randbytes(39_999)).decode() for _ in range(2)]
    answer = _answer(
        [
            {"path": f"nb.ipynb#cell=7/output={k}", "mimeType": "image/png", "data": data}
            for k, data in enumerate(images, start=1)
        ]
    )
    content, structured = read_result(answer, "/r")
    text = content[0]["text"]
    assert "nb.ipynb#cell=7/output=1 (image/png, 39999 bytes" in text
    assert "nb.ipynb#cell=7/output=2 (image/png, 39999 bytes" in text
    assert [a["path"] for a in structured["attachments"]] == [
        "nb.ipynb#cell=7/output=1",
        "nb.ipynb#cell=7/output=2",
    ]
    ask = json.loads(text[text.index('{"files"') : text.rindex("}") + 1])
    assert ask["files"] == [{"path": "nb.ipynb", "cells": "7"}]
    assert all(a.get("omitted") for a in structured["attachments"])
    need = sum(count_tokens(data) for data in images)
    assert ask["maxTotalTokens"] > need  # room for every image of that cell left out


def test_list_files_carries_the_folders_not_listed() -> None:
    """``list_files``' structured content and text carry ``readMany/files``' warnings (the
    folders that could not be listed, whose files the list lacks); the structured content
    keeps to the tool's output schema."""
    from readmany_daemon.mcp.schema import FILES_TOOL, tool_definitions
    from readmany_daemon.mcp.tools import files_answer

    listed = {
        "files": [{"path": "d/top.txt", "size": 8, "mtimeMs": 1.0}],
        "clock": "c1",
        "warnings": ["d/d: not listed: File name too long"],
    }
    text, structured = files_answer(listed, 10)
    assert structured["warnings"] == ["d/d: not listed: File name too long"]
    assert "[Warning: d/d: not listed: File name too long; its files are missing" in text
    schema = next(t for t in tool_definitions() if t["name"] == FILES_TOOL)["outputSchema"]
    assert set(structured) <= set(schema["properties"])
    assert schema["properties"]["warnings"] == {"type": "array", "items": {"type": "string"}}
    assert files_answer({"files": [], "clock": "c2", "warnings": []}, 10)[1]["warnings"] == []
