"""``readmany mcp`` in both MCP eras, and its roots, with the official SDK's clients
against the real process.

- The newest SDK's ``Client`` in its three modes: ``auto`` (the ``server/discover``
  probe, landing in 2026-07-28), ``legacy`` (the ``initialize`` handshake) and
  ``2026-07-28`` (no handshake): connect, list the tools, call each tool. Skipped on an
  SDK without that client (1.x: ``tests/e2e/test_mcp.py`` drives the legacy era there).
- Roots: ``--root`` repeated, a call's ``root`` picking one of them (the first by
  default, nothing outside them); ``--root`` over the client's roots; without
  ``--root`` a 2026-07-28 client (which the server cannot ask for roots) gets the folder
  it started the server in.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_mcp import call, mcp_session, roots_callback, text
from tests.helpers import write_tree

client_module = pytest.importorskip("mcp.client.client", reason="the SDK 1.x has no Client")


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    one, two = tmp_path / "one", tmp_path / "two"
    write_tree(one, {"a.py": "print('one')\n"})
    write_tree(two, {"b.py": "print('two')\n", "sub/c.py": "print('c')\n"})
    return one, two


@asynccontextmanager
async def client(
    env: dict[str, str], mode: str, *args: str, cwd: Path, roots: list[Path] | None = None
) -> AsyncIterator[Any]:
    """The SDK's ``Client`` in ``mode`` with ``readmany mcp ARGS`` (a new process)."""
    from mcp.client.stdio import StdioServerParameters

    kwargs: dict[str, Any] = {"mode": mode}
    if roots is not None:
        kwargs["list_roots_callback"] = roots_callback(roots)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "readmany_daemon", "mcp", *args],
        env=env,
        cwd=str(cwd),
    )
    async with client_module.Client(params, **kwargs) as c:
        yield c


async def _listed(c: Any, **arguments: Any) -> list[str]:
    result = await c.call_tool("list_files", arguments)
    assert not result.is_error, result
    return [f["path"] for f in result.structured_content["files"]]


@pytest.mark.parametrize(
    ("mode", "landing"),
    [("auto", "2026-07-28"), ("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")],
)
async def test_the_newest_sdks_client_works_in_each_mode(
    env: dict[str, str], trees: tuple[Path, Path], mode: str, landing: str
) -> None:
    one, _ = trees
    async with client(env, mode, "--root", str(one), cwd=one) as c:
        assert c.session.protocol_version == landing
        first = (await c.list_tools()).model_dump(by_alias=True, exclude_none=True)
        assert [t["name"] for t in first["tools"]] == [
            "read_many_files",
            "list_files",
            "changed_since",
        ]
        read = await c.call_tool("read_many_files", {"paths": ["a.py"]})
        assert not read.is_error and "print('one')" in read.content[0].text
        assert await _listed(c) == ["a.py"]
        changed = await c.call_tool("changed_since", {})
        assert not changed.is_error and changed.structured_content["isFreshInstance"]
        bad = await c.call_tool("read_many_files", {"paths": ["a.py"], "perFileMaxLines": 0})
        assert bad.is_error and "$.perFileMaxLines" in bad.content[0].text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_repeated_roots_and_a_calls_root_picks_one(
    env: dict[str, str], trees: tuple[Path, Path], tmp_path: Path, mode: str
) -> None:
    one, two = trees
    async with client(env, mode, "--root", str(one), "--root", str(two), cwd=tmp_path) as c:
        assert await _listed(c) == ["a.py"]  # the first root by default
        assert await _listed(c, root="two") == ["b.py", "sub/c.py"]  # by name
        assert await _listed(c, root=two.as_uri()) == ["b.py", "sub/c.py"]  # by URI
        assert await _listed(c, root=str(two / "sub")) == ["c.py"]  # a folder inside
        read = await c.call_tool("read_many_files", {"paths": ["b.py"], "root": str(two)})
        assert "print('two')" in read.content[0].text
        outside = await c.call_tool("list_files", {"root": str(tmp_path)})
        assert outside.is_error and "$.root" in outside.content[0].text


async def test_the_root_flags_come_before_the_clients_roots(
    env: dict[str, str], trees: tuple[Path, Path], tmp_path: Path
) -> None:
    one, two = trees
    async with client(env, "legacy", "--root", str(one), cwd=tmp_path, roots=[two]) as c:
        assert await _listed(c) == ["a.py"]
        refused = await c.call_tool("list_files", {"root": str(two)})
        assert refused.is_error


async def test_without_root_flags_a_2026_client_gets_the_folder_it_started_in(
    env: dict[str, str], trees: tuple[Path, Path]
) -> None:
    one, two = trees
    async with client(env, "auto", cwd=two, roots=[one]) as c:
        assert c.session.protocol_version == "2026-07-28"
        assert await _listed(c) == ["b.py", "sub/c.py"]


async def test_without_root_flags_a_legacy_client_gives_its_roots(
    env: dict[str, str], trees: tuple[Path, Path]
) -> None:
    one, two = trees
    async with mcp_session(env, cwd=two, roots=[one, two]) as session:
        listed = await call(session, "list_files", {"root": "two"})
        assert "b.py" in text(listed)
        assert (await call(session, "list_files", {}))["structuredContent"]["total"] == 1
