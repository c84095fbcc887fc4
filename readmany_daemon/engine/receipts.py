"""Receipts: a file the caller already holds comes back ``unchanged``, only when it is.

A request's ``known: [{path, sha256}]`` lists the hashes the caller holds (each the
``sha256`` of an earlier answer's ``ok`` entry). An entry is answered
``status: "unchanged"`` (no content, no characters, ``sha256`` set) only when all of
these hold (PROTOCOL §4, "Receipts"):

- the entry was loaded now, after the freshness barrier, as ``ok`` (the whole file,
  no window: no ``offset``, ``limit``, ``column`` or ``cells``, nothing cut);
- its current ``sha256`` equals the receipt's (compared case-insensitively). The hash
  is that of the bytes read now, or of a content-cache entry validated by the file's
  stat key ``(size, mtime_ns, ino, ctime_ns)`` and the racy rule
  (``content.cache``), so an edit that keeps the size and restores the mtime is seen
  (its ``ctime`` moves);
- when it came from an open buffer (an overlay), the buffer's text equals the disk's
  bytes: an unsaved buffer always sends content;
- when this answer shows secrets as they are (``redactSecrets`` false), the text holds
  none that redaction would replace (``engine.redact.redact_cached``, kept with the
  cache entry): the caller may hold the redacted copy, which has the same ``sha256``
  (the hash is of the bytes on disk), and asks now for the real values.

Files over ``maxFileBytes`` have no ``sha256`` and never come back unchanged.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Final

from readmany_daemon.content import reader
from readmany_daemon.engine.items import LoadedItem
from readmany_daemon.engine.redact import redact_cached
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Status

__all__ = ["Receipts", "disk_sha256", "text_sha256"]

#: Open-buffer texts whose hash is remembered (by identity: a buffer's text object lives
#: until the buffer changes).
_TEXT_HASHES_KEPT: Final = 64
_text_hashes: OrderedDict[int, tuple[str, str, int]] = OrderedDict()
_text_lock = threading.Lock()


def text_sha256(text: str, max_bytes: int | None = None) -> str | None:
    """SHA-256 (64 lower-case hex digits) of ``text`` encoded as UTF-8 (lone surrogates
    as the bytes they stand for, PEP 383): the ``sha256`` of an open buffer; None when
    those bytes pass ``max_bytes``. The hash of the same ``str`` object is computed once
    (the last 64 are remembered)."""
    with _text_lock:
        hit = _text_hashes.get(id(text))
        if hit is not None and hit[0] is text:
            _text_hashes.move_to_end(id(text))
            digest, size = hit[1], hit[2]
            return None if max_bytes is not None and size > max_bytes else digest
    data = text.encode("utf-8", "surrogateescape")
    digest = hashlib.sha256(data).hexdigest()
    with _text_lock:
        _text_hashes[id(text)] = (text, digest, len(data))
        while len(_text_hashes) > _TEXT_HASHES_KEPT:
            _text_hashes.popitem(last=False)
    return None if max_bytes is not None and len(data) > max_bytes else digest


class Receipts:
    """The receipts of one request, by workspace-relative path.

    ``known`` maps root-relative paths to the ``sha256`` the caller holds, in lower
    case (``LoadOptions.known``: the request's paths read as request paths are, those
    outside the root left out, the last receipt of a path kept). ``redacting`` is
    whether this answer redacts secrets (``LoadOptions.redact``)."""

    def __init__(self, ws: Workspace, known: Mapping[str, str], *, redacting: bool = True) -> None:
        self._ws = ws
        self._redacting = redacting
        self._by_rel = known

    def __bool__(self) -> bool:
        return bool(self._by_rel)

    def settle(self, lo: LoadedItem) -> LoadedItem:
        """``lo`` as ``unchanged`` when its receipt holds (the rules above), else ``lo``."""
        item, res = lo.item, lo.result
        if item.rel is None or item.result is not None:
            return lo
        want = self._by_rel.get(item.rel)
        if want is None or res.status != Status.OK or res.sha256 != want:
            return lo
        if any(v is not None for v in (item.offset, item.limit, item.column, item.cells)):
            return lo  # a window: the caller may hold only another part
        if res.line_start is not None or res.next_offset is not None:
            return lo
        if res.source == "overlay" and self._disk_sha256(item.rel) != want:
            return lo  # an unsaved buffer: its text always goes out
        if not self._redacting and self._holds_secrets(lo):
            return lo  # the receipt may be of the redacted copy: the real values go out
        res.status = Status.UNCHANGED
        res.chars = 0
        res.message = "unchanged: the same bytes as the caller's receipt; content not sent"
        res.encoding = None
        res.replaced_bytes = None
        res.mime_type = None
        return LoadedItem(item, res)

    def _holds_secrets(self, lo: LoadedItem) -> bool:
        """Whether ``lo``'s text (the whole file as read, or a notebook's cells as shown)
        holds a value redaction would replace; the scan is kept with a cached text."""
        text = lo.full if lo.full is not None else lo.text
        if not text:
            return False
        return bool(redact_cached(text, self._ws.cache).lines)

    def _disk_sha256(self, rel: str) -> str | None:
        return disk_sha256(self._ws, rel)


def disk_sha256(ws: Workspace, rel: str, overlay: bool = False) -> str | None:
    """SHA-256 (hex) of root-relative file ``rel``'s bytes on disk now (a stat-validated
    cache entry, else a confined read), or of its open buffer's UTF-8 when ``overlay``
    and one is open (as a read's ``sha256`` is); None when it cannot be read whole (over
    ``maxFileBytes``, gone, out of the root)."""
    real = os.path.realpath(ws.abspath(rel))
    if ws.relpath(real) is None:
        return None
    buffer = ws.overlay(real) if overlay and ws.overlay is not None else None
    if buffer is not None:
        return text_sha256(buffer.text, ws.settings.max_file_bytes)
    try:
        st = os.stat(real)
    except OSError:
        return None
    if ws.cache is not None:
        hit = ws.cache.get(real, st)
        if hit is not None:
            return hit.sha256
    read = reader.ReadOptions(max_file_bytes=ws.settings.max_file_bytes, want_full=True)
    got = reader.read_file(real, read, beneath=ws.root)
    return got.sha256
