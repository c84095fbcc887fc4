"""What a session's read answer says of the files it was given that changed since
(PROTOCOL §4, "Stale files"): ``stale`` and ``staleTruncated`` in the result, and one
short notice in ``llmContent``.

:func:`read_with_stale` is a read of a session with a ledger (an LSP connection; the MCP
tool calls :func:`answer_stale` on the answer its backend gave): the barrier's
:class:`~readmany_daemon.runtime.ledger.Mark` is taken inside the read, the check runs
after it. :func:`place_notice` puts the notice into ``llmContent``'s parts: before the
first file in ``separator`` and ``heredoc``, a ``<notice>`` before the first
``<document>`` in ``xml``, a ``"stale"`` list beside ``"results"`` in ``json``; with
``after=True`` (for an order that keeps a stable prefix) after the content instead.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from readmany_daemon.engine.notices import framed_name
from readmany_daemon.engine.render import xml_escape
from readmany_daemon.runtime.ledger import Ledger, Mark, barrier_mark, given_files
from readmany_daemon.wire.messages import ReadManyResult, StaleFile

if TYPE_CHECKING:
    from readmany_daemon.runtime.roots import RootEntry
    from readmany_daemon.runtime.service import Service
    from readmany_daemon.wire.cursor import ReadRequest

__all__ = [
    "NOTICE_NAMES",
    "STALE_LISTED",
    "Stale",
    "answer_stale",
    "labelled",
    "notice_text",
    "place_notice",
    "read_with_stale",
    "renotice",
    "stale_members",
]

#: Files the notice in ``llmContent`` names at most; then ``and N more``.
NOTICE_NAMES: Final = 20
#: Entries of ``stale`` at most; then ``staleTruncated: true`` (the rest count as named).
STALE_LISTED: Final = 200


class Stale(NamedTuple):
    """One given file that changed: ``path`` labelled as ``files[].path`` labels it
    (relative to the answer's root; absolute for another root), ``change``
    ``"modified"`` or ``"deleted"``."""

    path: str
    change: str


def answer_stale(
    ledger: Ledger | None,
    files: Iterable[tuple[str, str, str | None]],
    root: str,
    absolute: bool,
    began_ns: int,
    mark: Mark | None = None,
) -> list[Stale]:
    """The ``stale`` of one read answer of a session with ``ledger`` (``None``: a
    one-shot call, none): its ``files`` as (path, status, sha256), answered for folder
    ``root`` (``absolute``: the request's ``absolutePaths``) by a read that began at
    ``began_ns`` (``time.time_ns()``) behind ``mark`` (its barrier's, or None: see
    ``Ledger.settle``). The files it gives are remembered."""
    if ledger is None:
        return []
    changed = ledger.settle(given_files(files, root), began_ns, mark)
    return labelled(changed, root, absolute)


def read_with_stale(
    service: Service, entry: RootEntry, req: ReadRequest, ledger: Ledger
) -> tuple[ReadManyResult, list[str]]:
    """``Service.read_sync`` (with its parts) for a session with ``ledger`` (an LSP
    connection), with ``stale`` and its notice (:func:`place_notice`; after the content
    with ``order: "stable"``) filled in. The read's :func:`barrier_mark` is taken on
    the engine's thread right after its barrier, before any content is loaded."""
    marks: list[Mark | None] = []

    def on_barrier(stat_route: bool) -> None:
        marks.append(barrier_mark(entry, req.params.sync, stat_route))

    began = time.time_ns()
    result, parts = service.read_sync(entry, req, True, on_barrier=on_barrier)
    settle_other_roots(service, entry, ledger)
    # An open buffer's sha256 is of its text, not of the file on disk: not kept.
    files = ((f.path, f.status, f.sha256) for f in result.files if f.source != "overlay")
    params = req.params
    mark = marks[0] if marks else None
    stale = answer_stale(ledger, files, entry.ws.root, params.absolute_paths, began, mark)
    if stale:
        members = stale_members(stale)
        result.stale = [StaleFile(**s) for s in members["stale"]]
        result.stale_truncated = "staleTruncated" in members
        parts = place_notice(parts, params.format, stale, after=params.order == "stable")
    return result, parts


def settle_other_roots(service: Service, entry: RootEntry, ledger: Ledger) -> None:
    """Apply what the watchers of the service's other roots saw before now (each root's
    barrier, ``Service.refresh_sync`` with no folder), for the roots ``ledger`` holds
    files of: a write there just before the request is then in their change logs when
    the ledger is checked, not one answer later. One root: nothing to do."""
    others = [e for e in service.roots() if e is not entry and e.indexed]
    for other in others:
        if ledger.holds_under(other.ws.root):
            service.refresh_sync(other, ())


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


def _rendered(fmt: str, stale: Sequence[Stale]) -> str:
    """The notice of ``stale`` as :func:`place_notice` writes it in format ``fmt``,
    without what surrounds it."""
    if fmt == "json":
        return f'"stale": {_json_stale(stale)}'
    text = notice_text(stale)
    return xml_escape(text) if fmt == "xml" else text


def renotice(
    text: str, fmt: str, old: Sequence[Stale], new: Sequence[Stale], after: bool = False
) -> str | None:
    """``text`` (an ``llmContent`` whose notice, placed by :func:`place_notice` with
    ``after``, names ``old``) with that notice naming ``new`` instead; None when
    ``text`` holds no such notice (``old`` was cut, or is empty)."""
    if not old:
        return None
    was, now = _rendered(fmt, old), _rendered(fmt, new)
    head, found, tail = text.rpartition(was) if after else text.partition(was)
    return head + now + tail if found else None
