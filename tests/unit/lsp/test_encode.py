"""The chunked encoding of large ``readMany/read`` answers (lsp.encode.encode_read_result)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from readmany_daemon.lsp import encode
from readmany_daemon.wire.messages import PackingInfo, ReadManyResult, Summary, to_builtins


def _result() -> ReadManyResult:
    return ReadManyResult(
        llm_content="",
        stale=[],
        return_display="Read **2** file(s)",
        summary=Summary(matched=2, read=2),
        files=[],
        packing=PackingInfo(strategy="request-order"),
        clock="c:1",
        attachments=[],
    )


def _decoded(encoded: Any) -> dict[str, Any]:
    assert isinstance(encoded, encode.EncodedResult)
    body = b"".join(bytes(c) for c in encoded.chunks)
    assert len(body) == encoded.size
    value: dict[str, Any] = json.loads(body)
    return value


PARTS = [
    "--- a.py ---\n",
    'print("quote \\" and backslash \\\\")\n\ttab\x00nul\x1fus\n',
    "\n",
    "--- caf\u00e9.txt ---\n",
    "caf\u00e9 \U0001f600 \u2028 line sep\n" * 7,
    "\n",
    "--- End of content ---",
]


@pytest.mark.parametrize("chunk", [1, 3, 17, 1 << 20])
def test_chunks_concatenate_to_the_whole_answer(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(encode, "SPLIT_ENCODE_CHARS", 0)
    monkeypatch.setattr(encode, "CHUNK_BYTES", chunk)
    encoded = encode.encode_read_result(_result(), list(PARTS))
    assert isinstance(encoded, encode.EncodedResult)
    whole = _result()
    whole.llm_content = "".join(PARTS)
    assert _decoded(encoded) == to_builtins(whole)


def test_small_answers_are_one_chunk_with_the_same_json() -> None:
    encoded = encode.encode_read_result(_result(), list(PARTS))
    assert len(encoded.chunks) == 1
    whole = _result()
    whole.llm_content = "".join(PARTS)
    assert bytes(encoded.chunks[0]) == encode.encode_body(to_builtins(whole))


def test_a_lone_surrogate_is_escaped() -> None:
    result = _result()
    result.return_display = "bad \udc80 name"
    encoded = encode.encode_read_result(result, list(PARTS))
    assert b"\\udc80" in bytes(encoded.chunks[0])
    assert _decoded(encoded)["returnDisplay"] == "bad \udc80 name"


def test_empty_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encode, "SPLIT_ENCODE_CHARS", 0)
    encoded = encode.encode_read_result(_result(), [])
    assert _decoded(encoded)["llmContent"] == ""
