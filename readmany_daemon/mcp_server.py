"""Deprecated shim: ``readmany mcp`` now lives in ``readmany_daemon.mcp``.

``mcp/schema.py`` (tool descriptions and schemas), ``mcp/tools.py`` (``ReadManyMcp``:
roots, the three tools, results as MCP content), ``mcp/local.py`` (the in-process
backend, over ``runtime.service.Service``), ``mcp/backend.py`` (the daemon-first backend, over
``route.py``) and ``mcp/sdk.py`` (the ``mcp`` SDK seam, ``run``). Every name this module
defined is re-exported below; import them from their new modules.
"""

from __future__ import annotations

from readmany_daemon.mcp.backend import DaemonBackend as DaemonBackend
from readmany_daemon.mcp.local import LocalBackend as LocalBackend
from readmany_daemon.mcp.schema import CHANGED_DESCRIPTION as CHANGED_DESCRIPTION
from readmany_daemon.mcp.schema import CHANGED_INPUT_SCHEMA as CHANGED_INPUT_SCHEMA
from readmany_daemon.mcp.schema import CHANGED_OUTPUT_SCHEMA as CHANGED_OUTPUT_SCHEMA
from readmany_daemon.mcp.schema import CHANGED_TOOL as CHANGED_TOOL
from readmany_daemon.mcp.schema import DEFAULT_LIST_LIMIT as DEFAULT_LIST_LIMIT
from readmany_daemon.mcp.schema import FILES_DESCRIPTION as FILES_DESCRIPTION
from readmany_daemon.mcp.schema import FILES_INPUT_SCHEMA as FILES_INPUT_SCHEMA
from readmany_daemon.mcp.schema import FILES_TOOL as FILES_TOOL
from readmany_daemon.mcp.schema import INSTRUCTIONS as INSTRUCTIONS
from readmany_daemon.mcp.schema import READ_DESCRIPTION as READ_DESCRIPTION
from readmany_daemon.mcp.schema import READ_INPUT_SCHEMA as READ_INPUT_SCHEMA
from readmany_daemon.mcp.schema import READ_TOOL as READ_TOOL
from readmany_daemon.mcp.schema import struct_output_schema as struct_output_schema
from readmany_daemon.mcp.schema import tool_definitions as tool_definitions
from readmany_daemon.mcp.sdk import ROOTS_TIMEOUT as ROOTS_TIMEOUT
from readmany_daemon.mcp.sdk import build_server as build_server
from readmany_daemon.mcp.sdk import run as run
from readmany_daemon.mcp.sdk import serve as serve
from readmany_daemon.mcp.tools import ReadManyMcp as ReadManyMcp
from readmany_daemon.mcp.tools import ToolFailure as ToolFailure
from readmany_daemon.mcp.tools import changed_answer as changed_answer
from readmany_daemon.mcp.tools import files_answer as files_answer
from readmany_daemon.mcp.tools import read_content as read_content
from readmany_daemon.mcp.tools import resolve_root as resolve_root
from readmany_daemon.paths import uri_to_path as uri_to_path
from readmany_daemon.racy import RACY_NS as RACY_NS
from readmany_daemon.roots import Root as Root
from readmany_daemon.roots import make_root as make_root
from readmany_daemon.runtime.changelog import SNAPSHOTS_KEPT as SNAPSHOTS_KEPT
from readmany_daemon.wire.messages import SERVER_NAME as SERVER_NAME
