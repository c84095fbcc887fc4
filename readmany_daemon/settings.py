"""One typed settings object (PROTOCOL §7).

Sources, later wins: the defaults below, ``READMANY_*`` environment variables,
``initializationOptions`` (per connection), CLI flags. A bad value is never fatal: it is
reported as a warning and the previous value is kept (the jedi-language-server way).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

#: Files never listed and never read, whatever the request says (PROTOCOL §3, §7).
#: Gitignore syntax; ``.git/`` internals are denied separately and always.
DEFAULT_DENY_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "!.env.example",
    "!.env.sample",
    "!.env.template",
    "*.pem",
    "*.key",
    "id_rsa*",
)

#: Folders that hold dependencies or tool output and are never source. Gitignore syntax,
#: applied to expansions only, and never to a path git tracks. ``venv``-like folders are
#: matched by content (a ``pyvenv.cfg`` inside), see ``rules.ignore.IgnoreRules``.
DEFAULT_EXCLUDES: tuple[str, ...] = (
    "node_modules/",
    "bower_components/",
    "jspm_packages/",
    "__pycache__/",
    "*.pyc",
    "*.pyo",
    ".tox/",
    ".nox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".ipynb_checkpoints/",
    ".eggs/",
    "*.egg-info/",
    ".gradle/",
    ".next/",
    ".nuxt/",
    ".svelte-kit/",
    ".parcel-cache/",
    ".turbo/",
    ".cache/",
    ".terraform/",
    ".hg/",
    ".svn/",
    ".bzr/",
    ".DS_Store",
)


#: The defaults of the agent tools (the MCP read tool, the VS Code Language Model Tool):
#: an answer's ``llmContent`` stays within what the clients keep in the conversation.
#: Claude Code refuses an MCP result over 25,000 tokens and moves one whose text is over
#: 50,000 characters to a file; 20,000 tokens leave room for the structured content.
TOOL_MAX_TOTAL_TOKENS = 20000
TOOL_MAX_TOTAL_CHARS = 50000


class Settings(msgspec.Struct, rename="camel", forbid_unknown_fields=False, kw_only=True):
    """Every setting, each with its default. Wire names are camelCase.

    Sizes are bytes; ``idle_timeout_seconds`` is seconds. ``tool_max_total_tokens``
    (o200k tokens, at least 1000) and ``tool_max_total_chars`` (characters of the whole
    text, at least 4000) are the budgets the agent tools give a call that sets none of
    its own (``maxTotalTokens``; ``maxTotalChars`` and ``maxAnswerChars``); the CLI and
    the LSP methods keep the protocol's defaults.
    """

    ignore_file_names: list[str] = msgspec.field(default_factory=lambda: [".readmanyignore"])
    deny_patterns: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_DENY_PATTERNS))
    default_excludes: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_EXCLUDES))
    max_file_bytes: int = 20 * 1024 * 1024
    cache_bytes: int = 256 * 1024 * 1024
    idle_timeout_seconds: float = 1800.0
    share_overlays: bool = True
    log_level: str = "WARNING"
    tool_max_total_tokens: Annotated[int, msgspec.Meta(ge=1000)] = TOOL_MAX_TOTAL_TOKENS
    tool_max_total_chars: Annotated[int, msgspec.Meta(ge=4000)] = TOOL_MAX_TOTAL_CHARS
    #: Replace secrets in answers (PROTOCOL §4 "Secrets"); a request's ``redactSecrets``
    #: overrides it for that call.
    redact_secrets: bool = True
    #: ``readmany mcp`` puts each tool's text into its ``structuredContent`` too, as
    #: ``llmContent`` (``--structured-text``): for clients that give the model only the
    #: structured content when a result has one (VS Code; docs/mcp.md).
    mcp_structured_text: bool = False
    #: The full-text index behind a focused request's ranking (docs/protocol.md
    #: "Ranking"): ``"on-demand"`` builds a root's in the background on its first
    #: focused request, ``"always"`` when the daemon opens the root, ``"off"`` never
    #: (the other signals rank).
    ranking_index: Literal["on-demand", "always", "off"] = "on-demand"

    def merged(self, overrides: Mapping[str, Any], source: str, warnings: list[str]) -> Settings:
        """A copy with ``overrides`` (camelCase or snake_case keys) applied one by one.

        A key that is unknown or whose value has the wrong type (or holds a lone
        surrogate) is skipped, and a line naming ``source`` and the key is appended to
        ``warnings``.
        """
        current = msgspec.to_builtins(self)
        fields = {f.encode_name: f.name for f in msgspec.structs.fields(Settings)}
        by_snake = {v: k for k, v in fields.items()}
        for key, value in overrides.items():
            wire = key if key in fields else by_snake.get(key)
            if wire is None:
                continue  # other clients' options (authToken, budgets) live here too
            trial = dict(current, **{wire: value})
            try:
                msgspec.convert(trial, Settings)
            except msgspec.ValidationError as exc:
                warnings.append(f"{source}: ignoring setting {wire}: {exc}")
                continue
            except UnicodeEncodeError:
                # msgspec matches enumerated values as UTF-8: a lone surrogate (a JSON
                # "\ud800", or an environment value that is not UTF-8) has none
                warnings.append(
                    f"{source}: ignoring setting {wire}: not valid Unicode (a lone surrogate)"
                )
                continue
            current = trial
        return msgspec.convert(current, Settings)


_DEFAULTS = Settings()


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """``READMANY_MAX_FILE_BYTES=100`` → ``{"maxFileBytes": 100}``; values parsed as JSON,
    else taken as a string; list settings also accept a comma-separated string."""
    out: dict[str, Any] = {}
    for f in msgspec.structs.fields(Settings):
        raw = environ.get("READMANY_" + f.name.upper())
        if raw is None:
            continue
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        if isinstance(getattr(_DEFAULTS, f.name), list) and isinstance(value, str):
            value = [part for part in value.split(",") if part]
        out[f.encode_name] = value
    return out


def load_settings(
    init_options: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Settings, list[str]]:
    """Settings from defaults, then the environment, then ``init_options``.

    Returns ``(settings, warnings)``; warnings name each setting that was ignored.
    """
    warnings: list[str] = []
    settings = Settings().merged(
        _env_overrides(os.environ if environ is None else environ), "environment", warnings
    )
    if init_options:
        settings = settings.merged(init_options, "initializationOptions", warnings)
    return settings, warnings
