"""Notebooks as cells through the real CLI and the daemon (PROTOCOL §4, "Notebooks")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from readmany_daemon.client import RpcError
from tests.e2e.daemon_helpers import Daemon, cli
from tests.notebooks import notebook_text


def test_daemon_reads_a_notebook_as_cells(daemon: Daemon, tmp_path: Path) -> None:
    raw = notebook_text(plots=4)
    (tmp_path / "nb.ipynb").write_text(raw)
    with daemon.session(tmp_path) as client:
        got = client.request("readMany/read", {"paths": ["nb.ipynb"]})
        assert "### cell 1 · markdown · id=intro" in got["llmContent"]
        assert len(got["llmContent"]) <= 0.1 * len(raw)
        assert [a["mimeType"] for a in got["attachments"]] == ["image/png"] * 4
        assert [a["path"] for a in got["attachments"]] == [
            f"nb.ipynb#cell={c}/output=1" for c in (5, 6, 7, 8)
        ]
        glob = client.request("readMany/read", {"paths": ["**/*.ipynb"]})
        assert glob["attachments"] == [] and "[image/png: " in glob["llmContent"]
        cells = client.request("readMany/read", {"files": [{"path": "nb.ipynb", "cells": "2-3"}]})
        assert "### cell 2 " in cells["llmContent"] and "### cell 4 " not in cells["llmContent"]
        with pytest.raises(RpcError) as bad:
            client.request("readMany/read", {"files": [{"path": "nb.ipynb", "cells": "3-x"}]})
        assert bad.value.code == -32602 and "$.files[0].cells" in bad.value.message


def test_cli_reads_cells_and_raw_json(daemon: Daemon, tmp_path: Path) -> None:
    (tmp_path / "nb.ipynb").write_text(notebook_text(plots=1))
    root = str(tmp_path)
    whole = cli(daemon.env, "read", "--root", root, "nb.ipynb")
    assert whole.returncode == 0 and "#### output 1 · error ZeroDivisionError" in whole.stdout
    raw = cli(
        daemon.env, "read", "--root", root, "--params",
        json.dumps({"files": [{"path": "nb.ipynb", "offset": 2, "limit": 2}]}),
    )  # fmt: skip
    assert raw.returncode == 0 and raw.stdout.startswith('--- nb.ipynb ---\n "cells": [\n')
    bad = cli(
        daemon.env, "read", "--root", root, "--params",
        json.dumps({"files": [{"path": "nb.ipynb", "cells": "0"}]}),
    )  # fmt: skip
    assert bad.returncode == 2 and "$.files[0].cells" in bad.stderr


def test_cli_raw_lines_hold_placeholders_not_base64(daemon: Daemon, tmp_path: Path) -> None:
    raw = notebook_text(plots=1)
    (tmp_path / "nb.ipynb").write_text(raw)
    first = next(n for n, line in enumerate(raw.split("\n"), 1) if '"image/png": [' in line)
    spec = {"path": "nb.ipynb", "offset": first, "limit": 3}
    params = json.dumps({"files": [spec]})
    got = cli(daemon.env, "read", "--root", str(tmp_path), "--params", params)
    assert got.returncode == 0 and "iVBOR" not in got.stdout
    assert '"«base64 image/png, ' in got.stdout and '"«base64…»",' in got.stdout
    assert f"[Notebook images not shown: nb.ipynb lines {first + 1}-{first + 2}." in got.stdout


def test_cli_takes_cells_as_a_json_integer(daemon: Daemon, tmp_path: Path) -> None:
    (tmp_path / "nb.ipynb").write_text(notebook_text(plots=1))
    root = str(tmp_path)
    one = json.dumps({"files": [{"path": "nb.ipynb", "cells": 6}]})
    got = cli(daemon.env, "read", "--root", root, "--params", one)
    assert got.returncode == 0, got.stderr
    assert "### cell 6 · code · id=boom" in got.stdout and "### cell 5" not in got.stdout
    zero = json.dumps({"files": [{"path": "nb.ipynb", "cells": 0}]})
    bad = cli(daemon.env, "read", "--root", root, "--params", zero)
    assert bad.returncode == 2 and "$.files[0].cells" in bad.stderr


def test_cli_names_each_image_by_its_cell_and_output(daemon: Daemon, tmp_path: Path) -> None:
    (tmp_path / "nb.ipynb").write_text(notebook_text(plots=2))
    one = json.dumps({"files": [{"path": "nb.ipynb", "cells": "6"}]})
    got = cli(daemon.env, "read", "--root", str(tmp_path), "--json", "--params", one)
    assert got.returncode == 0, got.stderr
    atts = json.loads(got.stdout)["attachments"]
    assert [(a["path"], a["mimeType"]) for a in atts] == [("nb.ipynb#cell=6/output=1", "image/png")]
