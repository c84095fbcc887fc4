"""The pygls internals ``readmany_daemon.lsp.protocol`` relies on exist in the installed
pygls, with the shape its overrides assume: a pygls upgrade that moves one fails here,
naming it, instead of somewhere deep in a connection (RENOVATION §4)."""

from __future__ import annotations

import inspect
import threading
from importlib.metadata import version
from typing import Any

import pytest
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from readmany_daemon.lsp.protocol import PYGLS_PRIVATE_NAMES, ReadManyProtocol, share_stop_event

PYGLS = f"pygls {version('pygls')}"


def _owners(server: LanguageServer) -> dict[str, Any]:
    return {"server": server, "protocol": server.protocol, "fm": server.protocol.fm}


@pytest.mark.parametrize(
    ("owner", "name"), PYGLS_PRIVATE_NAMES, ids=[f"{o}.{n}" for o, n in PYGLS_PRIVATE_NAMES]
)
def test_every_private_name_exists(owner: str, name: str) -> None:
    obj = _owners(LanguageServer("contract", "0"))[owner]
    assert hasattr(obj, name), (
        f"{PYGLS} has no {type(obj).__name__}.{name}, which lsp/protocol.py relies on"
    )


def _overridden() -> list[str]:
    return sorted(
        name
        for name, value in vars(ReadManyProtocol).items()
        if callable(value) and hasattr(LanguageServerProtocol, name)
    )


@pytest.mark.parametrize("name", _overridden())
def test_overridden_methods_keep_their_parameters(name: str) -> None:
    def shape(fn: Any) -> list[tuple[str, Any]]:
        return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]

    theirs = getattr(LanguageServerProtocol, name)
    assert shape(theirs) == shape(getattr(ReadManyProtocol, name)), (
        f"{PYGLS} changed the parameters of LanguageServerProtocol.{name}"
    )


def test_the_state_the_overrides_use_has_the_assumed_types() -> None:
    server = LanguageServer("contract", "0", protocol_cls=ReadManyProtocol)
    protocol = server.protocol
    assert isinstance(protocol, ReadManyProtocol)
    assert type(protocol._request_futures) is dict, f"{PYGLS}: _request_futures"
    assert protocol._shutdown is False, f"{PYGLS}: _shutdown"
    assert protocol._server is server, f"{PYGLS}: _server"
    # ``lsp_shutdown`` is extended with ``yield from``: it must stay a generator.
    assert inspect.isgeneratorfunction(LanguageServerProtocol.lsp_shutdown), (
        f"{PYGLS}: LanguageServerProtocol.lsp_shutdown is no longer a generator"
    )
    # pygls calls the overrides for shutdown and exit (registered by method name).
    for method, fn in ((types.SHUTDOWN, "lsp_shutdown"), (types.EXIT, "lsp_exit")):
        handler = protocol.fm.builtin_features[method]
        assert handler.__func__ is getattr(ReadManyProtocol, fn), f"{PYGLS}: {method}"
    assert protocol.knows_method(types.INITIALIZE) and not protocol.knows_method("readMany/x")


def test_shutdown_sets_the_shared_stop_event() -> None:
    server = LanguageServer("contract", "0")
    event = threading.Event()
    share_stop_event(server, event)
    server.shutdown()  # type: ignore[no-untyped-call]
    assert event.is_set(), f"{PYGLS}: LanguageServer.shutdown no longer sets _stop_event"
