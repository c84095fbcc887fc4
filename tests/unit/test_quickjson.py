"""``quickjson`` gives what the ``json`` package gives, text for text and error for error.

Differential over random JSON values (strings with non-ASCII, astral characters, control
characters and lone surrogates; big integers; floats with NaN and infinities), over the
whitespace around a body, and over bodies that are not JSON; and the one-shot client's
warm path never imports ``json`` or ``re`` for them (a fresh ``python -S``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from readmany_daemon import quickjson

ROOT = Path(__file__).resolve().parents[2]

TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.tuples(inner, inner),
        st.dictionaries(TEXT, inner, max_size=5),
    ),
    max_leaves=30,
)


def plain(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=500, deadline=None, database=None)
@given(VALUES)
@example({"s": 'quote " back \\ tab \t bell \x07 é 漢字 🎉 \udc80'})
@example("\udcff")
def test_dumps_is_json_dumps(obj: Any) -> None:
    assert quickjson.dumps(obj) == plain(obj)


@settings(max_examples=500, deadline=None, database=None)
@given(VALUES, st.sampled_from(["", " ", "\n", "\r\n\t "]), st.sampled_from(["", " \n"]))
def test_loads_is_json_loads(obj: Any, before: str, after: str) -> None:
    body = (before + plain(obj) + after).encode("utf-8", "surrogatepass")
    got, want = quickjson.loads(body), json.loads(body)
    assert repr(got) == repr(want)  # repr: NaN is not equal to itself
    assert repr(quickjson.loads(bytearray(body))) == repr(want)


@pytest.mark.parametrize(
    "body",
    [b"", b"{", b'{"a":1}x', b'{"a":1} {', b"[1,]", b"\xff", b"nul", b"{'a':1}"],
)
def test_not_json_fails_as_json_does(body: bytes) -> None:
    with pytest.raises(ValueError) as ours:
        quickjson.loads(body)
    with pytest.raises(ValueError) as theirs:
        json.loads(body)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(
    "body", [b"\xef\xbb\xbf{}", '{"a": 1}'.encode("utf-16"), b"  7 ", b'"text"', b"null"]
)
def test_other_bodies_go_to_json(body: bytes) -> None:
    assert quickjson.loads(body) == json.loads(body)


def test_what_json_cannot_encode_fails_as_json_does() -> None:
    circular: list[Any] = []
    circular.append(circular)
    for bad in ({"a": {1, 2}}, {"a": object()}, circular):
        with pytest.raises((TypeError, ValueError)) as ours:
            quickjson.dumps(bad)
        with pytest.raises((TypeError, ValueError)) as theirs:
            plain(bad)
        assert str(ours.value) == str(theirs.value)
    assert quickjson.dumps({1: "int key"}) == plain({1: "int key"})


def _fresh_python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a new ``python -S`` (no site: nothing imported beforehand)."""
    return subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )


def test_neither_json_nor_re_is_imported() -> None:
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from readmany_daemon import quickjson\n"
        "body = quickjson.dumps({'a': ['é', 1, True, None, {'b': 2.5}]})\n"
        "assert quickjson.loads(body.encode()) == {'a': ['é', 1, True, None, {'b': 2.5}]}\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    proc = _fresh_python(code)
    loaded = proc.stdout.strip()
    assert "'json" not in loaded and "'re'" not in loaded, loaded


def test_not_json_fails_as_json_does_before_json_is_loaded() -> None:
    """The C scanner builds its error from ``json.decoder`` only when that module is
    loaded already (CPython 3.11's ``_json.c``): in a fresh interpreter, a body that is
    not JSON must still give json's own ValueError, not a SystemError."""
    code = (
        "import sys\n"
        "from readmany_daemon import quickjson\n"
        "assert 'json.decoder' not in sys.modules\n"
        "try:\n"
        "    quickjson.loads(b'{\"a\": ')\n"
        "except ValueError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    proc = _fresh_python(code)
    with pytest.raises(ValueError) as theirs:
        json.loads(b'{"a": ')
    assert proc.stdout.strip() == f"JSONDecodeError {theirs.value}"
