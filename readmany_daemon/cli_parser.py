"""The ``readmany`` command line's argument parser: every command and flag (PROTOCOL §1).

``build_parser`` is the whole command line; ``parse_args`` raises ``UsageError`` naming
the first problem. ``argparse`` is imported only here, and only when a command line is
not one ``quickargs.parse_read`` recognises (the warm one-shot ``read`` path).
"""

from __future__ import annotations

import os
import sys

from readmany_daemon import __version__
from readmany_daemon.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~2 ms)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any, NoReturn

#: The commands, in the order ``readmany --help`` lists them (``cli.COMMANDS`` runs them).
COMMAND_NAMES = ("read", "files", "serve", "lsp", "mcp", "status", "stop")


class UsageLine(UsageError):
    """A usage error already worded as its stderr line (``PROG: message``)."""


def _parser_class() -> type[argparse.ArgumentParser]:
    """The parser class of :func:`build_parser`, made on first use: ``argparse`` is
    imported only when a command line is not one ``quickargs.parse_read`` recognises
    (~4 ms of a one-shot call, with ``re``, ``gettext`` and ``locale``)."""
    import argparse

    class _Formatter(argparse.HelpFormatter):
        """argparse's help layout, its width found without ``shutil`` (which argparse
        imports to build every parser, with ``bz2`` and ``lzma``: ~3 ms of a one-shot
        call): ``$COLUMNS``, else the terminal's width, else 80, as
        ``shutil.get_terminal_size`` finds it."""

        def __init__(
            self, prog: str, indent_increment: int = 2, max_help_position: int = 24
        ) -> None:
            try:
                width = int(os.environ.get("COLUMNS", ""))
            except ValueError:
                width = 0
            if width <= 0:
                try:
                    width = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
                except (AttributeError, ValueError, OSError):
                    width = 0
            super().__init__(prog, indent_increment, max_help_position, width or 80)

    class _Parser(argparse.ArgumentParser):
        """argparse that raises instead of printing usage and exiting, so every usage
        error becomes one line on stderr (``readmany: read: argument …``) and exit 2."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("formatter_class", _Formatter)
            super().__init__(*args, **kwargs)

        def error(self, message: str) -> NoReturn:
            # Every line starts "readmany: " (scripts match it); a command's own errors
            # name it.
            command = self.prog.partition(" ")[2]
            raise UsageLine(
                f"readmany: {command}: {message}" if command else f"readmany: {message}"
            )

    return _Parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``argv`` (default ``sys.argv[1:]``) parsed. Raises ``UsageError`` naming the first
    problem: an unknown option is named as such (``readmany --bogus`` included, which
    argparse would report as a missing command), then a missing command."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if args.command is None:
        parser.error(f"a command is required: one of {', '.join(COMMAND_NAMES)}")
    return args


def _add_filter_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root", metavar="DIR", help="workspace folder (default: the current directory)"
    )
    p.add_argument(
        "--no-default-excludes",
        action="store_true",
        help="do not apply the default excludes (node_modules, .venv, …)",
    )
    p.add_argument(
        "--no-gitignore",
        action="store_true",
        help="ignore .gitignore, .git/info/exclude and core.excludesFile",
    )
    p.add_argument(
        "--no-ignore-files",
        action="store_true",
        help="ignore .readmanyignore and the configured ignore files",
    )
    p.add_argument("--no-daemon", action="store_true", help="answer in this process")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser_class = _parser_class()
    parser = parser_class(
        prog="readmany", description="Read many files at once, exactly, within budgets."
    )
    parser.add_argument("--version", action="version", version=f"readmany {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=parser_class)

    r = sub.add_parser("read", help="read files, folders and globs; print llmContent")
    r.add_argument("paths", nargs="*", metavar="PATH", help="paths, folders or glob patterns")
    _add_filter_flags(r)
    r.add_argument(
        "--include",
        action="append",
        default=None,
        metavar="GLOB",
        help="more patterns (repeatable)",
    )
    r.add_argument(
        "--exclude",
        action="append",
        default=None,
        metavar="GLOB",
        help="gitignore-syntax patterns removed from expansions (repeatable)",
    )
    r.add_argument(
        "--symbol",
        action="append",
        default=None,
        metavar="PATH#NAME",
        help="read one symbol, e.g. src/app.py#Config.load (repeatable)",
    )
    r.add_argument(
        "--enclosing",
        action="append",
        default=None,
        metavar="PATH:LINE",
        help="read the function, class or section around a line (repeatable)",
    )
    r.add_argument(
        "--changes",
        metavar="REF",
        help="read what changed since commit, branch or tag REF (HEAD: uncommitted changes)",
    )
    r.add_argument(
        "--no-recursive",
        action="store_true",
        help="a folder gives only its own files; ** acts as *",
    )
    r.add_argument("--per-file-max-lines", type=int, metavar="N")
    r.add_argument("--per-file-max-chars", type=int, metavar="N")
    r.add_argument("--max-total-files", type=int, metavar="N")
    r.add_argument("--max-total-chars", type=int, metavar="N")
    r.add_argument(
        "--max-total-tokens",
        type=int,
        metavar="N",
        help="o200k tokens of the whole answer, framing and notices included (>= 1000)",
    )
    r.add_argument(
        "--per-file-max-tokens", type=int, metavar="N", help="o200k tokens of one file's content"
    )
    r.add_argument(
        "--max-answer-chars",
        type=int,
        metavar="N",
        help="characters of the whole answer, framing and notices included (>= 4000)",
    )
    r.add_argument(
        "--prefer-full-read",
        action="store_true",
        help="lift the per-file limits (the totals still hold)",
    )
    r.add_argument(
        "--packing", metavar="S", help="auto | request-order | smallest-first | outlines"
    )
    r.add_argument(
        "--order",
        metavar="O",
        help="request-order | rank (needs --focus) | stable (the same order across calls)",
    )
    r.add_argument(
        "--focus",
        metavar="TEXT",
        help="what the task is about (1-2000 characters): the budget goes to the files "
        "it ranks first",
    )
    r.add_argument("--stop-on-error", action="store_true")
    r.add_argument("--format", metavar="F", help="separator | heredoc | xml | json")
    r.add_argument("--line-numbers", action="store_true")
    r.add_argument("--absolute-paths", action="store_true")
    r.add_argument(
        "--no-redact-secrets",
        action="store_true",
        help="show secrets (keys, tokens, passwords) as they are, not as «redacted:…» placeholders",
    )
    r.add_argument(
        "--params", metavar="JSON", help="a raw ReadManyParams object; flags override it"
    )
    r.add_argument("--json", action="store_true", help="print the whole ReadManyResult as JSON")
    r.add_argument(
        "--cursor", metavar="TOKEN", help="continue an answer whose budget omitted files"
    )
    r.add_argument(
        "--known",
        metavar="FILE",
        help="receipts: a JSON file ('-': stdin) holding [{path, sha256}] or an earlier"
        " --json answer; files whose bytes are the same come back unchanged",
    )

    f = sub.add_parser(
        "files",
        help="list the visible files, by path in byte order",
        description="List the visible files, one path a line, ordered by path in byte order"
        " (UTF-8 bytes, as git ls-files orders them; not by size).",
    )
    f.add_argument(
        "patterns",
        nargs="*",
        metavar="PATTERN",
        help="globs, folders or paths (default: everything)",
    )
    _add_filter_flags(f)
    f.add_argument(
        "-0", "--null", action="store_true", help="separate paths with NUL instead of newline"
    )

    s = sub.add_parser(
        "serve", help="serve JSON-RPC (LSP framing) on stdio, the shared socket or loopback TCP"
    )
    mode = s.add_mutually_exclusive_group(required=True)
    mode.add_argument("--stdio", action="store_true", help="one client on stdin/stdout")
    mode.add_argument(
        "--socket",
        nargs="?",
        const="",
        metavar="PATH",
        help=(
            "the shared per-user daemon (default: $XDG_RUNTIME_DIR/readmany/daemon.sock, "
            "else /run/user/$UID/readmany/daemon.sock)"
        ),
    )
    mode.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        help="loopback TCP; clients send READMANY_TOKEN as initializationOptions.authToken",
    )
    s.add_argument("--log-file", metavar="PATH", help="log here, not stderr (never file contents)")

    lsp = sub.add_parser("lsp", help="bridge stdio to the shared daemon, starting it if none runs")
    m = sub.add_parser("mcp", help="Model Context Protocol server on stdio, backed by the daemon")
    m.add_argument(
        "--root",
        metavar="DIR",
        action="append",
        help=(
            "a workspace folder; repeat for several, the first is the default (default: the "
            "client's MCP roots, else the current directory)"
        ),
    )
    m.add_argument("--no-daemon", action="store_true", help="answer in this process only")
    m.add_argument(
        "--structured-text",
        action="store_true",
        help=(
            "put each tool's text into its structuredContent too, as llmContent (for "
            "clients that show the model only that, such as VS Code; "
            "READMANY_MCP_STRUCTURED_TEXT=true)"
        ),
    )
    st = sub.add_parser("status", help="print the shared daemon's status (exit 3 when none runs)")
    st.add_argument("--json", action="store_true", help="print the readMany/status result as JSON")
    stop = sub.add_parser("stop", help="stop the shared daemon")
    for p in (lsp, st, stop):
        p.add_argument("--socket", metavar="PATH", help="the daemon's socket (default: per-user)")
    return parser
