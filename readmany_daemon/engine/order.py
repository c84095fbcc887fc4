"""How the delivered files are laid out (PROTOCOL §3 ``order``).

``order: "stable"`` lays a page's positions out in the root's stable order
(``index.stable_order``): each file at the place the order keeps for it, a changed or
new file last, so that two answers for an unchanged tree are byte-identical and a
re-pack after a change keeps the longest possible prefix (provider prompt caches match
a byte prefix). The budget then fills in that order (``pack.choose_plan``). Entries
that name no file in the root (answered at resolve time: not found, denied, outside
the root) come after the files, in request order.
"""

from __future__ import annotations

import os
import zlib

from readmany_daemon.engine.items import Items
from readmany_daemon.engine.pack import Flat, Ordered
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.index.stable_order import Mark


def _mark(ws: Workspace, path: str) -> Mark | None:
    """What tells whether the file at ``path`` changed (``stable_order.Mark``): an open
    editor buffer's length and CRC-32 (PROTOCOL §6: it wins over the disk), else the
    file's size, mtime and inode; None when it cannot be stat'ed."""
    buffer = ws.overlay(path) if ws.overlay is not None else None
    if buffer is not None:
        data = buffer.text.encode("utf-8", "surrogatepass")
        return (len(data), -1 - zlib.crc32(data), -1)  # never a stat's mark
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def stable(ws: Workspace, items: Items, positions: Flat) -> Ordered:
    """``positions`` in the stable order of ``ws``'s root: files by their place
    (``StableOrder.places``, which moves changed and new files last and saves the
    order), ties and entries without a file in request order, the latter last."""
    files: list[int] = []
    rels: list[str] = []
    others: list[int] = []
    for i in positions:
        rel = None if items.is_preset(i) else items[i].rel
        if rel:
            files.append(i)
            rels.append(rel)
        else:
            others.append(i)
    marks = [_mark(ws, ws.abspath(rel)) for rel in rels]
    places = ws.stable_order.places(rels, marks)
    ranked = sorted(zip(places, files, strict=True))
    return Ordered(positions, [i for _, i in ranked] + others)
