"""The bytes of a connection that both its ends write, with no import beyond ``os``: the
``Content-Type`` of a content frame (PROTOCOL §1) and a write of every byte to a file
descriptor.

Here, below every other layer, because the one-shot client (``client.py``, whose import
budget is two ``python -c pass``), the daemon's writer (``lsp/``), the ``readmany lsp``
bridge and the MCP front stage all use them.
"""

from __future__ import annotations

import os

#: ``Content-Type`` of a content frame (PROTOCOL §1): the raw UTF-8 ``llmContent`` of
#: the ``readMany/read`` answer that follows it, sent to a connection that asked for
#: them with ``initializationOptions.llmContentFrames``.
CONTENT_FRAME_TYPE = b"text/plain; charset=utf-8"


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to file descriptor ``fd`` (``os.write`` may write
    fewer than asked: to a pipe or a socket); raises ``OSError`` as ``os.write`` does
    (the reader went away: ``BrokenPipeError``)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
