"""Deprecated shim: index snapshots are now ``readmany_daemon.index.snapshot``.
Re-exports the old names."""

from readmany_daemon.index.snapshot import FORMAT as FORMAT
from readmany_daemon.index.snapshot import Snapshot as Snapshot
from readmany_daemon.index.snapshot import SnapshotWarning as SnapshotWarning
from readmany_daemon.index.snapshot import cache_dir as cache_dir
from readmany_daemon.index.snapshot import key_digest as key_digest
from readmany_daemon.index.snapshot import load as load
from readmany_daemon.index.snapshot import save as save
from readmany_daemon.index.snapshot import snapshot_path as snapshot_path

__all__ = ["FORMAT", "Snapshot", "SnapshotWarning", "cache_dir", "load", "save", "snapshot_path"]
