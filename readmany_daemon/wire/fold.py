"""Folding request spellings into canonical names, light enough for the warm CLI.

The reference tools spell some params in snake_case (``file_filtering_options``,
``respect_git_ignore``) or under other names (``respect_gemini_ignore``); PROTOCOL §3
accepts them all and answers with one canonical camelCase name each. This module folds a
raw params object into those names, and says which two spellings disagree when one
name is given twice. It imports neither msgspec nor ``re`` nor the ``json`` package:
``readmany read --params`` folds here before asking the warm daemon, within the
one-shot budget of two ``python -c pass`` (``wire.decode`` validates afterwards, in the
process that answers).
"""

from __future__ import annotations

from readmany_daemon.errors import InvalidParams
from readmany_daemon.quickjson import dumps

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "FILTER_ALIASES",
    "TOP_ALIASES",
    "drop_nulls",
    "fold",
    "fold_read_params",
    "member",
    "one_line",
]

#: Reference spellings accepted for canonical names (PROTOCOL §3, seeds 000-003).
TOP_ALIASES: dict[str, str] = {
    "file_filtering_options": "fileFilteringOptions",
}
FILTER_ALIASES: dict[str, str] = {
    "respect_git_ignore": "respectGitIgnore",
    "respect_sii_ignore": "respectIgnoreFiles",
    "respect_gemini_ignore": "respectIgnoreFiles",
    "respect_qwen_ignore": "respectIgnoreFiles",
    "respect_ignore_files": "respectIgnoreFiles",
}

#: Characters an error message writes as escapes, so that it stays one line: C0, DEL and
#: C1 (U+0085 NEL ends a line for str.splitlines), U+2028 and U+2029.
_CONTROL = frozenset([*map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), "\u2028", "\u2029"])
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def one_line(text: str) -> str:
    """``text`` with control characters (a newline in a client's key or value) written as
    JSON writes them (``\\n``, ``\\u0000``), so that an error is one line on the CLI's
    stderr (PROTOCOL §1)."""
    if not any(c in _CONTROL for c in text):
        return text
    return "".join((_SHORT.get(c) or f"\\u{ord(c):04x}") if c in _CONTROL else c for c in text)


def member(where: str, key: str) -> str:
    """JSON path of member ``key`` of the object at ``where``: ``$.paths``, or
    ``$["a b"]`` for a key that is not a plain name (one holding a lone surrogate with
    JSON's ``\\uXXXX`` escapes, so that the path is valid Unicode)."""
    if key and all(c in _PLAIN for c in key):
        return f"{where}.{key}"
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return f"{where}[{dumps(key, ensure_ascii=True)}]"
    return f"{where}[{dumps(key)}]"


def _camel(key: str) -> str:
    """snake_case ``key`` in camelCase: each ``_`` before a lowercase ASCII letter
    dropped and the letter raised (``max_total_chars`` → ``maxTotalChars``)."""
    if "_" not in key:
        return key
    out: list[str] = []
    i, n = 0, len(key)
    while i < n:
        c = key[i]
        if c == "_" and i + 1 < n and "a" <= key[i + 1] <= "z":
            out.append(key[i + 1].upper())
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def drop_nulls(value: Any) -> Any:
    """``value`` with every object member whose value is ``null`` (``None``) left out, at
    any depth: in nested objects and in the objects of arrays (``files`` entries,
    ``fileFilteringOptions``, ``known`` entries). PROTOCOL §2: a ``null`` member is an
    absent one, because several MCP clients send ``null`` for every optional argument
    (issue 27). An array's own ``null`` elements stay (``paths: [null]`` is still
    invalid), and so does a required member's absence: the decoder then names it.
    Objects and arrays are copied only when something is dropped below them."""
    if isinstance(value, dict):
        out = {k: drop_nulls(v) for k, v in value.items() if v is not None}
        if len(out) == len(value) and all(out[k] is value[k] for k in out):
            return value
        return out
    if isinstance(value, list):
        items = [drop_nulls(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    return value


def fold(
    obj: Mapping[str, Any],
    aliases: Mapping[str, str],
    where: str,
    spelled: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Rename alias and snake_case keys to canonical camelCase; a name given twice with
    different values is an error naming both spellings (``InvalidParams``). ``spelled``
    (when given) maps the JSON path of each canonical member (``$.maxTotalTokens``,
    ``$.fileFilteringOptions.respectGit``: ``member(where, name)``) to the key the client
    sent, so that an error names the member as sent."""
    out: dict[str, Any] = {}
    sent: dict[str, str] = {}
    for key, value in obj.items():
        if not isinstance(key, str):
            raise InvalidParams(f"invalid params: non-string key at {where}", where)
        canonical = aliases.get(key) or _camel(key)
        if canonical in out and out[canonical] != value:
            first, second = member(where, sent[canonical]), member(where, key)
            raise InvalidParams(one_line(f"invalid params: {first} and {second} disagree"), second)
        out[canonical] = value
        sent[canonical] = key
    if spelled is not None:
        spelled.update((member(where, name), key) for name, key in sent.items())
    return out


#: Members whose container type is checked while folding: the CLI merges flags into them
#: before validation.
_CONTAINERS: tuple[tuple[str, type, str], ...] = (
    ("paths", list, "array"),
    ("files", list, "array"),
    ("include", list, "array"),
    ("exclude", list, "array"),
    ("fileFilteringOptions", dict, "object"),
    ("known", list, "array"),
)


def json_type(value: Any) -> str:
    """The name msgspec's errors give ``value``'s JSON type (``str``, ``array``, ...)."""
    if isinstance(value, bool):
        return "bool"
    for kind, label in ((str, "str"), (int, "int"), (float, "float"), (list, "array")):
        if isinstance(value, kind):
            return label
    return "object" if isinstance(value, dict) else type(value).__name__


def fold_read_params(raw: Any, spelled: dict[str, str] | None = None) -> dict[str, Any]:
    """Canonical-name dict from a raw ``readMany/read`` params object (aliases folded,
    ``null`` members left out at any depth: :func:`drop_nulls`), not yet validated
    beyond the container types of ``paths``, ``files``, ``include``, ``exclude``,
    ``known`` (arrays) and ``fileFilteringOptions`` (an object). ``spelled`` as for
    :func:`fold` (the top-level names and ``fileFilteringOptions``').

    Raises ``InvalidParams`` when ``raw`` is not an object, an alias conflicts or one of
    those members has the wrong type.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams("invalid params: expected an object", "$")
    params = fold(drop_nulls(raw), TOP_ALIASES, "$", spelled)
    ffo = params.get("fileFilteringOptions")
    if isinstance(ffo, dict):
        params["fileFilteringOptions"] = fold(
            ffo, FILTER_ALIASES, "$.fileFilteringOptions", spelled
        )
    for name, kind, label in _CONTAINERS:
        value = params.get(name)
        if value is not None and not isinstance(value, kind):
            field = member("$", spelled.get(f"$.{name}", name) if spelled else name)
            raise InvalidParams(
                f"invalid params: Expected `{label}`, got `{json_type(value)}` - at `{field}`",
                field,
            )
    return params
