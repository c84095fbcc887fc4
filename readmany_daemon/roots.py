"""Roots: which workspace folder a request names — the one resolver of every surface.

A request's ``root`` (PROTOCOL §3; the MCP tools' ``root``; the CLI's ``--root``) is
raw text: the name, path or ``file:`` URI of a candidate root (an LSP connection's
workspace folders, the MCP roots), or a path or ``file:`` URI of a folder.
``resolve_root`` turns it into a root (an absolute, symlink-resolved folder path, in
``paths``' vocabulary) or raises ``RootNotFound`` naming the field. What differs between
the surfaces is policy, passed in:

- ``relative_to``: where a relative path starts (the first MCP root; the CLI's current
  directory); None refuses relative paths (an LSP connection has no current folder);
- ``confined``: whether the folder must be one of the candidates or inside one (the MCP
  server opens nothing outside its roots; the LSP daemon and the CLI open any folder).

Vocabulary: imports only the standard library, ``paths`` and ``errors`` (the CLI's warm
path resolves ``--root`` through ``route``).
"""

from __future__ import annotations

import os

from readmany_daemon.errors import RootNotFound
from readmany_daemon.paths import is_inside, path_to_uri, uri_to_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence


class Root:
    """A candidate root: ``path`` is its absolute, symlink-resolved folder; a request may
    name it by ``name`` or ``uri`` as well. Immutable, compared and hashed by value.

    A plain class, not a dataclass: ``dataclasses`` (with ``inspect`` and ``ast``) costs
    a one-shot ``readmany read`` ~5 ms of imports, a third of its budget."""

    __slots__ = ("name", "path", "uri")

    path: str
    name: str
    uri: str

    def __init__(self, path: str, name: str, uri: str) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "uri", uri)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Root is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Root):
            return NotImplemented
        return (self.path, self.name, self.uri) == (other.path, other.name, other.uri)

    def __hash__(self) -> int:
        return hash((self.path, self.name, self.uri))

    def __repr__(self) -> str:
        return f"Root(path={self.path!r}, name={self.name!r}, uri={self.uri!r})"


def make_root(path: str, name: str | None = None) -> Root:
    """The candidate root of folder ``path`` (resolved; relative to the current
    directory): named ``name``, else by its last component."""
    real = os.path.realpath(path)
    return Root(real, name or os.path.basename(real) or real, path_to_uri(real))


#: What a request without ``root`` and without a candidate is told.
NO_ROOT = (
    "no workspace folder (send workspaceFolders or rootUri in initialize, or name one in root)"
)


def resolve_root(
    raw: str | None,
    roots: Sequence[Root],
    *,
    relative_to: str | None = None,
    confined: bool = False,
    field: str = "$.root",
) -> str:
    """The folder ``raw`` names, as an absolute real path:

    - None: the first of ``roots`` (``RootNotFound`` when there is none);
    - the ``name``, ``uri`` or ``path`` of one of ``roots``: its ``path``;
    - otherwise a path (absolute, or relative to ``relative_to``) or a local ``file:``
      URI (``paths.uri_to_path``), symlinks resolved. One of ``roots`` is returned as
      it is; any other must be an existing folder, and with ``confined`` inside one of
      ``roots``.

    Raises ``RootNotFound`` whose field is ``field`` (``$.root``; ``--root`` for the
    CLI, whose messages then carry no ``invalid params:`` prefix)."""
    prefix = f"invalid params: {field}" if field.startswith("$") else field
    if raw is None:
        if roots:
            return roots[0].path
        raise RootNotFound(f"{prefix}: {NO_ROOT}", field)
    for r in roots:
        if raw in (r.name, r.uri, r.path):
            return r.path
    path = raw
    if raw.startswith("file:"):
        local = uri_to_path(raw)
        if local is None:
            raise RootNotFound(f"{prefix}: {raw!r} is not a local file: URI", field)
        path = local
    elif not os.path.isabs(raw):
        if relative_to is None:
            raise RootNotFound(
                f"{prefix}: {raw!r} names no workspace folder (name one, or give an "
                "absolute path or file: URI)",
                field,
            )
        path = os.path.join(relative_to, raw)
    real = os.path.realpath(path)
    if any(real == r.path for r in roots):
        return real
    if confined and not any(is_inside(real, r.path) for r in roots):
        listed = ", ".join(r.path for r in roots)
        raise RootNotFound(f"{prefix}: {raw!r} is outside the workspace roots ({listed})", field)
    if not os.path.isdir(real):
        raise RootNotFound(f"{prefix}: {raw!r} is not a folder", field)
    return real
