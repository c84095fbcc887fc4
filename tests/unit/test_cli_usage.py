"""Usage errors of the ``readmany`` command: one line on stderr naming the problem, exit 2."""

from __future__ import annotations

import pytest

from readmany_daemon.cli import EXIT_USAGE, main


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["read", "--bogus"], "readmany: unrecognized arguments: --bogus"),
        (["--bogus"], "readmany: unrecognized arguments: --bogus"),
        (["files", "-x", "--root", "."], "readmany: unrecognized arguments: -x"),
        ([], "readmany: a command is required: one of read, files, serve, lsp, mcp, status, stop"),
        (
            ["read", "--max-total-files", "x"],
            "readmany: read: argument --max-total-files: invalid int value: 'x'",
        ),
    ],
)
def test_a_usage_error_is_one_line_naming_the_problem(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err == line + "\n"


def test_files_help_says_the_order_is_by_path(capsys: pytest.CaptureFixture[str]) -> None:
    """'sorted by bytes' read as 'by size': the help names the path order."""
    with pytest.raises(SystemExit):
        main(["files", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "by path in byte order" in text and "sorted by bytes" not in text
