"""Secrets redacted, not dropped (PROTOCOL §4 "Secrets"): a text with each credential
value replaced by a sentinel, and the lines that now hold one.

:func:`redact` runs the rules of ``rules.secrets`` (one RE2 pass) over a text and
replaces each value by ``«redacted:<kind>:<8 hex>»``, the hex being the start of the
SHA-256 of the value (the same secret gives the same sentinel everywhere, and 32 bits of
a hash of a random value tell nothing of it). Line count and everything around the value
stay as they were: a value that spans lines (a private key block) is replaced line by
line, each line's leading and trailing white space kept. A line holding ``readmany:allow``
or ``gitleaks:allow`` is left as it is (only that line). :func:`redact_cached` keeps the
result of a whole cached text with its cache entry (``ContentCache.derived``), so a warm
read does not scan again.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterable
from typing import Final, NamedTuple

from readmany_daemon.content.cache import ContentCache
from readmany_daemon.rules.secrets import ALLOW_MARKERS, RULES, judge, scanner

#: The ``ContentCache.derived`` slot of a text's redaction.
CACHE_KEY: Final = "redacted"
#: Where a kind and a digest go: no service takes ``«`` for part of a key.
SENTINEL: Final = "«redacted:{kind}:{digest}»"


class Redacted(NamedTuple):
    """A text as shown: ``text`` (the very input object when nothing was found) and
    ``lines``, ``(1-based line, kind)`` for each line holding a sentinel, in line order
    (a line holding two values of different kinds is there twice)."""

    text: str
    lines: tuple[tuple[int, str], ...]


NOTHING: Final = ()


#: A sentinel as :data:`SENTINEL` writes it (kinds are lower-case words and dashes).
SENTINEL_RE: Final = re.compile(r"«redacted:[a-z0-9-]+:[0-9a-f]{8}»")


def sentinels_by_line(text: str, lines: Iterable[int]) -> dict[int, tuple[str, ...]]:
    """``{line: the sentinels on it}`` for the 1-based ``lines`` of redacted ``text``
    (to tell which redactions a view of it shows: a notebook's cells)."""
    wanted = set(lines)
    out: dict[int, tuple[str, ...]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if n in wanted:
            out[n] = tuple(SENTINEL_RE.findall(line))
    return out


def sentinel(kind: str, value: str) -> str:
    """``«redacted:<kind>:<first 8 hex of SHA-256 of the value's UTF-8>»``."""
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return SENTINEL.format(kind=kind, digest=digest)


def _hits(text: str, offset: int, certain_only: bool) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of each secret value in ``text`` (offsets plus ``offset``).
    A loose match (a value assigned to a secret's name) that is no secret is looked
    into for certain formats (``token = 'ghp_…'`` without a digit in sight)."""
    out: list[tuple[int, int, str]] = []
    for i, start, vs, ve in scanner().finditer(text):
        rule = RULES[i]
        kind: str | None = rule.kind
        if rule.loose:
            if certain_only:
                continue
            inner = _hits(text[vs:ve], offset + vs, True)
            if inner:
                out.extend(inner)
                continue
            kind = judge(rule, text, start, vs, ve)
            if kind is None:
                continue
        if kind == "private-key" and not certain_only:
            ve = _key_rest(text, ve)
        out.append((offset + vs, offset + ve, rule.kind if kind is None else kind))
    return out


#: An allow marker and the rest of its line.
_MARK = r"[^\n]*?(?:readmany|gitleaks):allow[^\n]*"
#: A line of a private key's body up to its end: base64, maybe an allow marker after it
#: (`… # gitleaks:allow`), or a line holding a marker alone.
_KEY_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]+[ \t]*(?:" + _MARK + r")?|" + _MARK + r")(?=\n|$)")


def _key_rest(text: str, end: int) -> int:
    """Where a private key's body that the rule found ending at ``end`` (a character
    offset into ``text``, exclusive) really ends. An allow marker stops the rule's match
    on its line (`… # gitleaks:allow` after a line of the body, or `# readmany:allow` on
    a line of its own), yet the body's lines after it are still the key's, to be hidden.
    So when the match stopped on a line holding a marker (not the END line), the body
    goes on over the lines that follow, as long as they are key lines
    (:data:`_KEY_LINE`): up to the END line or the first line that is no key's. Only the
    marked lines are then shown (PROTOCOL §4, "Allowed lines")."""
    at = end
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    if text.startswith("-----", at):  # the END line: the block is whole
        return end
    line_start = text.rfind("\n", 0, at) + 1
    stop = text.find("\n", at)
    if stop < 0 or not any(m in text[line_start:stop] for m in ALLOW_MARKERS):
        return end
    at = stop + 1
    while (line := _KEY_LINE.match(text, at)) is not None:
        end = line.end()
        if end >= len(text):
            break
        at = end + 1
    return end


def _allowed_lines(text: str, hits: list[tuple[int, int, str]]) -> set[int] | None:
    """The 0-based offsets of the line starts, among the lines ``hits`` touch, of the
    lines holding an :data:`ALLOW_MARKERS` marker; None when ``text`` holds none."""
    if not any(marker in text for marker in ALLOW_MARKERS):
        return None
    allowed: set[int] = set()
    for start, end, _ in hits:
        at = text.rfind("\n", 0, start) + 1
        while at <= end:
            stop = text.find("\n", at)
            stop = len(text) if stop < 0 else stop
            if any(marker in text[at:stop] for marker in ALLOW_MARKERS):
                allowed.add(at)
            at = stop + 1
    return allowed


def redact(text: str) -> Redacted:
    """``text`` with every secret value replaced (see the module); ``Redacted(text, ())``
    (the same object) when there is none. Units: line numbers are 1-based."""
    hits = _hits(text, 0, False)
    if not hits:
        return Redacted(text, NOTHING)
    allowed = _allowed_lines(text, hits)
    parts: list[str] = []
    lines: list[tuple[int, str]] = []
    at = 0
    line = 1
    for start, end, kind in hits:
        line += text.count("\n", at, start)
        parts.append(text[at:start])
        mark = sentinel(kind, text[start:end])
        line_start = text.rfind("\n", 0, start) + 1
        pos = start
        for n, segment in enumerate(text[start:end].split("\n")):
            if n:
                parts.append("\n")
                line += 1
                line_start = pos
            pos += len(segment) + 1
            core = segment.strip()
            if not core or (allowed and line_start in allowed):
                parts.append(segment)
                continue
            lead = segment[: len(segment) - len(segment.lstrip())]
            trail = segment[len(segment.rstrip()) :]
            parts.append(lead + mark + trail)
            if not lines or lines[-1] != (line, kind):
                lines.append((line, kind))
        at = end
    parts.append(text[at:])
    if not lines:
        return Redacted(text, NOTHING)
    return Redacted("".join(parts), tuple(lines))


def redacted_text(text: str) -> str:
    """``redact(text).text``: what the ranking's full-text index holds of ``text``; a
    module-level function, so it pickles to the index's worker process
    (``rank.prep.PrepPool``)."""
    return redact(text).text


def _size(redacted: Redacted) -> int:
    """Bytes a kept redaction costs: the new text (none when it is the input) and its
    line list."""
    if not redacted.lines:
        return 64
    return sys.getsizeof(redacted.text) + 64 * len(redacted.lines)


def redact_cached(text: str, cache: ContentCache | None) -> Redacted:
    """:func:`redact` of ``text``, kept with its ``cache`` entry when ``text`` is a cached
    whole text (``ContentCache.derived``; charged to ``cacheBytes``, dropped with the
    entry), else made again."""
    if cache is not None:
        kept = cache.derived(text, CACHE_KEY, redact, size=_size)
        if kept is not None:
            return kept
    return redact(text)
