"""Deprecated shim: the JSON-RPC adapter moved to ``readmany_daemon.lsp`` (and ``logs``;
the method names to ``wire.messages``). These re-exports keep old imports working until
the lead rewrites them; patch names where they are looked up now (``lsp.encode.CHUNK_BYTES``,
``logs.time``), not here.
"""

from __future__ import annotations

from readmany_daemon.logs import _RedactArgs as _RedactArgs
from readmany_daemon.logs import _Throttle as _Throttle
from readmany_daemon.logs import configure_logging as configure_logging
from readmany_daemon.lsp.encode import CACHED_BODY_CHARS as CACHED_BODY_CHARS
from readmany_daemon.lsp.encode import CHUNK_BYTES as CHUNK_BYTES
from readmany_daemon.lsp.encode import OWN_CHUNK_BYTES as OWN_CHUNK_BYTES
from readmany_daemon.lsp.encode import SPLIT_ENCODE_CHARS as SPLIT_ENCODE_CHARS
from readmany_daemon.lsp.encode import EncodedResult as EncodedResult
from readmany_daemon.lsp.encode import encode_read_result as encode_read_result
from readmany_daemon.lsp.framing import MAX_HEADER_BYTES as MAX_HEADER_BYTES
from readmany_daemon.lsp.framing import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES
from readmany_daemon.lsp.framing import FramingError as FramingError
from readmany_daemon.lsp.framing import read_frame as read_frame
from readmany_daemon.lsp.handlers import _boundary as _boundary
from readmany_daemon.lsp.handlers import _read as _read
from readmany_daemon.lsp.handlers import _register as _register
from readmany_daemon.lsp.protocol import ReadManyProtocol as ReadManyProtocol
from readmany_daemon.lsp.serve import MAX_PENDING_MESSAGES as MAX_PENDING_MESSAGES
from readmany_daemon.lsp.serve import MAX_UNREAD_ANSWER_BYTES as MAX_UNREAD_ANSWER_BYTES
from readmany_daemon.lsp.serve import dispatch as dispatch
from readmany_daemon.lsp.serve import run_connection as run_connection
from readmany_daemon.lsp.serve import serve_stdio as serve_stdio
from readmany_daemon.lsp.serve import warm_up as warm_up
from readmany_daemon.lsp.session import Folder as Folder
from readmany_daemon.lsp.session import ReadManyServer as ReadManyServer
from readmany_daemon.lsp.writers import SEND_BUFFER_BYTES as SEND_BUFFER_BYTES
from readmany_daemon.lsp.writers import SENDMSG_BUFFERS as SENDMSG_BUFFERS
from readmany_daemon.lsp.writers import BlockingWriter as BlockingWriter
from readmany_daemon.lsp.writers import StreamWriter as StreamWriter
from readmany_daemon.lsp.writers import _NullWriter as _NullWriter
from readmany_daemon.wire.messages import CHANGED_SINCE as CHANGED_SINCE
from readmany_daemon.wire.messages import FILES as FILES
from readmany_daemon.wire.messages import READ as READ
from readmany_daemon.wire.messages import RESCAN as RESCAN
from readmany_daemon.wire.messages import SERVER_NAME as SERVER_NAME
from readmany_daemon.wire.messages import STATUS as STATUS
from readmany_daemon.wire.messages import STOP_DAEMON as STOP_DAEMON
