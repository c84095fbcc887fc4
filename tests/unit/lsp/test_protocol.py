"""The pygls internals ``readmany_daemon.lsp.protocol`` relies on exist in the installed
pygls, with the shape its overrides assume, and pygls still calls them: a pygls upgrade
that moves one or stops calling it fails here,
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


class _Writer:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass


#: The private methods ``lsp/protocol.py`` overrides or calls, which pygls must still
#: call itself on the way of one request, a notification, ``shutdown`` and ``exit``.
_CALLED_BY_PYGLS = (
    "_execute_handler",
    "_send_handler_result",
    "_send_response",
    "_send_data",
    "lsp_shutdown",
    "lsp_exit",
    "structure_message",
    "handle_message",
)


def test_pygls_still_calls_the_overridden_methods() -> None:
    """Names and parameters are not enough: a pygls release that stops calling one of
    the overrides (or calls it on another path) silently drops its fix. Drive one
    request, one notification, ``shutdown`` and ``exit`` through the real protocol and
    check that pygls itself calls each of them."""
    calls: list[str] = []

    def spy(name: str) -> Any:
        base = getattr(ReadManyProtocol, name)
        if inspect.isgeneratorfunction(base):

            def gen(self: Any, *args: Any, **kwargs: Any) -> Any:
                calls.append(name)
                return (yield from base(self, *args, **kwargs))

            return lsp_method_like(base, gen)

        def plain(self: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return base(self, *args, **kwargs)

        return lsp_method_like(base, plain)

    spied = type("Spied", (ReadManyProtocol,), {n: spy(n) for n in _CALLED_BY_PYGLS})

    class Server(LanguageServer):
        authenticated = True
        ended: int | None = None

        def end(self, code: int) -> None:
            self.ended = code

    server = Server("contract", "0", protocol_cls=spied)
    protocol = server.protocol
    writer = _Writer()
    protocol.set_writer(writer)
    seen: list[Any] = []

    @server.feature("readMany/ping")
    def ping(params: Any) -> dict[str, Any]:
        seen.append(params)
        return {"pong": params}

    @server.feature("readMany/note")
    def note(params: Any) -> None:
        seen.append(params)

    def send(message: dict[str, Any]) -> None:
        protocol.handle_message(protocol.structure_message(message))

    send({"jsonrpc": "2.0", "id": 1, "method": "readMany/ping", "params": {"x": 1}})
    send({"jsonrpc": "2.0", "method": "readMany/note", "params": {"y": 2}})
    send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    send({"jsonrpc": "2.0", "method": "exit"})

    assert seen == [{"x": 1}, {"y": 2}], f"{PYGLS}: readMany/* params are no longer kept"
    assert b'"result":{"pong":{"x":1}}' in writer.data, f"{PYGLS}: the answer was not written"
    assert server.ended == 0, f"{PYGLS}: exit after shutdown did not end the connection"
    missing = [name for name in _CALLED_BY_PYGLS if name not in calls]
    assert not missing, f"{PYGLS} no longer calls {missing} on a request's way"
    assert not protocol.handler_futures, f"{PYGLS}: a handled future was kept"


def lsp_method_like(base: Any, fn: Any) -> Any:
    """``fn`` carrying the LSP method name pygls registers ``base`` under, if any
    (``pygls.protocol.language_server.lsp_method`` sets ``method_name``)."""
    if hasattr(base, "method_name"):
        fn.method_name = base.method_name
    fn.__name__ = base.__name__
    return fn
