"""The MCP 2026-07-28 era as the SDK serves it, known without importing the SDK.

The 2026-07-28 revision has no ``initialize``: a client probes ``server/discover`` and
every request carries its protocol version, client info and capabilities in
``params._meta`` (``ENVELOPE``). The ``mcp`` SDK serves that era from 2.0 over stdio
(``Server.run``: the client's first request decides the era, once); 1.x serves the
legacy era only, and a modern client's ``auto`` mode falls back to it (1.x answers
``server/discover`` with "method not found").

This module gives ``mcp/front.py`` what it needs to answer the era's first requests
before the SDK loads, with the bytes the SDK writes (``tests/unit/mcp/test_sdk.py``
compares them with the installed SDK's, in process; ``tests/e2e/test_mcp_front.py``
through the real process):

- ``modern_request(msg)``: whether a request carries an envelope the SDK accepts as it
  is, at a version this module answers (``VERSIONS``);
- ``discover_result`` and ``tools_result``: the ``DiscoverResult`` and
  ``ListToolsResult`` of that era, keys in the SDK's order (the 2026-07-28 wire models'
  field order, ``_meta`` with the ``serverInfo`` stamp last);
- ``CACHE_TTL_MS`` and ``CACHE_SCOPE``: the ``ttlMs`` / ``cacheScope`` the revision asks
  for on cacheable results (SEP-2549); ``mcp/sdk.py`` gives the SDK the same values as
  its ``cache_hints`` for ``tools/list`` and ``server/discover``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from readmany_daemon import __version__
from readmany_daemon.wire.messages import SERVER_NAME

#: The modern revisions answered here (the SDK 2.x's ``MODERN_PROTOCOL_VERSIONS``).
VERSIONS: tuple[str, ...] = ("2026-07-28",)

#: The per-request envelope keys of ``params._meta`` (2026-07-28 "Per-request protocol
#: fields"): the version and the client's capabilities are required, its info optional.
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
ENVELOPE = frozenset({PROTOCOL_VERSION_KEY, CLIENT_INFO_KEY, CLIENT_CAPABILITIES_KEY})
#: The ``_meta`` stamp a 2026-07-28 result carries (spec #3002).
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

#: ``ttlMs`` of ``tools/list`` and ``server/discover`` (milliseconds): the tools and the
#: capabilities never change while the server runs (``listChanged: false``); an hour
#: bounds how long a client keeps them across an upgrade of readmany.
CACHE_TTL_MS = 3_600_000
#: ``cacheScope``: the same for every user of one server (no user-specific data).
CACHE_SCOPE: Final[Literal["public", "private"]] = "public"

_CAPABILITY_OBJECTS = ("experimental", "roots", "sampling", "elicitation", "tasks", "extensions")


def served(major: int | None) -> bool:
    """Whether the SDK of ``major`` (None: none installed) serves the 2026-07-28 era."""
    return major is not None and major >= 2


def has_envelope(msg: Any) -> bool:
    """Whether a message's ``params._meta`` names a protocol version: what makes the SDK
    take a first request (other than ``initialize``) as opening the 2026-07-28 era, and
    refuse it on a legacy connection."""
    params = msg.get("params") if isinstance(msg, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


def modern_request(msg: Any) -> bool:
    """Whether ``msg`` is a JSON-RPC request (int or string id) whose params are only an
    envelope the SDK accepts as it is: a version of ``VERSIONS``, the client's
    capabilities (an object, its known members objects) and optionally its info
    (``name``, ``version``); no other ``_meta`` key (a progress token, a log level)."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return False
    if set(msg) - {"jsonrpc", "id", "method", "params"}:
        return False
    msg_id = msg.get("id")
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
        return False
    params = msg.get("params")
    if not isinstance(params, dict) or set(params) != {"_meta"}:
        return False
    meta = params["_meta"]
    if not isinstance(meta, dict) or set(meta) - ENVELOPE:
        return False
    if meta.get(PROTOCOL_VERSION_KEY) not in VERSIONS:
        return False
    caps = meta.get(CLIENT_CAPABILITIES_KEY)
    if not isinstance(caps, dict):
        return False
    if any(k in caps and not isinstance(caps[k], dict) for k in _CAPABILITY_OBJECTS):
        return False
    if CLIENT_INFO_KEY not in meta:
        return True
    info = meta[CLIENT_INFO_KEY]
    return (
        isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    )


def _stamp() -> dict[str, Any]:
    return {SERVER_INFO_KEY: {"name": SERVER_NAME, "version": __version__}}


def discover_result() -> dict[str, Any]:
    """The ``DiscoverResult`` the SDK 2.x answers: the modern versions, the tools
    capability, the instructions, cached ``CACHE_TTL_MS`` in ``CACHE_SCOPE``."""
    from readmany_daemon.mcp.schema import INSTRUCTIONS

    return {
        "cacheScope": CACHE_SCOPE,
        "capabilities": {"tools": {"listChanged": False}},
        "instructions": INSTRUCTIONS,
        "resultType": "complete",
        "supportedVersions": list(VERSIONS),
        "ttlMs": CACHE_TTL_MS,
        "_meta": _stamp(),
    }


def tools_result(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The 2026-07-28 ``ListToolsResult`` of ``tools`` (``schema.tool_definitions``) as
    the SDK 2.x writes it: each tool's keys sorted, its ``annotations`` too (the wire
    model's field order), the schemas and ``_meta`` as given."""
    listed = [
        {k: dict(sorted(v.items())) if k == "annotations" else v for k, v in sorted(t.items())}
        for t in tools
    ]
    return {
        "cacheScope": CACHE_SCOPE,
        "resultType": "complete",
        "tools": listed,
        "ttlMs": CACHE_TTL_MS,
        "_meta": _stamp(),
    }
