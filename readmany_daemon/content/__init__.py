"""Deprecated shim: ``content.py`` became the package ``readmany_daemon.content``.

bytes → text in four modules: :mod:`.decode` (encodings, binary sniffing),
:mod:`.lines` (line windows), :mod:`.reader` (the confined reader) and :mod:`.cache`
(the content cache). This file re-exports the old module's names so that untouched
importers keep working; it is emptied once they import the modules themselves.

``Loaded`` (a file read) is :class:`.reader.FileRead` now, and ``CHUNK_BYTES`` (a read
chunk) is :data:`.reader.READ_CHUNK_BYTES`.
"""

from readmany_daemon.content.cache import _ENTRY_OVERHEAD as _ENTRY_OVERHEAD
from readmany_daemon.content.cache import JSON_BODY_MIN_CHARS as JSON_BODY_MIN_CHARS
from readmany_daemon.content.cache import ContentCache as ContentCache
from readmany_daemon.content.cache import _cost as _cost
from readmany_daemon.content.decode import Decoded as Decoded
from readmany_daemon.content.decode import _decode_legacy as _decode_legacy
from readmany_daemon.content.decode import decode as decode
from readmany_daemon.content.lines import Window as Window
from readmany_daemon.content.lines import count_lines as count_lines
from readmany_daemon.content.lines import split_lines as split_lines
from readmany_daemon.content.lines import window as window
from readmany_daemon.content.reader import READ_CHUNK_BYTES as CHUNK_BYTES
from readmany_daemon.content.reader import SCAN_BYTES as SCAN_BYTES
from readmany_daemon.content.reader import FileRead as Loaded
from readmany_daemon.content.reader import FolderHandles as FolderHandles
from readmany_daemon.content.reader import StatKey as StatKey
from readmany_daemon.content.reader import _LineCounter as _LineCounter
from readmany_daemon.content.reader import mime_for as mime_for
from readmany_daemon.content.reader import read_file as read_file
from readmany_daemon.content.reader import read_file_at as read_file_at
from readmany_daemon.content.reader import stat_key as stat_key

__all__ = [
    "CHUNK_BYTES",
    "SCAN_BYTES",
    "ContentCache",
    "Decoded",
    "FolderHandles",
    "Loaded",
    "StatKey",
    "Window",
    "count_lines",
    "decode",
    "mime_for",
    "read_file",
    "read_file_at",
    "split_lines",
    "stat_key",
    "window",
]
