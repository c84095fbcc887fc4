"""The common ``readmany read`` command lines, parsed without argparse.

``argparse`` costs a one-shot call ~4 ms (it imports ``re``, ``gettext`` and ``locale``,
and building the parser for seven commands is work too) of a budget of two
``python -c pass``. :func:`parse_read` recognises the command lines an agent or a
script types, ``read`` followed by paths and the read command's own flags, and gives
what ``cli_parser.parse_args`` would give for them; for anything else it gives None and the
CLI asks argparse, so ``--help``, every usage error and every other command stay
argparse's, word for word. A differential test (tests/unit/test_quickargs.py) holds the
two to the same namespace over many command lines.

What is recognised, as argparse reads it (``cli_parser.build_parser``):

- the flags below, each spelled in full (an abbreviation goes to argparse);
- an option's value as the next word, or after ``=`` (``--root=DIR``); a next word that
  starts with ``-`` goes to argparse (it may be an option, or a negative number);
- an integer option's value in ASCII digits only (anything else: argparse, which
  accepts or words the error);
- the paths as one run of words that do not start with ``-``. argparse gives a second
  run (``read a --json b``) as "unrecognized arguments", so that goes to argparse too,
  as does ``--`` and a path that starts with ``-``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence

#: ``store_true`` flags of ``read``: option -> attribute.
FLAGS = {
    "--no-default-excludes": "no_default_excludes",
    "--no-gitignore": "no_gitignore",
    "--no-ignore-files": "no_ignore_files",
    "--no-daemon": "no_daemon",
    "--no-recursive": "no_recursive",
    "--prefer-full-read": "prefer_full_read",
    "--stop-on-error": "stop_on_error",
    "--line-numbers": "line_numbers",
    "--absolute-paths": "absolute_paths",
    "--no-redact-secrets": "no_redact_secrets",
    "--json": "json",
}
#: Options with one text value (the last one given wins).
TEXTS = {
    "--root": "root",
    "--packing": "packing",
    "--order": "order",
    "--focus": "focus",
    "--format": "format",
    "--params": "params",
    "--cursor": "cursor",
    "--known": "known",
    "--changes": "changes",
}
#: Repeatable options (``action="append"``): their values in order.
LISTS = {
    "--include": "include",
    "--exclude": "exclude",
    "--symbol": "symbol",
    "--enclosing": "enclosing",
}
#: Options with one ``int`` value.
INTS = {
    "--per-file-max-lines": "per_file_max_lines",
    "--per-file-max-chars": "per_file_max_chars",
    "--max-total-files": "max_total_files",
    "--max-total-chars": "max_total_chars",
    "--max-total-tokens": "max_total_tokens",
    "--per-file-max-tokens": "per_file_max_tokens",
    "--max-answer-chars": "max_answer_chars",
}


class ReadArgs:
    """``readmany read``'s arguments, attribute for attribute the ``argparse.Namespace``
    that ``cli_parser.parse_args`` gives for the same command line (``command`` is "read";
    ``paths`` a list, maybe empty; flags False and options None when absent)."""

    command: str
    paths: list[str]
    root: str | None
    packing: str | None
    order: str | None
    focus: str | None
    format: str | None
    params: str | None
    cursor: str | None
    known: str | None
    changes: str | None
    include: list[str] | None
    exclude: list[str] | None
    symbol: list[str] | None
    enclosing: list[str] | None
    per_file_max_lines: int | None
    per_file_max_chars: int | None
    max_total_files: int | None
    max_total_chars: int | None
    max_total_tokens: int | None
    per_file_max_tokens: int | None
    max_answer_chars: int | None
    no_default_excludes: bool
    no_gitignore: bool
    no_ignore_files: bool
    no_daemon: bool
    no_recursive: bool
    prefer_full_read: bool
    stop_on_error: bool
    line_numbers: bool
    absolute_paths: bool
    no_redact_secrets: bool
    json: bool

    def __init__(self) -> None:
        self.command = "read"
        self.paths = []
        for name in FLAGS.values():
            setattr(self, name, False)
        for table in (TEXTS, LISTS, INTS):
            for name in table.values():
                setattr(self, name, None)


def parse_read(argv: Sequence[str]) -> ReadArgs | None:
    """``argv`` (without the program name) as :class:`ReadArgs` when it is a
    ``read`` command line this parser recognises (module docstring); None otherwise,
    for argparse to parse or to word the usage error."""
    if not argv or argv[0] != "read":
        return None
    args = ReadArgs()
    runs = 0  # runs of paths seen; the word before was a path when ``in_run``
    in_run = False
    i, n = 1, len(argv)
    while i < n:
        word = argv[i]
        i += 1
        if not word.startswith("-"):
            if not in_run:
                runs += 1
                if runs > 1:
                    return None  # argparse: "unrecognized arguments"
                in_run = True
            args.paths.append(word)
            continue
        in_run = False
        if word in FLAGS:
            setattr(args, FLAGS[word], True)
            continue
        option, eq, value = word.partition("=")
        if not eq:
            if i >= n or argv[i].startswith("-"):
                return None  # a missing value, or one argparse must judge
            value = argv[i]
            i += 1
        if option in TEXTS:
            setattr(args, TEXTS[option], value)
        elif option in LISTS:
            name = LISTS[option]
            values = getattr(args, name)
            setattr(args, name, [value] if values is None else [*values, value])
        elif option in INTS and value.isascii() and value.isdigit():
            setattr(args, INTS[option], int(value))
        else:
            return None  # an unknown option, a flag given a value, or a bad integer
    return args
