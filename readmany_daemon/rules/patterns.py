"""Ignore-file lines and pattern lists: git's ``dir.c`` parsing and matching over the
wildmatch translation, and the basename prefilter (``NameMatcher``, the re2 seam).

Lines: a UTF-8 BOM is skipped, ``\\r\\n`` ends a line like ``\\n``, lines starting with
``#`` are comments, trailing spaces are trimmed unless escaped with ``\\`` (tabs are
kept), a NUL byte ends the line's pattern (C string). ``!`` negates, a trailing ``/``
matches folders only, a pattern without ``/`` (after removing the trailing one) matches
the basename at any depth, otherwise the path relative to the ignore file's folder (a
leading ``/`` only anchors). Per list, the last matching line wins.

Why not pathspec: pathspec 1.1.1's ``GitIgnoreSpec`` matches a whole path string against
one file's lines and approximates folders with prefix matches; git instead evaluates each
folder on the way down with its type known, per ignore file, with the precedence of
``rules/ignore.py``. Its pattern translation also differs from git's ``wildmatch.c``
wherever tests/unit/test_git_differential.py probed (each case is pinned in test_ignore.py
``GIT_VERDICTS``): ``[[:alpha:]]``-style classes and reversed ranges ``[c-a]`` make it
raise (re2 backend), a trailing escaped space ``foo\\  ``, a trailing ``\\`` and an
escaped slash ``a\\/b`` make it raise, a trailing TAB is stripped (git keeps it), a class
may match ``/`` (``a[^x]b`` vs ``a/b``), ``x**/y`` misses git's literal-prefix quirk, and
``build/`` + ``!build/keep.txt`` re-includes the file. Patching each would leave little of
it, and the whole-path API cannot express git's per-folder walk, so the translation here
is a port of ``wildmatch.c`` (``rules/wildmatch.py``) and of dir.c's parsing and matching
(``_compile_line``, ``PatternList``), checked against git by the differential test.
pathspec is therefore not imported at run time.

RE2 (``google-re2``) is optional: used, when installed, for long alternations and risky
patterns (linear time); Python's ``re`` otherwise.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Final

from readmany_daemon.rules.kinds import KIND_NAMES, Verdict
from readmany_daemon.rules.wildmatch import (
    GLOB_SPECIAL,
    NEVER,
    byte_view,
    from_byte_view,
    literal,
    translate,
)

__all__ = ["GitPatterns", "NameMatcher", "Pattern", "PatternList", "compile_quick"]


def _trim_trailing_spaces(s: str) -> str:
    """dir.c ``trim_trailing_spaces``: drop trailing ``' '`` not escaped by ``\\``."""
    last_space = -1
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == " ":
            if last_space < 0:
                last_space = i
        elif c == "\\":
            i += 1
            if i >= n:
                return s
            last_space = -1
        else:
            last_space = -1
        i += 1
    return s[:last_space] if last_space >= 0 else s


class Pattern:
    """One pattern line after git's parse: ``line`` (1-based), ``display`` (as written),
    flags, and regexes (byte view): ``full`` matches the basename (``nodir``) or the path
    relative to the ignore file's folder; ``quick``/``name_quick`` are prefilters."""

    __slots__ = (
        "dir_only",
        "display",
        "full",
        "line",
        "name_quick",
        "negated",
        "nodir",
        "quick",
    )

    def __init__(
        self,
        line: int,
        display: str,
        negated: bool,
        dir_only: bool,
        nodir: bool,
        full: str,
        quick: str | None,
        name_quick: str | None,
    ) -> None:
        self.line = line
        self.display = display
        self.negated = negated
        self.dir_only = dir_only
        self.nodir = nodir
        self.full = full
        #: prefilter regexes (blob flavour): over the top-relative path, or over the
        #: basename only (exact for basename patterns, a superset for simple paths)
        self.quick = quick
        self.name_quick = name_quick


def _compile_line(raw: str, line: int, display: str, base: str) -> Pattern | None:
    """Parse one already-trimmed pattern line (byte view) as dir.c ``parse_path_pattern``
    does and translate it; ``base`` is the top-relative folder (``""`` or ``"a/b/"``).
    ``None`` for a line that can never match (empty pattern)."""
    negated = raw.startswith("!")
    body = raw[1:] if negated else raw
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    if not body:
        return None
    nodir = "/" not in body
    quick: str | None = None
    name_quick: str | None = None
    if nodir:
        full_n = translate(body, pathname=False, blob=False)
        quick_n = translate(body, pathname=False, blob=True)
        if full_n is None or quick_n is None:
            return Pattern(line, display, negated, dir_only, nodir, NEVER, None, None)
        full, name_quick = full_n, quick_n
    else:
        if body.startswith("/"):
            body = body[1:]
        # match_pathname() compares the literal prefix (up to the first glob special)
        # and runs wildmatch on the rest as a new pattern, so a "**" right after the
        # prefix counts as "at the start" ("foo**/bar" matches "foo/x/bar"): git quirk.
        k = 0
        while k < len(body) and body[k] not in GLOB_SPECIAL:
            k += 1
        prefix = "".join(literal(ch) for ch in body[:k])
        rest_full = translate(body[k:], pathname=True, blob=False)
        rest_quick = translate(body[k:], pathname=True, blob=True)
        if rest_full is None or rest_quick is None:
            return Pattern(line, display, negated, dir_only, nodir, NEVER, None, None)
        full = prefix + rest_full
        core = body[3:] if body.startswith("**/") else body
        if "[" in body or "\\" in body or "**" in core:
            quick = "".join(literal(ch) for ch in base) + prefix + rest_quick
        else:
            # no brackets, escapes or "**" (but a leading "**/"): the basename must match
            # the last segment, so prefilter on that (a superset; classify decides)
            last = translate(core.rpartition("/")[2], pathname=False, blob=True)
            assert last is not None
            name_quick = last
    return Pattern(line, display, negated, dir_only, nodir, full, quick, name_quick)


class PatternList:
    """The patterns of one rule source (an ignore file or a settings list).

    ``source``: label used in ``Verdict.source`` (without ``:line``); ``base``: the
    top-relative folder the patterns are relative to (``""`` or ``"a/b/"``, byte view);
    ``kind``: a kind bit; ``digest``: a fingerprint of the source's content (``_digest``).
    ``label_lines``: True for files (``source:N``), False for settings lists
    (``source:pattern``).
    """

    __slots__ = (
        "_combined",
        "base",
        "digest",
        "kind",
        "label_lines",
        "name_quick_dirs",
        "name_quick_files",
        "patterns",
        "quick_dirs",
        "quick_files",
        "source",
    )

    def __init__(
        self,
        source: str,
        base: str,
        kind: int,
        patterns: Sequence[Pattern],
        digest: str,
        label_lines: bool,
    ) -> None:
        self.source = source
        self.base = base
        self.kind = kind
        self.patterns = tuple(patterns)
        self.digest = digest
        self.label_lines = label_lines
        pos = [p for p in self.patterns if not p.negated and p.full != NEVER]
        self.quick_files = tuple(p.quick for p in pos if p.quick is not None and not p.dir_only)
        self.quick_dirs = tuple(p.quick for p in pos if p.quick is not None)
        self.name_quick_files = tuple(
            p.name_quick for p in pos if p.name_quick is not None and not p.dir_only
        )
        self.name_quick_dirs = tuple(p.name_quick for p in pos if p.name_quick is not None)
        self._combined: dict[bool, tuple[list[Any], list[Any]]] = {}

    @classmethod
    def from_bytes(
        cls, data: bytes, source: str, base: str, kind: int, warnings: list[str]
    ) -> PatternList:
        """Parse an ignore file's content as dir.c ``add_patterns_from_buffer`` does.

        Never raises: a NUL byte ends its line's pattern (as in git) and is reported; a
        pattern that can never match (unterminated ``[``, unknown ``[:class:]``, trailing
        ``\\``) is kept (git keeps it too) and reported. Warnings are
        ``"{source}:{line}: {reason}"`` strings appended to ``warnings``.
        """
        digest = _digest(data)
        text = data.decode("latin-1")
        if text.startswith("\xef\xbb\xbf"):
            text = text[3:]
        patterns: list[Pattern] = []
        for lineno, entry in enumerate(text.split("\n"), 1):
            if not entry or entry[0] == "#":
                continue
            if entry.endswith("\r"):
                entry = entry[:-1]
            display = from_byte_view(entry)
            nul = entry.find("\0")
            if nul >= 0:
                warnings.append(f"{source}:{lineno}: binary content (NUL byte); pattern cut there")
                entry = entry[:nul]
            trimmed = _trim_trailing_spaces(entry)
            pat = _compile_line(trimmed, lineno, display, base)
            if pat is None:
                continue
            if pat.full == NEVER:
                warnings.append(
                    f"{source}:{lineno}: pattern {display!r} can never match "
                    "(invalid per git's wildmatch)"
                )
            patterns.append(pat)
        return cls(source, base, kind, patterns, digest, True)

    @classmethod
    def from_patterns(
        cls, lines: Sequence[str], source: str, base: str, kind: int, warnings: list[str]
    ) -> PatternList:
        """A list from settings strings (gitignore syntax, one pattern each; no comments
        processing beyond git's). Labels are ``"{source}:{pattern}"``."""
        digest = _digest("\n".join(lines).encode("utf-8", "surrogateescape"))
        patterns: list[Pattern] = []
        for idx, line in enumerate(lines, 1):
            raw = byte_view(line)
            if not raw or raw[0] == "#":
                continue
            pat = _compile_line(_trim_trailing_spaces(raw.rstrip("\r\n")), idx, line, base)
            if pat is None:
                continue
            if pat.full == NEVER:
                warnings.append(
                    f"{source}: pattern {line!r} can never match (invalid per git's wildmatch)"
                )
            patterns.append(pat)
        return cls(source, base, kind, patterns, digest, False)

    def _combine(self, is_dir: bool) -> tuple[list[Any], list[Any]]:
        """``(basename regexes, path regexes)``: the list's patterns as alternations of at
        most ``_ALTERNATION_CHUNK`` each, last line first, so the first alternative that
        matches is git's last match (see :func:`_compile_alternation`)."""
        got = self._combined.get(is_dir)
        if got is None:
            name_alts: list[str] = []
            path_alts: list[str] = []
            for idx in range(len(self.patterns) - 1, -1, -1):
                pat = self.patterns[idx]
                if (pat.dir_only and not is_dir) or pat.full == NEVER:
                    continue
                (name_alts if pat.nodir else path_alts).append(f"(?P<g{idx}>{pat.full})")
            got = (_compile_alternation(name_alts), _compile_alternation(path_alts))
            self._combined[is_dir] = got
        return got

    def last_match(self, path: str, name: str, is_dir: bool) -> Pattern | None:
        """The last pattern matching ``path`` (top-relative byte view, below ``base``) with
        basename ``name``, or ``None`` (git's ``last_matching_pattern_from_list``)."""
        name_rxs, path_rxs = self._combine(is_dir)
        best = -1
        for rx in name_rxs:  # chunks hold later lines first: the first hit is the last line
            m = rx.fullmatch(name)
            if m is not None:
                best = int(m.lastgroup[1:])
                break
        for rx in path_rxs:
            m = rx.fullmatch(path, len(self.base))
            if m is not None:
                best = max(best, int(m.lastgroup[1:]))
                break
        return self.patterns[best] if best >= 0 else None

    def verdict(self, pat: Pattern) -> Verdict:
        """The ``Verdict`` naming ``pat`` of this list."""
        src = f"{self.source}:{pat.line}" if self.label_lines else f"{self.source}:{pat.display}"
        return Verdict(KIND_NAMES[self.kind], src, pat.display)


class GitPatterns:
    """Request-level gitignore-syntax patterns (PROTOCOL §3 ``exclude``), relative to the
    workspace root, with git's semantics (last matching line wins, ``!`` negates, a
    trailing ``/`` matches folders only, an excluded folder excludes everything below it).

    ``GitPatterns(lines)`` never raises for a pattern git accepts (git accepts every
    line); lines that can never match are listed in ``warnings``.
    """

    def __init__(self, lines: Sequence[str]) -> None:
        self.warnings: list[str] = []
        self._list = PatternList.from_patterns(list(lines), "exclude", "", 0, self.warnings)

    def match(self, path: str, is_dir: bool = False) -> bool:
        """Whether ``path`` (root-relative POSIX) is excluded: itself, or a folder above
        it (checked top-down as git's ``prep_exclude`` does)."""
        parts = byte_view(path.strip("/")).split("/")
        cur = ""
        for i, part in enumerate(parts):
            cur = cur + "/" + part if cur else part
            last = i == len(parts) - 1
            pat = self._list.last_match(cur, part, is_dir if last else True)
            if pat is not None and not pat.negated:
                return True
        return False


# --------------------------------------------------------------------------------------
# basename prefilter (the re2 seam)


_RE2: Any = None
_RE2_TRIED = False
_RE2_MIN_PARTS: Final = 12


def _re2() -> Any:
    global _RE2, _RE2_TRIED
    if not _RE2_TRIED:
        _RE2_TRIED = True
        try:
            import re2  # type: ignore[import-untyped, unused-ignore]

            _RE2 = re2
        except ImportError:
            _RE2 = None
    return _RE2


def _match_names(rx: Any, names: Collection[str]) -> set[str]:
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


class NameMatcher:
    """Basename prefilter for a set of pattern lists: which names some positive pattern
    may match by basename (exact for basename patterns, a superset for simple path
    patterns). Memoized per name: a name repeated across folders is matched once."""

    __slots__ = ("_dirs", "_files")

    def __init__(self, lists: Iterable[PatternList]) -> None:
        lists = list(lists)
        pf = list(dict.fromkeys(q for lst in lists for q in lst.name_quick_files))
        pd = list(dict.fromkeys(q for lst in lists for q in lst.name_quick_dirs))
        self._files: tuple[Any, set[str], set[str]] = (compile_quick(pf), set(), set())
        self._dirs: tuple[Any, set[str], set[str]] = (compile_quick(pd), set(), set())

    def hits(self, names: set[str], is_dir: bool) -> set[str]:
        """Every name seen so far (``names`` included) that may match; shared, read-only."""
        rx, seen, hits = self._dirs if is_dir else self._files
        if rx is not None:
            new = names - seen
            if new:
                seen |= new
                hits |= _match_names(rx, new)
        return hits


#: Alternatives per compiled regex of one ignore file: a file of 200,000 patterns is
#: compiled as 400 regexes, not one alternation whose compile time is superlinear.
_ALTERNATION_CHUNK: Final = 500


def _risky(source: str) -> bool:
    """Whether a translated pattern can make a backtracking engine take exponential time:
    several unbounded repetitions (``a*a*a*…b``, ``**/**/…``) against a name that almost
    matches. git's wildmatch is linear there; so is RE2."""
    return source.count("*") + source.count("+") >= 3


def _compile_alternation(alts: list[str]) -> list[Any]:
    """``alts`` (named groups, in priority order) compiled as chunks of at most
    ``_ALTERNATION_CHUNK``, in the same order; each matches with ``.fullmatch(s[, pos])``
    and reports its alternative in ``.lastgroup``.

    A chunk holding a risky alternative (:func:`_risky`), and every chunk of a list over
    ``_ALTERNATION_CHUNK`` alternatives (Python's ``re`` compiles ~7,000 patterns a
    second), is compiled with RE2 when it is installed (linear time, the same
    leftmost-first priority); otherwise, or when RE2 lacks a construct, with ``re``
    (cheaper per call for the few ordinary patterns of a usual ignore file)."""
    out: list[Any] = []
    many = len(alts) > _ALTERNATION_CHUNK
    for at in range(0, len(alts), _ALTERNATION_CHUNK):
        chunk = alts[at : at + _ALTERNATION_CHUNK]
        src = "|".join(chunk)
        mod = _re2() if many or any(_risky(a) for a in chunk) else None
        if mod is not None:
            options = mod.Options()
            options.dot_nl = True  # re.DOTALL
            options.log_errors = False
            try:
                out.append(mod.compile(src, options))
                continue
            except mod.error:
                pass
        out.append(re.compile(src, re.DOTALL))
    return out


def compile_quick(parts: Sequence[str]) -> Any:
    """One multi-line regex over newline-joined top-relative paths matching any of
    ``parts``: RE2 (linear time, one pass) when installed, else Python re."""
    if not parts:
        return None
    src = "(?m)^(?:" + "|".join(parts) + ")$"
    # few alternatives: Python re (cheaper per call); many: RE2 (one linear pass)
    mod = _re2() if len(parts) > _RE2_MIN_PARTS else None
    if mod is not None:
        try:
            return mod.compile(src)
        except mod.error:  # a construct RE2 lacks: fall back to Python re
            pass
    return re.compile(src)


def _digest(data: bytes) -> str:
    """A cheap content fingerprint: size, CRC-32 and Adler-32 (zlib imports in no time,
    unlike hashlib's OpenSSL)."""
    return f"{len(data):x}-{zlib.crc32(data):08x}-{zlib.adler32(data):08x}"
