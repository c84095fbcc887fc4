"""Index snapshots on disk: a warm start across daemon restarts (PROTOCOL §1 "daemon"; DESIGN.md).

One file per root and index-affecting settings, in the user cache folder
(``$XDG_CACHE_HOME/readmany/`` when that is an absolute path, else
``~/.cache/readmany/``; XDG Base Directory spec), named ``index-<hash>.snap`` after a
BLAKE2b of the root path and the settings key, mode 0600 in a 0700 folder. Never inside
the workspace: a cache folder that lies in the root is refused.

Format (msgspec MessagePack, ``Snapshot``): ``format`` (``FORMAT``), the readmany
``version`` that wrote it, the root's identity (real path, ``st_dev``, ``st_ino``), the
settings key digest, ``rulesHash`` (``IgnoreRules.ignore_files_hash()`` at save),
``sources`` (every rule source the walked folders use, with its content digest), the
tracked paths the verdicts were made with and the stamp of git's index file they came
from (``gitIndex``), ``savedAt`` (``time.time_ns()``), and per
walked folder its visible entries (joined by NUL: one string a folder), hidden files,
pruned folders, rescued folders and ``st_mtime_ns`` (0 for a racy record). Names that are
not valid UTF-8 (surrogate escapes) are stored as bytes.

Writes are atomic (a temp file in the same folder, ``fsync``, ``os.replace``). A load
checks format, version, root identity and key; a snapshot that fails to decode or names
another folder is discarded with a warning (the caller shows it in ``readMany/status``
and the log); one from another version or format is dropped quietly (an upgrade). Then
``Index.restore`` (``dump.py``) rebuilds the frames and reconciles with the disk: folders
whose ignore files changed are walked again, a changed tracked set is re-evaluated, and
every folder whose mtime changed is listed again; files are not stat'ed (the engine stats
what it reads). Rules outside the workspace that changed (``info/exclude``,
``core.excludesFile``) make the load give up: the caller walks.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from typing import Any

import msgspec

from readmany_daemon import __version__
from readmany_daemon.index.model import Index
from readmany_daemon.index.records import IndexDump
from readmany_daemon.paths import is_inside
from readmany_daemon.settings import Settings

__all__ = ["FORMAT", "Snapshot", "SnapshotWarning", "cache_dir", "load", "save", "snapshot_path"]

log = logging.getLogger(__name__)

#: Bumped whenever the layout or the meaning of a field changes.
FORMAT = 1

#: A name: ``str``, or ``bytes`` for one that is not valid UTF-8 (msgspec cannot decode a
#: ``str | bytes`` union by type, so such fields are ``Any`` and checked by ``_in``).
_Name = Any
_Marks = list[tuple[Any, int]]


class SnapshotWarning(Exception):
    """A snapshot could not be written or used; the message says why (one line)."""


#: How every "could not write the snapshot" warning begins (``save``); the runtime drops
#: such a warning once a save succeeds or its cause (a missing root) is gone.
NOT_SAVING = "not saving the index snapshot: "
#: How a failed write's warning begins (``save``), dropped likewise by the next success.
NOT_WRITTEN = "could not write the index snapshot "


class _Folder(msgspec.Struct, array_like=True):
    rel: _Name
    entries: _Name  # visible entries joined by "\0" ("sub/" for folders)
    hidden: _Marks
    pruned: _Marks
    excl: _Marks
    mtime: int
    ndirs: int  # how many entries are folders


class Snapshot(msgspec.Struct, rename="camel", kw_only=True):
    """One saved index (see the module docstring)."""

    format: int
    version: str
    root: _Name
    dev: int
    ino: int
    key: str
    rules_hash: str
    sources: list[tuple[_Name, str]]
    tracked: _Name | None
    git_index: tuple[int, int] | None = None  # (st_mtime_ns, st_size) of .git/index
    saved_at: int
    dirs: list[_Folder]


def _out(text: str) -> _Name:
    """``text`` as msgpack can hold it: str, or its fs bytes when it holds surrogate
    escapes (undecodable file names)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text)
    return text


def _in(value: _Name) -> str:
    if isinstance(value, bytes):
        return os.fsdecode(value)
    if not isinstance(value, str):
        raise msgspec.ValidationError(f"expected a name, got {type(value).__name__}")
    return value


def _marks_out(marks: tuple[tuple[str, int], ...]) -> _Marks:
    return [(_out(n), m) for n, m in marks]


def _marks_in(marks: _Marks) -> tuple[tuple[str, int], ...]:
    if not marks:
        return ()
    return tuple((_in(n), m) for n, m in marks)


def _joined(tracked: list[str] | str) -> str:
    return tracked if isinstance(tracked, str) else "\0".join(tracked)


def cache_dir(environ: Any = None) -> str:
    """``$XDG_CACHE_HOME/readmany`` (absolute values only, per the XDG spec), else
    ``~/.cache/readmany``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME", "")
    if not (base and os.path.isabs(base)):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "readmany")


def key_digest(key: Any) -> str:
    """A stable digest of the settings key (``runtime.roots.index_key``)."""
    return hashlib.blake2b(repr(key).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def snapshot_path(root: str, key: Any, environ: Any = None) -> str:
    """Where the snapshot of ``root`` (absolute real path) under settings ``key`` lives."""
    h = hashlib.blake2b(digest_size=16)
    h.update(os.fsencode(root) + b"\0" + key_digest(key).encode())
    return os.path.join(cache_dir(environ), f"index-{h.hexdigest()}.snap")


def save(path: str, index: Index, dump: IndexDump, key: Any, rules_hash: str) -> int:
    """Write ``dump`` (``index.dump()``, taken under the root's lock) to ``path``
    atomically; returns the bytes written. ``index`` gives the root. Raises
    ``SnapshotWarning`` when the folder lies inside the workspace or the write fails."""
    root = index.root
    folder = os.path.dirname(path)
    if is_inside(os.path.realpath(folder), root):
        raise SnapshotWarning(f"{NOT_SAVING}{folder} is inside the workspace")
    try:
        st = os.stat(root)
    except OSError as exc:
        raise SnapshotWarning(f"{NOT_SAVING}{root}: {exc.strerror}") from None
    snap = Snapshot(
        format=FORMAT,
        version=__version__,
        root=_out(root),
        dev=st.st_dev,
        ino=st.st_ino,
        key=key_digest(key),
        rules_hash=rules_hash,
        sources=[(_out(k), v) for k, v in sorted(dump.sources.items())],
        tracked=None if dump.tracked is None else _out(_joined(dump.tracked)),
        git_index=dump.stamp,
        saved_at=time.time_ns(),
        dirs=[
            _Folder(
                _out(rel),
                _out("\0".join(entries)),
                _marks_out(hidden),
                _marks_out(pruned),
                _marks_out(excl),
                mtime,
                ndirs,
            )
            for rel, entries, hidden, pruned, excl, mtime, ndirs in dump.dirs
        ],
    )
    data = msgspec.msgpack.encode(snap)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".index-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise SnapshotWarning(f"{NOT_WRITTEN}{path}: {exc}") from None
    return len(data)


def load(
    path: str, root: str, settings: Settings, key: Any, reconcile: bool = True
) -> tuple[Index | None, list[str]]:
    """The index saved at ``path`` for ``root`` (absolute real path), restored and
    reconciled with the disk (``Index.restore``; ``reconcile=False`` leaves the folder
    mtime checks to the caller), or None. Returns ``(index, warnings)``: warnings for a
    corrupt or foreign snapshot (it is then deleted); a missing, outdated or unusable one
    gives ``(None, [])`` (the reason is logged)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, []
    except OSError as exc:
        return None, [f"index snapshot {path} not read: {exc.strerror}"]
    try:
        snap = msgspec.msgpack.decode(data, type=Snapshot)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        _discard(path)
        return None, [f"discarded a corrupt index snapshot {path}: {exc}"]
    if snap.format != FORMAT or snap.version != __version__:
        log.info("index snapshot %s is from another version; walking", path)
        return None, []
    try:
        st = os.stat(root)
    except OSError as exc:
        return None, [f"index snapshot not used: {root}: {exc.strerror}"]
    if _in(snap.root) != root or (snap.dev, snap.ino) != (st.st_dev, st.st_ino):
        _discard(path)
        return None, [f"discarded an index snapshot of another folder ({path})"]
    if snap.key != key_digest(key):
        _discard(path)
        return None, [f"discarded an index snapshot made with other settings ({path})"]
    try:
        dump = _to_dump(snap)
    except msgspec.ValidationError as exc:
        _discard(path)
        return None, [f"discarded a corrupt index snapshot {path}: {exc}"]
    saved_at = snap.saved_at
    del snap, data
    index, reason = Index.restore(root, settings, dump, saved_at, reconcile)
    if index is None:
        log.info("index snapshot %s not used: %s; walking", path, reason)
        return None, []
    return index, []


def _to_dump(snap: Snapshot) -> IndexDump:
    """The ``IndexDump`` a snapshot holds (the tracked set stays joined: it is compared
    as a whole first). Raises ``msgspec.ValidationError`` for a name that is neither str
    nor bytes."""
    dirs = []
    for d in snap.dirs:
        names = d.entries
        if not isinstance(names, str):
            names = _in(names)
        dirs.append(
            (
                d.rel if isinstance(d.rel, str) else _in(d.rel),
                tuple(names.split("\0")) if names else (),
                _marks_in(d.hidden),
                _marks_in(d.pruned),
                _marks_in(d.excl),
                d.mtime,
                d.ndirs,
            )
        )
    return IndexDump(
        dirs,
        {_in(k): v for k, v in snap.sources},
        None if snap.tracked is None else _in(snap.tracked),
        snap.git_index,
    )


def _discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError as exc:
        log.warning("could not remove the index snapshot %s: %s", path, exc.strerror)
