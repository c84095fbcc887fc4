"""Deprecated shim: the watcher moved to ``readmany_daemon.runtime.watcher``."""

from readmany_daemon.runtime.watcher import BATCH_DELAY as BATCH_DELAY
from readmany_daemon.runtime.watcher import COOKIE_PREFIX as COOKIE_PREFIX
from readmany_daemon.runtime.watcher import RECONCILE_INTERVAL as RECONCILE_INTERVAL
from readmany_daemon.runtime.watcher import Watcher as Watcher
from readmany_daemon.runtime.watcher import max_user_watches as max_user_watches
