"""Deprecated shim: the ignore rules now live in ``readmany_daemon.rules``
(``kinds``, ``wildmatch``, ``patterns``, ``git``, ``ignore``). Re-exports the old names."""

from readmany_daemon.rules.git import RepoLocation as RepoLocation
from readmany_daemon.rules.git import repo_location as repo_location
from readmany_daemon.rules.ignore import MAX_PATTERN_FILE_BYTES as MAX_PATTERN_FILE_BYTES
from readmany_daemon.rules.ignore import MAX_WARNINGS_PER_FILE as MAX_WARNINGS_PER_FILE
from readmany_daemon.rules.ignore import Frame as Frame
from readmany_daemon.rules.ignore import IgnoreRules as IgnoreRules
from readmany_daemon.rules.kinds import ALL as ALL
from readmany_daemon.rules.kinds import DEFAULT_EXCLUDE as DEFAULT_EXCLUDE
from readmany_daemon.rules.kinds import DENY as DENY
from readmany_daemon.rules.kinds import GITIGNORE as GITIGNORE
from readmany_daemon.rules.kinds import IGNORE_FILE as IGNORE_FILE
from readmany_daemon.rules.kinds import KIND_BITS as KIND_BITS
from readmany_daemon.rules.kinds import KIND_NAMES as KIND_NAMES
from readmany_daemon.rules.kinds import Filters as Filters
from readmany_daemon.rules.kinds import Verdict as Verdict
from readmany_daemon.rules.patterns import GitPatterns as GitPatterns
from readmany_daemon.rules.patterns import NameMatcher as NameMatcher
from readmany_daemon.rules.patterns import PatternList as PatternList
from readmany_daemon.rules.wildmatch import byte_view as byte_view

__all__ = [
    "ALL",
    "DEFAULT_EXCLUDE",
    "DENY",
    "GITIGNORE",
    "IGNORE_FILE",
    "KIND_BITS",
    "KIND_NAMES",
    "Filters",
    "GitPatterns",
    "IgnoreRules",
    "PatternList",
    "Verdict",
]
