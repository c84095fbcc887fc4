"""Deprecated shim: ``Workspace`` moved to ``readmany_daemon.engine.workspace``.

Kept so that importers not yet moved keep working; the lead removes it at integration.
"""

from readmany_daemon.engine.workspace import Overlay as Overlay
from readmany_daemon.engine.workspace import Workspace as Workspace
