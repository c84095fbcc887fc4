"""JSON for the warm one-shot path without the ``json`` package: the C codec it wraps.

``import json`` loads ``json.decoder`` and ``json.scanner``, which import ``re`` (with
``enum``, ``functools``, ``collections``): ~5 ms of a one-shot ``readmany read`` whose
whole budget is two ``python -c pass``. The work itself is done by CPython's ``_json``
extension either way (``json.dumps``/``json.loads`` call ``_json.make_encoder`` and
``_json.make_scanner`` for what the CLI sends and receives), so this module calls those
with the arguments the ``json`` package passes, and gives the same text:

- :func:`dumps` is ``json.dumps(obj, ensure_ascii=False, separators=(",", ":"))``;
- :func:`loads` is ``json.loads(body)`` for a UTF-8 body (no BOM, no UTF-16/32).

Whatever the C codec is not there for (another interpreter, a ``_json`` whose signature
changed, a UTF-16 body, malformed JSON for its error message) goes to the ``json``
package itself, imported then, so the results and the errors are always ``json``'s.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

try:
    import _json
except ImportError:  # an interpreter without the C accelerator: json's own code
    _json = None  # type: ignore[assignment]

#: JSON's insignificant whitespace (RFC 8259 §2), as ``json.decoder.WHITESPACE``.
_WS = " \t\n\r"


def _refuse(obj: object) -> Any:
    # The encoder's ``default``: a type JSON has no form for. ``dumps`` then asks
    # ``json.dumps``, which raises its own TypeError naming the type.
    raise TypeError(type(obj).__name__)


class _ScanContext:
    """The attributes ``_json.make_scanner`` reads from a ``json.JSONDecoder`` built with
    no arguments (``strict``, no hooks, ``float``/``int`` for numbers, and JSON's three
    non-standard constants as ``json.decoder`` maps them)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


#: typeshed types the context as a scanner; the C code reads only the attributes above.
_scan = None if _json is None else _json.make_scanner(_ScanContext())  # type: ignore[arg-type]


def dumps(obj: Any, ensure_ascii: bool = False) -> str:
    """``obj`` (dicts, lists, tuples, strings, numbers, booleans, None) as compact JSON
    text: exactly ``json.dumps(obj, ensure_ascii=ensure_ascii, separators=(",", ":"))``:
    non-ASCII characters and lone surrogates as they are, or with ``ensure_ascii`` as
    ``\\uXXXX`` escapes (a lone surrogate can then travel as UTF-8). Raises
    ``TypeError`` for a value JSON cannot hold and ``ValueError`` for a circular
    reference, as that call."""
    if _json is not None:
        string = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
        try:
            if isinstance(obj, str):
                return string(obj)
            # json.JSONEncoder.iterencode's call: markers (check_circular), default,
            # the string encoder, indent, separators, sort_keys, skipkeys, allow_nan.
            encode = _json.make_encoder({}, _refuse, string, None, ":", ",", False, False, True)
            return "".join(encode(obj, 0))
        except (TypeError, ValueError):
            pass  # json.dumps says what is wrong, in its own words
    import json

    return json.dumps(obj, ensure_ascii=ensure_ascii, separators=(",", ":"))


def loads(body: bytes | bytearray | str) -> Any:
    """The JSON value of ``body`` (UTF-8 bytes or text): exactly ``json.loads(body)``.
    Raises ``ValueError`` (``json.JSONDecodeError``) for a body that is not JSON."""
    if _scan is not None:
        try:
            text = body if isinstance(body, str) else body.decode("utf-8", "surrogatepass")
            start = len(text) - len(text.lstrip(_WS))
            if text[start : start + 1] in ("{", "["):  # what a JSON-RPC body starts with
                value, end = _scan(text, start)
                if not text[end:].strip(_WS):
                    return value
        except (StopIteration, ValueError, SystemError):
            # Not JSON (or not UTF-8): json.loads raises its own error. SystemError: the C
            # scanner builds its error from json.decoder only when that module is loaded
            # already (CPython 3.11 _json.c raise_errmsg); here it may not be.
            pass
    import json

    return json.loads(body)
