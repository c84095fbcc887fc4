"""The change ledger of a session: which files it was given, and which changed since.

An MCP server session (one ``readmany mcp`` process) and an LSP connection each keep a
:class:`Ledger` (PROTOCOL §4, "Stale files"). A file is *given* when an answer delivers
it with content (``ok`` or ``partial``: windows, symbols and cursor pages included) or
answers it ``unchanged`` to a receipt; the ledger keeps its ``sha256`` as that answer
gave it. Each later read answer names, in ``stale``, the given files whose bytes no
longer hash to that ``sha256`` (``modified``) or that are gone (``deleted``), once per
change: the named file's entry then holds its new ``sha256`` (a deleted one leaves the
ledger). A file delivered again in the same answer is not named; what it holds then
becomes its entry.

Checking is a ``stat`` per entry; a file is hashed again (``racy.file_sha256``) only
when its ``StatKey`` changed since it was last proved, or when that proof was racy
(git's rule, ``racy.is_racy``, applied to the later of its mtime and ctime: a write
restores an mtime but always sets the ctime). Rewriting the same bytes changes the
stat, not the ``sha256``: no change.

:func:`place_notice` puts the one short notice into ``llmContent``'s parts: before the
first file in ``separator`` and ``heredoc``, a ``<notice>`` before the first
``<document>`` in ``xml``, a ``"stale"`` list beside ``"results"`` in ``json``; with
``after=True`` (for an order that keeps a stable prefix) after the content instead.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from readmany_daemon.engine.notices import framed_name
from readmany_daemon.engine.render import xml_escape
from readmany_daemon.racy import StatKey, file_sha256, is_racy, stat_key
from readmany_daemon.wire.messages import ReadManyResult, StaleFile

if TYPE_CHECKING:
    from readmany_daemon.runtime.roots import RootEntry
    from readmany_daemon.runtime.service import Service
    from readmany_daemon.wire.cursor import ReadRequest

__all__ = [
    "MAX_ENTRIES",
    "NOTICE_NAMES",
    "STALE_LISTED",
    "Ledger",
    "Stale",
    "answer_stale",
    "given_files",
    "labelled",
    "notice_text",
    "place_notice",
    "read_with_stale",
    "stale_members",
]

#: Entries a session's ledger keeps at most; past it the oldest given is dropped
#: (PROTOCOL §4, "Stale files").
MAX_ENTRIES: Final = 100_000
#: Files the notice in ``llmContent`` names at most; then ``and N more``.
NOTICE_NAMES: Final = 20
#: Entries of ``stale`` at most; then ``staleTruncated: true`` (the rest count as named).
STALE_LISTED: Final = 200
#: The most bytes hashed of one file (a larger one is ``modified``: no answer gave it).
_HASH_LIMIT: Final = 1 << 40

#: The statuses of a given file (PROTOCOL §4): delivered with content, or unchanged.
_GIVEN: Final = frozenset({"ok", "partial", "unchanged"})


class Stale(NamedTuple):
    """One given file that changed: ``path`` labelled as ``files[].path`` labels it
    (relative to the answer's root; absolute for another root), ``change``
    ``"modified"`` or ``"deleted"``."""

    path: str
    change: str


class _Entry(NamedTuple):
    """What the ledger holds of one given file: the ``sha256`` given, the ``StatKey``
    that last proved it (``None``: not yet), and when that proof began (ns since the
    epoch, ``time.time_ns()`` taken before the ``stat``)."""

    sha256: str
    key: StatKey | None
    proved_ns: int


def _stat(path: str) -> os.stat_result | None:
    """``os.stat`` of ``path``, ``None`` when it names no file (any more)."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def given_files(files: Iterable[tuple[str, str, str | None]], root: str) -> dict[str, str]:
    """The files an answer gives (PROTOCOL §4: ``ok``, ``partial`` or ``unchanged``
    entries with a ``sha256``), as {absolute path: sha256}; ``files`` are the answer's
    ``files`` entries as (path, status, sha256), ``root`` the answer's root folder."""
    out: dict[str, str] = {}
    for path, status, sha in files:
        # A label with U+FFFD stands for bytes that are not UTF-8 (``wire_safe``): it
        # names no file to check again.
        if status in _GIVEN and sha and "\ufffd" not in path:
            out[os.path.join(root, path)] = sha.lower()
    return out


class Ledger:
    """One session's given files: {absolute path: sha256 given}, oldest first, at most
    ``max_entries``. Thread-safe: one lock around each :meth:`settle`."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def _changed(self, path: str, entry: _Entry, began: int) -> str | None:
        """``"modified"``, ``"deleted"`` or ``None`` for one entry, updating it: a
        modified file's entry takes its new ``sha256`` (named once per change), a
        deleted one is dropped, a proved one keeps its ``sha256`` with the new proof."""
        st = _stat(path)
        if st is None:
            del self._entries[path]
            return "deleted"
        key = stat_key(st)
        if key == entry.key and not is_racy(max(key.mtime_ns, key.ctime_ns), entry.proved_ns):
            return None
        try:
            sha = file_sha256(path, _HASH_LIMIT, key=key)
        except OSError:
            return None  # unreadable now (a folder, no permission): nothing to claim
        if sha is None:
            return None  # changed while hashed: the key no longer matches, checked next time
        self._entries[path] = _Entry(sha, key, began)
        return None if sha == entry.sha256 else "modified"

    def _check(self, skip: Mapping[str, str]) -> list[tuple[str, str]]:
        """Every entry that changed since it was given or last named, as (absolute path,
        change), oldest given first; the paths in ``skip`` (given again now) are left
        alone."""
        changed: list[tuple[str, str]] = []
        began = time.time_ns()  # before every stat: a proof no later than its stat
        for path, entry in list(self._entries.items()):
            if path in skip:
                continue
            change = self._changed(path, entry, began)
            if change is not None:
                changed.append((path, change))
        return changed

    def _record(self, given: Mapping[str, str], began_ns: int) -> None:
        """Remember ``given`` ({absolute path: sha256}) as answered by a read that began
        at ``began_ns``: each is proved by the ``stat`` taken now, racy unless its ctime
        is older than the read (a write during the read is hashed at the next check)."""
        for path, sha in given.items():
            st = _stat(path)
            self._entries.pop(path, None)
            self._entries[path] = _Entry(sha, None if st is None else stat_key(st), began_ns)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def settle(self, given: Mapping[str, str], began_ns: int) -> list[tuple[str, str]]:
        """For one read answer: the given files that changed since (``given`` left
        out), then ``given`` ({absolute path: sha256}, the answer's own,
        :func:`given_files`) remembered as of ``began_ns`` (``time.time_ns()`` taken
        before the read began)."""
        with self._lock:
            changed = self._check(given)
            self._record(given, began_ns)
            return changed


def answer_stale(
    ledger: Ledger | None,
    files: Iterable[tuple[str, str, str | None]],
    root: str,
    absolute: bool,
    began_ns: int,
) -> list[Stale]:
    """The ``stale`` of one read answer of a session with ``ledger`` (``None``: a
    one-shot call, none): its ``files`` as (path, status, sha256), answered for folder
    ``root`` (``absolute``: the request's ``absolutePaths``) by a read that began at
    ``began_ns`` (``time.time_ns()``). The files it gives are remembered."""
    if ledger is None:
        return []
    changed = ledger.settle(given_files(files, root), began_ns)
    return labelled(changed, root, absolute)


def read_with_stale(
    service: Service, entry: RootEntry, req: ReadRequest, ledger: Ledger
) -> tuple[ReadManyResult, list[str]]:
    """``Service.read_sync`` (with its parts) for a session with ``ledger`` (an LSP
    connection), with ``stale`` and its notice (:func:`place_notice`) filled in."""
    began = time.time_ns()
    result, parts = service.read_sync(entry, req, True)
    # An open buffer's sha256 is of its text, not of the file on disk: not kept.
    files = ((f.path, f.status, f.sha256) for f in result.files if f.source != "overlay")
    stale = answer_stale(ledger, files, entry.ws.root, req.params.absolute_paths, began)
    if stale:
        members = stale_members(stale)
        result.stale = [StaleFile(**s) for s in members["stale"]]
        result.stale_truncated = "staleTruncated" in members
        parts = place_notice(parts, req.params.format, stale)
    return result, parts


def stale_members(stale: Sequence[Stale]) -> dict[str, Any]:
    """The result members of ``stale`` as builtins: ``stale`` (at most
    ``STALE_LISTED`` ``{path, change}``) and ``staleTruncated: true`` when cut."""
    members: dict[str, Any] = {
        "stale": [{"path": s.path, "change": s.change} for s in stale[:STALE_LISTED]]
    }
    if len(stale) > STALE_LISTED:
        members["staleTruncated"] = True
    return members


def labelled(changed: Sequence[tuple[str, str]], root: str, absolute: bool) -> list[Stale]:
    """``changed`` (absolute path, change) as ``stale`` entries: each path relative to
    ``root`` as ``files[].path`` labels it, absolute under ``absolute`` (the request's
    ``absolutePaths``) or for a file outside ``root``."""
    prefix = root.rstrip(os.sep) + os.sep
    out: list[Stale] = []
    for path, change in changed:
        label = path[len(prefix) :] if not absolute and path.startswith(prefix) else path
        out.append(Stale(label, change))
    return out


def notice_text(stale: Sequence[Stale]) -> str:
    """The one-line notice naming ``stale`` (at most ``NOTICE_NAMES``, then ``and N
    more``), with the call that reads the modified ones again, e.g. ``[Changed since
    given to you: a.py (modified), b.py (deleted). Read again: {"paths":["a.py"]}]``."""
    shown = stale[:NOTICE_NAMES]
    names = ", ".join(f"{framed_name(s.path)} ({s.change})" for s in shown)
    more = len(stale) - len(shown)
    if more:
        names += f", and {more} more (see stale)"
    again = [s.path for s in shown if s.change == "modified"]
    call = f" Read again: {json.dumps({'paths': again}, ensure_ascii=False)}" if again else ""
    return f"[Changed since given to you: {names}.{call}]"


def _json_stale(stale: Sequence[Stale]) -> str:
    shown = [{"path": s.path, "change": s.change} for s in stale[:NOTICE_NAMES]]
    more = len(stale) - len(shown)
    tail = [f"and {more} more"] if more else []
    return json.dumps(shown + tail, ensure_ascii=False)


def place_notice(
    parts: list[str], fmt: str, stale: Sequence[Stale], after: bool = False
) -> list[str]:
    """``parts`` (an ``llmContent``'s strings, in order) with the notice of ``stale``
    placed for format ``fmt`` (PROTOCOL §5): before the first file in ``separator`` and
    ``heredoc``; a ``<notice>`` right after ``<documents>`` in ``xml``; a ``"stale"``
    list (``{path, change}`` objects, then ``"and N more"``) before ``"results"`` in
    ``json``. ``after``: after the content instead (the last notice line in ``xml``, the
    last member in ``json``), so that the text before it stays the same. ``parts`` is
    returned unchanged when ``stale`` is empty."""
    if not stale or not parts:
        return parts
    out = list(parts)
    if fmt == "json":
        member = f'"stale": {_json_stale(stale)}'
        if after:
            end = out[-1].rstrip()
            out[-1] = end[: -len("}")].rstrip() + f",\n  {member}\n}}"
        else:
            out[0] = "{\n  " + member + "," + out[0][len("{") :]
        return out
    text = notice_text(stale)
    if fmt == "xml":
        line = f"<notice>{xml_escape(text)}</notice>"
        if after:
            end = out[-1]
            cut = end.rfind("</documents>")
            out[-1] = end[:cut].rstrip("\n") + "\n" + line + "\n</documents>"
        else:
            out[0] = "<documents>" + line + "\n" + out[0][len("<documents>") :]
        return out
    if after:
        return [*out, "\n" + text + "\n"]
    return [text + "\n\n", *out]
