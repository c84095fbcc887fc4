"""Deprecated shim: the warm service moved to ``readmany_daemon.runtime`` (``service``,
``roots``, ``freshness``, ``background``, ``overlays``, ``requests``, ``changelog``,
``status``, ``process``); ``Cancelled`` is in ``readmany_daemon.errors``."""

from readmany_daemon.errors import Cancelled as Cancelled
from readmany_daemon.runtime.background import FIRST_SAVE_DELAY as FIRST_SAVE_DELAY
from readmany_daemon.runtime.background import SNAPSHOT_INTERVAL as SNAPSHOT_INTERVAL
from readmany_daemon.runtime.background import WARM_IDLE as WARM_IDLE
from readmany_daemon.runtime.background import WARM_MAX_FILE_BYTES as WARM_MAX_FILE_BYTES
from readmany_daemon.runtime.changelog import CHANGE_LOG_LIMIT as CHANGE_LOG_LIMIT
from readmany_daemon.runtime.changelog import ChangeLog as ChangeLog
from readmany_daemon.runtime.overlays import OverlayStore as OverlayStore
from readmany_daemon.runtime.process import raise_open_files_limit as raise_open_files_limit
from readmany_daemon.runtime.process import release_memory as release_memory
from readmany_daemon.runtime.process import tune_malloc as tune_malloc
from readmany_daemon.runtime.requests import RequestContext as RequestContext
from readmany_daemon.runtime.requests import checkpoint as checkpoint
from readmany_daemon.runtime.requests import current_context as current_context
from readmany_daemon.runtime.roots import RootEntry as RootEntry
from readmany_daemon.runtime.roots import index_key as index_key
from readmany_daemon.runtime.service import Service as Service
