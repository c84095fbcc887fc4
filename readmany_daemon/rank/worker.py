"""The worker process of a big full-text build: a fresh interpreter preparing batches of
texts (``prep.prepare_batch``) while the keeper's thread writes them.

Started as ``python -I -c BOOT PATHS MODULE`` in folder ``/``: isolated (no ``PYTHON*``
variables, no user site, neither the current folder nor a script's on ``sys.path``, so a
workspace's ``socket.py`` is never imported; ``multiprocessing``'s "spawn" puts the
current folder first), then given the daemon's absolute ``sys.path`` entries. No fork of
the threaded daemon, no helper process beside it. The two speak pickles: on the
worker's stdin ``(root, redact)`` once, then ``(items, limit)`` a batch; on its stdout
its process id once, then each batch's ``list[Prepared]`` in order. A thread of the
worker takes the requests as they come, so neither side ever blocks the other's write.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO, Any, Final

from readmany_daemon.rank.prep import Prepared, prepare_batch

__all__ = ["CLOSE_SECONDS", "PrepWorker", "WorkerGone", "serve"]

#: How long (seconds) closing waits for the terminated worker before killing it.
CLOSE_SECONDS: Final = 1.0
BOOT: Final = (
    "import json, sys, importlib; sys.path[:] = json.loads(sys.argv[1]);"
    " importlib.import_module(sys.argv[2]).serve()"
)


class WorkerGone(Exception):
    """The worker process ended, or its pipes broke."""


class PrepWorker:
    """One worker process preparing batches for the files of ``root``. Starting waits
    for the worker's process id (``pid``); raises ``OSError`` or ``WorkerGone`` when it
    cannot start. ``submit`` hands a batch over, ``result`` takes the oldest batch's
    answer (raises ``WorkerGone``). ``close`` ends the process (any thread, idempotent).

    ``module``: the module whose ``serve()`` the worker runs; it takes ``(root,
    setup)``, answers its process id, then each batch. ``setup`` must pickle: for this
    module's full-text preparation (the default) the redaction function (a module-level
    function); for ``rank.ahead`` (outlines and tags made ahead) its store's path."""

    def __init__(
        self, root: str, setup: Callable[[str], str] | str, *, module: str = __name__
    ) -> None:
        paths = [p for p in sys.path if p and os.path.isabs(p)]
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOT, json.dumps(paths), module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd="/",
            close_fds=True,
        )
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._send((root, setup))
            #: The worker's process id.
            self.pid: int = self._receive()
        except BaseException:
            self.close()
            raise

    def submit(self, items: Sequence[tuple[str, bool, str | None]], limit: int) -> None:
        """Have the worker run ``prep.prepare_batch(root, items, redact, limit)``."""
        self._send((list(items), limit))

    def result(self) -> list[Prepared]:
        """The texts of the oldest batch submitted and not yet taken (waits for them)."""
        got: list[Prepared] = self._receive()
        return got

    def close(self) -> None:
        """End the worker (terminated; killed after ``CLOSE_SECONDS``) and its pipes."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        proc = self._proc
        proc.terminate()
        try:
            proc.wait(CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # the broken pipe's last flush
                    pipe.close()

    def _send(self, message: object) -> None:
        pipe = self._proc.stdin
        try:
            assert pipe is not None
            pickle.dump(message, pipe, pickle.HIGHEST_PROTOCOL)
            pipe.flush()
        except (OSError, ValueError) as exc:
            raise WorkerGone(f"worker {self._proc.pid}: {exc}") from exc

    def _receive(self) -> Any:
        pipe = self._proc.stdout
        try:
            assert pipe is not None
            return pickle.load(pipe)
        except (EOFError, OSError, ValueError, pickle.UnpicklingError) as exc:
            raise WorkerGone(f"worker {self._proc.pid}: {exc!r}") from exc


def serve(requests: IO[bytes] | None = None, answers: IO[bytes] | None = None) -> None:
    """The worker's side (``BOOT``): reads ``(root, redact)``, answers its process id,
    then answers each ``(items, limit)`` with ``prep.prepare_batch``'s list, in order,
    until its stdin ends. Nothing else may write to stdout: ``sys.stdout`` becomes
    stderr."""
    requests = requests if requests is not None else sys.stdin.buffer
    answers = answers if answers is not None else sys.stdout.buffer
    sys.stdout = sys.stderr
    root, redact = pickle.load(requests)
    pickle.dump(os.getpid(), answers)
    answers.flush()
    todo: queue.SimpleQueue[tuple[list[tuple[str, bool, str | None]], int] | None]
    todo = queue.SimpleQueue()

    def take() -> None:
        try:
            while True:
                todo.put(pickle.load(requests))
        except (EOFError, OSError, pickle.UnpicklingError):
            todo.put(None)

    threading.Thread(target=take, name="readmany-prep-requests", daemon=True).start()
    while (request := todo.get()) is not None:
        items, limit = request
        pickle.dump(prepare_batch(root, items, redact, limit), answers, pickle.HIGHEST_PROTOCOL)
        answers.flush()
