"""Process tuning for the long-running server: malloc arenas, open-files limit, memory release.

Called once when a ``Service`` starts (``tune_malloc``, ``raise_open_files_limit``) and by
the LSP adapter after a large answer was sent (``release_memory``). Each is a no-op where
the platform does not offer it (not glibc, no ``resource``).
"""

from __future__ import annotations

import functools
from typing import Any

#: glibc ``mallopt`` parameter: the most malloc arenas (per-thread heaps).
_M_ARENA_MAX = -8


@functools.cache
def _libc() -> Any:
    """The C library through ctypes, or None (not glibc, or no ctypes); loaded once."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except (ImportError, OSError):
        return None


def tune_malloc(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas at ``arenas`` for this long-running process.

    glibc gives each thread that allocates concurrently its own arena (up to 8 per
    core) and does not hand one arena's free memory to another: a large answer built
    on one executor thread and the next on another kept both peaks resident (the full
    read of a 100,000-file tree left 5-10 GiB after a few requests instead of ~3).
    Returns whether the cap was set (False off glibc)."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(_M_ARENA_MAX, arenas) == 1)


def raise_open_files_limit() -> int | None:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit (capped at 1,048,576), as most
    servers do: every client connection and every file being read holds a descriptor.
    Returns the new soft limit, or None where it cannot be read or set."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = 1 << 20 if hard == resource.RLIM_INFINITY else min(hard, 1 << 20)
        if soft == resource.RLIM_INFINITY or soft >= target:
            return int(soft)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    except (ImportError, OSError, ValueError):
        return None


def release_memory() -> None:
    """Give free heap memory back to the system (glibc ``malloc_trim``), after a large
    answer has been sent; a no-op elsewhere."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
