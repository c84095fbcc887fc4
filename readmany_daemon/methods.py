"""The JSON-RPC method names of the readmany protocol (PROTOCOL §2) and the server's
name (the ``serverInfo`` name and the ``workspace/configuration`` section).

Wire vocabulary: the same strings for every adapter. (To be folded into
``wire/messages.py``.)
"""

from __future__ import annotations

SERVER_NAME = "readmany"

READ = "readMany/read"
FILES = "readMany/files"
STATUS = "readMany/status"
CHANGED_SINCE = "readMany/changedSince"
RESCAN = "readMany/rescan"
#: Ends the shared daemon (``readmany stop``, replacing a daemon of another version).
STOP_DAEMON = "readMany/stopDaemon"
