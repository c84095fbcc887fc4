"""Deprecated shim: rendering moved to ``readmany_daemon.engine.render``.

Kept so that importers not yet moved keep working; the lead removes it at integration.
"""

from readmany_daemon.engine.render import HEREDOC_WORDS as HEREDOC_WORDS
from readmany_daemon.engine.render import MAX_NAMED_IN_CONTENT as MAX_NAMED_IN_CONTENT
from readmany_daemon.engine.render import RENDERERS as RENDERERS
from readmany_daemon.engine.render import Notices as Notices
from readmany_daemon.engine.render import Piece as Piece
from readmany_daemon.engine.render import continuation_request as continuation_request
from readmany_daemon.engine.render import cut_notice as cut_notice
from readmany_daemon.engine.render import djb2_hex6 as djb2_hex6
from readmany_daemon.engine.render import render as render
from readmany_daemon.engine.render import render_heredoc as render_heredoc
from readmany_daemon.engine.render import render_json as render_json
from readmany_daemon.engine.render import render_parts as render_parts
from readmany_daemon.engine.render import render_separator as render_separator
from readmany_daemon.engine.render import render_xml as render_xml
from readmany_daemon.engine.render import return_display as return_display
from readmany_daemon.engine.render import separator_parts as separator_parts
from readmany_daemon.engine.render import xml_escape as xml_escape
