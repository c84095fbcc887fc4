"""Did you mean (issue 14 item 5) through the real CLI and the shared daemon."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.daemon_helpers import Daemon, fresh_daemon
from tests.helpers import write_tree

daemon = fresh_daemon

TREE = {
    "src/lib/helpers.py": "x = 1\n",
    "src/app/main.py": "y = 2\n",
    "docs/guide.md": "# guide\n",
}
ASKED = ["src/lib/helper.py", "src/utils/helpers.py", "main.py", "zzz/qqq.rs"]
WANT = [
    "File not found: src/lib/helper.py; did you mean: src/lib/helpers.py?",
    "File not found: src/utils/helpers.py; did you mean: src/lib/helpers.py?",
    "File not found: main.py; did you mean: src/app/main.py?",
    "File not found: zzz/qqq.rs",
]


def test_cli_names_the_closest_paths(
    tmp_path: Path, read_json: Callable[..., dict[str, Any]], readmany: Any
) -> None:
    write_tree(tmp_path, TREE)
    r = read_json(tmp_path, *ASKED)
    assert [f["message"] for f in r["files"]] == WANT
    text = readmany("read", "--no-daemon", "--root", str(tmp_path), *ASKED).stdout
    assert "[Error: src/lib/helper.py: " + WANT[0] + "]" in text


def test_daemon_names_the_closest_paths(tmp_path: Path, daemon: Daemon) -> None:
    root = tmp_path / "w"
    write_tree(root, TREE)
    daemon.start()
    with daemon.session(root) as client:
        r = client.request("readMany/read", {"paths": ASKED, "format": "json"})
        assert [f["message"] for f in r["files"]] == WANT
        results = json.loads(r["llmContent"])["results"]
        assert results["src/utils/helpers.py"]["message"] == WANT[1]
