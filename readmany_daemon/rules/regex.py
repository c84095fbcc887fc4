"""Many patterns compiled into few regular expressions: the re2 seam of the rules.

Translated patterns (``wildmatch.translate``) are joined into alternations, in chunks of
``ALTERNATION_CHUNK`` and, past ``RE2_MIN_PARTS`` parts, matched with RE2 (linear time,
where a backtracking engine can take exponential time on ``a*a*a*…b``); Python's ``re``
serves when the ``google-re2`` wheel is missing. Everything here works on the "byte view"
of names and paths (``wildmatch.byte_view``: one character per byte, as git matches).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any, Final

from readmany_daemon.rules.wildmatch import byte_view

log = logging.getLogger(__name__)

_RE2: Any = None
_RE2_TRIED = False
RE2_MIN_PARTS: Final = 12


def re2_module() -> Any:
    global _RE2, _RE2_TRIED
    if not _RE2_TRIED:
        _RE2_TRIED = True
        try:
            import re2  # type: ignore[import-untyped, unused-ignore]

            _RE2 = re2
        except ImportError:
            _RE2 = None
    return _RE2


def match_names(rx: Any, names: Collection[str]) -> set[str]:
    """The names (as given) that multi-line regex ``rx`` matches whole, in one pass over
    their newline-joined byte views; names containing a newline always count."""
    plain = [n for n in names if "\n" not in n]
    blob = "\n".join(plain)
    hits: set[str]
    if blob.isascii():
        hits = set(rx.findall(blob))
    else:
        back = {byte_view(n): n for n in plain}
        hits = {back[h] for h in rx.findall("\n".join(back))}
    if len(plain) != len(names):
        hits.update(n for n in names if "\n" in n)
    return hits


#: Alternatives per compiled regex of one ignore file: a file of 200,000 patterns is
#: compiled as 400 regexes, not one alternation whose compile time is superlinear.
ALTERNATION_CHUNK: Final = 500


def _risky(source: str) -> bool:
    """Whether a translated pattern can make a backtracking engine take exponential time:
    several unbounded repetitions (``a*a*a*…b``, ``**/**/…``) against a name that almost
    matches. git's wildmatch is linear there; so is RE2."""
    return source.count("*") + source.count("+") >= 3


class Alternation:
    """Patterns (regex bodies) compiled together; ``last(s, pos)`` is the index of the
    last pattern that matches ``s[pos:]`` whole, or -1.

    Either an RE2 ``Set`` (every pattern that matches, in one linear pass; the highest
    index wins) or Python ``re`` alternation of named groups, later patterns first (the
    first alternative that matches is the last pattern)."""

    __slots__ = ("_indexes", "_rx", "_set")

    def __init__(self, rx: Any, rset: Any, indexes: list[int]) -> None:
        self._rx = rx
        self._set = rset
        self._indexes = indexes

    def last(self, s: str, pos: int) -> int:
        if self._set is not None:
            hits = self._set.Match(s[pos:] if pos else s)
            return max(self._indexes[h] for h in hits) if hits else -1
        m = self._rx.fullmatch(s, pos)
        return -1 if m is None else int(m.lastgroup[1:])


def compile_alternation(alts: list[tuple[int, str]]) -> list[Alternation]:
    """``alts`` (``(pattern index, regex body)``, in priority order) compiled as chunks of
    at most ``ALTERNATION_CHUNK``, in the same order.

    A chunk of more than ``RE2_MIN_PARTS`` patterns, or holding a risky one
    (:func:`_risky`), is an RE2 ``Set`` when RE2 is installed (linear time whatever the
    number of patterns; Python's ``re`` tries the alternatives one by one, and compiles
    ~7,000 patterns a second); otherwise, or when RE2 lacks a construct, an ``re``
    alternation (cheaper per call for the few ordinary patterns of a usual ignore file)."""
    out: list[Alternation] = []
    for at in range(0, len(alts), ALTERNATION_CHUNK):
        chunk = alts[at : at + ALTERNATION_CHUNK]
        many = len(chunk) > RE2_MIN_PARTS
        mod = re2_module() if many or any(_risky(body) for _, body in chunk) else None
        if mod is not None:
            options = mod.Options()
            options.dot_nl = True  # re.DOTALL
            options.log_errors = False
            try:
                rset = mod.Set.FullMatchSet(options)
                for _, body in chunk:
                    rset.Add(body)
                rset.Compile()
                out.append(Alternation(None, rset, [idx for idx, _ in chunk]))
                continue
            except mod.error:
                pass
        src = "|".join(f"(?P<g{idx}>{body})" for idx, body in chunk)
        out.append(Alternation(re.compile(src, re.DOTALL), None, []))
    return out


class _Latin1:
    """An RE2 regex compiled over bytes as Latin-1, matched on byte-view strings: the
    byte view is exactly Latin-1, and RE2's wrapper matches bytes without mapping UTF-8
    offsets back to characters for every match (3x faster ``findall`` on long blobs)."""

    __slots__ = ("_rx", "_src")

    def __init__(self, rx: Any, src: str) -> None:
        self._rx = rx
        self._src = src

    def findall(self, s: str) -> list[str]:
        """The whole matches in byte-view ``s``, as byte-view strings."""
        try:
            data = s.encode("latin-1")
        except UnicodeEncodeError:  # not a byte view: match it as text
            return list(re2_module().compile(self._src).findall(s))
        hits = self._rx.findall(data)
        return b"\n".join(hits).decode("latin-1").split("\n") if hits else []


def compile_quick(parts: Sequence[str]) -> Any:
    """One multi-line regex over newline-joined top-relative paths (byte view) matching
    any of ``parts``, with ``findall``: RE2 (linear time, one pass) when installed, else
    Python re."""
    if not parts:
        return None
    src = "(?m)^(?:" + "|".join(parts) + ")$"
    # few alternatives: Python re (cheaper per call); many: RE2 (one linear pass)
    mod = re2_module() if len(parts) > RE2_MIN_PARTS else None
    if mod is not None:
        options = mod.Options()
        options.encoding = mod.Options.Encoding.LATIN1
        options.log_errors = False
        try:
            return _Latin1(mod.compile(src.encode("latin-1"), options), src)
        except (mod.error, UnicodeEncodeError):  # a construct RE2 lacks: Python re
            pass
    return re.compile(src)


class Scanner:
    """Named rules compiled as ONE regular expression, an alternation of named groups
    (``(?P<r0>…(?P<v0>value)…)|(?P<r1>…)``): one linear pass over a text finds every
    rule's matches, leftmost first, never overlapping. RE2 when installed (linear time
    whatever the text; a backtracking engine can take exponential time on crafted
    input), else Python ``re``, with the same syntax: a rule must keep to what both
    accept (named groups, ``(?i:…)``, bounded repetition; no look-around, no
    back-references).

    With RE2 the text is matched as its UTF-8 bytes, offsets mapped back to characters
    only for the matches: RE2's ``str`` wrapper maps every match's offsets and copies the
    text for each call (3x slower on the trees ``bench/bench_redact.py`` reads)."""

    __slots__ = ("_bytes", "_rx", "_values", "engine")

    def __init__(self, rx: Any, values: list[int], engine: str, on_bytes: bool = False) -> None:
        self._rx = rx
        self._values = values
        self._bytes = on_bytes
        #: ``"re2"`` or ``"re"``: which engine compiled the rules.
        self.engine = engine

    def finditer(self, text: str) -> Iterator[tuple[int, int, int, int]]:
        """``(rule index, match start, value start, value end)`` of each match in
        ``text`` (character offsets, 0-based, ends exclusive), in order; the value is
        the rule's ``v`` group."""
        values = self._values
        if not self._bytes:
            for m in self._rx.finditer(text):
                rule = int(m.lastgroup[1:])
                start, end = m.span(values[rule])
                yield rule, m.start(), start, end
            return
        data = text.encode("utf-8", "surrogatepass")
        if len(data) == len(text):  # ASCII: byte and character offsets are the same
            for m in self._rx.finditer(data):
                rule = int(m.lastgroup[1:])
                start, end = m.span(values[rule])
                yield rule, m.start(), start, end
            return
        at_byte = at_char = 0  # a known pair of offsets, moved forward match by match

        def char(offset: int) -> int:
            nonlocal at_byte, at_char
            if offset >= at_byte:
                at_char += len(data[at_byte:offset].decode("utf-8", "surrogatepass"))
            else:
                at_char -= len(data[offset:at_byte].decode("utf-8", "surrogatepass"))
            at_byte = offset
            return at_char

        for m in self._rx.finditer(data):
            rule = int(m.lastgroup[1:])
            vs, ve = m.span(values[rule])
            begin = char(m.start())
            yield rule, begin, char(vs), char(ve)


def compile_scanner(rules: Sequence[str]) -> Scanner:
    """``rules`` (regex bodies, each with exactly one group named ``v`` around the value:
    ``(?P<v>…)``) as one :class:`Scanner`; rule ``i`` is reported as index ``i``.

    Raises ``re.error`` when a rule is not valid Python ``re`` syntax (RE2 lacking a
    construct falls back to ``re``)."""
    parts = [f"(?P<r{i}>{body.replace('(?P<v>', f'(?P<v{i}>')})" for i, body in enumerate(rules)]
    src = "|".join(parts)
    mod = re2_module()
    if mod is not None:
        options = mod.Options()
        options.log_errors = False
        options.max_mem = 64 << 20  # room for the DFA of many literal-led rules
        try:
            rx = mod.compile(src.encode("utf-8"), options)  # UTF-8 bytes in, see Scanner
            groups = rx.groupindex  # bytes names for a bytes pattern
            values = [groups[f"v{i}".encode()] for i in range(len(rules))]
            return Scanner(rx, values, "re2", True)
        except mod.error:
            pass
    compiled = re.compile(src)
    return Scanner(compiled, [compiled.groupindex[f"v{i}"] for i in range(len(rules))], "re")


class ByteSearch:
    """Regex ``pattern`` (bytes) searched in bytes, leftmost-first as Python's ``re``
    matches it: ``search(data, pos)`` is ``(start, end)`` (byte offsets, end exclusive)
    of the first match at or after ``pos``, or None. RE2 when installed (its low-level
    ``Match``: one C++ call a match, no match object made; ~5x faster than ``re`` on a
    pattern that ``re`` must try at every position), else ``re``.

    ``_re2`` is the wrapper's private module: this class is its one seam. Its shape is
    checked when the pattern is compiled (a probe searched both ways must agree); any
    other shape, or an error, falls back to ``re``."""

    __slots__ = ("_match", "_re", "_unanchored")

    #: Searched at construction by both engines to check the low-level wrapper's shape.
    PROBE: bytes = b"  x _ getFixtureValue HTTPServer2 \xc3\xa9 parse_known_args AB9 "

    def __init__(self, pattern: bytes) -> None:
        self._re = re.compile(pattern)
        self._match: Any = None
        low = getattr(re2_module(), "_re2", None)
        if low is None:
            return
        try:
            self._match = low.RE2(pattern, low.RE2.Options()).Match
            self._unanchored = low.RE2.Anchor.UNANCHORED
            probe = self.PROBE
            agree = all(self.search(probe, at) == self._search_re(probe, at) for at in (0, 7))
        except Exception:  # another wrapper version
            agree = False
        if not agree:
            log.info("RE2's low-level Match has another shape: plain re for %r", pattern)
            self._match = None

    def _search_re(self, data: bytes, pos: int) -> tuple[int, int] | None:
        m = self._re.search(data, pos)
        return None if m is None else m.span()

    def search(self, data: bytes, pos: int) -> tuple[int, int] | None:
        """The first match of ``data[pos:]`` as offsets into ``data``, or None."""
        if self._match is not None:
            start, end = self._match(self._unanchored, data, pos, len(data))[0]
            return None if start < 0 else (start, end)
        return self._search_re(data, pos)
