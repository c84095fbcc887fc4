"""``readMany/files``: the visible files matching patterns, with size and mtime.

``list_paths`` answers the patterns from the index (folders, named files and globs;
none = every visible file), sorted by bytes; ``list_files`` adds each file's size and
mtime.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from readmany_daemon.engine.options import filters_for
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams
from readmany_daemon.index.walk import unlisted_warning
from readmany_daemon.paths import sort_in_byte_order, spellings, to_rel
from readmany_daemon.rules.glob import has_magic
from readmany_daemon.rules.kinds import Filters
from readmany_daemon.rules.patterns import GitPatterns
from readmany_daemon.wire.messages import FilesParams
from readmany_daemon.wire.replies import FileInfo, FilesResult


def list_paths(
    ws: Workspace,
    patterns: Sequence[str],
    filters: Filters,
    recursive: bool = True,
    exclude: Sequence[str] = (),
) -> list[str]:
    """Visible files matching ``patterns`` (globs, folders or paths; none = all), sorted by
    bytes. Raises ``InvalidParams`` naming the pattern that is invalid."""
    index = ws.index
    if not patterns:
        paths = index.files(filters)
    else:
        found: set[str] = set()
        for n, raw in enumerate(patterns):
            rel = to_rel(ws.root, raw)
            if rel is None:
                raise InvalidParams(
                    f"invalid params: $.patterns[{n}]: {raw} is outside the workspace",
                    f"$.patterns[{n}]",
                )
            # a path typed in one Unicode normalization form names a file stored in
            # the other too (NFC, NFD: PROTOCOL §3); it keeps its on-disk spelling
            spelled = next((s for s in spellings(rel) if index.is_dir(s)), None)
            if rel == "" or spelled is not None:
                found.update(index.expand_dir(spelled or rel, filters, recursive))
            elif named := next((s for s in spellings(rel) if index.contains(s)), None):
                found.add(named)
            elif has_magic(rel):
                try:
                    found.update(index.glob(rel, filters, recursive))
                except ValueError as exc:
                    raise InvalidParams(
                        f"invalid params: $.patterns[{n}]: {exc}", f"$.patterns[{n}]"
                    ) from None
        paths = list(found)
        sort_in_byte_order(paths)
    if exclude:
        try:
            ex = GitPatterns(exclude)
        except ValueError as exc:
            raise InvalidParams(f"invalid params: $.exclude: {exc}", "$.exclude") from None
        paths = ex.keep(paths)
    return paths


def list_files(ws: Workspace, params: FilesParams) -> FilesResult:
    """``readMany/files``: each visible file with its size (bytes) and mtime (ms); a file
    deleted since the index saw it is left out (it is not a file any more). ``warnings``
    names every folder of the root the index could not list (as ``readmany files
    --no-daemon`` does on stderr), sorted by folder."""
    rels = list_paths(ws, params.patterns, filters_for(params), params.recursive, params.exclude)
    prefix = ws.root.rstrip("/") + "/"
    lstat = os.lstat
    infos: list[FileInfo] = []
    for rel in rels:
        try:
            st = lstat(prefix + rel)
        except (OSError, ValueError):
            continue
        infos.append(FileInfo(path=rel, size=st.st_size, mtime_ms=st.st_mtime_ns / 1e6))
    warnings = [unlisted_warning(rel, reason) for rel, _, reason in ws.index.unlisted_under("")]
    return FilesResult(files=infos, clock=ws.clock(), warnings=warnings)
