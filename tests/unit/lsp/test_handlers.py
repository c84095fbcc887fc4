"""The handlers of ``readMany/changedSince``, ``rescan``, ``status`` and ``stopDaemon``
(``lsp/handlers.py``) on a stand-in connection: bad params are JSON-RPC -32602 whose
``data.field`` and message name the member (decoded by ``wire/decode.py``), and the
answers are the JSON the protocol has always sent (PROTOCOL §2: names, members left
out, ``null``), encoded as ``lsp/protocol.py`` writes them (msgspec)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from pygls.exceptions import JsonRpcInvalidParams

from readmany_daemon.lsp import handlers
from readmany_daemon.wire import replies as r

ROOT = object()  # the one root entry the stand-in connection knows

STATUS = r.StatusResult(
    roots=[
        r.RootStatus(
            root="/w",
            name="w",
            files=None,
            clock="i:1",
            indexed=False,
            connections=1,
            watcher=r.WatcherStatus(
                state="off", warnings=[], barrier="stat", barrier_reason="no watcher"
            ),
        ),
        r.RootStatus(
            root="/v",
            name="v",
            files=2,
            clock="j:4",
            indexed=True,
            connections=0,
            watcher=r.WatcherStatus(
                state="running",
                warnings=["w1"],
                watched=3,
                unwatched=0,
                batches=7,
                barrier="quiet-queue",
            ),
            index_ms=1.5,
            snapshot=r.SnapshotStatus(path="/c/s", loaded=True, saved=False),
            cache_warmed=2,
            warnings=["x"],
        ),
    ],
    file_count=2,
    cache=r.CacheStatus(bytes=10, hit_rate=0.5),
    watcher=r.WatchersStatus(state="mixed", warnings=["/v: w1"]),
    clock="i:1",
    uptime=1.25,
    pid=42,
    version="0.1.0",
    connections=1,
    overlays=0,
    engine=r.EngineStatus(inflight=0, cancelled=1, workers=4),
)

#: ``STATUS`` as ``readMany/status`` has always written it: ``files: null`` kept, a
#: member without a value left out (``barrierReason`` of a quiet-queue barrier, ``error``).
STATUS_JSON = (
    '{"roots":[{"root":"/w","name":"w","files":null,"clock":"i:1","indexed":false,'
    '"connections":1,"watcher":{"state":"off","warnings":[],"barrier":"stat",'
    '"barrierReason":"no watcher"}},{"root":"/v","name":"v","files":2,"clock":"j:4",'
    '"indexed":true,"connections":0,"watcher":{"state":"running","warnings":["w1"],'
    '"watched":3,"unwatched":0,"batches":7,"barrier":"quiet-queue"},"indexMs":1.5,'
    '"snapshot":{"path":"/c/s","loaded":true,"saved":false},"cacheWarmed":2,'
    '"warnings":["x"]}],"fileCount":2,"cache":{"bytes":10,"hitRate":0.5},'
    '"watcher":{"state":"mixed","warnings":["/v: w1"]},"clock":"i:1","uptime":1.25,'
    '"pid":42,"version":"0.1.0","connections":1,"overlays":0,'
    '"engine":{"inflight":0,"cancelled":1,"workers":4}}'
)


class FakeService:
    """The ``Service`` calls the handlers make, answering fixed results."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def status(self, primary: Any) -> r.StatusResult:
        self.calls.append(("status", (primary,)))
        return STATUS

    def changed_since_sync(self, clock: str, default: Any) -> r.ChangedSinceResult:
        self.calls.append(("changed_since_sync", (clock, default)))
        return r.ChangedSinceResult(clock="i:3", is_fresh_instance=False, changed=["a"], deleted=[])

    def rescan_sync(self, entry: Any) -> str:
        self.calls.append(("rescan_sync", (entry,)))
        return "i:5"


class FakeServer:
    """What the handlers use of a ``ReadManyServer``: no folders, one root, the engine
    run inline, a stop callback."""

    def __init__(self) -> None:
        self.service = FakeService()
        self.folders: list[Any] = []
        self.stopped: list[str | None] = []
        self.on_stop_daemon: Callable[[str | None], None] | None = self.stopped.append

    def root_for(self, root: str | None) -> Any:
        return ROOT

    async def engine(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)


async def call(handler: Any, params: Any) -> Any:
    return await handler(FakeServer(), params)


BAD = [
    # (handler, params, the field named, what the message says)
    (handlers._changed_since, {}, "$.clock", "Object missing required field `clock` - at `$`"),
    (handlers._changed_since, {"clock": None}, "$.clock", "missing required field `clock`"),
    (handlers._changed_since, {"clock": 7}, "$.clock", "Expected `str`, got `int` - at `$.clock`"),
    (handlers._changed_since, {"clock": "", "root": 1}, "$.root", "got `int` - at `$.root`"),
    (handlers._changed_since, {"clock": "", "since": "x"}, "$.since", "unknown field `since`"),
    (handlers._changed_since, ["x"], "$", "expected an object"),
    (handlers._rescan, {"root": 1}, "$.root", "got `int` - at `$.root`"),
    (handlers._rescan, {"root": "a\0b"}, "$.root", "NUL"),
    (handlers._rescan, {"roots": "x"}, "$.roots", "unknown field `roots`"),
    (handlers._status, {"root": "x"}, "$.root", "unknown field `root`"),
    (handlers._status, 3, "$", "expected an object"),
    (handlers._stop_daemon, {"reason": 5}, "$.reason", "got `int` - at `$.reason`"),
    (handlers._stop_daemon, {"why": "x"}, "$.why", "unknown field `why`"),
]


@pytest.mark.parametrize(("handler", "params", "field", "says"), BAD)
async def test_bad_params_are_32602_naming_the_field(
    handler: Any, params: Any, field: str, says: str
) -> None:
    with pytest.raises(JsonRpcInvalidParams) as info:
        await call(handler, params)
    assert info.value.code == -32602
    assert info.value.data == {"field": field}
    assert info.value.message.startswith("invalid params: ") and says in info.value.message


async def test_changed_since_answers_the_clock_for_the_root() -> None:
    ls = FakeServer()
    got = await handlers._changed_since(ls, {"clock": "i:2", "root": "w"})
    assert msgspec.json.encode(got) == (
        b'{"clock":"i:3","isFreshInstance":false,"changed":["a"],"deleted":[]}'
    )
    assert ls.service.calls == [("changed_since_sync", ("i:2", ROOT))]
    # a null root is an absent one; without folders or a root there is no default
    ls = FakeServer()
    await handlers._changed_since(ls, {"clock": "", "root": None})
    assert ls.service.calls == [("changed_since_sync", ("", None))]


async def test_rescan_status_and_stop_answer_as_always() -> None:
    ls = FakeServer()
    assert await handlers._rescan(ls, None) == {"clock": "i:5"}
    assert await handlers._rescan(ls, {"root": None}) == {"clock": "i:5"}
    got = await handlers._status(ls, {})
    assert msgspec.json.encode(got).decode() == STATUS_JSON
    assert await handlers._status(ls, None) == got
    # a null member is an absent one, as for the other methods' params
    assert await handlers._status(ls, {"unknown": None}) == got
    answer = await handlers._stop_daemon(ls, {"reason": "readmany stop"})
    assert set(answer) == {"pid"} and isinstance(answer["pid"], int)
    await handlers._stop_daemon(ls, None)
    await handlers._stop_daemon(ls, {"reason": None})
    await asyncio.sleep(0)  # the stop is called soon, not now
    assert ls.stopped == ["readmany stop", None, None]
