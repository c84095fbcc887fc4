"""Did you mean (issue 14 item 5): a ``not-found`` path names the closest visible paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from readmany_daemon.engine.suggest import closest, did_you_mean
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer, git, make_env, write_tree

PATHS = [
    "README.md",
    "setup.py",
    "src/app/main.py",
    "src/lib/helpers.py",
    "src/lib/deep/config.py",
    "src/utils/format.py",
    "tests/test_helpers.py",
]


def test_one_letter_off() -> None:
    assert closest("src/lib/helper.py", PATHS)[0] == "src/lib/helpers.py"
    assert closest("src/app/mian.py", PATHS)[0] == "src/app/main.py"


def test_one_folder_off() -> None:
    assert closest("src/utils/helpers.py", PATHS)[0] == "src/lib/helpers.py"
    assert closest("src/lib/config.py", PATHS)[0] == "src/lib/deep/config.py"
    assert closest("src/app/lib/main.py", PATHS)[0] == "src/app/main.py"


def test_bare_name_finds_it_at_any_depth() -> None:
    assert closest("config.py", PATHS) == ["src/lib/deep/config.py"]


def test_at_most_three_and_nothing_for_an_unrelated_name() -> None:
    many = [f"pkg{i}/helpers.py" for i in range(10)]
    assert len(closest("pkg/helpers.py", many)) == 3
    assert closest("zzzzqqqq.rs", PATHS) == []
    assert closest("", PATHS) == []
    assert did_you_mean([]) == ""
    assert did_you_mean(["a", "b"]) == "; did you mean: a, b?"


def _ask(ws: Workspace, **params: Any) -> Any:
    return answer(ws, decode_read_params(params))


def test_not_found_message_names_only_visible_paths(tmp_path: Path) -> None:
    env = make_env(tmp_path / "_home")
    root = tmp_path / "w"
    write_tree(
        root,
        {
            ".gitignore": "build/\n",
            "src/lib/helpers.py": "x\n",
            "build/src/lib/helpers.py": "ignored\n",
            "src/lib/.env": "SECRET=1\n",
        },
    )
    git(root, "init", "-q", env=env)
    ws = Workspace.open(str(root), Settings())
    r = _ask(ws, paths=["src/lib/helper.py", "src/utils/helpers.py", "src/lib/env", "nope.zig"])
    messages = [f.message for f in r.files]
    assert [f.code for f in r.files] == ["not-found"] * 4
    assert messages[0] == "File not found: src/lib/helper.py; did you mean: src/lib/helpers.py?"
    assert messages[1] == "File not found: src/utils/helpers.py; did you mean: src/lib/helpers.py?"
    # .env is denied, build/ ignored: never suggested
    assert all("build/" not in m and ".env" not in m for m in messages)
    assert messages[3] == "File not found: nope.zig"
    assert "; did you mean: src/lib/helpers.py?" in r.llm_content
