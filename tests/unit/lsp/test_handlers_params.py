"""Property tests of ``readMany/read`` params through the server's own handler, in-process.

Every value a client can send as params (any JSON value, and values built to sit next
to a valid ``ReadManyParams``: a wrong type per field, negative and huge integers,
unknown members, paths with NUL, ``..``, absolute paths, unbalanced globs, lone
surrogates) must either be answered or refused with JSON-RPC -32602 whose message names
the offending field (PROTOCOL §2). Any other exception is a bug. An answer must also go
through the protocol's send path as valid JSON.

The handler is ``server._read`` on a real ``ReadManyServer`` over a real ``Service``
(watcher and snapshots off) and a small tree: the decoder (``messages``), the root
lookup, the engine and the wire encoding are all the production code.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException
from pygls.protocol.json_rpc import JsonRPCResponseMessage

from readmany_daemon.lsp.handlers import _read
from readmany_daemon.lsp.session import ReadManyServer
from readmany_daemon.runtime.service import Service
from readmany_daemon.settings import Settings

TREE: dict[str, bytes] = {
    "a.txt": b"alpha\nbeta\n",
    "d/x.py": b"print('x')\n",
    "d/sub/y.md": b"# y\n",
    "app/[id]/page.tsx": b"export default 1\n",
    "bin.dat": b"\x00\x01\x02binary",
    ".gitignore": b"*.log\n",
    "debug.log": b"log line\n",
    "caf\xc3\xa9.txt": b"accent\n",
    "lat\xe9.txt": b"latin-1 name\n",  # not UTF-8: the wire name is "lat\udce9.txt"
}


class _Capture:
    """pygls writer that keeps every frame written."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.frames.append(data)

    def close(self) -> None:
        pass


class Harness:
    """One ``ReadManyServer`` (workspace folder: the tree) and an event loop to run its
    ``readMany/read`` handler on."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.service = Service(Settings(), watch=False, snapshots=False, warm_cache=False)
        self.server = ReadManyServer(self.service, kind="test")
        self.writer = _Capture()
        self.server.protocol.set_writer(self.writer)
        folder = self.server.add_folder(root.as_uri(), "tree")
        assert folder is not None
        self.loop = asyncio.new_event_loop()

    def read(self, raw: Any) -> dict[str, Any]:
        """The answer to ``raw`` as the client would parse it off the wire; raises what
        the handler raises."""
        result = self.loop.run_until_complete(_read(self.server, raw))
        self.writer.frames.clear()
        self.server.protocol._send_data(JsonRPCResponseMessage(id=1, jsonrpc="2.0", result=result))
        (frame,) = self.writer.frames
        head, _, body = frame.partition(b"\r\n\r\n")
        assert head == b"Content-Length: %d" % len(body)
        message = json.loads(body)
        assert message["id"] == 1 and "error" not in message
        answer: dict[str, Any] = message["result"]
        return answer

    def close(self) -> None:
        self.server.close()
        self.loop.close()
        self.service.close()


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    root = tmp_path_factory.mktemp("params")
    for rel, data in TREE.items():
        p = root / os.fsdecode(rel.encode("latin-1"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    h = Harness(root)
    try:
        yield h
    finally:
        h.close()


# ----------------------------------------------------------------------------- checks

_LAST_KEY = re.compile(r'(?:\.([^.\[\]]+)|\[("(?:[^"\\]|\\.)*")\])$')


def names_field(field: str, message: str) -> bool:
    """Whether ``message`` names ``field`` (a JSON path): the whole path, or its last
    member name (``$.files[0].offset`` → ``offset``)."""
    if field in message or field.removeprefix("$.") in message:
        return True
    trimmed = re.sub(r"(\[\d+\])+$", "", field)
    match = _LAST_KEY.search(trimmed)
    if match is None:
        return False
    key = match.group(1) if match.group(1) is not None else json.loads(match.group(2))
    escaped = re.sub(
        r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]",
        lambda m: json.dumps(m.group())[1:-1],
        key,
    )
    return key in message or escaped in message


def check(h: Harness, raw: Any) -> dict[str, Any] | None:
    """Ask; an answer is checked for shape and returned, a refusal must be -32602 naming
    the field (None). Anything else propagates and fails the test."""
    try:
        answer = h.read(raw)
    except JsonRpcException as exc:
        assert exc.code == -32602, (raw, exc.code, exc.message)
        assert isinstance(exc.data, dict), (raw, exc.message)
        field = exc.data.get("field")
        assert isinstance(field, str) and field.startswith("$"), (raw, exc.data)
        assert "\n" not in exc.message, exc.message
        if field == "$":
            # Only the params as a whole can be "the field" when they are no object.
            assert not isinstance(raw, dict), (raw, exc.message)
        else:
            assert names_field(field, exc.message), (raw, field, exc.message)
        return None
    assert isinstance(answer["llmContent"], str)
    assert isinstance(answer["files"], list)
    assert set(answer["summary"]) >= {"matched", "read", "omitted", "skipped", "errors"}
    statuses = {"ok", "partial", "omitted", "skipped", "error"}
    for f in answer["files"]:
        assert f["status"] in statuses, f
        assert isinstance(f["path"], str)
    assert isinstance(answer["clock"], str)
    return answer


# ------------------------------------------------------------------------- strategies

any_char = st.characters(exclude_categories=())  # surrogates included
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # NaN and infinities: Python's json accepts them on the wire
    | st.text(any_char, max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=16,
)

odd_paths = st.sampled_from(
    [
        "a.txt",
        "d/",
        "d",
        "d/*.py",
        "**/*",
        "**",
        "app/[id]/page.tsx",
        "café.txt",
        "lat\udce9.txt",
        "bin.dat",
        "debug.log",
        ".gitignore",
        ".git/config",
        "..",
        "../x",
        "d/../../a.txt",
        "/etc/passwd",
        "/",
        "~",
        "file:///etc/passwd",
        "a\x00b",
        "d/\x00*",
        "[abc",
        "a[",
        "**/[!",
        "[]",
        "{a,b",
        "{a,{b,{c",
        "}",
        "\\",
        "***",
        "*" * 40,
        "a/" * 200,
        "x" * 5000,
        "\ud800",
        "\udfff*",
        "\udcff",
        " ",
        ".",
        "./a.txt",
        "a.txt/",
        "//a.txt",
        "\n",
    ]
)
path_like = odd_paths | st.text(any_char, max_size=20) | st.text("ad*?[]{},!/.\\x", max_size=12)
ints = st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from(
    [0, -1, 1, 2, 2**31, 2**53, 2**63, 2**64, -(2**63)]
)
file_spec = st.fixed_dictionaries(
    {"path": path_like},
    optional={"offset": ints | json_values, "limit": ints | json_values, "bogus": json_values},
)
bools = st.booleans() | json_values


def wrong_or(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly ``valid``, sometimes any JSON value (a wrong type)."""
    return st.one_of(valid, valid, json_values)


FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "paths": wrong_or(st.lists(path_like | file_spec, max_size=4)),
    "files": wrong_or(st.lists(file_spec, max_size=3)),
    "include": wrong_or(st.lists(path_like, max_size=3)),
    "exclude": wrong_or(st.lists(path_like, max_size=3)),
    "recursive": bools,
    "useDefaultExcludes": bools,
    "use_default_excludes": bools,
    "fileFilteringOptions": wrong_or(
        st.fixed_dictionaries(
            {},
            optional={
                "respectGitIgnore": bools,
                "respect_git_ignore": bools,
                "respectIgnoreFiles": bools,
                "respect_gemini_ignore": bools,
                "respect_sii_ignore": bools,
                "other": json_values,
            },
        )
    ),
    "file_filtering_options": st.fixed_dictionaries({}, optional={"respect_git_ignore": bools}),
    "perFileMaxLines": wrong_or(ints),
    "per_file_max_lines": wrong_or(ints),
    "perFileMaxChars": wrong_or(ints),
    "maxTotalFiles": wrong_or(ints),
    "max_total_chars": wrong_or(ints),
    "maxTotalChars": wrong_or(ints),
    "preferFullRead": bools,
    "packing": wrong_or(
        st.sampled_from(["auto", "request-order", "smallest-first", "outlines", "best"])
    ),
    "stopOnError": bools,
    "format": wrong_or(st.sampled_from(["separator", "heredoc", "xml", "json", "yaml", ""])),
    "lineNumbers": bools,
    "absolutePaths": bools,
    "root": wrong_or(
        st.sampled_from(["tree", ".", "no-such", "/", "file:///", "/a%00b"]) | path_like
    ),
    "sync": wrong_or(st.sampled_from(["auto", "stat", "none", "fast"])),
    "cursor": wrong_or(st.text(max_size=30) | st.sampled_from(["", "WzEse30", "\x00"])),
}
near_valid = st.builds(
    lambda base, extra: {**base, **extra},
    st.fixed_dictionaries({"paths": st.lists(path_like | file_spec, min_size=1, max_size=4)}),
    st.fixed_dictionaries({}, optional=FIELDS),
) | st.builds(
    lambda base, unknown: {**base, **unknown},
    st.fixed_dictionaries({}, optional=FIELDS),
    st.dictionaries(st.text(any_char, max_size=10), json_values, max_size=2),
)

FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)


@settings(FUZZ, max_examples=200)
@given(raw=json_values)
def test_any_json_value_is_answered_or_refused_with_32602(harness: Harness, raw: Any) -> None:
    check(harness, raw)


@settings(FUZZ, max_examples=400)
@given(raw=near_valid)
def test_near_valid_params_are_answered_or_refused_with_32602(
    harness: Harness, raw: dict[str, Any]
) -> None:
    check(harness, raw)


# ------------------------------------------------------------------------- examples
# The cases the fuzzing above found or must keep covering, each with its exact outcome.


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"paths": ["a\x00b"]}, "$.paths[0]"),
        ({"paths": ["d/\x00*"]}, "$.paths[0]"),
        ({"paths": ["\ud800"]}, "$.paths[0]"),
        ({"include": ["\udfff*"]}, "$.include[0]"),
        ({"files": [{"path": "a\x00"}]}, "$.files[0].path"),
        ({"paths": [{"path": "\ud800"}]}, "$.paths[0].path"),
        ({"paths": ["a.txt"], "exclude": ["x\x00"]}, "$.exclude[0]"),
        ({"paths": ["a.txt"], "root": "/a\x00b"}, "$.root"),
        ({"paths": ["a.txt"], "root": "file:///a%00b"}, "$.root"),
        ({"paths": ["a.txt"], "bogus": 1}, "$.bogus"),
        ({"paths": ["a.txt"], "per_file_max_line": 1}, "$.per_file_max_line"),
        ({"files": [{"path": "a.txt", "x y": 1}]}, '$.files[0]["x y"]'),
        ({"paths": ["a.txt"], "a\nb": 1}, '$["a\\nb"]'),
        ({"paths": ["a.txt"], "format": "a\nb"}, "$.format"),
        ({"paths": ["a.txt"], "fileFilteringOptions": [1]}, "$.fileFilteringOptions"),
        ({"paths": "a.txt"}, "$.paths"),
        ({"paths": ["a.txt"], "perFileMaxLines": -1}, "$.perFileMaxLines"),
        ({"paths": ["a.txt"], "maxTotalFiles": True}, "$.maxTotalFiles"),
        ({"paths": ["a.txt"], "cursor": "\x00"}, "$.cursor"),
        ({"paths": ["a.txt"], "root": 5}, "$.root"),
        # A lone surrogate in a member name, or in an enumerated value (msgspec matches
        # both as UTF-8): an encode error escaped, once.
        ({"paths": ["a.txt"], "\ud800": 1}, '$["\\ud800"]'),
        ({"files": [{"path": "a.txt", "x\udfff": 1}]}, '$.files[0]["x\\udfff"]'),
        ({"paths": ["\udcff"], "format": "\ud800"}, "$.format"),
        ({"paths": ["a.txt"], "order": "\ud800"}, "$.order"),
        (
            {"paths": ["a.txt"], "fileFilteringOptions": {"\ud800": True}},
            '$.fileFilteringOptions["\\ud800"]',
        ),
    ],
)
def test_refusals_name_the_field(harness: Harness, raw: dict[str, Any], field: str) -> None:
    with pytest.raises(JsonRpcException) as info:
        harness.read(raw)
    assert info.value.code == -32602
    assert info.value.data == {"field": field}
    assert names_field(field, info.value.message) and "\n" not in info.value.message


def test_odd_but_valid_paths_are_per_file_results(harness: Harness) -> None:
    answer = harness.read(
        {
            "paths": [
                "a.txt",
                "../x",
                "/etc/passwd",
                "[abc",
                "{a,b",
                "\\",
                "lat\udce9.txt",
                "café.txt",
                "app/[id]/page.tsx",
            ],
            "perFileMaxLines": 2**70,
            "maxTotalChars": 2**64,
        }
    )
    got = {f["path"]: (f["status"], f.get("code")) for f in answer["files"]}
    assert got["a.txt"] == ("ok", None)
    assert got["app/[id]/page.tsx"] == ("ok", None)
    assert got["café.txt"] == ("ok", None)
    # PEP 383: the byte 0xE9 is asked for as U+DCE9 (how the label shows it may vary).
    assert [v for k, v in got.items() if k.startswith("lat")] == [("ok", None)], got
    outside = [k for k, v in got.items() if v == ("error", "outside-workspace")]
    assert len(outside) == 2, got
    assert ("skipped", "no-match") in got.values() or ("error", "not-found") in got.values()
    assert "alpha\nbeta\n" in answer["llmContent"]
    assert "latin-1 name\n" in answer["llmContent"]
