"""A root's ranking (``Workspace.ranking``): the four signals of docs/protocol.md
"Ranking", fused.

* **content**: BM25 of the file's text for the focus's words (``fulltext.FullText``,
  kept current by ``keeper.IndexKeeper``); absent with ``rankingIndex: "off"`` or
  without FTS5.
* **names**: the focus's words in the file's path (``names.path_scores``), and the
  symbols its outline defines.
* **references**: personalized PageRank over definitions and references
  (``references.pagerank``) of the best candidates so far and the anchors, restarting at
  the anchors and at the files defining an identifier the focus names.
* **recency**: changed in the working tree or the last commits (``recency.Recency``),
  and changed by the past commits whose messages match the focus best
  (``history.CommitHistory``; fused under its own weight, ``"history"``).

Fusion: each signal's scores are divided by that signal's best score among the
candidates (so each lies in 0..1), weighted (``WEIGHTS``) and summed, and the sum is
divided by ``(estimated tokens + 200) ** SIZE_EXPONENT`` (of two files about as relevant,
the smaller one leaves more of the budget to the next). Files no signal scores keep the
request's order after the others. The weights were chosen on bench/bench_focus.py
(bench/README.md "Ranking"): reciprocal-rank fusion was measured too, and lost.
Tags (definitions and references) are made lazily for the files that need them, at
most ``TAG_SECONDS`` a call in the daemon (``background``), kept per (path, mark); the
files the graph takes whose tags are still to be made count in ``pending_files`` (the
next call makes more). In process nothing is kept for a next call: a call waits for
git and makes the graph's tags for up to ``INPROCESS_SECONDS``, so that its complete
ranking is the daemon's, and counts what is still missing then. The daemon also
makes the outlines and tags of every file ahead, once the full-text index is built
(``rank.ahead_pass``), and takes a file's tags from that store while its mark is the
stored one (so does an in-process call, from the store a daemon left in the same
file): as that pass goes on, fewer are left to make, so ``pending_files`` falls to 0
with time.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal

from readmany_daemon.content.outline import OutlineCache, Tags, tags
from readmany_daemon.index.model import Index
from readmany_daemon.rank import history as history_mod
from readmany_daemon.rank import recency as recency_mod
from readmany_daemon.rank.ahead import AheadStore
from readmany_daemon.rank.ahead_pass import AheadPass
from readmany_daemon.rank.api import SIGNALS, WHY_MAX_CHARS, Ranked
from readmany_daemon.rank.fulltext import FullText, fts5_available
from readmany_daemon.rank.fusion import (
    Memo,
    lead_named,
    named_paths,
    normalized,
    path_words,
    ranked_head,
    weighted_sum,
    within_root,
)
from readmany_daemon.rank.history import CommitHistory
from readmany_daemon.rank.keeper import IndexKeeper, mark_of, read_text
from readmany_daemon.rank.names import path_scores
from readmany_daemon.rank.ordered import LazyWhy, with_tail
from readmany_daemon.rank.recency import Recency, git_stamp
from readmany_daemon.rank.references import pagerank
from readmany_daemon.rank.stats import search_candidates
from readmany_daemon.rank.words import focus_identifiers, focus_words
from readmany_daemon.rules.git import RepoLocation, repo_location

__all__ = ["MODES", "SIZE_EXPONENT", "WEIGHTS", "RootRanking", "normalized"]

log = logging.getLogger(__name__)

#: ``rankingIndex`` values (docs/protocol.md "Settings").
MODES: Final = ("on-demand", "always", "off")
#: Signal -> weight in the fusion, measured on bench/bench_focus.py.
WEIGHTS: Final[Mapping[str, float]] = {
    "content": 1.0,
    "names": 0.4,
    "references": 0.1,
    "recency": 0.1,
    "history": 0.4,
}
#: Within content: the weight of the BM25 of the focus's code identifiers
#: (``words.focus_identifiers``) beside that of all its words (1).
IDENTIFIER_WEIGHT: Final = 0.5
#: Within names: a symbol the file defines named by the focus, beside its path (1).
DEFINES_WEIGHT: Final = 0.5
#: The fused score is divided by ``(bytes / 4 + 200) ** SIZE_EXPONENT``.
SIZE_EXPONENT: Final = 0.05
#: A focused request waits at most this long (seconds) for the index (issue 25 item 5).
WAIT_SECONDS: Final = 0.1
#: Tags are made for at most this long (seconds) per call; the rest the next call.
TAG_SECONDS: Final = 0.05
#: In process (a one-shot answer, nothing kept for a next call), how long a call waits
#: for git's answers (recency, past commits) and makes the graph's tags: a ranking that
#: completes within it is the daemon's, so a focused answer is the same bytes in process
#: as through the daemon (PROTOCOL §4 "Stable order"); what is still missing then counts
#: in ``pending_files``. Only while the full-text index has nothing left to check for the
#: call (else its ranking is incomplete anyway, as on a first call at 100,000 files).
INPROCESS_SECONDS: Final = 2.0
#: Best files so far (by content, names, recency) whose references are graphed.
GRAPH_FILES: Final = 60
#: Content results asked of the full-text index.
CONTENT_LIMIT: Final = 2000
#: Tags kept (per path and mark).
TAGS_KEPT: Final = 4096
#: Files whose ``why`` names the words their text holds.
WHY_WORDS_FILES: Final = 40
#: Files that get a ``why`` (the rest: ``""``; an answer lists far fewer).
WHY_FILES: Final = 500
#: Best files whose size weighs in the fusion.
SIZED_FILES: Final = 300
#: Sizes kept between calls while the index's clock stays (``RootRanking._sizes``).
SIZES_KEPT: Final = 20_000


class RootRanking:
    """The ranking of the files of ``root`` (absolute) whose index is ``index()`` (called
    only within ``rank`` and ``start``, which the daemon runs holding the root's lock).

    ``path``: the full-text index's file (None: in memory); ``mode``: ``rankingIndex``;
    ``background``: keep the index in a thread (the daemon) rather than for at most 100 ms
    of each call (in process); ``redact``: text -> what may be indexed."""

    def __init__(
        self,
        root: str,
        index: Callable[[], Index],
        *,
        path: str | None = None,
        mode: str = "on-demand",
        background: bool = False,
        redact: Callable[[str], str] = lambda text: text,
        outlines: OutlineCache | None = None,
    ) -> None:
        self.root = root
        self.mode = mode if mode in MODES else "on-demand"
        self.background = background
        self._index = index
        self._outlines = outlines if outlines is not None else OutlineCache()
        self._tags: OrderedDict[tuple[str, str], Tags] = OrderedDict()
        wait = None if background else INPROCESS_SECONDS  # None: the daemon's own
        self.recency = Recency(root, wait)
        #: The repository holding the root (``_git_location``; False: not looked for).
        self._location: RepoLocation | Literal[False] | None = False
        #: Past commits like the task (part of recency); not with ``rankingIndex: "off"``.
        self.history: CommitHistory | None = None
        #: Files the index reported changed, with the index's clock (generation) of the
        #: change: age 0 until git answers for that clock or a later one (then git's
        #: age stands: a file changed and then reverted is a working-tree change no more).
        self._touched: dict[str, int] = {}
        self.keeper: IndexKeeper | None = None
        #: The daemon's outlines and tags made ahead (``rank.ahead_pass``), beside the
        #: full-text index in its file.
        self.ahead: AheadPass | None = None
        #: The store of what was made ahead that calls read (the daemon's pass's, or in
        #: process the one a daemon left in the same file).
        self._made: AheadStore | None = None
        #: The per-signal scores of the last call (``{signal: {path: score}}``), for
        #: bench/bench_focus.py's weight search.
        self.last_scores: Mapping[str, Mapping[str, float]] = {}
        self.last_sizes: Mapping[str, int] = {}
        self.last_named: Sequence[str] = ()
        #: The last call's candidates and each one's 0-based place (a warm request
        #: asks again with the same list: not remade per call).
        self._candidates: tuple[str, ...] = ()
        self._places: dict[str, int] = {}
        #: Sizes (bytes) by path as of an index clock (``_sizes``).
        self._sized: tuple[int | None, dict[str, int]] = (None, {})
        if self.mode != "off" and fts5_available():
            self.history = CommitHistory(root, wait, path)
            try:
                self.keeper = IndexKeeper(root, FullText(path), redact)
            except (sqlite3.Error, OSError) as exc:
                log.warning("no full-text index for %s: %s", root, exc)
        if background and path is not None and self.keeper is not None:
            try:
                self.ahead = AheadPass(root, path, self.keeper)
            except (sqlite3.Error, OSError) as exc:
                log.warning("no outlines made ahead for %s: %s", root, exc)
            else:
                self._made = self.ahead.store
        elif path is not None and self.keeper is not None and os.path.exists(path):
            # in process: what a daemon made ahead in the same file (made, not waited for)
            try:
                self._made = AheadStore(path)
            except (sqlite3.Error, OSError) as exc:
                log.debug("no outlines made ahead read for %s: %s", root, exc)
        if self._made is not None:
            self._outlines.stored = self._made.outline

    # -- the index's life ----------------------------------------------------
    def start(self) -> None:
        """Queue the whole root for the full-text index (and, in the background mode,
        start building it); ``rankingIndex: "always"`` calls it at start."""
        if self.keeper is not None and not self.keeper.started:
            files = self._index().files()
            self.keeper.start(files, self.background)
            if self.ahead is not None:
                self.ahead.start(files)

    def note_change(self, generation: int, rel: str, deleted: bool) -> None:
        """The index's change listener (``Index.add_listener``)."""
        if not deleted:
            self._touched[rel] = generation
        if self.keeper is not None:
            self.keeper.note_change(generation, rel, deleted)
        if self.ahead is not None:
            self.ahead.note_change(rel, deleted)

    def close(self) -> None:
        """Stop the background work and close the index file."""
        if self._made is not None and self._outlines.stored == self._made.outline:
            self._outlines.stored = None
        if self.ahead is not None:
            self.ahead.close()
        elif self._made is not None:
            self._made.close()
        if self.keeper is not None:
            self.keeper.close()
            self.keeper.fulltext.close()
        if self.history is not None:
            self.history.close()

    # -- ranking -----------------------------------------------------------------
    def rank(self, candidates: Sequence[str], focus: str, anchors: Sequence[str]) -> Ranked:
        """``candidates`` best first for ``focus`` (see ``rank.api.Ranking.rank``)."""
        focus = within_root(focus, self.root)
        words = focus_words(focus)
        idents = focus_identifiers(focus)
        signals: list[str] = []
        scores: dict[str, dict[str, float]] = {}
        indexed = pending = 0
        index = self._index()
        keeper = self.keeper
        cand = self._positions(candidates)
        searched: list[str] = []  # the content words, rarest first (``why``)
        if keeper is not None:
            pending = self._update(keeper, index, candidates)
            indexed = keeper.indexed
            if indexed:
                signals.append("content")
            # the text, the paths (the index's name column: no scan of every path) and
            # the focus's identifiers, searched at once
            found, by_name, named = search_candidates(
                keeper.fulltext,
                [
                    (words, CONTENT_LIMIT, "body"),
                    (words, CONTENT_LIMIT, "name"),
                    (sorted(idents), CONTENT_LIMIT, "body"),
                ],
                cand,
                searched,
            )
            # (candidates only: ``search_candidates`` leaves the others out)
            scores["content"] = weighted_sum((1.0, dict(found)), (IDENTIFIER_WEIGHT, dict(named)))
            scores["names"] = dict(by_name)
        if keeper is None or pending:  # the index's name column lacks files: the paths
            # themselves (a first focused call in the daemon ranks by them at once)
            scores["names"] = {p: s for p, (s, _) in path_scores(candidates, words).items()}
        signals.append("names")
        # git's answers are asked again when the index's clock or git's own files move
        # (a commit writes under .git only)
        key = (index.clock, git_stamp(self._git_location()))
        # In process a call waits for the rest only when the full-text index is complete
        # (else the ranking is incomplete anyway: a 100,000-file root, ``pending``).
        brief = not self.background and pending > 0  # (None: each one's own wait)
        ages, git_pending = self.recency.ages(key, recency_mod.WAIT_SECONDS if brief else None)
        ages = dict(ages)
        answered = self.recency.answered
        if isinstance(answered, tuple) and self._touched:  # git's answer holds those
            # changes (or they were undone since): theirs stands
            self._touched = {p: g for p, g in self._touched.items() if g > answered[0]}
        for rel in self._touched:
            ages[rel] = 0
        if ages:
            scores["recency"] = {p: 1.0 / (1 + a) for p, a in ages.items() if p in cand}
            signals.append("recency")
        if self.history is not None:
            matched, making = self.history.matches(
                key, words, history_mod.WAIT_SECONDS if brief else None
            )
            git_pending = git_pending or making
            past = {p: s for p, s in matched.items() if p in cand}
            if past:
                scores["history"] = past
                if "recency" not in signals:
                    signals.append("recency")
        memo: Memo = {}
        first = self._best(scores, GRAPH_FILES, memo)
        in_focus = named_paths(focus, cand)
        graphed = list(dict.fromkeys([*(a for a in anchors if a in cand), *in_focus, *first]))
        if len(graphed) < GRAPH_FILES:  # few scored yet: the request's first files too
            graphed = list(dict.fromkeys([*graphed, *candidates[:GRAPH_FILES]]))[:GRAPH_FILES]
        patient = not (self.background or brief)
        file_tags, untagged = self._tags_of(graphed, INPROCESS_SECONDS if patient else TAG_SECONDS)
        pending += untagged
        if git_pending:  # (as the answers read above were: git may answer since)
            # git's first answers still to come: every file's recency part is
            pending += len(candidates)
        defines: dict[str, str] = {}
        defined: dict[str, float] = {}
        word_set = set(words)
        for p, t in file_tags.items():
            hit = sorted(n for n in t.defines if n in word_set or n in idents)
            if hit:
                defines[p] = max(hit, key=len)
                defined[p] = sum(1.0 if n in idents else 0.3 for n in hit)
        scores["names"] = weighted_sum((1.0, scores["names"]), (DEFINES_WEIGHT, defined))
        seeds = {a: 1.0 for a in [*anchors, *in_focus] if a in file_tags}
        for p, name in defines.items():
            seeds[p] = seeds.get(p, 0.0) + (1.0 if name in idents else 0.5)
        for p in first[:5]:
            seeds[p] = seeds.get(p, 0.0) + 0.2
        pr = pagerank(file_tags, seeds, idents)
        scores["references"] = {p: s for p, s in pr.items() if p not in seeds}
        signals.append("references")
        fused = weighted_sum(*((WEIGHTS[signal], per) for signal, per in scores.items()), memo=memo)
        lead_named(fused, in_focus)
        best = heapq.nlargest(SIZED_FILES, fused, key=fused.__getitem__)
        sizes = self._sizes(best, index.clock if self.background else None)
        head = ranked_head(fused, sizes, SIZE_EXPONENT, cand)
        places: Sequence[int] | None = None
        order: Sequence[str]
        if len(cand) == len(candidates):  # each candidate once
            order, places = with_tail(head, candidates, cand)
        else:
            order = head + list(itertools.filterfalse(fused.__contains__, candidates))
        by_path = path_words(order[:WHY_FILES], scores["names"], words)
        self.last_scores, self.last_sizes, self.last_named = scores, sizes, in_focus
        held: Mapping[str, list[str]] = {}
        if keeper is not None:
            held = keeper.fulltext.holding(searched[:12], order[:WHY_WORDS_FILES])
        why = LazyWhy(
            order[:WHY_FILES],
            lambda p: self._why(p, scores, held, by_path, defines, ages, in_focus),
        )
        ordered = tuple(s for s in SIGNALS if s in signals)
        return Ranked(order, why, ordered, indexed, pending, places)

    def _git_location(self) -> RepoLocation | None:
        """The repository holding the root (looked for once; None outside git)."""
        location = self._location
        if location is False:
            location = self._location = repo_location(self.root)
        return location

    def _positions(self, candidates: Sequence[str]) -> dict[str, int]:
        """``{candidate: 0-based place}``, kept for the next call with the same list."""
        key = tuple(candidates)
        if key != self._candidates:
            self._candidates = key
            self._places = {p: i for i, p in enumerate(key)}
        return self._places

    @staticmethod
    def _best(
        scores: Mapping[str, Mapping[str, float]],
        n: int,
        memo: Memo | None = None,
    ) -> list[str]:
        """The ``n`` best files by the fusion without sizes (``memo``: see ``weighted_sum``)."""
        fused = weighted_sum(*((WEIGHTS[signal], per) for signal, per in scores.items()), memo=memo)
        return heapq.nlargest(n, fused, key=fused.__getitem__)

    def _update(self, keeper: IndexKeeper, index: Index, candidates: Sequence[str]) -> int:
        """Bring the full-text index closer to current; returns the files pending."""
        if self.background:
            if not keeper.started:  # the request's files first, then the rest of the root
                files = index.files()
                keeper.start(itertools.chain(candidates, files), True)
                if self.ahead is not None:
                    self.ahead.start(files)
            keeper.wait(WAIT_SECONDS)
            return keeper.pending_count()
        deadline = time.monotonic() + WAIT_SECONDS
        keeper.forget_checks()  # no watcher in process: a file's mark is the truth
        todo = keeper.unchecked(candidates)
        if todo:
            visible = set(index.files()) if len(todo) > 256 else None
            todo = [r for r in todo if (r in visible if visible is not None else index.contains(r))]
            keeper.work(deadline, todo)
            return len(keeper.unchecked(todo))
        return 0

    def _sizes(self, paths: Sequence[str], clock: int | None = None) -> dict[str, int]:
        """Bytes of each of ``paths`` (``lstat``; 0 when it cannot). With the index's
        ``clock`` (the daemon, whose watcher bumps it on every change), sizes are kept
        until it moves (at most ``SIZES_KEPT``), not asked again per call."""
        if clock is None or self._sized[0] != clock or len(self._sized[1]) > SIZES_KEPT:
            self._sized = (clock, {})
        known = self._sized[1]
        out: dict[str, int] = {}
        for p in paths:
            size = known.get(p)
            if size is None:
                try:
                    size = os.lstat(os.path.join(self.root, p)).st_size
                except OSError:
                    size = 0
                known[p] = size
            out[p] = size
        return out

    @staticmethod
    def fuse(
        candidates: Sequence[str],
        scores: Mapping[str, Mapping[str, float]],
        sizes: Mapping[str, int],
        weights: Mapping[str, float] = WEIGHTS,
        size_exponent: float = SIZE_EXPONENT,
        named: Sequence[str] = (),
    ) -> list[str]:
        """``candidates`` (each once) ordered by the fusion of ``scores`` (``{signal:
        {path: score}}``, higher better; see the module) with ``sizes`` (bytes), the
        files of ``named`` (:func:`named_paths`) first, ties and files no signal scores
        in the order of ``candidates``: as ``rank`` orders them (bench/bench_focus.py
        re-fuses a call's ``last_scores`` with other weights)."""
        fused = weighted_sum(*((weights[signal], per) for signal, per in scores.items()))
        lead_named(fused, named)
        at = {p: i for i, p in enumerate(candidates)}
        head = ranked_head(fused, sizes, size_exponent, at)
        return head + list(itertools.filterfalse(fused.__contains__, candidates))

    def _tags_of(self, paths: Sequence[str], seconds: float) -> tuple[dict[str, Tags], int]:
        """``({path: tags}, untagged)``: the tags of ``paths`` (a file gone is left out),
        made for at most ``seconds``; ``untagged`` counts the files left for a later call."""
        out: dict[str, Tags] = {}
        untagged = 0
        marks: dict[str, str] = {}
        for rel in paths:
            try:
                marks[rel] = mark_of(os.lstat(os.path.join(self.root, rel)))
            except OSError:
                continue
        missing = {rel: mark for rel, mark in marks.items() if (rel, mark) not in self._tags}
        stored = self._made.tags(missing) if self._made is not None and missing else {}
        deadline = time.monotonic() + seconds
        for rel, mark in marks.items():
            key = (rel, mark)
            got = self._tags.get(key)
            if got is None and rel in stored:  # made ahead for this very mark
                got = self._tags[key] = stored[rel]
                if len(self._tags) > TAGS_KEPT:
                    self._tags.popitem(last=False)
            elif got is None:
                if time.monotonic() > deadline:
                    untagged += 1
                    continue
                text = read_text(self.root, rel)
                got = tags(text, rel, cache=self._outlines) if text is not None else Tags()
                self._tags[key] = got
                if len(self._tags) > TAGS_KEPT:
                    self._tags.popitem(last=False)
            else:
                self._tags.move_to_end(key)
            out[rel] = got
        return out, untagged

    @staticmethod
    def _why(
        path: str,
        scores: Mapping[str, Mapping[str, float]],
        held: Mapping[str, list[str]],
        by_path: Mapping[str, tuple[float, str]],
        defines: Mapping[str, str],
        ages: Mapping[str, int],
        named: Sequence[str] = (),
    ) -> str:
        parts: list[str] = ["named in the focus"] if path in named else []
        words = held.get(path)
        if words:
            parts.append(f'content: "{" ".join(words[:3])}"')
        elif path in scores.get("content", {}):
            parts.append("content")
        if path in defines:
            parts.append(f"defines {defines[path]}")
        elif path in by_path:
            parts.append(f"path: {by_path[path][1]}")
        if path in scores.get("references", {}):
            parts.append("references")
        if path in scores.get("history", {}):
            parts.append("like past commits")
        age = ages.get(path)
        if age is not None:
            ago = "1 commit" if age == 1 else f"{age} commits"
            parts.append("changed in work tree" if age == 0 else f"changed {ago} ago")
        why = "; ".join(parts)
        return why if len(why) <= WHY_MAX_CHARS else why[: WHY_MAX_CHARS - 1] + "…"
