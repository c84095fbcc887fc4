"""The data the engine's stages pass on: ``Item``s in output order, and an item loaded.

``resolve`` turns a request into ``Resolved`` (an ``Items`` sequence: named entries and
glob or folder expansions, kept as plain path lists until an entry is looked at);
``load`` turns one ``Item`` into a ``LoadedItem``.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import posixpath
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from readmany_daemon.content.lines import Window
from readmany_daemon.content.outline import Outline
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.wire.cursor import Key
from readmany_daemon.wire.messages import Attachment, FileResult


def key_order(key: Key) -> tuple[int, bytes]:
    """The sort key of ``key``: entry index, then the path's bytes (surrogate escapes
    back to the bytes they stand for), the order of an expansion's matches."""
    return key[0], os.fsencode(key[1])


@dataclass
class Item:
    """One resolved entry: a file to read, or an entry that already has its answer.

    ``rel`` is workspace-relative (POSIX); ``offset``/``limit`` the line window (1-based),
    ``column`` the 1-based character of line ``offset`` where it starts; ``cells`` a
    notebook's cell range as asked (``"3-7"``, ``engine.notebook``); ``symbol`` (a
    symbol's path) and ``enclosing`` (a 1-based line) a span to find in its outline
    (``content.spans``), made a line window when the file is loaded;
    ``explicit`` marks a named path (as opposed to a glob or folder match); ``tail`` is
    the last component of the pattern that matched (lower-cased), which decides whether an
    image or PDF it reached may be attached. ``result`` is preset for entries decided at
    resolve time (errors, no-match, ignored); ``names_file`` is False for such an entry
    that names no file (a path that does not exist, a pattern that matched nothing, a
    folder that cannot be listed): it is not counted in ``summary.matched``.
    """

    label: str
    key: str
    rel: str | None = None
    offset: int | None = None
    limit: int | None = None
    column: int | None = None
    cells: str | None = None
    symbol: str | None = None
    enclosing: int | None = None
    explicit: bool = True
    tail: str = ""
    ignored_by: str | None = None
    result: FileResult | None = None
    names_file: bool = True

    def may_attach(self) -> bool:
        """Images and PDFs are attached when named, or matched by a pattern whose
        extension names their type (``shots/*.png``), never by a bare folder or ``**``."""
        if self.explicit:
            return True
        assert self.rel is not None
        return posixpath.splitext(self.rel)[1].lower() in self.tail


@dataclass
class Expansion:
    """The matches of one glob or folder, kept as a plain list of relative paths so a
    50,000-file expansion costs no per-file objects until a file is looked at."""

    matches: list[str]
    tail: str


class Items(Sequence[Item]):
    """The resolved entries in output order: explicit ``Item``s and ``Expansion``s,
    indexed as one flat sequence; expansion items are made on first access.

    Each segment comes from one entry of the request (``entries``: its index in
    ``paths``, then ``files``, then ``include``); ``key(i)`` is entry ``i``'s place in
    the request order, which does not move when files are created or deleted (a
    cursor's position, ``wire.cursor.Key``)."""

    def __init__(self, ws: Workspace, absolute: bool) -> None:
        self._ws = ws
        self._absolute = absolute
        self.segments: list[Item | Expansion] = []
        self.starts: list[int] = []
        self.entries: list[int] = []
        self._size = 0
        self._made: dict[int, Item] = {}

    def append(self, segment: Item | Expansion, entry: int = 0) -> None:
        """Add ``segment``, made by request entry ``entry`` (entries come in order)."""
        self.segments.append(segment)
        self.starts.append(self._size)
        self.entries.append(entry)
        self._size += len(segment.matches) if isinstance(segment, Expansion) else 1

    def key(self, i: int) -> Key:
        """Entry ``i``'s key: its request entry and, for a match, its path."""
        seg, pos = self.locate(i)
        segment = self.segments[seg]
        return self.entries[seg], segment.matches[pos] if isinstance(segment, Expansion) else ""

    def first_after(self, key: Key | None) -> int:
        """The position of the first entry whose key comes after ``key`` (0 for None)."""
        if key is None:
            return 0
        entry, path = key_order(key)
        seg = bisect.bisect_right(self.entries, entry) - 1
        if seg < 0:
            return 0
        if self.entries[seg] < entry:
            return self.starts[seg + 1] if seg + 1 < len(self.starts) else self._size
        segment = self.segments[seg]
        if isinstance(segment, Item):
            return self.starts[seg] + 1
        at = bisect.bisect_right(segment.matches, path, key=os.fsencode)
        return self.starts[seg] + at

    def find(self, key: Key) -> int | None:
        """The position of the entry with ``key``, None when there is none now."""
        after = self.first_after(key)
        if after > 0 and self.key(after - 1) == key:
            return after - 1
        return None

    def __len__(self) -> int:
        return self._size

    def locate(self, i: int) -> tuple[int, int]:
        """``(segment number, position in it)`` of flat index ``i``."""
        seg = bisect.bisect_right(self.starts, i) - 1
        return seg, i - self.starts[seg]

    def _at(self, i: int) -> Item | tuple[str, str, str]:
        """Entry ``i`` as the resolver made it: an explicit ``Item``, or a match's
        ``(label, rel, tail)`` (no ``Item`` made); :meth:`replace` is not looked at."""
        seg, pos = self.locate(i)
        segment = self.segments[seg]
        if isinstance(segment, Item):
            return segment
        rel = segment.matches[pos]
        return self._ws.abspath(rel) if self._absolute else rel, rel, segment.tail

    def label(self, i: int) -> str:
        """The label of entry ``i`` without making its ``Item``."""
        made = self._made.get(i)
        if made is not None:
            return made.label
        at = self._at(i)
        return at.label if isinstance(at, Item) else at[0]

    def rel(self, i: int) -> str | None:
        """The root-relative path of entry ``i`` (None: an entry that names none),
        without making its ``Item``."""
        made = self._made.get(i)
        if made is not None:
            return made.rel
        at = self._at(i)
        return at.rel if isinstance(at, Item) else at[1]

    def match_label(self, i: int) -> str | None:
        """The label of entry ``i`` when it is an expansion match as the expansion made
        it (its key is its label, it is not explicit), without making its ``Item``;
        None for an explicit entry or one replaced by :meth:`replace`."""
        if i in self._made:
            return None
        at = self._at(i)
        return None if isinstance(at, Item) else at[0]

    def is_preset(self, i: int) -> bool:
        """Whether entry ``i`` was answered at resolve time (never an expansion match)."""
        segment = self.segments[self.locate(i)[0]]
        return isinstance(segment, Item) and segment.result is not None

    def replace(self, i: int, **changes: Any) -> None:
        """Change one entry (a cursor resuming a cut file at its next offset)."""
        self._made[i] = dataclasses.replace(self[i], **changes)

    @overload
    def __getitem__(self, i: int) -> Item: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Item]: ...
    def __getitem__(self, i: int | slice) -> Item | Sequence[Item]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._size))]
        if not 0 <= i < self._size:
            raise IndexError(i)
        made = self._made.get(i)
        if made is not None:
            return made
        at = self._at(i)
        if isinstance(at, Item):
            return at
        label, rel, tail = at
        item = Item(label=label, key=label, rel=rel, explicit=False, tail=tail)
        self._made[i] = item
        return item


@dataclass
class LoadedItem:
    """An item after the load and budget stages: its answer, and for a file that was
    read, the text shown (windowed, before any budget cut), its window, the text the
    window came from (for a budget re-cut) and an attachment. Not to be confused with
    ``content.reader.FileRead``, one file as the reader read it."""

    item: Item
    result: FileResult
    text: str | None = None  # windowed content, before any budget cut
    window: Window | None = None
    full: str | None = None  # the text the window came from (for a budget re-cut)
    attachment: Attachment | None = None
    #: More attachments (a notebook's images, in the order its text names them).
    attachments: list[Attachment] = field(default_factory=list)
    #: How to cut this entry to fewer characters when it is not a line window (a
    #: notebook, cut at cells): the budget's cut calls it with the characters allowed.
    recut: Callable[[int], LoadedItem] | None = None
    tokens: int | None = None  # o200k tokens of ``text`` as the format writes it, once known
    #: The outline of ``full`` (made on first call, cached by content), for a cut's block.
    outline_for: Callable[[], Outline] | None = None


@dataclass
class Resolved:
    """The resolve stage's answer: the items, what the ignore rules hid from expansions
    (files per rule kind, for ``summary.hidden``; ignored folders not entered, per rule
    kind, for ``summary.hiddenFolders``) and one-line hints for ``llmContent``."""

    items: Items
    hidden: Counter[str] = field(default_factory=Counter)
    hidden_folders: Counter[str] = field(default_factory=Counter)
    hints: list[str] = field(default_factory=list)


@dataclass
class Piece:
    """One entry of the answer in output (request) order.

    ``content`` is the text shown for an ``ok`` or ``partial`` entry (already windowed,
    line-numbered, with a cut file's notice as its last line) and ``None`` otherwise.
    ``key`` is the ``json`` format's key (PROTOCOL §5). ``listed`` is False for expansion
    matches that are counted but not named (past the 200 cap).
    """

    result: FileResult
    key: str
    content: str | None = None
    explicit: bool = True
    #: o200k tokens of ``content`` as the format writes it (:func:`content_form`), when
    #: known (the answer counts each file once, through the content cache).
    tokens: int | None = None
