"""wire.cursor: the nextCursor token both ways, and decode_read_request at the edge."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from readmany_daemon.errors import InvalidParams, jsonrpc_code
from readmany_daemon.wire.cursor import (
    Continuation,
    ReadRequest,
    decode_cursor,
    decode_read_request,
    encode_cursor,
)
from readmany_daemon.wire.messages import ReadManyParams, decode_read_params

#: What a token may hold: base64url without padding.
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


def _payload(token: str) -> Any:
    """The JSON a token carries (the codec's own format, version 1)."""
    return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


def _token_of(payload: Any) -> str:
    raw = json.dumps(payload).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# ---------------------------------------------------------------------------- the codec


def test_round_trip_merges_ranges_and_keeps_resume() -> None:
    params = decode_read_params({"paths": ["a.txt", "src/*.py"], "maxTotalFiles": 2})
    token = encode_cursor(params, [(5, 7), (2, 4), (3, 5), (9, 9), (10, 12)], {3: (41, None)})
    got = decode_cursor(token)
    assert got == Continuation(
        params={"paths": ["a.txt", "src/*.py"], "maxTotalFiles": 2},
        remaining=[(2, 7), (10, 12)],
        resume={3: (41, None)},
    )


def test_round_trip_of_a_resume_with_a_limit() -> None:
    params = ReadManyParams(paths=["big.log"])
    got = decode_cursor(encode_cursor(params, [(0, 1)], {0: (201, 50)}))
    assert got.remaining == [(0, 1)]
    assert got.resume == {0: (201, 50)}


def test_token_is_ascii_base64url_without_padding() -> None:
    params = decode_read_params(
        {"paths": ["café/naïve.txt", "日本/*.md", "x\udcff.bin"], "root": "проект"}
    )
    token = encode_cursor(params, [(1, 3)], {})
    assert token.isascii()
    assert _TOKEN.fullmatch(token)
    assert decode_cursor(token).params == {
        "paths": ["café/naïve.txt", "日本/*.md", "x\udcff.bin"],
        "root": "проект",
    }


def test_a_non_utf8_file_name_round_trips_as_an_escape() -> None:
    params = decode_read_params({"paths": ["x\udcff.bin", "é"], "maxTotalFiles": 1})
    token = encode_cursor(params, [(1, 2)], {1: (3, None)})
    assert _TOKEN.fullmatch(token)
    assert base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).isascii()
    assert decode_cursor(token) == Continuation(
        params={"paths": ["x\udcff.bin", "é"], "maxTotalFiles": 1},
        remaining=[(1, 2)],
        resume={1: (3, None)},
    )
    req = decode_read_request({"cursor": token})
    assert req.params.paths == ["x\udcff.bin", "é"]


def test_payload_format_is_version_1_array() -> None:
    params = decode_read_params({"paths": ["a"], "format": "xml"})
    token = encode_cursor(params, [(4, 6)], {4: (10, 3)})
    assert _payload(token) == [1, {"paths": ["a"], "format": "xml"}, [[4, 6]], {"4": [10, 3]}]


def test_cursor_never_carries_default_valued_params() -> None:
    params = decode_read_params(
        {
            "paths": ["a"],
            "perFileMaxLines": 200,  # the default, sent explicitly
            "recursive": True,  # the default
            "fileFilteringOptions": {"respectGitIgnore": True},  # the default
            "maxTotalChars": 999,
            "root": "tree",
            "cursor": "ignored-here",
        }
    )
    token = encode_cursor(params, [(1, 2)], {})
    assert decode_cursor(token).params == {"paths": ["a"], "maxTotalChars": 999, "root": "tree"}


def test_non_default_filtering_options_are_carried_whole() -> None:
    params = decode_read_params(
        {"paths": ["a"], "file_filtering_options": {"respect_git_ignore": False}}
    )
    got = decode_cursor(encode_cursor(params, [(0, 1)], {}))
    assert got.params == {
        "paths": ["a"],
        "fileFilteringOptions": {"respectGitIgnore": False, "respectIgnoreFiles": True},
    }


@pytest.mark.parametrize(
    "token",
    [
        "not-a-cursor",
        "!!!",
        "WzEse30",  # base64 of a truncated array
        "aGVsbG8",  # base64 of "hello"
        "é",
        _token_of([1]),
        _token_of({"version": 1}),
        _token_of([1, {}, [[0, "x"]], {}]),
        _token_of([1, [], [], {}]),
        _token_of([1, {"p": "x\udcff"}, [[0, "x"]], {}]),
        "W1tb" * 20000,  # base64 of 60,000 ``[``: deeper than any decoder recurses
    ],
    ids=lambda t: t[:12],
)
def test_bad_token_is_invalid_params_naming_cursor(token: str) -> None:
    with pytest.raises(InvalidParams) as info:
        decode_cursor(token)
    assert info.value.field == "$.cursor"
    assert str(info.value) == "invalid params: cursor is not a cursor this daemon issued"
    assert jsonrpc_code(info.value) == -32602


def test_token_of_another_version_is_invalid_params_naming_cursor() -> None:
    with pytest.raises(InvalidParams) as info:
        decode_cursor(_token_of([2, {"paths": ["a"]}, [[0, 1]], {}]))
    assert info.value.field == "$.cursor"
    assert str(info.value) == "invalid params: cursor from another version"


# ------------------------------------------------------------------ decode_read_request


def test_decode_read_request_without_cursor() -> None:
    req = decode_read_request({"paths": ["a.txt"], "max_total_files": 3, "format": "json"})
    assert isinstance(req, ReadRequest)
    assert req.continuation is None
    assert req.params.paths == ["a.txt"]
    assert req.params.max_total_files == 3
    assert req.params.format == "json"
    assert req.params.cursor is None


def test_decode_read_request_with_cursor_answers_the_stored_request() -> None:
    first = decode_read_request(
        {"paths": ["a", "b", "c"], "maxTotalFiles": 1, "root": "tree", "lineNumbers": True}
    )
    token = encode_cursor(first.params, [(1, 3)], {1: (7, None)})
    req = decode_read_request({"cursor": token})
    assert req.continuation == Continuation(
        params={"paths": ["a", "b", "c"], "maxTotalFiles": 1, "root": "tree", "lineNumbers": True},
        remaining=[(1, 3)],
        resume={1: (7, None)},
    )
    assert req.params.paths == ["a", "b", "c"]
    assert req.params.max_total_files == 1
    assert req.params.root == "tree"
    assert req.params.line_numbers is True
    assert req.params.cursor is None


def test_the_root_a_cursor_request_names_wins_over_the_cursors() -> None:
    """Adapters resolve the root from ``ReadRequest.params``: the request's ``root`` when
    it names one (as the adapters did before the edge decoded once), else the cursor's."""
    named = decode_read_request({"paths": ["a"], "maxTotalFiles": 1, "root": "tree"})
    unnamed = decode_read_request({"paths": ["a"], "maxTotalFiles": 1})
    with_root = encode_cursor(named.params, [(1, 2)], {})
    without = encode_cursor(unnamed.params, [(1, 2)], {})
    assert decode_read_request({"cursor": with_root}).params.root == "tree"
    assert decode_read_request({"cursor": without}).params.root is None
    assert decode_read_request({"cursor": without, "root": "/abs"}).params.root == "/abs"
    assert decode_read_request({"cursor": with_root, "root": "/abs"}).params.root == "/abs"


def test_cursor_with_the_same_request_is_accepted() -> None:
    first = decode_read_request({"paths": ["*.txt"], "maxTotalFiles": 2})
    token = encode_cursor(first.params, [(2, 5)], {})
    req = decode_read_request({"paths": ["*.txt"], "maxTotalFiles": 2, "cursor": token})
    assert req.continuation is not None
    assert req.continuation.remaining == [(2, 5)]


@pytest.mark.parametrize(
    ("other", "field"),
    [
        ({"paths": ["other/*.md"]}, "$.paths"),
        ({"files": [{"path": "a.txt", "offset": 3}]}, "$.files"),
        ({"include": ["**/*.py"]}, "$.include"),
    ],
)
def test_cursor_with_another_request_names_the_field(other: dict[str, Any], field: str) -> None:
    first = decode_read_request({"paths": ["*.txt"]})
    token = encode_cursor(first.params, [(1, 2)], {})
    with pytest.raises(InvalidParams) as info:
        decode_read_request({**other, "cursor": token})
    assert info.value.field == field
    assert "differs from the request $.cursor continues" in str(info.value)


def test_decode_read_request_with_a_bad_cursor_names_cursor() -> None:
    with pytest.raises(InvalidParams) as info:
        decode_read_request({"cursor": "not-a-cursor"})
    assert info.value.field == "$.cursor"


def test_request_with_nothing_to_read_names_paths() -> None:
    with pytest.raises(InvalidParams) as info:
        decode_read_request({"cursor": ""})
    assert info.value.field == "$.paths"


def test_defaults_fill_what_the_request_leaves_out() -> None:
    defaults = {"perFileMaxLines": 50, "fileFilteringOptions": {"respectGitIgnore": False}}
    req = decode_read_request({"paths": ["a"]}, defaults)
    assert req.params.per_file_max_lines == 50
    assert req.params.file_filtering_options.respect_git_ignore is False
    assert req.params.file_filtering_options.respect_ignore_files is True


def test_request_wins_over_defaults_and_filtering_options_merge_by_key() -> None:
    defaults = {
        "perFileMaxLines": 50,
        "format": "xml",
        "fileFilteringOptions": {"respectGitIgnore": False},
    }
    req = decode_read_request(
        {
            "paths": ["a"],
            "per_file_max_lines": 7,
            "fileFilteringOptions": {"respect_qwen_ignore": False},
        },
        defaults,
    )
    assert req.params.per_file_max_lines == 7
    assert req.params.format == "xml"
    assert req.params.file_filtering_options.respect_git_ignore is False
    assert req.params.file_filtering_options.respect_ignore_files is False


def test_a_cursor_carries_the_defaults_its_request_was_answered_with() -> None:
    first = decode_read_request({"paths": ["a"]}, {"perFileMaxLines": 50})
    token = encode_cursor(first.params, [(0, 1)], {})
    assert decode_cursor(token).params == {"paths": ["a"], "perFileMaxLines": 50}
    # The continuation answers the stored request: today's defaults do not leak in.
    req = decode_read_request({"cursor": token}, {"perFileMaxLines": 9, "format": "xml"})
    assert req.params.per_file_max_lines == 50
    assert req.params.format == "separator"
