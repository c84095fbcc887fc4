"""Git's racy-timestamp rule: when a stat match cannot be trusted.

A file's stat data (size, mtime, inode, ctime) is a cheap proof that it did not change
since it was read or listed, except for a *racy* one: a file modified within one
timestamp tick of the moment it was read can be modified again in that same tick without
its mtime changing. Git calls such index entries "racily clean" and re-checks their
content (git's Documentation/technical/racy-git.txt: an entry whose mtime is not older
than the index file's own timestamp is racy). Here the rule is applied with a margin of
:data:`RACY_NS` instead of git's exact comparison, because the file system's tick may be
coarse and Linux's file-time clock lags behind ``time.time_ns()``.

Units: every time here is nanoseconds since the epoch (``st_mtime_ns``,
``time.time_ns()``).
"""

from __future__ import annotations

from typing import Final

__all__ = ["RACY_NS", "is_racy"]

#: The timestamp tick assumed by the racy rule (ns): 2 s covers FAT's 2 s and ext3/HFS+'s
#: 1 s mtime resolution and the lag of Linux's coarse file-time clock behind
#: ``time.time_ns()`` (one tick, ≤ 10 ms).
RACY_NS: Final = 2_000_000_000


def is_racy(mtime_ns: int, cached_at_ns: int, granularity_ns: int = RACY_NS) -> bool:
    """Whether a stat match for a file (or folder) with mtime ``mtime_ns``, read or listed
    at ``cached_at_ns`` (taken *before* the read or listing), proves nothing: its mtime
    lies within ``granularity_ns`` of that moment (or after it), so a later change in the
    same tick could leave its stat unchanged. Such an entry must be checked again by
    content, whatever its stat says."""
    return mtime_ns >= cached_at_ns - granularity_ns
