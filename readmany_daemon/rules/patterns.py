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
wherever tests/unit/rules/test_ignore_differential.py probed (each case is pinned in test_ignore.py
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

import zlib
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from readmany_daemon.paths import nfc
from readmany_daemon.rules.kinds import KIND_NAMES, Verdict
from readmany_daemon.rules.regex import (
    Alternation,
    compile_alternation,
    compile_quick,
    match_names,
)
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


def _compile_line(
    raw: str, line: int, display: str, base: str, fold: bool = False
) -> Pattern | None:
    """Parse one already-trimmed pattern line (byte view) as dir.c ``parse_path_pattern``
    does and translate it; ``base`` is the top-relative folder (``""`` or ``"a/b/"``).
    ``None`` for a line that can never match (empty pattern). ``fold``: match ASCII
    letters without regard to case (git's ``core.ignorecase``, see ``translate``)."""
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
        full_n = translate(body, pathname=False, blob=False, fold=fold)
        quick_n = translate(body, pathname=False, blob=True, fold=fold)
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
        prefix = "".join(literal(ch, fold) for ch in body[:k])
        rest_full = translate(body[k:], pathname=True, blob=False, fold=fold)
        rest_quick = translate(body[k:], pathname=True, blob=True, fold=fold)
        if rest_full is None or rest_quick is None:
            return Pattern(line, display, negated, dir_only, nodir, NEVER, None, None)
        full = prefix + rest_full
        core = body[3:] if body.startswith("**/") else body
        if "[" in body or "\\" in body or "**" in core:
            quick = "".join(literal(ch) for ch in base) + prefix + rest_quick
        else:
            # no brackets, escapes or "**" (but a leading "**/"): the basename must match
            # the last segment, so prefilter on that (a superset; classify decides)
            last = translate(core.rpartition("/")[2], pathname=False, blob=True, fold=fold)
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
        self._combined: dict[bool, tuple[list[Alternation], list[Alternation]]] = {}

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        source: str,
        base: str,
        kind: int,
        warnings: list[str],
        fold: bool = False,
    ) -> PatternList:
        """Parse an ignore file's content as dir.c ``add_patterns_from_buffer`` does.

        Never raises: a NUL byte ends its line's pattern (as in git) and is reported; a
        pattern that can never match (unterminated ``[``, unknown ``[:class:]``, trailing
        ``\\``) is kept (git keeps it too) and reported. Warnings are
        ``"{source}:{line}: {reason}"`` strings appended to ``warnings``. ``fold``: match
        without regard to case (git's ``core.ignorecase``); it is part of ``digest``, so
        a snapshot made under the other setting does not count as current.
        """
        digest = _digest(data) + ("-i" if fold else "")
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
            pat = _compile_line(trimmed, lineno, display, base, fold)
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

    def _combine(self, is_dir: bool) -> tuple[list[Alternation], list[Alternation]]:
        """``(basename matchers, path matchers)``: the list's patterns compiled together
        in chunks of at most ``ALTERNATION_CHUNK``, last line first, so the first chunk
        that matches holds git's last match (see :func:`compile_alternation`)."""
        got = self._combined.get(is_dir)
        if got is None:
            name_alts: list[tuple[int, str]] = []
            path_alts: list[tuple[int, str]] = []
            for idx in range(len(self.patterns) - 1, -1, -1):
                pat = self.patterns[idx]
                if (pat.dir_only and not is_dir) or pat.full == NEVER:
                    continue
                (name_alts if pat.nodir else path_alts).append((idx, pat.full))
            got = (compile_alternation(name_alts), compile_alternation(path_alts))
            self._combined[is_dir] = got
        return got

    def last_match(self, path: str, name: str, is_dir: bool) -> Pattern | None:
        """The last pattern matching ``path`` (top-relative byte view, below ``base``) with
        basename ``name``, or ``None`` (git's ``last_matching_pattern_from_list``)."""
        name_rxs, path_rxs = self._combine(is_dir)
        best = -1
        for rx in name_rxs:  # chunks hold later lines first: the first hit is the last line
            best = rx.last(name, 0)
            if best >= 0:
                break
        for rx in path_rxs:
            got = rx.last(path, len(self.base))
            if got >= 0:
                best = max(best, got)
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
        # NFC patterns against NFC paths: a line typed in either normalization form
        # matches a name stored in either (PROTOCOL §3; ignore files stay byte for byte)
        lines = [nfc(line) for line in lines]
        self._list = PatternList.from_patterns(lines, "exclude", "", 0, self.warnings)

    def match(self, path: str, is_dir: bool = False) -> bool:
        """Whether ``path`` (root-relative POSIX) is excluded: itself, or a folder above
        it (checked top-down as git's ``prep_exclude`` does). One path at a time: for a
        list of files, ``keep`` gives the same answer in one pass."""
        parts = byte_view(nfc(path).strip("/")).split("/")
        cur = ""
        for i, part in enumerate(parts):
            cur = cur + "/" + part if cur else part
            last = i == len(parts) - 1
            pat = self._list.last_match(cur, part, is_dir if last else True)
            if pat is not None and not pat.negated:
                return True
        return False

    def keep(self, paths: Sequence[str]) -> list[str]:
        """The files of ``paths`` (root-relative POSIX) that ``match`` keeps, in order:
        ``[p for p in paths if not self.match(p)]``, computed in one pass.

        Only a positive pattern excludes, and each one has a prefilter regex that every
        name or path it matches also matches (``Pattern.name_quick``, ``Pattern.quick``).
        So the distinct basenames go through ``NameMatcher`` and the distinct paths
        through the path prefilter, each an alternation run over newline-joined strings
        (RE2 for long lists: one linear pass whatever the number of patterns), and git's
        last matching line is asked only for their hits. Each folder is judged once, top
        down; nothing below an excluded folder is judged."""
        lst = self._list
        if not lst.name_quick_dirs and not lst.quick_dirs:
            return list(paths)  # only negations, or patterns that can never match
        joined = "\n".join(paths)
        clean: Sequence[str] = paths
        if not joined.isascii():
            clean = [nfc(p) for p in paths]  # compared in NFC; the originals are kept
        if joined[:1] == "/" or joined[-1:] == "/" or "\n/" in joined or "/\n" in joined:
            clean = [p.strip("/") for p in clean]
        splits = [p.rpartition("/") for p in clean]
        parent: dict[str, str] = {}  # folder -> its parent ("" at the top)
        for d in {t[0] for t in splits}:
            while d and d not in parent:
                up = d.rpartition("/")[0]
                parent[d] = up
                d = up
        hit_dirs = self._hits(parent.keys(), {d.rpartition("/")[2] for d in parent}, True)
        excluded: dict[str, bool] = {"": False}
        for d in sorted(parent, key=len):  # a parent is shorter than its children
            excluded[d] = excluded[parent[d]] or (d in hit_dirs and self._positive(d, True))
        hit_files = self._hits(clean, {t[2] for t in splits}, False)
        positive = self._positive
        return [
            path
            for path, p, (d, _, _) in zip(paths, clean, splits, strict=True)
            if not excluded[d] and (p not in hit_files or not positive(p, False))
        ]

    def _hits(self, paths: Collection[str], names: set[str], is_dir: bool) -> set[str]:
        """The ``paths`` (with basenames ``names``) some positive pattern may match (a
        superset: the prefilters)."""
        lst = self._list
        name_hits = NameMatcher((lst,)).hits(names, is_dir)
        hits = {p for p in paths if p.rpartition("/")[2] in name_hits} if name_hits else set()
        quick = compile_quick(lst.quick_dirs if is_dir else lst.quick_files)
        if quick is not None:
            hits |= match_names(quick, paths)
        return hits

    def _positive(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` itself (not its folders) is excluded: its last matching
        pattern is a positive one."""
        b = byte_view(path)
        pat = self._list.last_match(b, b.rpartition("/")[2], is_dir)
        return pat is not None and not pat.negated


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
                hits |= match_names(rx, new)
        return hits


def _digest(data: bytes) -> str:
    """A cheap content fingerprint: size, CRC-32 and Adler-32 (zlib imports in no time,
    unlike hashlib's OpenSSL)."""
    return f"{len(data):x}-{zlib.crc32(data):08x}-{zlib.adler32(data):08x}"
