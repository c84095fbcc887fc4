"""Outlines and tags made ahead by the real daemon (``rank/ahead_pass.py``; PROTOCOL §4
"Ranking"): once the full-text index is built, a worker process stores every file's
outline and tags in the root's index file in the user's cache folder; a focused read
then takes them from there. A file written afterwards (a real write, seen by the
watcher) is never answered with its stored outline or tags: the next focused read
shows the new ones."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import Daemon, fresh_daemon, wait_for
from tests.helpers import git, write_tree

daemon = fresh_daemon  # the fixture (tests/e2e/daemon_helpers.py)


def _module(word: str) -> str:
    return "".join(f"def {word}_f{i:03}(x):\n    return x + {i}\n\n\n" for i in range(300))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_tree(
        root,
        {
            "src/big.py": _module("pangolin"),
            "src/use.py": "from src.big import pangolin_f007\n\nY = pangolin_f007(1)\n",
            "src/misc.py": "def colour():\n    return 'red'\n",
        },
    )
    git(root, "init", "-q")
    return root


def _stored(env: dict[str, str]) -> dict[str, Any]:
    """The ahead pass's ``ahead_meta`` and the paths of ``ahead_files`` ({} before)."""
    files = list(Path(env["XDG_CACHE_HOME"]).rglob("*.rank"))
    if len(files) != 1:
        return {}
    uri = f"file:{files[0]}?mode=ro"
    with (
        contextlib.suppress(sqlite3.Error),
        contextlib.closing(sqlite3.connect(uri, uri=True)) as db,
    ):
        meta: dict[str, Any] = dict(db.execute("SELECT key, value FROM ahead_meta"))
        meta["paths"] = {p for (p,) in db.execute("SELECT path FROM ahead_files")}
        return meta
    return {}


def _big(result: dict[str, Any]) -> dict[str, Any]:
    return next(f for f in result["files"] if f["path"] == "src/big.py")


def test_a_focused_read_uses_what_was_made_ahead_and_never_a_changed_files(
    daemon: Daemon, tree: Path
) -> None:
    daemon.start()
    with daemon.session(tree) as client:

        def read(focus: str) -> dict[str, Any]:
            params = {"paths": ["src/**/*.py"], "focus": focus, "maxTotalTokens": 1000}
            result: dict[str, Any] = client.request("readMany/read", params)
            return result

        def ready() -> dict[str, Any] | None:
            result = read("pangolin_f007 ledger")
            stored = _stored(daemon.env)
            done = stored.get("done") == 1 and "src/big.py" in stored.get("paths", ())
            return result if done and not result["summary"]["ranking"]["pendingFiles"] else None

        before = wait_for(ready, timeout=60)
        big = _big(before)
        assert "defines pangolin_f007" in big["why"]
        assert big["status"] == "partial"  # cut at the budget, with the outline of its rest
        assert big["outline"] and all(s["name"].startswith("pangolin_") for s in big["outline"])
        write_tree(tree, {"src/big.py": _module("armadillo")})
        after = read("armadillo_f007 ledger")  # the very next request after the write
        big = _big(after)
        assert "defines armadillo_f007" in big["why"]
        assert big["outline"] and all(s["name"].startswith("armadillo_") for s in big["outline"])
        assert "pangolin_f2" not in after["llmContent"]
