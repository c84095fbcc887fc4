"""``mcp/screen.py``: the answers to lines the SDK's stdio transport would drop, and the
SDK's own check (``sdk.line_check``) that decides which lines those are."""

from __future__ import annotations

import json

import pytest

from readmany_daemon.mcp import screen, sdk

CALL = (
    '{"jsonrpc":"2.0","id":7,"method":"tools/call",'
    '"params":{"name":"read_many_files","arguments":{"paths":["a.py"]}}}'
)


def _answer(line: str) -> dict[str, object] | None:
    raw = screen.refusal(line)
    if raw is None:
        return None
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1 and raw.isascii()
    return json.loads(raw)


def test_the_sdk_check_passes_a_message_and_raises_for_what_its_transport_drops() -> None:
    check = sdk.line_check()
    check(CALL + "\n")
    for line in ("garbage", "[1]", '{"id":1,"method":"ping"}', CALL.replace("a.py", "a\\ud800")):
        with pytest.raises(Exception):  # noqa: B017 - pydantic's ValidationError
            check(line + "\n")


def test_a_lone_surrogate_in_params_is_invalid_params_naming_its_path() -> None:
    got = _answer(CALL.replace('"a.py"', '"a.py\\ud800"'))
    assert got is not None and got["id"] == 7
    error = got["error"]
    assert isinstance(error, dict) and error["code"] == -32602
    assert error["data"] == {"field": "$.params.arguments.paths[0]"}
    assert "lone surrogate" in error["message"]


def test_a_lone_surrogate_in_a_member_name_is_named_with_json_escapes() -> None:
    got = _answer(CALL.replace('"paths"', '"x\\udc80":1,"paths"'))
    assert got is not None
    assert got["error"]["data"] == {"field": '$.params.arguments["x\\udc80"]'}  # type: ignore[index]


def test_a_lone_surrogate_outside_params_is_an_invalid_request() -> None:
    got = _answer('{"jsonrpc":"2.0","id":"r\\ud800","method":"ping"}')
    assert got is not None and got["id"] == "r\ud800"
    assert got["error"]["code"] == -32600  # type: ignore[index]
    assert got["error"]["data"] == {"field": "$.id"}  # type: ignore[index]


@pytest.mark.parametrize(
    ("line", "code", "msg_id", "words"),
    [
        ("garbage", -32700, None, "not JSON"),
        ('{"jsonrpc":"2.0","id":1', -32700, None, "not JSON"),
        ("[1, 2]", -32600, None, "batches"),
        ("3", -32600, None, "not an object"),
        ('{"id":10,"method":"ping"}', -32600, 10, '"jsonrpc" must be "2.0"'),
        ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600, None, '"id" must be'),
        ('{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600, None, '"id" must be'),
        ('{"jsonrpc":"2.0","id":2,"method":5}', -32600, 2, '"method" must be a string'),
        ('{"jsonrpc":"2.0","id":2,"method":"ping","params":[1]}', -32600, 2, '"params" must'),
        ('{"jsonrpc":"2.0"}', -32600, None, '"method" or an "id"'),
    ],
)
def test_other_refused_lines_get_the_json_rpc_error(
    line: str, code: int, msg_id: object, words: str
) -> None:
    got = _answer(line)
    assert got is not None and got["jsonrpc"] == "2.0" and got["id"] == msg_id
    assert got["error"]["code"] == code and words in got["error"]["message"]  # type: ignore[index]


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\ud800"}}',
        '{"jsonrpc":"2.0","method":"notifications/x","params":[1]}',
        '{"jsonrpc":"2.0","id":3}',
    ],
)
def test_notifications_and_responses_are_never_answered(line: str) -> None:
    assert screen.refusal(line) is None


def test_the_path_is_the_first_lone_surrogate_depth_first() -> None:
    value = {"a": ["ok", {"b": "x\udfff"}], "c": "\ud800"}
    assert screen.lone_surrogate_at(value) == "$.a[1].b"
    assert screen.lone_surrogate_at({"a": ["ok"]}) is None
