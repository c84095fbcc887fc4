"""Answers for the lines of ``readmany mcp``'s stdin that the SDK would drop unanswered.

The ``mcp`` SDK's stdio transport validates each line as one JSON-RPC message
(pydantic). A line that fails (not JSON, a batch array, an id of the wrong type, or a
lone surrogate such as ``"\\ud800"``, which pydantic's JSON parser refuses) is handed to
the session as an exception and logged, and the client's request waits for ever.
``refusal`` gives the answer JSON-RPC 2.0 §5.1 asks for instead, the way the daemon's
LSP transport answers the same faults (``lsp/serve.py`` ``dispatch``):

- not JSON → -32700, id null;
- JSON that holds a lone surrogate (in a member name or a string) → in a request, -32602
  with ``data.field`` the JSON path of the first one (``$.params.arguments.paths[0]``);
  in a notification or a response, nothing (they are never answered);
- any other message the SDK refuses → -32600 Invalid Request, with the request's id when
  it is a string or an integer (else null); a notification or response, nothing.

The check itself is the SDK's own (``mcp/sdk.py`` ``line_check``); this module never
imports the SDK.
"""

from __future__ import annotations

import json
from typing import Any

from readmany_daemon.wire.fold import member

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _lone(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def lone_surrogate_at(value: Any, where: str = "$") -> str | None:
    """JSON path of the first member name or string in ``value`` (JSON builtins) that
    holds a lone surrogate (U+D800-U+DFFF alone), depth first in member order; None when
    there is none. A name is named by its own path (``$["\\ud800"]``)."""
    if isinstance(value, str):
        return where if _lone(value) else None
    if isinstance(value, list):
        for n, item in enumerate(value):
            found = lone_surrogate_at(item, f"{where}[{n}]")
            if found is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            path = member(where, key)
            if _lone(key):
                return path
            found = lone_surrogate_at(item, path)
            if found is not None:
                return found
    return None


def _error(msg_id: Any, code: int, message: str, field: str | None = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        error["data"] = {"field": field}
    body = {"jsonrpc": "2.0", "id": msg_id, "error": error}
    return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"


def _problem(data: dict[str, Any]) -> str:
    """What makes ``data`` no JSON-RPC 2.0 message the SDK reads (its first fault)."""
    if data.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "id" in data and not _valid_id(data["id"]):
        return '"id" must be a string or an integer'
    if "method" in data and not isinstance(data["method"], str):
        return '"method" must be a string'
    if "params" in data and not isinstance(data["params"], dict):
        return '"params" must be an object'
    if "method" not in data and "id" not in data:
        return 'a message needs a "method" or an "id"'
    return "not a JSON-RPC 2.0 message the server reads"


def refusal(line: str) -> bytes | None:
    """The error response (one line, ``\\n``-terminated, ASCII) to ``line``, a line of
    stdin that the SDK's transport refused, or None when JSON-RPC answers nothing (a
    notification, a response)."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({exc})")
    if not isinstance(data, dict):
        kind = "an array (batches are not supported)" if isinstance(data, list) else "not an object"
        return _error(None, INVALID_REQUEST, f"Invalid Request: the message is {kind}")
    msg_id = data.get("id")
    is_request = "method" in data and "id" in data
    if "method" in data and "id" not in data:
        return None  # a notification: never answered
    if "method" not in data and "id" in data and _valid_id(msg_id):
        return None  # a response (to a request of the server's): never answered
    reply_id = msg_id if _valid_id(msg_id) else None
    field = lone_surrogate_at(data)
    if field is not None:
        in_params = is_request and reply_id is not None and field.startswith("$.params")
        return _error(
            reply_id,
            INVALID_PARAMS if in_params else INVALID_REQUEST,
            f"{'Invalid params' if in_params else 'Invalid Request'}: a lone surrogate at "
            f"`{field}`; the server reads only text UTF-8 can carry",
            field,
        )
    return _error(reply_id, INVALID_REQUEST, f"Invalid Request: {_problem(data)}")
