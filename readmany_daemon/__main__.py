"""``python -m readmany_daemon``: the ``readmany`` command.

``-m`` puts the current folder first on ``sys.path``; run inside a workspace (an editor
starts servers there), the workspace's ``json.py`` or ``typing.py`` would be imported in
place of the standard library's: code from the tree being read would run in the reader,
and a Python source tree would break it. The entry is removed before anything else is
imported (as ``python -m pip`` does); the package itself is already loaded. A current
folder that was removed is no reason to fail here: the command says so if it needs one.
"""

import os
import sys

try:
    _cwd = os.getcwd()
except FileNotFoundError:  # removed: nothing of it can be imported anyway
    _cwd = ""
if sys.path and sys.path[0] in ("", _cwd):
    sys.path.pop(0)

from readmany_daemon.cli import main  # after the sys.path fix, on purpose

raise SystemExit(main())
