"""Unit tests of readmany_daemon.rules (ignore rules): each rule, each kind, explanations,
warnings."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from readmany_daemon.rules.ignore import IgnoreRules
from readmany_daemon.rules.kinds import ALL, Filters, Verdict
from readmany_daemon.rules.patterns import PatternList
from readmany_daemon.settings import Settings
from tests.helpers import git, write_tree

NONE_OFF = Filters(respect_gitignore=False, respect_ignore_files=False, use_default_excludes=False)


def rules_for(root: Path, **settings: object) -> IgnoreRules:
    return IgnoreRules(os.path.realpath(root), Settings(**settings))  # type: ignore[arg-type]


# ---- pattern semantics (one rule per test) ---------------------------------------------


def test_basename_pattern_matches_at_any_depth(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.log\n", "a.log": "", "d/e/b.log": "", "c.txt": ""})
    r = rules_for(repo)
    assert r.check("a.log", False) == Verdict("gitignore", ".gitignore:1", "*.log")
    assert r.check("d/e/b.log", False) == Verdict("gitignore", ".gitignore:1", "*.log")
    assert r.check("c.txt", False) is None


def test_nested_file_is_relative_to_its_folder(repo: Path) -> None:
    write_tree(repo, {"pkg/sub/.gitignore": "secret.txt\n/only-here\n", "pkg/sub/secret.txt": ""})
    r = rules_for(repo)
    assert r.check("pkg/sub/secret.txt", False) == Verdict(
        "gitignore", "pkg/sub/.gitignore:1", "secret.txt"
    )
    assert r.check("pkg/secret.txt", False) is None
    assert r.check("pkg/sub/only-here", False) is not None
    assert r.check("pkg/sub/x/only-here", False) is None


def test_anchored_and_middle_slash_patterns(repo: Path) -> None:
    write_tree(repo, {".gitignore": "/staticfiles/\nsrc/gen/\n"})
    r = rules_for(repo)
    assert r.check("staticfiles/a.css", False) == Verdict(
        "gitignore", ".gitignore:1", "/staticfiles/"
    )
    assert r.check("src/gen/x.py", False) == Verdict("gitignore", ".gitignore:2", "src/gen/")
    assert r.check("lib/staticfiles/b.css", False) is None
    assert r.check("lib/src/gen/x.py", False) is None


def test_last_matching_line_wins(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.gen\n!keep.gen\n"})
    r = rules_for(repo)
    assert r.check("a.gen", False) is not None
    assert r.check("keep.gen", False) is None


def test_negation_cannot_reinclude_below_excluded_folder(repo: Path) -> None:
    write_tree(repo, {".gitignore": "build/\n!build/keep.txt\n", "build/keep.txt": ""})
    r = rules_for(repo)
    assert r.check("build/keep.txt", False) == Verdict("gitignore", ".gitignore:1", "build/")


def test_deeper_file_wins_over_shallower(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.txt\n", "d/.gitignore": "!*.txt\n"})
    r = rules_for(repo)
    assert r.check("a.txt", False) is not None
    assert r.check("d/a.txt", False) is None


def test_folder_only_pattern_does_not_match_files_or_symlinks(repo: Path) -> None:
    write_tree(repo, {".gitignore": "out/\n", "x/out": "", "real/f": ""})
    os.symlink("real", repo / "out")
    r = rules_for(repo)
    assert r.check("x/out", False) is None
    assert r.check("out", False) is None  # a symlink is not a folder
    assert r.check("y/out", True) is not None


def test_double_star_forms(repo: Path) -> None:
    write_tree(repo, {".gitignore": "**/logs\na/**/b\nfoo/**\nx**/y\n"})
    r = rules_for(repo)
    assert r.check("logs", True) is not None
    assert r.check("p/q/logs", True) is not None
    assert r.check("a/b", False) is not None
    assert r.check("a/x/y/b", False) is not None
    assert r.check("foo", True) is None
    assert r.check("foo/z", False) is not None
    # git quirk: after the literal prefix "x", "**/y" is matched as a new pattern
    assert r.check("x/y", False) is not None
    assert r.check("xz/q/y", False) is not None


def test_character_classes_follow_wildmatch(repo: Path) -> None:
    write_tree(repo, {".gitignore": "[[:digit:]]x\n[!a]y\n[^b]z\n[]q]w\n[c-a]v\n"})
    r = rules_for(repo)
    assert r.check("1x", False) is not None and r.check("ax", False) is None
    assert r.check("by", False) is not None and r.check("ay", False) is None
    assert r.check("az", False) is not None and r.check("bz", False) is None
    assert r.check("]w", False) is not None and r.check("qw", False) is not None
    assert r.check("cv", False) is not None and r.check("bv", False) is None


def test_trailing_spaces_and_escapes(repo: Path) -> None:
    data = b"a  \nb\\ \n\\#c\n\\!d\n#e\n"
    write_tree(repo, {".gitignore": data})
    r = rules_for(repo)
    assert r.check("a", False) is not None
    assert r.check("b ", False) is not None and r.check("b", False) is None
    assert r.check("#c", False) is not None
    assert r.check("!d", False) is not None
    assert r.check("#e", False) is None


def test_crlf_and_bom(repo: Path) -> None:
    write_tree(repo, {".gitignore": b"\xef\xbb\xbfa\r\nb\r\n"})
    r = rules_for(repo)
    assert r.check("a", False) == Verdict("gitignore", ".gitignore:1", "a")
    assert r.check("b", False) == Verdict("gitignore", ".gitignore:2", "b")


def test_info_exclude_with_negation(repo: Path) -> None:
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.log\n!important.log\n")
    r = rules_for(repo)
    assert r.check("important.log", False) is None
    assert r.check("nested/a.log", False) == Verdict("gitignore", ".git/info/exclude:1", "*.log")


def test_gitignore_beats_info_exclude(repo: Path) -> None:
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.log\n")
    write_tree(repo, {".gitignore": "!keep.log\n"})
    r = rules_for(repo)
    assert r.check("keep.log", False) is None
    assert r.check("other.log", False) is not None


def test_core_excludes_file_explicit(repo: Path, git_env: Path) -> None:
    xf = git_env / "my-ignore"
    xf.write_text("*.swp\n")
    (git_env / ".gitconfig").write_text(f"[core]\n\texcludesFile = {xf}\n")
    r = rules_for(repo)
    assert r.check("a.swp", False) == Verdict("gitignore", f"{xf}:1", "*.swp")


def test_core_excludes_file_default_path(repo: Path, git_env: Path) -> None:
    (git_env / ".config" / "git").mkdir(parents=True)
    (git_env / ".config" / "git" / "ignore").write_text(".idea/\n")
    r = rules_for(repo)
    v = r.check(".idea", True)
    assert v is not None and v.source == f"{git_env}/.config/git/ignore:1"


def test_core_excludes_file_xdg(repo: Path, git_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = git_env / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "ignore").write_text("*.bak\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert rules_for(repo).check("a.bak", False) is not None


# ---- tracked files ----------------------------------------------------------------------


def test_core_ignorecase_folds_gitignore_patterns(repo: Path, git_env: Path) -> None:
    """With ``core.ignorecase`` set, .gitignore, info/exclude and core.excludesFile match
    without regard to case, as git does: ASCII letters only, and with wildmatch's rules
    (the text is lowered, a bracket's members are not: ``[A]`` matches no letter, ranges
    and ``[:upper:]`` match both cases; an escaped ``\\Q`` matches nothing)."""
    xf = git_env / "global-ignore"
    xf.write_text("*.BAK\n")
    git(repo, "config", "core.excludesFile", str(xf))
    git(repo, "config", "core.ignorecase", "true")
    write_tree(
        repo,
        {
            ".gitignore": "*.LOG\nBuild/\n[A-C]x\n[A]y\n\\Qz\n[[:upper:]]u\n\u00c9t\u00e9\n",
            ".git/info/exclude": "Secret\n",
        },
    )
    r = rules_for(repo)
    paths = ["a.log", "B.Log", "build/x.py", "bx", "Cx", "Ay", "ay", "qz", "Qz", "au", "Au"]
    paths += ["\u00e9t\u00e9", "\u00c9t\u00e9", "SECRET", "secret", "x.bak", "X.Bak", "keep.txt"]
    write_tree(repo, {p: "" for p in paths})
    proc = subprocess.run(
        ["git", "check-ignore", "--no-index", "-z", "--stdin"],
        cwd=repo,
        input="\0".join(paths).encode(),
        capture_output=True,
        check=False,
    )
    want = {p for p in proc.stdout.decode().split("\0") if p}
    assert want == {
        *("a.log", "B.Log", "build/x.py", "bx", "Cx", "au", "Au", "\u00c9t\u00e9"),
        *("SECRET", "secret", "x.bak", "X.Bak"),
    }
    assert {p for p in paths if r.check(p, False) is not None} == want
    assert r.check("build", True) == Verdict("gitignore", ".gitignore:2", "Build/")
    assert r.ignore_case


def test_core_ignorecase_leaves_tool_rules_case_sensitive(repo: Path) -> None:
    """core.ignorecase is git's: tool ignore files, default excludes and deny patterns
    keep matching case-sensitively; a tracked file stays visible."""
    git(repo, "config", "core.ignorecase", "yes")
    write_tree(
        repo,
        {
            ".readmanyignore": "*.TMP\n",
            ".gitignore": "*.PY\n",
            "a.tmp": "",
            "A.TMP": "",
            "NODE_MODULES/x.js": "",
            "t.py": "",
            "u.py": "",
            "Key.PEM": "",
        },
    )
    git(repo, "add", "-f", "t.py")
    r = rules_for(repo, default_excludes=["node_modules/"], deny_patterns=["*.pem"])
    assert r.check("a.tmp", False) is None
    assert r.check("A.TMP", False) == Verdict("ignore-file", ".readmanyignore:1", "*.TMP")
    assert r.check("NODE_MODULES/x.js", False) is None
    assert r.check("Key.PEM", False) is None
    assert r.check("t.py", False) is None  # tracked
    assert r.check("u.py", False) == Verdict("gitignore", ".gitignore:1", "*.PY")


def test_core_ignorecase_off_or_unset_matches_case(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.LOG\n", "a.log": "", "b.LOG": ""})
    r = rules_for(repo)
    assert not r.ignore_case
    assert r.check("a.log", False) is None and r.check("b.LOG", False) is not None
    git(repo, "config", "core.ignorecase", "false")
    assert not rules_for(repo).ignore_case


def test_tracked_file_in_ignored_folder_is_visible(repo: Path) -> None:
    write_tree(repo, {".gitignore": "build/\n", "build/tracked.txt": "", "build/untracked.txt": ""})
    git(repo, "add", "-f", "build/tracked.txt")
    r = rules_for(repo)
    assert r.is_tracked("build/tracked.txt")
    assert r.check("build/tracked.txt", False) is None
    assert r.check("build/untracked.txt", False) == Verdict("gitignore", ".gitignore:1", "build/")
    assert r.check("build", True) is None  # holds a tracked file


def test_tracked_file_matching_pattern_is_visible(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.log\n", "t.log": ""})
    git(repo, "add", "-f", "t.log")
    assert rules_for(repo).check("t.log", False) is None


def test_default_excludes_never_hide_tracked(repo: Path) -> None:
    write_tree(repo, {"node_modules/x.js": "", "node_modules/y.js": ""})
    git(repo, "add", "node_modules/x.js")
    r = rules_for(repo)
    assert r.check("node_modules/x.js", False) is None
    assert r.check("node_modules/y.js", False) == Verdict(
        "default-exclude", "defaultExcludes:node_modules/", "node_modules/"
    )


# ---- kinds --------------------------------------------------------------------------------


def test_git_internals_always_denied(repo: Path) -> None:
    r = rules_for(repo)
    assert r.check(".git/config", False, NONE_OFF) == Verdict("deny", ".git", ".git")
    assert r.check("sub/.git", False, NONE_OFF) == Verdict("deny", ".git", ".git")


def test_deny_patterns(repo: Path) -> None:
    r = rules_for(repo)
    assert r.check(".env", False, NONE_OFF) == Verdict("deny", "denyPatterns:.env", ".env")
    assert r.check("cfg/.env.local", False, NONE_OFF) == Verdict(
        "deny", "denyPatterns:.env.*", ".env.*"
    )
    assert r.check(".env.example", False, NONE_OFF) is None
    assert r.check("k/server.pem", False, NONE_OFF) == Verdict(
        "deny", "denyPatterns:*.pem", "*.pem"
    )


def test_deny_applies_to_tracked_files(repo: Path) -> None:
    write_tree(repo, {"secret.key": ""})
    git(repo, "add", "secret.key")
    assert rules_for(repo).check("secret.key", False, NONE_OFF) is not None


def test_ignore_file_kind_is_separate(repo: Path) -> None:
    write_tree(
        repo,
        {".readmanyignore": "*.md\n", "d/.readmanyignore": "!keep.md\n", ".gitignore": "*.log\n"},
    )
    r = rules_for(repo)
    assert r.check("a.md", False) == Verdict("ignore-file", ".readmanyignore:1", "*.md")
    assert r.check("d/keep.md", False) is None
    assert r.check("a.md", False, Filters(respect_ignore_files=False)) is None
    assert r.check("a.log", False, Filters(respect_gitignore=False)) is None
    assert r.check("a.log", False, Filters(respect_ignore_files=False)) is not None


def test_configured_ignore_file_names(repo: Path) -> None:
    write_tree(repo, {".aiignore": "*.bin\n"})
    r = rules_for(repo, ignore_file_names=[".readmanyignore", ".aiignore"])
    assert r.check("x.bin", False) == Verdict("ignore-file", ".aiignore:1", "*.bin")


def test_default_excludes_and_envs(repo: Path) -> None:
    write_tree(
        repo,
        {
            "venv-x/pyvenv.cfg": "",
            "venv-x/lib/a.py": "",
            "conda/conda-meta/h": "",
            "conda/lib/b.py": "",
        },
    )
    r = rules_for(repo)
    assert r.check("node_modules", True) == Verdict(
        "default-exclude", "defaultExcludes:node_modules/", "node_modules/"
    )
    assert r.check("venv-x/lib/a.py", False) == Verdict(
        "default-exclude", "defaultExcludes:pyvenv.cfg", "pyvenv.cfg"
    )
    assert r.check("venv-x", True) is not None
    assert r.check("conda/lib/b.py", False) == Verdict(
        "default-exclude", "defaultExcludes:conda-meta/", "conda-meta/"
    )
    assert r.check("venv-x/lib/a.py", False, Filters(use_default_excludes=False)) is None


# ---- repository shapes ---------------------------------------------------------------------


def test_root_below_top_obeys_files_above(repo: Path) -> None:
    write_tree(repo, {".gitignore": "*.tmp\nsub/skip/\n", "sub/a.tmp": "", "sub/skip/x": ""})
    r = rules_for(repo / "sub")
    assert r.repo_top == os.path.realpath(repo)
    v = r.check("a.tmp", False)
    assert v is not None and v.source == f"{os.path.realpath(repo)}/.gitignore:1"
    assert r.check("skip/x", False) is not None


def test_root_inside_ignored_folder_is_taken_as_named(repo: Path) -> None:
    # A root chosen inside an ignored folder (a Python under a git-managed
    # ~/.pyenv/versions/) is read as a named path would be: the folder verdict above it
    # is not applied, every pattern still judges the entries, and a warning says so.
    files = {".gitignore": "gen/\n*.log\n", "gen/a.py": "", "gen/t.py": "", "gen/x.log": ""}
    write_tree(repo, files)
    git(repo, "add", "-f", "gen/t.py")
    r = rules_for(repo / "gen")
    assert r.check("a.py", False) is None
    assert r.check("t.py", False) is None
    v = r.check("x.log", False)
    assert v is not None and v.pattern == "*.log"
    assert any("gen/" in w and "named explicitly" in w for w in r.warnings)


def test_outside_repo_gitignore_still_applies(git_env: Path, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write_tree(root, {".gitignore": "*.o\n", "a.o": ""})
    r = rules_for(root)
    assert r.repo_top is None
    assert r.check("a.o", False) == Verdict("gitignore", ".gitignore:1", "*.o")
    assert not r.is_tracked("a.o")


def test_worktree_git_file_finds_common_info_exclude(repo: Path, tmp_path: Path) -> None:
    write_tree(repo, {"f.txt": ""})
    git(repo, "add", "f.txt")
    git(repo, "commit", "-qm", "init")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.wt\n")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt))
    assert (wt / ".git").is_file()
    write_tree(wt, {"x.wt": ""})
    r = rules_for(wt)
    assert r.repo is not None and r.repo.commondir == os.path.realpath(repo / ".git")
    v = r.check("x.wt", False)
    assert v is not None and v.source == f"{os.path.realpath(repo)}/.git/info/exclude:1"
    assert r.is_tracked("f.txt")


def test_nested_repo_uses_its_own_rules(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".gitignore": "*.out\n",
            "inner/.gitignore": "*.in\n",
            "inner/a.out": "",
            "inner/b.in": "",
        },
    )
    git(repo / "inner", "init", "-q")
    r = rules_for(repo)
    # as ripgrep: the outer .gitignore stops at the nested repository's top
    assert r.check("inner/a.out", False) is None
    assert r.check("inner/b.in", False) == Verdict("gitignore", "inner/.gitignore:1", "*.in")
    assert r.check("inner/.git/config", False) == Verdict("deny", ".git", ".git")


# ---- malformed input ------------------------------------------------------------------------


def test_malformed_ignore_file_keeps_good_lines(repo: Path) -> None:
    write_tree(repo, {".gitignore": b"good\n\x00\xff\xfe bin\n[unclosed\nalso\\\n*.ok\n"})
    r = rules_for(repo)
    assert r.check("good", False) is not None
    assert r.check("x.ok", False) == Verdict("gitignore", ".gitignore:5", "*.ok")
    text = "\n".join(r.warnings)
    assert ".gitignore:2: binary content" in text
    assert ".gitignore:3" in text and "never match" in text
    assert ".gitignore:4" in text


def test_symlinked_gitignore_is_not_read(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("*.x\n")
    os.symlink(tmp_path / "elsewhere", repo / ".gitignore")
    assert rules_for(repo).check("a.x", False) is None


def test_pattern_list_from_bytes_never_raises() -> None:
    warnings: list[str] = []
    blob = bytes(range(256)) * 40
    lst = PatternList.from_bytes(blob, "f", "", 4, warnings)
    assert lst.patterns
    assert warnings


def test_ignore_files_hash_tracks_content(repo: Path) -> None:
    write_tree(repo, {".gitignore": "a\n"})
    r1 = rules_for(repo)
    r1.check("x", False)
    h1 = r1.ignore_files_hash()
    (repo / ".gitignore").write_text("b\n")
    r2 = rules_for(repo)
    r2.check("x", False)
    assert r2.ignore_files_hash() != h1


def test_filters_mask() -> None:
    assert ALL.mask == 15
    assert NONE_OFF.mask == 1


def test_git_patterns_for_request_excludes() -> None:
    from readmany_daemon.rules.patterns import GitPatterns

    ex = GitPatterns(["build/", "*.min.js", "!keep.min.js", "/top.txt"])
    assert ex.match("build/a.py")
    assert ex.match("src/build/x/y.py")
    assert not ex.match("build")  # a file named build: the pattern wants a folder
    assert ex.match("a/b.min.js") and not ex.match("a/keep.min.js")
    assert ex.match("top.txt") and not ex.match("d/top.txt")


#: (``.gitignore`` content, path, git's verdict: ignored?) as git 2.39 decides them. Each
#: is a case where pathspec 1.1.1's GitIgnoreSpec raises or answers differently (see the
#: ignore.py docstring), plus neighbours where both agree.
GIT_VERDICTS = [
    ("[[:alpha:]]x\n", "ax", True),
    ("[[:digit:]]x\n", "1x", True),
    ("[[:space:]]s\n", " s", True),
    ("[c-a]v\n", "cv", True),
    ("[c-a]v\n", "bv", False),
    ("[]a]x\n", "]x", True),
    ("[!]]x\n", "bx", True),
    ("[a-]z\n", "-z", True),
    ("x**/y\n", "xz/q/y", True),
    ("x**/y\n", "xy", True),
    ("foo\\  \n", "foo ", True),
    ("foo\t\n", "foo\t", True),
    ("*.log\\\n", "a.log", False),
    ("a[^x]b\n", "a/b", False),
    ("a?b\n", "a/b", False),
    ("a[/]b\n", "a/b", False),
    ("a\\/b\n", "a/b", True),
    ("[a\n", "[a", False),
    ("build/\n!build/keep.txt\n", "build/keep.txt", True),
    ("foo/**\n", "foo", False),
]


@pytest.mark.parametrize(("content", "path", "ignored"), GIT_VERDICTS)
def test_git_verdicts_where_pathspec_differs(
    repo: Path, content: str, path: str, ignored: bool
) -> None:
    write_tree(repo, {".gitignore": content, path: ""})
    r = rules_for(repo)
    parts = path.split("/")
    v = None
    for i in range(1, len(parts) + 1):
        v = v or r.check("/".join(parts[:i]), i < len(parts), Filters(True, False, False))
    assert (v is not None) == ignored
    # and git agrees (the table is git's verdict)
    listed = git(repo, "ls-files", "-o", "--exclude-standard", "-z").split("\0")
    assert (path not in listed) == ignored


def test_reload_reads_a_new_repository_in_the_same_folder(tmp_path: Path) -> None:
    # the workspace folder made again as a repository: reload forgets that it was none
    root = tmp_path / "ws"
    write_tree(root, {".gitignore": "*.bin\n", "new.bin": ""})
    rules = IgnoreRules(str(root), Settings())
    assert rules.repo is None and rules.check("new.bin", False) is not None
    git(root, "init", "-q")
    git(root, "add", "-f", "new.bin")
    assert rules.repo is None  # nothing read again by itself
    rules.reload()
    assert rules.repo is not None and rules.is_tracked("new.bin")
    assert rules.check("new.bin", False) is None  # tracked: gitignore does not hide it
