"""Paths and ``file:`` URIs: the one place that spells them.

Vocabulary used throughout the package:

- an **absolute path** is a POSIX path ``str`` starting with ``/``; a file name with bytes
  that are not UTF-8 holds them as surrogate escapes (PEP 383, ``os.fsdecode``);
- a **root** is the absolute, symlink-resolved path of a workspace folder (no trailing
  ``/`` except for ``/`` itself);
- a **rel** is a workspace-relative POSIX path with ``/`` separators, normalized (no
  ``.``, ``..`` or empty components, no leading or trailing ``/``); ``""`` is the root;
- **byte order** is the order of the names' UTF-8 bytes (surrogate escapes standing for
  their bytes): git's order, and the order of every listing the daemon answers.

Everything here is a function of its arguments (``root: str``, not a workspace object)
and imports only the standard library: the CLI's warm path imports this module through
``client``, so it stays light (no ``urllib``).
"""

from __future__ import annotations

import os
import posixpath
import stat as stat_mod

# ------------------------------------------------------------------------------ URIs

#: Bytes that stay literal in a ``file:`` URI path (RFC 3986 unreserved plus ``/``).
_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")

_HEX = frozenset(b"0123456789ABCDEFabcdef")


def path_to_uri(path: str) -> str:
    """The ``file:`` URI of absolute ``path`` (RFC 8089 ``file:///…``, empty authority).

    Every byte of ``path``'s file-system encoding (UTF-8; a surrogate escape is its byte)
    outside RFC 3986's unreserved characters and ``/`` is percent-encoded as ``%XX``
    (upper-case hex), as ``pathlib.PurePosixPath.as_uri`` does. ``uri_to_path`` is its
    inverse. Raises ``ValueError`` when ``path`` is not absolute (``file://`` + a relative
    path would read as a host name) and ``UnicodeEncodeError`` for a lone surrogate
    outside U+DC80-U+DCFF."""
    if not path.startswith("/"):
        raise ValueError(f"not an absolute path: {path!r}")
    raw = os.fsencode(path)
    return "file://" + "".join(chr(b) if b in _URI_SAFE else f"%{b:02X}" for b in raw)


def uri_to_path(uri: str) -> str | None:
    """The absolute local path a ``file:`` URI names, else None. Not resolved: symbolic
    links and ``.``/``..`` segments are kept as written (callers ``realpath`` it).

    Handled (RFC 8089 §2 and Appendix B; the scheme is case-insensitive):

    - ``file:///abs/path`` (empty authority) and ``file:/abs/path`` (no authority);
    - ``file://localhost/abs/path`` (host ``localhost``, any case, means this machine);
    - percent-encoded bytes (``%20``, ``%C3%A9``, ``%FF``) decoded to bytes and then with
      the file-system encoding, UTF-8 with surrogate escapes: a name that is not UTF-8
      comes back as ``os.fsdecode`` gives it, as git and ``os.listdir`` spell it;
      characters a client left unencoded (a space, non-ASCII letters) stand for their
      UTF-8 bytes;
    - a query (``?…``) or fragment (``#…``) is not part of the path (RFC 3986 §3) and is
      dropped.

    None for: another scheme; any other host, a port or user info (``file://server/share``
    is a remote file, RFC 8089 §3); a relative or empty path (``file:a/b``, ``file://``);
    a malformed escape (``%4``, ``%zz``); an encoded ``/`` (``%2F``: RFC 3986 §2.2 makes
    it data inside one segment, and no POSIX file name can hold a ``/``) or NUL
    (``%00``); a lone surrogate outside U+DC80-U+DCFF in ``uri``.

    Not interpreted, because this is a POSIX daemon: DOS drive letters (RFC 8089
    Appendix E.2) — ``file:///C:/x`` is the POSIX path ``/C:/x``, ``file:C:/x`` is
    relative (None) and ``file://C:/x`` has host ``C:`` (None) — and the UNC forms of
    Appendix E.3 (``file:////server/share`` is the POSIX path ``//server/share``)."""
    scheme, colon, rest = uri.partition(":")
    if not colon or scheme.lower() != "file":
        return None
    end = len(rest)
    for mark in "?#":
        i = rest.find(mark)
        if 0 <= i < end:
            end = i
    rest = rest[:end]
    if rest.startswith("//"):
        host, slash, tail = rest[2:].partition("/")
        if host and host.lower() != "localhost":
            return None
        rest = slash + tail
    if not rest.startswith("/"):
        return None
    raw = _percent_decode(rest)
    return None if raw is None else os.fsdecode(raw)


def _percent_decode(text: str) -> bytes | None:
    """The bytes ``text`` spells (``%XX`` escapes decoded, other characters as UTF-8);
    None for a malformed escape, an escaped ``/`` or NUL, or an unencodable surrogate."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None
    if b"%" not in raw:
        return raw
    head, *escaped = raw.split(b"%")
    out = bytearray(head)
    for part in escaped:
        if len(part) < 2 or part[0] not in _HEX or part[1] not in _HEX:
            return None
        byte = int(part[:2], 16)
        if byte in (0x00, 0x2F):
            return None
        out.append(byte)
        out += part[2:]
    return bytes(out)


# ------------------------------------------------------------------ lexical containment


def is_inside(path: str, top: str) -> bool:
    """Whether absolute ``path`` is ``top`` or below it, compared as strings: lexical, no
    file system access (both should be normalized; resolve symbolic links first with
    ``os.path.realpath`` when they matter). Whole components only: ``/a/bc`` is not
    inside ``/a/b``; everything absolute is inside ``/``."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def abs_path(root: str, rel: str) -> str:
    """The absolute path of ``rel`` under ``root`` (``""`` is ``root`` itself)."""
    return posixpath.join(root, rel) if rel else root


def rel_path(root: str, path: str) -> str | None:
    """Absolute, normalized ``path`` as a rel of ``root`` (``""`` for ``root`` itself), or
    None when it is not inside ``root`` (lexically, as ``is_inside``)."""
    if path == root:
        return ""
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def to_rel(root: str, raw: str) -> str | None:
    """The rel of a requested path ``raw`` (relative to ``root``, absolute, or a ``file:``
    URI), lexically normalized; None when it leaves the root (by ``..``, or an absolute
    path or URI elsewhere) or is a ``file:`` URI naming no local file (``uri_to_path``).
    An absolute path outside ``root`` lexically is compared again after
    ``os.path.realpath`` (the root may have been named through a symbolic link)."""
    path = raw
    if path.startswith("file:"):
        local = uri_to_path(path)
        if local is None:
            return None
        path = local
    if os.path.isabs(path):
        rel = rel_path(root, posixpath.normpath(path))
        if rel is None:
            # The root may have been given through a symlink: compare real paths too.
            rel = rel_path(root, os.path.realpath(path))
        return rel
    norm = posixpath.normpath(path)
    if norm == ".":
        return ""
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


# --------------------------------------------------------------------------- real paths


def realpath_of(root: str, rel: str) -> str:
    """``os.path.realpath(abs_path(root, rel))`` for a rel (``""`` = ``root``). ``root`` is
    a real path already, so only ``rel``'s own components are ``lstat``'ed (realpath
    would walk the root's ancestors too); one that is a symbolic link, or missing, hands
    over to ``os.path.realpath`` (non-strict: a link loop or a missing part comes back
    unresolved), and any ``OSError`` it raises propagates."""
    if not rel:
        return root
    path = root.rstrip("/")
    for part in rel.split("/"):
        path = f"{path}/{part}"
        try:
            st = os.lstat(path)
        except (OSError, ValueError):
            return os.path.realpath(abs_path(root, rel))
        if stat_mod.S_ISLNK(st.st_mode):
            return os.path.realpath(abs_path(root, rel))
    return path


def resolves_inside(root: str, rel: str) -> bool:
    """Whether ``rel``'s real path (symbolic links resolved, ``realpath_of``) is inside
    ``root``; an ``OSError`` of ``realpath_of`` propagates."""
    return rel_path(root, realpath_of(root, rel)) is not None


# --------------------------------------------------------------------------- byte order


def byte_order_key(path: str) -> bytes:
    """Sort key putting paths (or names) in byte order: their UTF-8 bytes, surrogate
    escapes standing for the bytes they escape. Raises ``UnicodeEncodeError`` for a lone
    surrogate outside U+DC80-U+DCFF."""
    return path.encode("utf-8", "surrogateescape")


def sort_in_byte_order(names: list[str]) -> None:
    """Sort ``names`` in place in byte order (``byte_order_key``). Code point order equals
    UTF-8 byte order except for surrogate escapes, so all-ASCII lists (nearly all) sort
    without a key."""
    if "".join(names).isascii():
        names.sort()
    else:
        names.sort(key=byte_order_key)


# ------------------------------------------------------------- Unicode normalization


def nfc(text: str) -> str:
    """``text`` (a path, name or pattern) in Unicode normalization form C, composed
    (``é`` as U+00E9; Hangul as syllables), as most keyboards and tools type names.
    Unchanged when ASCII or composed already; surrogate escapes (undecodable bytes) stay
    as they are.

    The form request patterns and paths are compared in (PROTOCOL §3): a path, folder,
    glob or ``exclude`` typed in either form matches a name stored in the other (macOS
    writes names decomposed, NFD). Only the comparison uses it: a file keeps its on-disk
    name as its label, and ignore files keep git's byte-for-byte matching."""
    if text.isascii():
        return text
    import unicodedata

    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def spellings(rel: str) -> tuple[str, ...]:
    """``rel`` as given, then its NFC and NFD spellings (Unicode normalization forms C
    and D), each once: the names a path typed in one form may be stored under."""
    if rel.isascii():
        return (rel,)
    import unicodedata

    forms = (rel, unicodedata.normalize("NFC", rel), unicodedata.normalize("NFD", rel))
    return tuple(dict.fromkeys(forms))
