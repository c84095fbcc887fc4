"""Where an answer comes from: the warm daemon, else this process, then start the daemon.

The one routing policy of the one-shot surfaces, shared by ``readmany read`` /
``readmany files`` (``cli.py``) and the MCP server (``mcp/``):

1. ``ask_daemon`` asks the shared per-user daemon over its socket, in a short session
   whose workspace folder is the request's root and whose settings are this process's
   ``READMANY_*`` variables, so the daemon gives the answer this process would give.
2. When it cannot (``--no-daemon``, no daemon, a daemon of another version, one lost
   midway), the caller answers in its own process,
3. and then calls ``autostart`` when ``Asked.start_daemon`` says so, so that the next
   call finds a warm daemon.

This module stays light: the warm path imports neither pygls nor watchdog nor msgspec;
``client.py`` speaks JSON-RPC with the stdlib (the whole call must stay within two
``python -c pass``).
"""

from __future__ import annotations

import os
import sys

from readmany_daemon import __version__
from readmany_daemon.errors import InvalidParams, RootNotFound, UsageError
from readmany_daemon.roots import resolve_root

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

    from readmany_daemon.client import ContentSink

#: READMANY_* variables that are not settings and never travel to the daemon.
NOT_SETTINGS = frozenset({"READMANY_TOKEN", "READMANY_NO_DAEMON"})


class Asked:
    """What asking the daemon gave (a plain class: ``typing`` is no import of the warm
    path)."""

    __slots__ = ("answer", "content", "link", "start_daemon")

    def __init__(
        self, answer: Any | None, start_daemon: bool, content: bytearray | None = None
    ) -> None:
        #: With a ``DaemonLink``: the number of the kept connection that answered (0:
        #: none did).
        self.link = 0
        #: The daemon's answer (the JSON-RPC result); None: answer in this process.
        self.answer = answer
        #: After answering in this process, call ``autostart``: no daemon answers here
        #: and auto-start is not turned off (``no_daemon``, ``READMANY_NO_DAEMON``).
        #: False too when a daemon runs but failed this request (starting another would
        #: not help).
        self.start_daemon = start_daemon
        #: With ``content_frames``: the answer's ``llmContent`` as raw UTF-8 when the
        #: daemon sent it in a content frame (``answer["llmContent"]`` is then "").
        self.content = content


class DaemonLink:
    """One session with the shared daemon kept open from call to call (``readmany
    mcp``'s, so that the daemon keeps its change ledger: PROTOCOL §4, "Stale files").
    ``number`` counts the connections opened so far (0: none yet); a new one is opened
    when the last was lost (a daemon stopped, restarted or replaced). Not thread-safe:
    its owner sends one call at a time."""

    __slots__ = ("client", "number")

    def __init__(self) -> None:
        self.client: Any = None
        self.number = 0

    def close(self) -> None:
        """End the kept connection, if any (the daemon goes on)."""
        client, self.client = self.client, None
        if client is not None:
            client.exit()


def say(message: str) -> None:
    """One ``readmany: message`` line on stderr, flushed."""
    print(f"readmany: {message}", file=sys.stderr, flush=True)


def daemon_off(no_daemon: bool = False) -> bool:
    """Whether no daemon is to be started: ``no_daemon`` (``--no-daemon``),
    ``READMANY_NO_DAEMON`` set to anything but "" or "0", or a platform without the
    unix-socket daemon. (The CLI still asks a daemon that runs; ``readmany mcp`` then
    answers in its own process only.)"""
    disabled = os.environ.get("READMANY_NO_DAEMON", "") not in ("", "0")
    return no_daemon or disabled or os.name != "posix"


#: What a command needing the current directory says when it was removed (exit 2).
CWD_GONE = (
    "--root: the current directory no longer exists (it was removed); "
    "give --root an absolute path or a file: URI"
)


def current_dir() -> str:
    """``os.getcwd()``, or ``UsageError`` (one line, exit 2) when the current directory
    was removed: a shell left in a deleted folder or worktree (issue 22, item 6). Only a
    command that needs it asks: an absolute ``--root`` never does."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise UsageError(CWD_GONE) from None


def cli_root(root: str | None) -> str:
    """The folder ``--root`` names (a path relative to the current directory, an
    absolute path or a ``file:`` URI; None or ``""``: the current directory), by the one
    resolver (``roots.resolve_root``). Raises ``RootNotFound`` naming ``--root``, or
    ``UsageError`` when the current directory is needed (no ``--root``, or a relative
    one) but was removed; an absolute ``--root`` or URI never reads it."""
    if root and (os.path.isabs(root) or root.startswith("file:")):
        return resolve_root(root, (), field="--root")
    cwd = current_dir()
    return resolve_root(root or cwd, (), relative_to=cwd, field="--root")


def ask_daemon(
    root: str | None,
    method: str,
    params: dict[str, Any],
    *,
    no_daemon: bool,
    content_frames: bool = False,
    content_sink: ContentSink | None = None,
    link: DaemonLink | None = None,
) -> Asked:
    """The warm daemon's answer to ``method`` with ``params``, or None as
    ``Asked.answer`` when it should be answered in this process: ``no_daemon``, no
    daemon, a daemon of another version (which is stopped so that ``autostart``
    replaces it), a connection lost midway, or an internal error of the daemon
    (reported on stderr; ``start_daemon`` is then False, one runs).

    The connection's workspace folder is ``root`` (default: the current directory; a
    root that is no folder is left to the in-process path to report). Its settings come
    from this process's ``READMANY_*`` variables (``initializationOptions.environment``)
    but ``NOT_SETTINGS``. Notifications of type error or warning that came with the
    answer go to stderr. ``READMANY_NO_DAEMON`` does not stop asking a daemon that
    runs; it only turns auto-start off. Raises ``InvalidParams`` for -32602 (as the
    in-process answer would).

    One round trip: ``initialize``, ``initialized`` and the request leave together
    (``client.connect_pipelined``); the answer of a daemon of another version is
    dropped unread. With ``content_frames`` the connection asks for ``llmContent`` as
    a content frame (``initializationOptions.llmContentFrames``, PROTOCOL §1), which
    ``Asked.content`` then holds: printed as it came, never JSON-decoded; with
    ``content_sink`` too, the frame is passed to it as it arrives instead (``readmany
    read`` prints it while the rest comes) and ``Asked.content`` stays None. A daemon
    lost after part of the frame went to the sink raises ``DaemonError``: what is out
    cannot be taken back, so the call is not answered again in this process.

    With ``link`` the session is kept open after the answer and the next call goes
    over it (``readmany mcp``: the daemon keeps the connection's change ledger); when
    it was lost since (a daemon stopped or replaced), a new one is opened, and
    ``Asked.link`` is the number of the connection that answered (0: none)."""
    start = not daemon_off(no_daemon)
    if no_daemon or os.name != "posix":
        return Asked(None, False)
    if link is not None and link.client is not None:
        kept = _ask_kept(link, method, params, start)
        if kept is not None:
            return kept
    try:
        top = cli_root(root)
    except RootNotFound:
        return Asked(None, start)  # the in-process path reports the bad root
    from readmany_daemon.client import connect_pipelined, default_socket_path

    path = default_socket_path()
    env = {k: v for k, v in os.environ.items() if k.startswith("READMANY_")}
    for name in NOT_SETTINGS:
        env.pop(name, None)
    options: dict[str, Any] = {"environment": env}
    if content_frames or content_sink is not None:
        options["llmContentFrames"] = True
    opened = connect_pipelined(path, top, options, method, params)
    if opened is None:
        return Asked(None, start)
    client, pending = opened
    keep = False
    try:
        if client.server_version != __version__:
            from readmany_daemon import launch
            from readmany_daemon.errors import DaemonError

            client.exit()
            try:
                launch.stop(path, reason=f"replaced by version {__version__}")
            except DaemonError as exc:
                print(f"readmany: warning: {exc}", file=sys.stderr)
            return Asked(None, start)
        client.content_sink = content_sink
        if link is not None:  # kept for the next call, unless this one fails
            link.number += 1
            link.client, keep = client, True
        asked = _answer(client, pending, start, kept=False)
        if link is not None and asked.answer is None:
            link.client, keep = None, False
        elif link is not None:
            asked.link = link.number
        return asked
    finally:
        if not keep:
            client.exit()


def _ask_kept(link: DaemonLink, method: str, params: dict[str, Any], start: bool) -> Asked | None:
    """``method`` asked over ``link``'s kept connection: the answer (``Asked.link`` its
    number), or None when that connection is gone (closed; the caller opens a new one)."""
    from readmany_daemon.client import ConnectionClosed

    client = link.client
    try:
        asked = _answer(client, client.send_request(method, params), start, kept=True)
    except (ConnectionClosed, OSError):
        link.close()
        return None
    if asked.answer is None:  # the daemon failed this call: a new session next time
        link.close()
    else:
        asked.link = link.number
    return asked


def _answer(client: Any, pending: Any, start: bool, kept: bool) -> Asked:
    """The daemon's answer to ``pending`` on ``client`` as ``Asked`` (its warnings and
    errors told on stderr). Raises ``InvalidParams`` for -32602, ``DaemonError`` for a
    daemon lost after part of a content frame was relayed, and with ``kept`` (a session
    kept from an earlier call) ``ConnectionClosed`` when the daemon is gone."""
    from readmany_daemon.client import ConnectionClosed, RpcError

    try:
        answer = client.wait(pending)
    except RpcError as exc:
        if exc.code == -32602:
            field = exc.data.get("field", "") if isinstance(exc.data, dict) else ""
            raise InvalidParams(exc.message, field) from None
        say(f"warning: the daemon failed ({exc.message}); answering in this process")
        return Asked(None, False)  # one runs: do not start another after answering
    except ConnectionClosed:
        if client.relayed:
            from readmany_daemon.errors import DaemonError

            raise DaemonError(
                "the daemon went away in the middle of the answer: the output above is incomplete"
            ) from None
        if kept:
            raise
        # It died mid-request (killed, crashed): the answer is produced here and,
        # unless disabled, a new daemon is started for the next call.
        say("warning: the daemon went away before answering; answering in this process")
        return Asked(None, start)
    for _, note in client.notifications:
        if isinstance(note, dict) and note.get("type", 4) <= 2:
            print(str(note.get("message", "")), file=sys.stderr)
    client.notifications.clear()  # a kept session's are told once
    return Asked(answer, False, client.take_content())


def autostart() -> None:
    """Start the shared daemon in the background for the next call (after an in-process
    answer whose ``Asked.start_daemon`` was true); a failure to start is a warning on
    stderr. A second daemon racing for the socket finds the first and exits."""
    from readmany_daemon import launch
    from readmany_daemon.client import default_socket_path

    try:
        launch.spawn(default_socket_path())
    except OSError as exc:
        print(f"readmany: warning: could not start the daemon: {exc}", file=sys.stderr)
