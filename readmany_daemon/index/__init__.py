"""The in-memory workspace model (``model.py``: ``Index``) and its parts.

Temporary: re-exports the names the old ``readmany_daemon/index.py`` module had, for the
importers not moved yet (the lead empties this file at integration). Lazily (PEP 562
``__getattr__``): ``readmany files`` imports ``index.gitlist`` on its cold path before
git starts, and importing this package must not pull in the index itself.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing here would delay git's start
if TYPE_CHECKING:
    from .changes import RETRACK_LIMIT as RETRACK_LIMIT
    from .model import Index as Index
    from .records import CONTENT as CONTENT
    from .records import ENTRY as ENTRY
    from .records import FOLDER as FOLDER
    from .records import GIT_INDEX as GIT_INDEX
    from .records import RACY_NS as RACY_NS
    from .records import RULES as RULES
    from .records import TREE as TREE
    from .records import Applied as Applied
    from .records import IndexDump as IndexDump

__all__ = [
    "CONTENT",
    "ENTRY",
    "FOLDER",
    "GIT_INDEX",
    "RACY_NS",
    "RETRACK_LIMIT",
    "RULES",
    "TREE",
    "Applied",
    "Index",
    "IndexDump",
]

_WHERE = {
    "RETRACK_LIMIT": "changes",
    "Index": "model",
    **{
        n: "records"
        for n in (
            "CONTENT",
            "ENTRY",
            "FOLDER",
            "GIT_INDEX",
            "RACY_NS",
            "RULES",
            "TREE",
            "Applied",
            "IndexDump",
        )
    },
}


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{where}"), name)
