"""The argparse-free ``read`` parser (``quickargs.parse_read``) against argparse.

Differential: over many command lines (hand-picked and random), whenever the quick
parser takes a command line it gives argparse's namespace attribute for attribute, and
whenever argparse refuses one the quick parser leaves it to argparse. Through
``cli.main``, the quick path and the argparse path send the same params, print the same
answer and exit with the same code and the same stderr.
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from readmany_daemon import cli, cli_parser, quickargs
from readmany_daemon.errors import UsageError
from readmany_daemon.quickargs import ReadArgs, parse_read
from readmany_daemon.route import Asked


def argparse_read(argv: list[str]) -> dict[str, Any] | None:
    """argparse's namespace for ``argv`` as a dict; None for a usage error."""
    try:
        return vars(cli_parser.parse_args(argv))
    except UsageError:
        return None


def read_subparser() -> argparse.ArgumentParser:
    parser = cli_parser.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    read: argparse.ArgumentParser = sub.choices["read"]
    return read


def test_the_quick_tables_are_the_read_parsers_options() -> None:
    """Each option of ``read`` is in the table of its kind with its dest, so a flag
    added to argparse without quickargs fails here (not at a user's call)."""
    want: dict[str, tuple[str, str]] = {}
    for action in read_subparser()._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            kind = "flag"
        elif isinstance(action, argparse._AppendAction):
            kind = "list"
        elif action.type is int:
            kind = "int"
        else:
            assert action.type is None and action.nargs is None, action
            kind = "text"
        for option in action.option_strings:
            want[option] = (kind, action.dest)
    tables = {
        "flag": quickargs.FLAGS,
        "list": quickargs.LISTS,
        "int": quickargs.INTS,
        "text": quickargs.TEXTS,
    }
    have = {opt: (kind, dest) for kind, t in tables.items() for opt, dest in t.items()}
    assert have == want
    assert set(vars(ReadArgs())) == set(argparse_read(["read"]) or {})


CASES = [
    ["read"],
    ["read", "a.py", "b.py"],
    ["read", "--root", "/tmp/x", "a.py"],
    ["read", "--root=/tmp/x", "a.py", "--line-numbers"],
    ["read", "--root=", "a.py"],
    ["read", "--root", "", "a.py"],
    ["read", "", "a.py"],
    ["read", "--json", "--no-daemon", "**/*.py", "src"],
    ["read", "a.py", "--max-total-chars", "1000", "--max-total-chars", "2000"],
    ["read", "--include", "*.md", "--include=*.txt", "--exclude", "x/**", "a"],
    ["read", "--per-file-max-lines", "007", "a"],
    ["read", "--format", "xml", "--packing", "smallest-first", "--cursor", "abc", "p"],
    ["read", "--params", '{"paths": ["a"]}', "b"],
    ["read", "--known", "receipts.json", "a"],
    ["read", "--changes", "origin/main", "src"],
    ["read", "--changes=HEAD"],
    ["read", "--symbol", "a.py#C.m", "--symbol=b.md#H #2", "--enclosing", "a.py:12"],
    ["read", "--enclosing=c:/x.py:3", "a"],
    ["read", "é/ü.py", "漢字.txt", "sp ace.py", "\udcff.bin"],
    # Left to argparse (the quick parser gives None), some of them errors.
    ["read", "a", "--json", "b"],
    ["read", "--", "a"],
    ["read", "-", "a"],
    ["read", "-5"],
    ["read", "--line", "a"],
    ["read", "--json=1", "a"],
    ["read", "--max-total-files", "x"],
    ["read", "--max-total-files", "-1"],
    ["read", "--max-total-files", "1_000"],
    ["read", "--max-total-files", "²"],
    ["read", "--max-total-files", " 5"],
    ["read", "--root"],
    ["read", "--root", "--json"],
    ["read", "--root", "-x"],
    ["read", "-h"],
    ["read", "--help"],
    ["read", "--bogus"],
    ["read", "-a b"],
    ["--version"],
    ["files", "a"],
    ["status"],
    [],
]


@pytest.mark.parametrize("argv", CASES)
def test_quick_gives_argparses_namespace_or_leaves_it_to_argparse(argv: list[str]) -> None:
    check(argv)


def check(argv: list[str]) -> None:
    quick = parse_read(argv)
    if quick is None:
        return  # argparse parses it (or words its error): nothing to compare
    assert vars(quick) == argparse_read(argv), argv


WORDS = st.sampled_from(
    [
        "read", "a.py", "b/", "**/*.py", "", "-", "--", "-x", "-5", "12", "x", "=",
        *quickargs.FLAGS, *quickargs.TEXTS, *quickargs.LISTS, *quickargs.INTS,
        "--root=r", "--max-total-chars=9", "--max-total-chars=x", "--json=", "--line",
        "--no-daemons", "-h", "--help",
    ]
)  # fmt: skip


@settings(max_examples=800, deadline=None, database=None)
@given(st.lists(st.one_of(WORDS, st.text(max_size=4)), max_size=8))
@example(["read", "--root", "read", "a"])
def test_random_command_lines(words: list[str]) -> None:
    check(["read", *words])


# ------------------------------------------------------------------ through cli.main


def run_main(
    argv: list[str], quick: bool, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> tuple[int, list[Any], str, str]:
    """(exit code, what was asked of the daemon, stdout, stderr) of ``cli.main(argv)``
    with the daemon's answer faked, the quick parser on or off."""
    asked: list[Any] = []

    def ask(root: Any, method: str, params: Any, **kw: Any) -> Asked:
        sink = kw.get("content_sink")
        if sink is not None:  # compared by kind: each run makes its own
            kw["content_sink"] = type(sink).__name__
        asked.append((root, method, params, kw))
        answer = {"llmContent": "", "files": [{"path": "a.py", "status": "ok"}], "n": 1.5}
        return Asked(answer, False, bytearray("--- a.py ---\nx é\n".encode()))

    monkeypatch.setattr(cli, "ask_daemon", ask)
    if not quick:
        monkeypatch.setattr(cli, "parse_read", lambda argv: None)
    code = cli.main(argv)
    out, err = capsys.readouterr()
    monkeypatch.undo()
    return code, asked, out, err


MAIN_CASES = [
    ["read", "a.py", "b.py"],
    ["read", "--root", ".", "a.py", "--line-numbers", "--max-total-chars", "5000"],
    ["read", "--json", "a.py"],
    ["read", "--include", "*.md", "--exclude", "x", "--no-gitignore", "--no-ignore-files", "a"],
    ["read", "--no-recursive", "--no-redact-secrets", "--no-default-excludes", "a"],
    ["read", "--prefer-full-read", "--stop-on-error", "--absolute-paths", "a"],
    ["read", "--params", '{"paths": ["x"], "lineNumbers": true}', "a"],
    ["read", "--params", "{bad", "a"],
    ["read", "--params", '{"maxTotalFiles": "x"}'],
    ["read", "--max-total-files", "x", "a"],
    ["read", "a", "--json", "b"],
    ["read", "--bogus"],
    ["read", "--format", "xml", "--packing", "outlines", "--cursor", "c", "a"],
]


@pytest.mark.parametrize("argv", MAIN_CASES)
def test_main_quick_and_argparse_paths_agree(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    fast = run_main(argv, True, monkeypatch, capsys)
    slow = run_main(argv, False, monkeypatch, capsys)
    assert fast == slow


def test_every_command_the_parser_knows_runs() -> None:
    """The parser's commands (``cli_parser.COMMAND_NAMES``, what a usage error lists)
    are the ones ``cli.COMMANDS`` runs, in the same order."""
    parser = cli_parser.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert tuple(sub.choices) == cli_parser.COMMAND_NAMES == tuple(cli.COMMANDS)
