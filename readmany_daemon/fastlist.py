"""Deprecated shim: the git-seeded cold listing is now ``readmany_daemon.index.gitlist``
(its git wrapper and ``scratch_fd`` are in ``readmany_daemon.rules.git``). Re-exports the
old names. Importing it stays light (``os`` and ``rules/git.py``): the CLI starts git
through it before its other imports."""

from readmany_daemon.index.gitlist import FastListing as FastListing
from readmany_daemon.index.gitlist import _sorted_diff as _sorted_diff
from readmany_daemon.index.gitlist import start as start
from readmany_daemon.rules.git import scratch_fd as scratch_fd

__all__ = ["FastListing", "start"]
