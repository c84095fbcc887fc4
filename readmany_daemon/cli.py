"""The ``readmany`` command line: parses, dispatches, prints (PROTOCOL §1).

Whether the warm daemon or this process answers, and when the daemon is started, is
``route.py``'s policy, shared with ``readmany mcp``.

Exit codes: 0 answered (per-file problems never change it); 2 usage errors and invalid
params, one line on stderr; 1 the answer could not be produced.

This module stays light: the one-shot path imports neither pygls nor watchdog, nor
``argparse`` (``quickargs`` parses the common ``read`` lines) nor ``json`` (``quickjson``).
"""

from __future__ import annotations

import os
import sys

from readmany_daemon import quickjson
from readmany_daemon.cli_output import OutputError, StdoutSink, drop_stdout, write, write_parts
from readmany_daemon.cli_parser import UsageLine, parse_args
from readmany_daemon.errors import InvalidParams, ReadManyError, UsageError
from readmany_daemon.quickargs import ReadArgs, parse_read
from readmany_daemon.route import ask_daemon, autostart, cli_root, current_dir, say

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~2 ms)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_DAEMON = 3  # ``readmany status`` when no daemon runs (PROTOCOL §1)


def _read_params(args: argparse.Namespace | ReadArgs) -> dict[str, Any]:
    """ReadManyParams (canonical names) from ``--params`` and the flags: the list flags
    (paths, ``--include``, ``--exclude``, ``--symbol``, ``--enclosing``) add to its
    lists, every other flag overrides its member."""
    params: dict[str, Any] = {}
    if args.params:
        from readmany_daemon.wire.fold import fold_read_params

        try:
            raw = quickjson.loads(args.params)
        except ValueError as exc:
            raise InvalidParams(f"invalid params: --params is not JSON: {exc}", "$") from None
        params = fold_read_params(raw)
    if args.paths:
        params["paths"] = list(params.get("paths", [])) + list(args.paths)
    picks = _picks(args.symbol, args.enclosing, lambda: cli_root(args.root))
    if picks:
        params["files"] = list(params.get("files", [])) + picks
    if args.known is not None:
        params["known"] = _known_file(args.known)
    if args.changes is not None:
        params["changes"] = {"base": args.changes}
    for name, more in (("include", args.include), ("exclude", args.exclude)):
        if more:  # lists add to --params' (as paths and --symbol do)
            params[name] = list(params.get(name, [])) + list(more)
    flags: dict[str, Any] = {
        "perFileMaxLines": args.per_file_max_lines,
        "perFileMaxChars": args.per_file_max_chars,
        "maxTotalFiles": args.max_total_files,
        "maxTotalChars": args.max_total_chars,
        "maxTotalTokens": args.max_total_tokens,
        "perFileMaxTokens": args.per_file_max_tokens,
        "maxAnswerChars": args.max_answer_chars,
        "packing": args.packing,
        "order": args.order,
        "focus": args.focus,
        "format": args.format,
        "cursor": args.cursor,
    }
    for name, value in flags.items():
        if value is not None:
            params[name] = value
    for name, on in (
        ("preferFullRead", args.prefer_full_read),
        ("stopOnError", args.stop_on_error),
        ("lineNumbers", args.line_numbers),
        ("absolutePaths", args.absolute_paths),
    ):
        if on:
            params[name] = True
    if args.no_recursive:
        params["recursive"] = False
    if args.no_redact_secrets:
        params["redactSecrets"] = False
    if args.no_default_excludes:
        params["useDefaultExcludes"] = False
    ffo = dict(params.get("fileFilteringOptions") or {})
    if args.no_gitignore:
        ffo["respectGitIgnore"] = False
    if args.no_ignore_files:
        ffo["respectIgnoreFiles"] = False
    if ffo:
        params["fileFilteringOptions"] = ffo
    return params


def _split_symbol(value: str, root: Callable[[], str]) -> tuple[str, str]:
    """``(PATH, NAME)`` of a ``--symbol`` value: split at the first ``#`` whose left side
    names a file (``root()``: the folder a relative PATH is taken from, asked only when
    the value holds several ``#``), else at the first ``#`` (a Markdown heading's name
    holds ``#`` more often than a path does). ``("", "")`` when it holds none."""
    cuts = [i for i, ch in enumerate(value) if ch == "#"]
    if len(cuts) > 1:
        try:
            base = root()
        except (OSError, ReadManyError):
            base = ""  # no root: the request's own error names it
        for i in cuts if base else ():
            if i and os.path.isfile(os.path.join(base, value[:i])):
                return value[:i], value[i + 1 :]
    return (value[: cuts[0]], value[cuts[0] + 1 :]) if cuts else ("", "")


def _picks(
    symbols: list[str] | None, lines: list[str] | None, root: Callable[[], str]
) -> list[dict[str, Any]]:
    """The FileSpecs of ``--symbol PATH#NAME`` (:func:`_split_symbol`) and
    ``--enclosing PATH:LINE`` (split at the last ``:``), symbols first, each in the order
    given (issue 26). Raises ``InvalidParams`` naming the option for a value without its
    separator, or a LINE that is not a decimal number (one below 1 is the request's to
    refuse, naming ``$.files[i].enclosing``)."""
    out: list[dict[str, Any]] = []
    for value in symbols or ():
        path, name = _split_symbol(value, root)
        if not path or not name:
            raise InvalidParams(
                f"invalid params: --symbol {value!r}: expected PATH#NAME", "--symbol"
            )
        out.append({"path": path, "symbol": name})
    for value in lines or ():
        path, sep, line = value.rpartition(":")
        if not sep or not path or not line.lstrip("-").isdecimal():
            raise InvalidParams(
                f"invalid params: --enclosing {value!r}: expected PATH:LINE", "--enclosing"
            )
        out.append({"path": path, "enclosing": int(line)})
    return out


def _known_file(name: str) -> list[Any]:
    """The receipts in JSON file ``name`` (``-``: standard input): a list of ``{path,
    sha256}``, or an earlier ``--json`` answer, whose whole ``ok`` entries (no line
    window) are taken. Raises ``InvalidParams`` naming ``--known`` when it cannot be
    read or holds neither; the receipts themselves are checked with the request."""
    try:
        if name == "-":
            raw = quickjson.loads(sys.stdin.read())
        else:
            with open(name, encoding="utf-8") as f:
                raw = quickjson.loads(f.read())
    except (OSError, ValueError) as exc:
        raise InvalidParams(f"invalid params: --known {name}: {exc}", "--known") from None
    if isinstance(raw, dict) and isinstance(raw.get("files"), list):
        return [
            {"path": f["path"], "sha256": f["sha256"]}
            for f in raw["files"]
            if isinstance(f, dict)
            and f.get("status") == "ok"
            and isinstance(f.get("sha256"), str)
            and "lineStart" not in f
        ]
    if isinstance(raw, list):
        return raw
    raise InvalidParams(
        f"invalid params: --known {name}: expected [{{path, sha256}}] or a --json answer",
        "--known",
    )


def _workspace(root: str) -> Any:
    """The workspace of folder ``root`` (``route.cli_root``), settings from the
    environment (a warning line on stderr for each bad one)."""
    from readmany_daemon.engine.workspace import Workspace
    from readmany_daemon.errors import RootNotFound
    from readmany_daemon.settings import load_settings

    settings, warnings = load_settings()
    for w in warnings:
        print(f"readmany: warning: {w}", file=sys.stderr)
    try:
        return Workspace.open(root, settings)
    except OSError as exc:
        raise RootNotFound(f"--root: {exc}", "--root") from None


def _order_file(root: str, settings: Any) -> str:
    """Where the daemon keeps ``root``'s stable order (beside its index snapshot), so
    that in-process answers read and keep the same one."""
    from readmany_daemon.index.snapshot import snapshot_path
    from readmany_daemon.index.stable_order import order_path
    from readmany_daemon.runtime.roots import index_key

    return order_path(snapshot_path(root, (root, *index_key(settings))))


def _rank_file(root: str, settings: Any) -> str:
    """Where the daemon keeps ``root``'s full-text index (beside its index snapshot), so
    that in-process focused answers use it as far as it is built, and add to it."""
    from readmany_daemon.index.snapshot import snapshot_path
    from readmany_daemon.rank.fulltext import rank_path
    from readmany_daemon.runtime.roots import index_key

    return rank_path(snapshot_path(root, (root, *index_key(settings))))


def cmd_read(args: argparse.Namespace | ReadArgs) -> int:
    """``readmany read``: print ``llmContent`` (or the whole result with ``--json``)."""
    raw = _read_params(args)
    sink = None if args.json else StdoutSink()
    asked = ask_daemon(args.root, "readMany/read", raw, no_daemon=args.no_daemon, content_sink=sink)
    if (answer := asked.answer) is not None:
        if args.json:
            write(quickjson.dumps(answer) + "\n")
        elif sink is not None and sink.started:
            # The content frame went out as it came: end it as the other paths do.
            write_parts([] if sink.last == b"\n" else [b"\n"])
        elif (content := asked.content) is not None:
            # The daemon's bytes as they came (a content frame): no decode, no copy.
            write_parts([content] if content.endswith(b"\n") else [content, b"\n"])
        else:
            text = answer["llmContent"]
            write(text if text.endswith("\n") else text + "\n")
        return EXIT_OK

    from readmany_daemon.engine import answer as engine
    from readmany_daemon.wire.cursor import decode_read_request
    from readmany_daemon.wire.messages import to_builtins

    req = decode_read_request(raw)
    ws = _workspace(cli_root(args.root))
    if req.params.order == "stable":
        ws.order_file = _order_file(ws.root, ws.settings)
    ws.rank_file = _rank_file(ws.root, ws.settings)
    if args.json:
        import msgspec

        result = engine.answer(ws, req)
        write(msgspec.json.encode(to_builtins(result)).decode("utf-8", "surrogateescape") + "\n")
    else:
        # Part by part: a large answer is never joined (one astral character in it
        # would make the joined string 4 bytes a character) nor encoded whole.
        _, parts = engine.answer_parts(ws, req)
        if parts and not parts[-1].endswith("\n"):
            parts.append("\n")
        write_parts(parts)
    if asked.start_daemon:
        autostart()
    return EXIT_OK


def cmd_files(args: argparse.Namespace) -> int:
    """``readmany files``: one workspace-relative POSIX path a line, by path in byte order."""
    sep = "\0" if args.null else "\n"
    files_params = {
        "patterns": list(args.patterns),
        "useDefaultExcludes": not args.no_default_excludes,
        "fileFilteringOptions": {
            "respectGitIgnore": not args.no_gitignore,
            "respectIgnoreFiles": not args.no_ignore_files,
        },
    }
    asked = ask_daemon(args.root, "readMany/files", files_params, no_daemon=args.no_daemon)
    if (listed := asked.answer) is not None:
        write("".join(f["path"] + sep for f in listed["files"]))
        for w in listed.get("warnings") or []:  # folders the daemon could not list
            print(f"readmany: warning: {w}", file=sys.stderr)
        return EXIT_OK

    root = cli_root(args.root)
    fast = None
    if not args.patterns:
        # The whole listing: git starts walking now (gitlist imports only os), while
        # the imports below run.
        from readmany_daemon.index import gitlist

        fast = gitlist.start(root, gitignore=not args.no_gitignore)

    from readmany_daemon.rules.kinds import Filters

    filters = Filters(
        respect_gitignore=not args.no_gitignore,
        respect_ignore_files=not args.no_ignore_files,
        use_default_excludes=not args.no_default_excludes,
    )
    if fast is not None:
        from readmany_daemon.settings import load_settings

        settings, warnings = load_settings()
        for w in warnings:
            print(f"readmany: warning: {w}", file=sys.stderr)
        paths = fast.files(settings, filters)  # == Index.build(root, settings).files(filters)
        unseen = fast.warnings
    else:
        from readmany_daemon.engine.files import list_paths

        ws = _workspace(root)
        paths = list_paths(ws, args.patterns, filters)
        unseen = ws.index.warnings
    write(sep.join(paths) + sep if paths else "")
    for w in unseen:  # folders that could not be listed: the listing lacks their files
        print(f"readmany: warning: {w}", file=sys.stderr)
    if asked.start_daemon:
        autostart()
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    """``readmany serve --stdio | --socket [PATH] | --tcp HOST:PORT``."""
    from readmany_daemon.settings import load_settings

    settings, warnings = load_settings()
    for w in warnings:
        say(f"warning: {w}")
    if args.stdio:
        from readmany_daemon.lsp.serve import serve_stdio

        return serve_stdio(settings, args.log_file)
    from readmany_daemon import daemon

    if args.tcp is not None:
        token = os.environ.get("READMANY_TOKEN")
        return daemon.serve_tcp(args.tcp, settings, token, log_file=args.log_file, on_ready=say)
    return daemon.serve_socket(
        args.socket or None, settings, log_file=args.log_file, on_ready=say, on_running=say
    )


def cmd_lsp(args: argparse.Namespace) -> int:
    """``readmany lsp``: stdio bridge to the shared daemon (started if none runs)."""
    from readmany_daemon import bridge

    return bridge.run(args.socket)


def cmd_mcp(args: argparse.Namespace) -> int:
    """``readmany mcp``: the MCP server on stdio (``mcp.front`` answers first while
    ``mcp.sdk`` loads), for each ``--root`` (repeatable). Without ``--root``, or with a
    relative one, the current directory must exist (``route.current_dir``: else one
    line and exit 2)."""
    from readmany_daemon.mcp import front
    from readmany_daemon.paths import uri_to_path

    roots: list[str] = []
    for root in args.root or []:
        if root.startswith("file:"):
            root = uri_to_path(root) or root
        if not os.path.isabs(root):
            root = os.path.join(current_dir(), root)
        roots.append(root)
    if not roots:
        current_dir()
    return front.run(roots or None, args.no_daemon, args.structured_text)


def cmd_status(args: argparse.Namespace) -> int:
    """``readmany status``: the daemon's ``readMany/status``; exit 3 when none runs. Plain
    text: one line for the daemon, socket, cache and watcher, then each root with, below
    it, its watcher and barrier, the watcher's warnings (``  watcher warning: …``) and
    the root's own (``  warning: …``); ``--json``: the answer as it is."""
    from readmany_daemon import daemon

    path = args.socket or daemon.default_socket_path()
    client = daemon.connect(path)
    if client is None:
        from readmany_daemon.launch import silent_pid

        pid = silent_pid(path)
        if pid is not None:  # it listens and does not answer: stopped or stuck
            say(f"the daemon at {path} (pid {pid}) does not answer; `readmany stop` stops it")
            return EXIT_FAILED
        say(f"no daemon runs at {path}")
        return EXIT_NO_DAEMON
    try:
        status = client.request("readMany/status")
    finally:
        client.exit()
    if args.json:
        import json

        write(json.dumps(status, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    cache = status.get("cache", {})
    lines = [
        f"readmany {status.get('version')} daemon: pid {status.get('pid')}, "
        f"up {status.get('uptime')} s, {status.get('connections')} connection(s)",
        f"socket: {path}",
        f"cache: {cache.get('bytes')} bytes, hit rate {cache.get('hitRate')}",
        f"watcher: {status.get('watcher', {}).get('state')}",
    ]
    for r in status.get("roots", []):
        lines.append(
            f"root {r.get('root')}: {r.get('files')} files, clock {r.get('clock')}, "
            f"{r.get('connections')} connection(s)"
        )
        w = r.get("watcher", {})
        reason = f" ({w['barrierReason']})" if w.get("barrierReason") else ""
        lines.append(f"  watcher {w.get('state')}, barrier {w.get('barrier')}{reason}")
        lines.extend(f"  watcher warning: {text}" for text in w.get("warnings", []))
        lines.extend(f"  warning: {text}" for text in r.get("warnings", []))
    write("\n".join(lines) + "\n")
    return EXIT_OK


def cmd_stop(args: argparse.Namespace) -> int:
    """``readmany stop``: stop the shared daemon (exit 0 also when none ran)."""
    from readmany_daemon import launch
    from readmany_daemon.client import default_socket_path

    path = args.socket or default_socket_path()
    pid = launch.stop(path, reason="readmany stop")
    say(f"stopped the daemon (pid {pid})" if pid is not None else f"no daemon runs at {path}")
    return EXIT_OK


#: Each command's function, in ``cli_parser.COMMAND_NAMES`` order.
COMMANDS = {
    "read": cmd_read,
    "files": cmd_files,
    "serve": cmd_serve,
    "lsp": cmd_lsp,
    "mcp": cmd_mcp,
    "status": cmd_status,
    "stop": cmd_stop,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code. A common ``read`` command line is parsed by
    ``quickargs.parse_read`` (no argparse: the warm one-shot path), any other by
    :func:`parse_args`, to the same arguments."""
    try:
        quick = parse_read(sys.argv[1:] if argv is None else argv)
        if quick is not None:
            return cmd_read(quick)
        args = parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageLine as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    except (UsageError, InvalidParams) as exc:
        print(f"readmany: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ReadManyError as exc:
        print(f"readmany: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:
        # The reader went away (``| head``): not an error of ours.
        drop_stdout()
        return EXIT_OK
    except OutputError as exc:
        print(f"readmany: cannot write the answer: {exc}", file=sys.stderr)
        drop_stdout()
        return EXIT_FAILED
