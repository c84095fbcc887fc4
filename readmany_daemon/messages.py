"""Deprecated shim: the wire types moved to ``readmany_daemon.wire.messages``.

Kept so that importers not yet moved keep working; the lead removes it at integration.
"""

from readmany_daemon.wire.messages import Attachment as Attachment
from readmany_daemon.wire.messages import FileFilteringOptions as FileFilteringOptions
from readmany_daemon.wire.messages import FileInfo as FileInfo
from readmany_daemon.wire.messages import FileResult as FileResult
from readmany_daemon.wire.messages import FilesParams as FilesParams
from readmany_daemon.wire.messages import FileSpec as FileSpec
from readmany_daemon.wire.messages import FilesResult as FilesResult
from readmany_daemon.wire.messages import Format as Format
from readmany_daemon.wire.messages import NonNegative as NonNegative
from readmany_daemon.wire.messages import Packing as Packing
from readmany_daemon.wire.messages import PackingInfo as PackingInfo
from readmany_daemon.wire.messages import Pattern as Pattern
from readmany_daemon.wire.messages import Positive as Positive
from readmany_daemon.wire.messages import ReadManyParams as ReadManyParams
from readmany_daemon.wire.messages import ReadManyResult as ReadManyResult
from readmany_daemon.wire.messages import Summary as Summary
from readmany_daemon.wire.messages import Sync as Sync
from readmany_daemon.wire.messages import decode_files_params as decode_files_params
from readmany_daemon.wire.messages import decode_read_params as decode_read_params
from readmany_daemon.wire.messages import fold_read_params as fold_read_params
from readmany_daemon.wire.messages import to_builtins as to_builtins
