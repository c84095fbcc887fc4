"""The MCP tools, independent of the SDK: roots, the three tools, results as content.

``ReadManyMcp.call_tool`` answers one ``tools/call`` as a ``CallToolResult``
(camelCase dict). ``read_many_files`` gives a call that sets no ``maxTotalTokens`` /
``maxTotalChars`` of its own the tool budgets (``Settings.tool_max_total_tokens`` /
``tool_max_total_chars``); its result is ``llmContent`` as text, attachments as image
or resource blocks and the rest of the ``ReadManyResult`` as structured content, the
whole within the client's limits (``mcp/result.py``). With the setting
``mcpStructuredText`` (``--structured-text``) every tool's structured content carries
its text too, as ``llmContent``: VS Code gives the model a result's structured content
in place of its text blocks.

The workspace roots are the ``--root`` folders (repeatable), else the client's MCP roots
(``roots/list``: a legacy-era client that declares the roots capability; the 2026-07-28
era has no server-to-client requests), else the current directory. A request's ``root``
picks one of them (its name, path or ``file:`` URI) or a folder inside one, the first
root by default; nothing outside them is opened.

Bad arguments come back as a tool result with ``isError: true`` whose text names the
field (the engine's ``InvalidParams`` message); a per-file problem is part of an ok
result.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from readmany_daemon import roots as roots_
from readmany_daemon.errors import InvalidParams, ReadManyError
from readmany_daemon.mcp.backend import DaemonBackend
from readmany_daemon.mcp.local import LocalBackend
from readmany_daemon.mcp.result import read_result, refit, result_ceiling, with_text
from readmany_daemon.mcp.schema import (
    CHANGED_TOOL,
    DEFAULT_LIST_LIMIT,
    FILES_TOOL,
    READ_TOOL,
    with_tool_budgets,
)
from readmany_daemon.paths import uri_to_path
from readmany_daemon.roots import Root, make_root
from readmany_daemon.route import current_dir, daemon_off
from readmany_daemon.runtime.ledger import Ledger, given_files
from readmany_daemon.runtime.stale import (
    Stale,
    labelled,
    place_notice,
    renotice,
    stale_members,
)
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import as_object, decode_changed_since_params
from readmany_daemon.wire.fold import fold_read_params
from readmany_daemon.wire.messages import CHANGED_SINCE, FILES, READ, ReadManyParams

if TYPE_CHECKING:
    from readmany_daemon.wire.cursor import ReadRequest

log = logging.getLogger("readmany.mcp")

#: How many times a page whose whole result passes the ceiling is asked again
#: with smaller budgets (``mcp.result.refit``; each time closer, from what the last
#: one measured).
REFITS = 3


def smaller_page(
    params: dict[str, Any],
    req: ReadRequest,
    root: str,
    max_total_tokens: int,
    max_answer_chars: int | None,
) -> dict[str, Any]:
    """The read tool's wire ``params`` (the request ``req`` decoded, answered in
    ``root``) asking the same page with smaller budgets. A page asked with a cursor is
    answered with its request's budgets: its cursor is made again, at the same place,
    for the request with the smaller ones (whose pages then keep them), and the
    budgets sent beside it change too (a cursor whose request was too large to carry
    checks them by its digest)."""
    import msgspec

    from readmany_daemon.wire.cursor import encode_cursor

    budgets: dict[str, Any] = {"maxTotalTokens": max_total_tokens}
    if max_answer_chars is not None:
        budgets["maxAnswerChars"] = max_answer_chars
    out = {**params, **budgets}
    if req.continuation is not None:
        smaller = msgspec.structs.replace(
            req.params,
            cursor=None,
            max_total_tokens=max_total_tokens,
            max_answer_chars=max_answer_chars,
        )
        out["cursor"] = encode_cursor(smaller, root, req.continuation.position)
    return out


# -------------------------------------------------------------------------------- roots


def resolve_root(raw: Any, roots: Sequence[Root]) -> str:
    """The folder a tool call's ``root`` names (``roots.resolve_root``): one of ``roots``
    (by name, path or URI), or a folder inside one (absolute, ``file:`` URI, or relative
    to the first root); None is the first root. Raises ``InvalidParams`` naming
    ``$.root``."""
    if raw is not None and not isinstance(raw, str):
        raise InvalidParams(
            f"invalid params: Expected `str`, got `{type(raw).__name__}` - at `$.root`", "$.root"
        )
    return roots_.resolve_root(raw, roots, relative_to=roots[0].path, confined=True)


# --------------------------------------------------------------------- results as content


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _cap(items: list[str], limit: int) -> tuple[list[str], bool]:
    return items[:limit], len(items) > limit


def files_answer(listed: Mapping[str, Any], limit: int) -> tuple[str, dict[str, Any]]:
    """``readMany/files``' answer as the tool's text (at most ``limit`` paths, then how many
    more) and structured content."""
    files = list(listed.get("files") or [])
    total = len(files)
    shown = files[:limit]
    warnings = [str(w) for w in listed.get("warnings") or []]
    structured = {
        "files": shown,
        "clock": listed.get("clock", ""),
        "warnings": warnings,
        "total": total,
        "truncated": total > limit,
    }
    lines = [f"{total} file{'s' if total != 1 else ''} (clock {structured['clock']})"]
    lines += [f["path"] for f in shown]
    if total > limit:
        lines.append(f"[{total - limit} more not listed: narrow the patterns or raise limit.]")
    lines += [f"[Warning: {w}; its files are missing from this list.]" for w in warnings]
    return "\n".join(lines) + "\n", structured


def changed_answer(delta: Mapping[str, Any], limit: int) -> tuple[str, dict[str, Any]]:
    """``readMany/changedSince``'s answer as the tool's text (at most ``limit`` paths per list)
    and structured content."""
    changed, cut_c = _cap(list(delta.get("changed") or []), limit)
    deleted, cut_d = _cap(list(delta.get("deleted") or []), limit)
    total = len(delta.get("changed") or []) + len(delta.get("deleted") or [])
    structured = {
        "clock": delta.get("clock", ""),
        "isFreshInstance": bool(delta.get("isFreshInstance")),
        "changed": changed,
        "deleted": deleted,
        "total": total,
        "truncated": cut_c or cut_d,
    }
    lines = [f"clock: {structured['clock']} (pass it to changed_since next time)"]
    if structured["isFreshInstance"]:
        lines.append(
            "isFreshInstance: the clock was empty or unknown here, so every visible file "
            f"is listed as changed ({len(delta.get('changed') or [])} files)."
        )
    lines.append(f"changed ({len(delta.get('changed') or [])}):")
    lines += [f"  {p}" for p in changed]
    if cut_c:
        lines.append(f"  [{len(delta['changed']) - limit} more not listed: raise limit.]")
    lines.append(f"deleted ({len(delta.get('deleted') or [])}):")
    lines += [f"  {p}" for p in deleted]
    if cut_d:
        lines.append(f"  [{len(delta['deleted']) - limit} more not listed: raise limit.]")
    return "\n".join(lines) + "\n", structured


# ----------------------------------------------------------------------------- the app


class ToolFailure(Exception):
    """A tool call that failed as a whole: its text goes back with ``isError: true``."""


def _limit(args: dict[str, Any]) -> int:
    value = args.pop("limit", None)
    if value is None:
        return DEFAULT_LIST_LIMIT
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidParams(
            f"invalid params: Expected `int` >= 1, got `{value!r}` - at `$.limit`", "$.limit"
        )
    return value


class ReadManyMcp:
    """The tools, independent of the SDK: ``call(name, arguments, ask_roots)`` returns
    ``(content, structured)`` or raises ``ToolFailure`` / ``InvalidParams``."""

    def __init__(
        self,
        root: str | Sequence[str] | None = None,
        no_daemon: bool = False,
        settings: Settings | None = None,
    ) -> None:
        """``root``: the ``--root`` folder, or the folders of a repeated ``--root`` (the
        first is the default root; one named twice counts once); None or empty: the
        client's roots, else the current directory (``roots``)."""
        paths = [root] if isinstance(root, str) else list(root or [])
        fixed: dict[str, Root] = {}
        for path in paths:
            made = make_root(path)
            fixed.setdefault(made.path, made)
        self.fixed = list(fixed.values()) or None
        self._roots: list[Root] | None = self.fixed
        self.local = LocalBackend(settings)
        self.daemon = None if daemon_off(no_daemon) else DaemonBackend(self.local)
        #: The files this session (this server process) was given, for ``stale``,
        #: checked here: those given in this process, and those of a lost daemon
        #: connection (``with_stale``).
        self.ledger = Ledger()
        #: A copy of the kept daemon connection's ledger (number ``_shadow_link``),
        #: unchecked while it lives; ``self.ledger`` takes it over when it is lost.
        self._shadow = Ledger()
        self._shadow_link = 0

    @property
    def settings(self) -> Settings:
        """The server's settings (the environment's, with the command line's flags)."""
        return self.local.settings

    @property
    def backend(self) -> LocalBackend | DaemonBackend:
        """The backend answering the tools: the daemon first, or this process only (``--no-
        daemon``)."""
        return self.daemon if self.daemon is not None else self.local

    def roots_changed(self) -> None:
        """The client's roots changed: ask again at the next call."""
        if self.fixed is None:
            self._roots = None

    async def roots(self, ask: Callable[[], Any]) -> list[Root]:
        """``--root``, else the client's roots (``ask()`` returns file: URIs with names,
        or None when the client has none to give), else the current directory (raises
        ``UsageError``, a failed tool call, when it was removed: ``route.current_dir``)."""
        if self._roots is not None:
            return self._roots
        found: list[Root] = []
        for uri, name in await ask() or []:
            path = uri_to_path(uri)
            if path and os.path.isdir(path):
                found.append(make_root(path, name))
            else:
                log.warning("ignoring MCP root %s: not a local folder", uri)
        self._roots = found or [make_root(current_dir())]
        return self._roots

    def with_stale(
        self, answer: dict[str, Any], root: str, params: ReadManyParams, began_ns: int, link: int
    ) -> dict[str, Any]:
        """``answer`` (a ``ReadManyResult`` as builtins, for folder ``root``, asked with
        ``params`` at ``began_ns``) with this session's ``stale`` and its notice in
        ``llmContent`` (``runtime/stale.py``). ``link``: the number of the kept daemon
        connection that answered (``DaemonBackend.ask``), whose own ledger, fed by the
        root's change log, named its ``stale`` already; 0: answered in this process,
        with no ledger but ``self.ledger``. The entries of ``self.ledger`` (files given
        in this process, and those of a daemon connection since lost) are checked by
        ``stat`` (``runtime/ledger.py``)."""
        files = (
            (f["path"], f["status"], f.get("sha256"))
            for f in answer.get("files", [])
            if f.get("source") != "overlay"  # a buffer's sha256 is not of the file
        )
        given = given_files(files, root)
        if link != self._shadow_link or not link:
            self.ledger.adopt(self._shadow)  # that connection's ledger is lost: stat them
            self._shadow_link = link
        if not link:
            changed = self.ledger.settle(given, began_ns)
            return self._noticed(answer, [], labelled(changed, root, params.absolute_paths), params)
        told = [Stale(s["path"], s["change"]) for s in answer.get("stale") or []]
        own = labelled(self.ledger.settle_apart(given), root, params.absolute_paths)
        self._shadow.remember(given, began_ns, (os.path.join(root, s.path) for s in told))
        if answer.get("staleTruncated"):  # the rest counts as named (PROTOCOL §4)
            return answer
        return self._noticed(answer, told, own, params)

    def _noticed(
        self,
        answer: dict[str, Any],
        told: list[Stale],
        own: list[Stale],
        params: ReadManyParams,
    ) -> dict[str, Any]:
        """``answer``, whose ``llmContent`` names ``told`` (the daemon's ``stale``),
        naming ``own`` too, first (oldest given first): in ``stale`` and in one
        notice."""
        if not own:
            return answer
        stale = own + told  # own's were all given before this connection's
        answer = {**answer, **stale_members(stale)}
        text = answer.get("llmContent", "")
        after = params.order == "stable"  # the stable prefix holds
        again = renotice(text, params.format, told, stale, after)
        if again is None:
            again = "".join(place_notice([text], params.format, stale, after))
        answer["llmContent"] = again
        return answer

    async def call(
        self, name: str, arguments: Any, ask: Callable[[], Any]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Run tool ``name`` with ``arguments``; ``ask`` fetches the client's roots. Returns
        (content blocks, structured content). Raises ``ToolFailure`` or ``ReadManyError``
        for a call the model should correct."""
        import anyio.to_thread

        from readmany_daemon.wire.cursor import decode_read_request

        args = as_object(arguments)
        roots = await self.roots(ask)
        backend = self.backend
        if name == READ_TOOL:
            # The tool budgets under the call's own (any spelling: folded first). Beside
            # a cursor they change nothing: the cursor's request is answered, with the
            # budgets its first page had.
            args = with_tool_budgets(fold_read_params(args), self.local.settings)
            # Decoded once, here: a bad argument or cursor is refused before any backend
            # is asked, and a cursor's root is read from the decoded request.
            req = decode_read_request(args)
            root = resolve_root(req.params.root, roots)
            # The backends take wire params (the daemon is asked over its socket): the
            # arguments, folded, with the budgets and the root resolved.
            params = {**args, "root": root}
            began = time.time_ns()
            answer, link = await anyio.to_thread.run_sync(backend.ask, READ, params, root, req)
            ceiling = result_ceiling(req.params.max_total_tokens)
            for _ in range(REFITS):
                # the text as JSON (escapes) and the structure passed the ceiling: the
                # page is asked again smaller (its cursor keeps those budgets)
                content, structure = await anyio.to_thread.run_sync(
                    read_result, answer, root, ceiling
                )
                smaller = refit(
                    req.params.max_total_tokens,
                    req.params.max_answer_chars,
                    answer,
                    content,
                    structure,
                    ceiling,
                )
                if smaller is None:
                    break
                params = smaller_page(params, req, root, *smaller)
                req = decode_read_request(params)
                answer, link = await anyio.to_thread.run_sync(backend.ask, READ, params, root, req)
            answer = self.with_stale(answer, root, req.params, began, link)
            with_llm = self.settings.mcp_structured_text
            return await anyio.to_thread.run_sync(read_result, answer, root, ceiling, with_llm)
        if name == FILES_TOOL:
            limit = _limit(args)
            root = resolve_root(args.get("root"), roots)
            args["root"] = root
            listed = await anyio.to_thread.run_sync(backend.call, FILES, args, root)
            text, structured = files_answer(listed, limit)
            return [_text(text)], self._structured(text, structured)
        if name == CHANGED_TOOL:
            limit = _limit(args)
            if args.get("clock") is None:
                args["clock"] = ""  # the tool's clock is optional (none: a baseline)
            wanted = decode_changed_since_params(args)
            root = resolve_root(wanted.root, roots)
            params = {"clock": wanted.clock, "root": root}
            delta = await anyio.to_thread.run_sync(backend.call, CHANGED_SINCE, params, root)
            text, structured = changed_answer(delta, limit)
            return [_text(text)], self._structured(text, structured)
        raise ToolFailure(f"unknown tool {name!r}: use {READ_TOOL}, {FILES_TOOL} or {CHANGED_TOOL}")

    def _structured(self, text: str, structured: dict[str, Any]) -> dict[str, Any]:
        """A tool's structured content, with its text as ``llmContent`` under
        ``mcpStructuredText``."""
        return with_text(text, structured) if self.settings.mcp_structured_text else structured

    async def call_tool(self, name: str, arguments: Any, ask: Callable[[], Any]) -> dict[str, Any]:
        """``call`` as a ``CallToolResult`` (camelCase dict): failures become
        ``isError: true`` with one readable line, never an exception."""
        try:
            content, structured = await self.call(name, arguments, ask)
        except (ToolFailure, ReadManyError) as exc:
            return {"content": [_text(str(exc))], "isError": True}
        except Exception as exc:  # the tool boundary: report, keep serving, keep the trace
            log.exception("%s failed", name)
            return {
                "content": [
                    _text(f"readmany: internal error in {name}: {exc!r} (see the server log)")
                ],
                "isError": True,
            }
        return {"content": content, "structuredContent": structured, "isError": False}
