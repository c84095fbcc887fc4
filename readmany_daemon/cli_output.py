"""Standard output for the ``readmany`` command line: an answer written whole
(:func:`write`, :func:`write_parts`) or as its content frame arrives
(:class:`StdoutSink`), a reader that went away (``BrokenPipeError``) told apart from an
output that cannot be written (:class:`OutputError`: one line on stderr and exit 1).
Light, as ``cli.py`` is: no import beyond ``os`` and ``sys`` on the warm path."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~2 ms)
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["PIPE_BYTES", "OutputError", "StdoutSink", "drop_stdout", "write", "write_parts"]


class OutputError(Exception):
    """Standard output is closed or cannot be written (a full disk): one line on
    stderr and exit 1, not a traceback."""


def write(text: str) -> None:
    """Write ``text`` (UTF-8, surrogate escapes as their bytes) to standard output.
    Raises ``BrokenPipeError`` (the reader went away) or ``OutputError``."""
    write_parts([text])


def write_parts(parts: Sequence[str | bytes | bytearray]) -> None:
    """Write the concatenation of ``parts`` as :func:`_write` does, one part at a time
    (bytes as they are: UTF-8 already)."""
    if sys.stdout is None:
        raise OutputError("standard output is closed")
    try:
        out = sys.stdout.buffer
        for part in parts:
            out.write(part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part)
        out.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:  # ValueError: a closed file object
        raise OutputError(str(exc)) from None


#: ``fcntl``'s ``F_SETPIPE_SZ`` (Linux): the capacity of a pipe, in bytes.
_F_SETPIPE_SZ = 1031


#: The pipe capacity asked for (Linux's default ``pipe-max-size``) before a content frame
#: of at least this many bytes goes to a standard output that is a pipe.
PIPE_BYTES = 1 << 20


class StdoutSink:
    """Writes a content frame to standard output as it arrives (``route.ask_daemon``'s
    ``content_sink``): a large answer is printed while the rest of it comes, not after
    all of it came. Before a frame of ``PIPE_BYTES`` or more, a pipe on standard output
    is grown to that size (fewer writes that wait for the reader). Raises
    ``BrokenPipeError`` when the reader went away, ``OutputError`` for another write
    failure."""

    def __init__(self) -> None:
        self.started = False  # a frame began
        self.last = b""  # the last byte written

    def start(self, length: int) -> None:
        """A frame of ``length`` bytes begins."""
        self.started = True
        if length >= PIPE_BYTES and sys.platform.startswith("linux"):
            import fcntl

            try:  # noqa: SIM105 (contextlib is no import of the warm path)
                fcntl.fcntl(1, _F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass  # not a pipe, or over /proc/sys/fs/pipe-max-size: as it is

    def write(self, chunk: memoryview) -> None:
        """Write the next bytes of the frame."""
        if not len(chunk):
            return
        if sys.stdout is None:
            raise OutputError("standard output is closed")
        try:
            sys.stdout.buffer.write(chunk)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:  # ValueError: a closed file object
            raise OutputError(str(exc)) from None
        self.last = bytes(chunk[-1:])


def drop_stdout() -> None:
    """Point standard output at /dev/null: what its buffer still holds would fail again
    when the interpreter flushes it on exit (exit 120 and a second message)."""
    if sys.stdout is not None:
        try:  # noqa: SIM105 (contextlib costs the warm path collections, functools)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass  # no descriptor to point anywhere: nothing will be flushed to it
