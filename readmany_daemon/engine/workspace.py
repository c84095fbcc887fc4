"""A workspace folder as the engine sees it: root, settings, rules, index, cache, overlays
and the cancellation checkpoint.

The one-shot CLI builds a ``Workspace`` per call (its index walked lazily, only when a
glob or folder needs it); the daemon keeps one per root, current through the watcher.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from readmany_daemon.content.cache import ContentCache
from readmany_daemon.content.outline import OutlineCache
from readmany_daemon.index.model import Index
from readmany_daemon.index.stable_order import StableOrder, git_last_changes, git_seed
from readmany_daemon.paths import abs_path, is_inside, rel_path
from readmany_daemon.rank.root import RootRanking
from readmany_daemon.rules.ignore import IgnoreRules
from readmany_daemon.rules.kinds import Filters, Verdict
from readmany_daemon.settings import Settings

_instances = itertools.count(1)

#: Expansion answers remembered per workspace (each valid only for one index clock).
_EXPANSIONS_KEPT = 64

#: Verdicts ``Workspace.explain`` remembers (three or so per named path read).
_VERDICTS_KEPT = 4096


@dataclass
class Overlay:
    """An open editor buffer: its full text and LSP document version."""

    text: str
    version: int


@dataclass
class Workspace:
    """One workspace folder (``root`` is an absolute, symlink-resolved path).

    ``overlay`` maps an absolute path to the open buffer that wins over disk (PROTOCOL §6),
    ``cache`` holds whole-file reads validated by stat, and ``checkpoint`` is called by the
    engine once per item it loads and raises (``errors.Cancelled``) to stop a request that
    is no longer wanted; all three are optional.
    """

    root: str
    settings: Settings
    _: KW_ONLY
    cache: ContentCache | None = None
    overlay: Callable[[str], Overlay | None] | None = None
    checkpoint: Callable[[], None] | None = None
    #: Outlines by a hash of their text (``engine.outlines``): those of texts that are no
    #: content cache entry's, and the one object files of the same text share.
    outlines: OutlineCache = field(default_factory=OutlineCache, repr=False)
    name: str = ""
    #: Where the root's stable order is kept (``index.stable_order.order_path``: beside
    #: the index snapshot in the user's cache folder); None: in memory only.
    order_file: str | None = None
    #: Where the root's full-text index is kept (``rank.fulltext``: beside the index
    #: snapshot, ``index-<hash>.rank``); None: in memory only.
    rank_file: str | None = None
    #: Keep the ranking's index in a background thread, current through the index's
    #: changes (the daemon); False: at most 100 ms of work per focused call (in process).
    rank_background: bool = False
    instance: str = field(default_factory=lambda: f"{os.getpid():x}.{next(_instances)}")
    _expansions: OrderedDict[
        tuple[str, str, Filters, bool], tuple[int, list[str], Counter[str]]
    ] = field(default_factory=OrderedDict, repr=False)
    _verdicts: OrderedDict[tuple[str, bool, Filters], tuple[int, Verdict | None]] = field(
        default_factory=OrderedDict, repr=False
    )
    _index: Index | None = field(default=None, init=False, repr=False)
    _rules: IgnoreRules | None = field(default=None, init=False, repr=False)
    _order: StableOrder | None = field(default=None, init=False, repr=False)
    _ranking: RootRanking | None = field(default=None, init=False, repr=False)

    @classmethod
    def open(
        cls,
        path: str,
        settings: Settings,
        *,
        cache: ContentCache | None = None,
        overlay: Callable[[str], Overlay | None] | None = None,
        checkpoint: Callable[[], None] | None = None,
    ) -> Workspace:
        """A workspace for folder ``path``; raises ``FileNotFoundError`` or
        ``NotADirectoryError`` when it is not an existing folder."""
        root = os.path.realpath(path)
        if not os.path.isdir(root):
            if os.path.exists(root):
                raise NotADirectoryError(f"not a folder: {path}")
            raise FileNotFoundError(f"no such folder: {path}")
        return cls(
            root,
            settings,
            cache=cache,
            overlay=overlay,
            checkpoint=checkpoint,
            name=os.path.basename(root),
        )

    @property
    def index(self) -> Index:
        """The index of this folder, walked on first use (see ``install_index``)."""
        index = self._index
        if index is None:
            index = self._index = Index.build(self.root, self.settings)
            if self._ranking is not None:
                index.add_listener(self._ranking.note_change)
        return index

    @property
    def has_index(self) -> bool:
        """Whether the index exists (walked or installed): asking for ``index`` then
        costs nothing."""
        return self._index is not None

    def install_index(self, index: Index) -> None:
        """Use ``index`` (built elsewhere: a snapshot, the runtime's walk) from now on;
        ``rules`` becomes the index's own (live) rules."""
        self._index = index
        self._rules = None
        if self._ranking is not None:
            index.add_listener(self._ranking.note_change)

    @property
    def rules(self) -> IgnoreRules:
        """The ignore rules, made on first use: the index's when it exists by then (or
        is installed later), else rules of their own."""
        rules = self._rules
        if rules is None:
            index = self._index
            rules = index.rules if index is not None else IgnoreRules(self.root, self.settings)
            self._rules = rules
        return rules

    @property
    def stable_order(self) -> StableOrder:
        """The root's stable order (``order: "stable"``), kept in ``order_file`` unless
        that lies inside the root (never in the workspace), seeded from git (and files
        changing at once ordered by git's last change); deleted files' paths dropped
        now and then (``StableOrder``)."""
        order = self._order
        if order is None:
            path = self.order_file
            if path is not None and is_inside(os.path.realpath(path), self.root):
                path = None
            order = self._order = StableOrder(
                path,
                lambda: git_seed(self.root),
                lambda rels: git_last_changes(self.root, rels),
                lambda rel: os.path.lexists(os.path.join(self.root, rel)),
            )
        return order

    @property
    def ranking(self) -> RootRanking:
        """The root's ranking (``rank.api.Ranking``), made on first use: its full-text
        index in ``rank_file`` unless that lies inside the root (never in the workspace),
        texts indexed with secrets redacted (``engine.redact``), kept current by the
        index's changes. The daemon's ranking makes outlines, tags and token counts
        ahead (``rank.ahead``): the content cache's counts are asked of it too."""
        ranking = self._ranking
        if ranking is None:
            from readmany_daemon.engine.redact import redacted_text

            path = self.rank_file
            if path is not None and is_inside(os.path.realpath(path), self.root):
                path = None
            ranking = self._ranking = RootRanking(
                self.root,
                lambda: self.index,
                path=path,
                mode=self.settings.ranking_index,
                background=self.rank_background,
                redact=redacted_text,
                outlines=self.outlines,
            )
            if self._index is not None:
                self._index.add_listener(ranking.note_change)
            if ranking.ahead is not None and self.cache is not None:
                # counts made ahead are by content: any root's store answers for any text
                self.cache.stored_count = ranking.ahead.store.count
        return ranking

    def close_ranking(self) -> None:
        """Stop the ranking's background work and close its index file (the root is
        forgotten); a later ``ranking`` opens it again."""
        ranking, self._ranking = self._ranking, None
        if ranking is not None:
            if (
                ranking.ahead is not None
                and self.cache is not None
                and self.cache.stored_count == ranking.ahead.store.count
            ):
                self.cache.stored_count = None
            ranking.close()

    def clock(self) -> str:
        """An opaque clock naming this workspace instance and the index generation."""
        generation = self._index.clock if self._index is not None else 0
        return f"{self.instance}:{generation}"

    def expand(
        self, kind: str, rel: str, filters: Filters, recursive: bool, hidden: Counter[str]
    ) -> list[str]:
        """The visible files of folder (``kind="dir"``) or glob ``rel``, sorted by bytes,
        adding what each rule kind hid to ``hidden``. Answers are remembered until the
        index changes (its clock moves), so a repeated expansion costs nothing; callers
        must not modify the list. Raises ``ValueError`` for an invalid pattern.
        With ``index.stat_checks`` on (the stat route of PROTOCOL §6) the index must
        check the folders first, so nothing remembered is used."""
        index = self.index
        key = (kind, rel, filters, recursive)
        hit = self._expansions.get(key)
        if hit is not None and hit[0] == index.clock and not index.stat_checks:
            self._expansions.move_to_end(key)
            hidden.update(hit[2])
            return hit[1]
        counts: Counter[str] = Counter()
        if kind == "dir":
            matches = index.expand_dir(rel, filters, recursive, hidden=counts)
        else:
            matches = index.glob(rel, filters, recursive, hidden=counts)
        self._expansions[key] = (index.clock, matches, counts)
        if len(self._expansions) > _EXPANSIONS_KEPT:
            self._expansions.popitem(last=False)
        hidden.update(counts)
        return matches

    def explain(self, rel: str, is_dir: bool, filters: Filters) -> Verdict | None:
        """Why ``rel`` would be hidden under ``filters``: the verdict of its nearest hidden
        ancestor folder, else its own; None when visible.

        Remembered like :meth:`expand`, until the index's clock moves (every change the
        index takes in, ignore files and git's index included, moves it) and never with
        ``index.stat_checks`` on: a named read of the same file then costs no rule
        evaluation (each evaluation probes the folders on the way for ignore files)."""
        index = self._index
        key = (rel, is_dir, filters)
        if index is not None and not index.stat_checks:
            hit = self._verdicts.get(key)
            if hit is not None and hit[0] == index.clock:
                return hit[1]
        verdict = self._explain(rel, is_dir, filters)
        if index is not None and not index.stat_checks:
            self._verdicts[key] = (index.clock, verdict)
            if len(self._verdicts) > _VERDICTS_KEPT:
                self._verdicts.popitem(last=False)
        return verdict

    def _explain(self, rel: str, is_dir: bool, filters: Filters) -> Verdict | None:
        # one walk down rel's folders, however deep (not one check per folder)
        return self.rules.check_folders_first(rel, is_dir, filters)

    def abspath(self, rel: str) -> str:
        """The absolute path of workspace-relative ``rel`` ("" is the root)."""
        return abs_path(self.root, rel)

    def relpath(self, path: str) -> str | None:
        """``path`` (absolute, normalized) relative to the root, or None when outside."""
        return rel_path(self.root, path)
