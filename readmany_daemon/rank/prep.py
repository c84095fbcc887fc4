"""The text of one file as the full-text index holds it.

:func:`prepare` checks one queued file: ``lstat`` (no symbolic link followed; a FIFO,
device or socket is never opened), its mark against the indexed one, then its first
``MAX_INDEX_CHARS`` bytes read below the root (``content.reader.open_beneath``),
decoded (``content.decode``), redacted (the function the engine passes: secrets are
indexed as redacted) and identifiers split (:func:`split_text`, the same text as
``words.index_text``).

During a big build ``rank.worker.PrepWorker`` runs :func:`prepare_batch` in a worker
process while the keeper's thread writes (bench/README.md "Focus").
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

from readmany_daemon.content.decode import decode
from readmany_daemon.content.reader import open_beneath
from readmany_daemon.rank.fulltext import MAX_INDEX_CHARS
from readmany_daemon.rank.words import _COMPOUND, _PARTS
from readmany_daemon.rules.regex import ByteSearch

__all__ = ["Prepared", "mark_of", "prepare", "prepare_batch", "read_text", "split_text"]


#: ``words._COMPOUND`` and ``words._PARTS`` over UTF-8 bytes: both are ASCII classes,
#: so the matches are the same, and RE2 scans bytes without mapping offsets back.
_COMPOUND_BYTES: Final = ByteSearch(_COMPOUND.pattern.encode())
_PARTS_BYTES: Final = re.compile(_PARTS.pattern.encode())


class Prepared(NamedTuple):
    """What one queued file ``path`` (relative to the root) needs: ``mark`` None: drop
    what the index holds (gone, hidden, not a regular file, binary or unreadable);
    ``body`` None: nothing (its mark is the indexed one); else index ``body`` (secrets
    redacted, identifiers split) under ``mark``."""

    path: str
    mark: str | None
    body: str | None


def mark_of(st: os.stat_result) -> str:
    """The mark that tells a changed file: ``"<st_size>:<st_mtime_ns>:<st_ino>"``."""
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def read_text(root: str, rel: str, limit: int = MAX_INDEX_CHARS) -> str | None:
    """The text of ``rel`` below ``root``: its first ``limit`` bytes decoded
    (``content.decode``), or None for a binary file or one that cannot be read."""
    try:
        fd = open_beneath(root, rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)
    got = decode(data, complete=len(data) < limit)
    return got.text if got.kind == "text" else None


def split_text(text: str) -> str:
    """``words.index_text(text)`` (each camel-case identifier followed by its words),
    computed over the UTF-8 bytes with :class:`rules.regex.ByteSearch` and the added
    words of each distinct identifier made once a text (a file repeats its own)."""
    data = text.encode("utf-8", "surrogatepass")
    search = _COMPOUND_BYTES.search
    added: dict[bytes, bytes] = {}
    out: list[bytes] = []
    at = 0
    while (span := search(data, at)) is not None:
        start, end = span
        if end == start:  # cannot happen (the pattern needs two characters); be safe
            break
        word = data[start:end]
        words = added.get(word)
        if words is None:
            words = added[word] = b" " + b" ".join(_PARTS_BYTES.findall(word))
        out.append(data[at:end])
        out.append(words)
        at = end
    if not out:
        return text
    out.append(data[at:])
    return b"".join(out).decode("utf-8", "surrogatepass")


def prepare(
    root: str, rel: str, deleted: bool, stored: str | None, redact: Callable[[str], str]
) -> Prepared:
    """What queued file ``rel`` of ``root`` needs (see :class:`Prepared`); ``deleted``:
    the index reported it gone or hidden; ``stored``: the mark the full-text index holds
    for it (None: not indexed)."""
    try:
        st = None if deleted else os.lstat(os.path.join(root, rel))
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode):
        return Prepared(rel, None, None)
    mark = mark_of(st)
    if stored == mark:
        return Prepared(rel, mark, None)
    text = read_text(root, rel)
    if text is None:
        return Prepared(rel, None, None)
    return Prepared(rel, mark, split_text(redact(text)))


def prepare_batch(
    root: str,
    items: Sequence[tuple[str, bool, str | None]],
    redact: Callable[[str], str],
    limit: int,
) -> list[Prepared]:
    """:func:`prepare` for ``(rel, deleted, stored mark)`` of ``items`` in order, until
    the bodies made hold ``limit`` characters or more: the first ones, at least one."""
    out: list[Prepared] = []
    size = 0
    for rel, deleted, stored in items:
        if size >= limit:
            break
        got = prepare(root, rel, deleted, stored, redact)
        out.append(got)
        size += len(got.body or "")
    return out
