"""``changes`` reads through the engine (issue 26 item 3), on real git repositories built
here: which files (committed since the base, staged, unstaged, untracked, ignored,
denied, renamed, deleted, binary), what each shows (widened spans and the outline of
the rest, hunks with context without a grammar, new files whole), narrowing by the
request's entries, the result's ``changes``, the errors, redaction and the caps."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import GIT_ENV, answer, committed_tree, git, write_tree
from tests.notebooks import notebook_text

APP = (
    "".join(f"def fn{i}(x):\n    y = x + {i}\n    return y\n\n\n" for i in range(30))
    + "class Box:\n    size = 1\n\n    def grow(self):\n        self.size += 1\n"
)
NOTES = "".join(f"note {i}\n" for i in range(1, 41))


def run_git(root: Path, *args: str) -> str:
    return git(root, *args, env={**os.environ, **GIT_ENV})


def read(root: Path, **params: Any) -> Any:
    ws = Workspace.open(str(root), Settings())
    return answer(ws, decode_read_params(params))


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    base = committed_tree(
        tmp_path,
        {
            "src/app.py": APP,
            "notes.txt": NOTES,
            "old.py": "def old():\n    pass\n",
            "gone.py": "x = 1\n",
            ".gitignore": "*.log\nbuild/\n",
        },
    )
    return tmp_path, base


def test_a_changed_file_shows_its_changes_widened_and_the_outline_of_the_rest(
    repo: tuple[Path, str],
) -> None:
    root, base = repo
    write_tree(root, {"src/app.py": APP.replace("x + 7\n", "x * 7\n")})
    r = read(root, changes={}, lineNumbers=True)
    f = r.files[0]
    assert (f.path, f.status, f.spans) == ("src/app.py", "partial", [[36, 38]])
    assert (f.line_start, f.line_end, f.total_lines) == (36, 38, 155)
    assert "[Lines 36-38:]\n    36\tdef fn7(x):\n    37\t    y = x * 7\n    38\t    return y\n" in (
        r.llm_content
    )
    assert f"[Changed since {base[:12]}: lines 36-38 of 155 shown.]" in r.llm_content
    assert "[Outline of the rest (not shown):]" in r.llm_content
    assert "class Box L151-155" in r.llm_content
    assert "def fn8" not in r.llm_content
    assert r.changes is not None and r.changes.base == base
    assert f.chars == len("    36\tdef fn7(x):\n    37\t    y = x * 7\n    38\t    return y\n")


def test_which_files_and_the_result_changes(repo: tuple[Path, str]) -> None:
    root, base = repo
    write_tree(root, {"notes.txt": NOTES.replace("note 20\n", "NOTE 20\n")})
    run_git(root, "add", "notes.txt")  # staged
    write_tree(root, {"new.py": "print(1)\n", "debug.log": "ignored\n", "build/x.py": "x\n"})
    run_git(root, "mv", "old.py", "renamed.py")  # a staged rename
    (root / "gone.py").unlink()
    r = read(root, changes={"base": "HEAD"})
    assert [(f.path, f.status) for f in r.files] == [
        ("new.py", "ok"),
        ("notes.txt", "partial"),
        ("renamed.py", "partial"),
    ]
    assert r.files[0].spans is None and "print(1)\n" in r.llm_content  # a new file whole
    assert r.files[1].spans == [[17, 23]]  # no grammar: the hunk with 3 lines of context
    assert "[No outline (no grammar for .txt): each change with 3 lines of context.]" in (
        r.llm_content
    )
    assert r.files[2].spans == []
    assert "no line changed (a rename, or its mode); 2 lines.]" in r.llm_content
    assert r.changes is not None
    assert (r.changes.base, r.changes.deleted) == (base, ["gone.py"])
    assert [(x.from_, x.to) for x in r.changes.renamed] == [("old.py", "renamed.py")]


def test_commits_since_the_base_and_a_move_in_the_working_tree(repo: tuple[Path, str]) -> None:
    root, base = repo
    write_tree(root, {"notes.txt": NOTES + "note 41\n"})
    run_git(root, "commit", "-qam", "more notes")
    (root / "old.py").rename(root / "moved.py")  # not staged
    r = read(root, changes={"base": base}, lineNumbers=True)
    assert [f.path for f in r.files] == ["moved.py", "notes.txt"]
    assert "    41\tnote 41\n" in r.llm_content
    assert r.changes is not None
    assert [(x.from_, x.to) for x in r.changes.renamed] == [("old.py", "moved.py")]
    # Against HEAD only the move, which git sees as a deletion and an untracked file:
    # paired as a rename, shown as its outline (no line changed).
    r = read(root, changes={})
    assert [(f.path, f.spans) for f in r.files] == [("moved.py", [])]
    assert "function old L1-2" in r.llm_content


def test_rules_hide_what_they_hide_and_redaction_applies(tmp_path: Path) -> None:
    committed_tree(tmp_path, {"a.py": "x = 1\n", ".env": "A=1\n"})
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    write_tree(
        tmp_path,
        {"a.py": f'TOKEN = "{key}"\n', "node_modules/m.js": "2\n", ".env": "A=2\n"},
    )  # node_modules/ untracked: the default excludes hide it; .env is denied
    r = read(tmp_path, changes={})
    assert [f.path for f in r.files] == ["a.py"]
    assert key not in r.llm_content and "«redacted:" in r.llm_content
    assert r.summary.hidden == {"default-exclude": 1, "deny": 1}
    plain = read(tmp_path, changes={}, redactSecrets=False)
    assert key in plain.llm_content


def test_entries_narrow_the_changed_files(repo: tuple[Path, str]) -> None:
    root, _ = repo
    write_tree(root, {"src/app.py": APP + "\n\nZ = 1\n", "notes.txt": "x\n", "src/new.md": "# A\n"})
    r = read(root, changes={}, paths=["src/**/*.py", "old.py"])
    assert [f.path for f in r.files] == ["src/app.py"]  # old.py did not change
    r = read(root, changes={}, include=["*.txt"])
    assert [f.path for f in r.files] == ["notes.txt"]
    r = read(root, changes={}, files=[{"path": "src/app.py", "offset": 1, "limit": 2}])
    assert (r.files[0].status, r.files[0].spans) == ("ok", None)  # a window: as asked
    r = read(root, changes={}, paths=["old.py"])
    assert r.files == [] and "[No visible file changed since" in r.llm_content


def test_an_entry_that_names_no_file_is_answered_not_dropped(repo: tuple[Path, str]) -> None:
    """An entry naming no changed file gives nothing, but one naming no file at all (a
    typo, a path out of the root, a pattern that matches nothing) was dropped without
    a word in a ``changes`` read; it keeps its entry as in any read."""
    root, _ = repo
    write_tree(root, {"src/app.py": APP + "\n\nZ = 1\n"})
    r = read(root, changes={}, paths=["src/**/*.py", "srx/app.py", "../out.py", "*.nomatch"])
    got = [(f.path, f.status, f.code) for f in r.files]
    assert got == [
        ("src/app.py", "partial", None),
        ("srx/app.py", "error", "not-found"),
        ("../out.py", "error", "outside-workspace"),
        ("*.nomatch", "skipped", "no-match"),
    ], got
    assert "*.nomatch matched no visible file" in r.llm_content
    assert r.summary.no_match == 1 and r.summary.errors == 2
    # alone, the changed files it could have named are still said to be none
    r = read(root, changes={}, paths=["srx/app.py"])
    assert [f.code for f in r.files] == ["not-found"]
    assert "[No visible file changed since" in r.llm_content


def test_a_binary_file_is_skipped_as_in_any_read(tmp_path: Path) -> None:
    committed_tree(tmp_path, {"b.bin": b"\x00\x01" * 50})
    write_tree(tmp_path, {"b.bin": b"\x00\x02" * 50})
    r = read(tmp_path, changes={})
    assert [(f.path, f.status, f.code) for f in r.files] == [("b.bin", "skipped", "binary")]


def test_a_base_git_does_not_know_and_a_root_outside_git_are_invalid(
    repo: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root, _ = repo
    with pytest.raises(InvalidParams) as err:
        read(root, changes={"base": "no-such-branch"})
    assert err.value.field == "$.changes.base"
    plain = tmp_path_factory.mktemp("plain")
    write_tree(plain, {"a.py": "x\n"})
    with pytest.raises(InvalidParams) as err:
        read(plain, changes={})
    assert err.value.field == "$.changes"
    # a repository with no commit yet: HEAD, the default, names none; base was not sent
    empty = tmp_path_factory.mktemp("empty")
    write_tree(empty, {"a.py": "x\n"})
    run_git(empty, "init", "-q")
    with pytest.raises(InvalidParams) as err:
        read(empty, changes={})
    assert err.value.field == "$.changes" and "no commit yet" in str(err.value)


def test_per_file_caps_apply_to_what_it_shows(repo: tuple[Path, str]) -> None:
    root, _ = repo
    changed = APP.replace("x + 3\n", "x * 3\n").replace("x + 20\n", "x * 20\n")
    write_tree(root, {"src/app.py": changed})
    r = read(root, changes={}, perFileMaxLines=4)
    f = r.files[0]
    assert (f.status, f.spans) == ("partial", [[16, 18], [101, 101]])
    assert "[Cut by perFileMaxLines: lines 102-103 not shown; read them by offset and limit.]" in (
        r.llm_content
    )
    r = read(root, changes={}, perFileMaxChars=30)
    assert r.files[0].spans == [[16, 17]] and r.files[0].chars <= 30
    full = read(root, changes={}, perFileMaxLines=4, preferFullRead=True)
    assert full.files[0].spans == [[16, 18], [101, 103]]
    capped = read(root, changes={}, perFileMaxTokens=60)
    assert capped.summary.estimated_tokens < full.summary.estimated_tokens
    assert capped.files[0].spans is not None and len(capped.files[0].spans) < 2


def test_the_budget_cuts_the_spans(repo: tuple[Path, str]) -> None:
    root, _ = repo
    write_tree(root, {"src/app.py": APP.replace("x + 3\n", "x * 3\n").replace("x + 20\n", "x*2\n")})
    r = read(root, changes={}, maxTotalChars=40)
    f = r.files[0]
    assert (f.status, f.code, f.spans) == ("partial", "budget", [[16, 18]])
    assert "[Cut by the budget: lines 101-103 not shown" in r.llm_content
    # the request it names reads exactly those lines
    notice = r.llm_content[r.llm_content.index("[Cut by the budget") :].splitlines()[0]
    ask = json.loads(notice[notice.index("files: ") + 7 : -2])
    assert ask == [{"path": "src/app.py", "offset": 101, "limit": 3}]
    rest = read(root, files=ask)
    assert (rest.files[0].line_start, rest.files[0].line_end) == (101, 103)


def test_null_is_not_given(repo: tuple[Path, str]) -> None:
    root, base = repo
    write_tree(root, {"notes.txt": "changed\n"})
    plain = read(root, changes=None, paths=["notes.txt"])
    assert plain.changes is None and plain.files[0].spans is None
    r = read(root, changes={"base": None})
    assert r.changes is not None and r.changes.base == base
    with pytest.raises(InvalidParams) as err:
        decode_read_params({"changes": None})
    assert err.value.field == "$.paths"


def test_a_file_emptied_says_so(tmp_path: Path) -> None:
    base = committed_tree(tmp_path, {"a.py": "x = 1\n"})
    write_tree(tmp_path, {"a.py": ""})
    r = read(tmp_path, changes={})
    assert (r.files[0].status, r.files[0].spans) == ("ok", [])
    assert f"[Changed since {base[:12]}: the file is empty now.]" in r.llm_content


def test_a_changed_notebook_comes_as_its_cells(tmp_path: Path) -> None:
    committed_tree(tmp_path, {"nb.ipynb": notebook_text(plots=1)})
    write_tree(tmp_path, {"nb.ipynb": notebook_text(plots=1, seed=1)})
    r = read(tmp_path, changes={})
    assert r.files[0].spans is None and "[Lines " not in r.llm_content
    assert "iVBOR" not in r.llm_content  # no PNG payload


def test_a_text_file_git_diffs_as_binary_shows_its_changed_lines(tmp_path: Path) -> None:
    # git says "Binary files differ" for a file with a -diff attribute and for UTF-16
    # text: its lines are read all the same, and its change must not read "no line
    # changed". git's --text hunks count lines at 0x0A bytes: exact in ASCII-compatible
    # text, not in UTF-16 (where U+010A is 0A 01): that file shows whole, as changed.
    numbers = "".join(f"{i}\n" for i in range(1, 51))
    wide = "".join(f"line {i}\n" for i in range(1, 51))
    committed_tree(
        tmp_path,
        {".gitattributes": "lock.txt -diff\n", "lock.txt": numbers, "wide.txt": ""},
    )
    (tmp_path / "wide.txt").write_bytes(wide.encode("utf-16"))
    run_git(tmp_path, "commit", "-qam", "wide")  # HEAD, the base, holds it as UTF-16
    write_tree(tmp_path, {"lock.txt": numbers.replace("\n25\n", "\n25 changed\n")})
    (tmp_path / "wide.txt").write_bytes(wide.replace("line 25", "line 25 Ċ").encode("utf-16"))
    r = read(tmp_path, changes={})
    got = {f.path: (f.status, f.spans, f.encoding) for f in r.files}
    assert got["lock.txt"] == ("partial", [[22, 28]], "utf-8")
    assert got["wide.txt"][0] == "ok" and got["wide.txt"][1] == [[1, 50]]
    assert got["wide.txt"][2].startswith("utf-16")
    assert "no line changed" not in r.llm_content
    assert "25 changed" in r.llm_content and "line 25 Ċ" in r.llm_content
