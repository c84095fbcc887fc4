"""Settings: defaults, ``READMANY_*`` environment overrides, ``initializationOptions`` and
``workspace/didChangeConfiguration`` merged in that order (later wins, PROTOCOL §7); a
bad value is a warning naming its source and key, and the previous value stays."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from readmany_daemon.lsp.session import ReadManyServer
from readmany_daemon.runtime.service import Service
from readmany_daemon.settings import (
    DEFAULT_DENY_PATTERNS,
    DEFAULT_EXCLUDES,
    Settings,
    load_settings,
)


def changed(settings: Settings) -> dict[str, Any]:
    """The fields of ``settings`` that differ from the defaults."""
    defaults = msgspec.structs.asdict(Settings())
    return {k: v for k, v in msgspec.structs.asdict(settings).items() if defaults[k] != v}


# ---- defaults -----------------------------------------------------------------------------


def test_defaults() -> None:
    s = Settings()
    assert s.ignore_file_names == [".readmanyignore"]
    assert s.deny_patterns == list(DEFAULT_DENY_PATTERNS)
    assert s.deny_patterns[:2] == [".env", ".env.*"] and "!.env.example" in s.deny_patterns
    assert s.default_excludes == list(DEFAULT_EXCLUDES)
    assert "node_modules/" in s.default_excludes and "__pycache__/" in s.default_excludes
    assert s.max_file_bytes == 20 * 1024 * 1024
    assert s.cache_bytes == 256 * 1024 * 1024
    assert s.idle_timeout_seconds == 1800.0
    assert s.share_overlays is True
    assert s.log_level == "WARNING"
    assert s.tool_max_total_tokens == 20000
    assert s.tool_max_total_chars == 50000


def test_no_environment_no_options_gives_the_defaults() -> None:
    assert load_settings(environ={}) == (Settings(), [])
    assert load_settings({}, environ={}) == (Settings(), [])


def test_default_lists_are_not_shared_between_instances() -> None:
    a = Settings()
    a.deny_patterns.append("*.mine")
    assert Settings().deny_patterns == list(DEFAULT_DENY_PATTERNS)


def test_wire_names_are_camel_case() -> None:
    wire = msgspec.to_builtins(Settings())
    assert sorted(wire) == [
        "cacheBytes",
        "defaultExcludes",
        "denyPatterns",
        "idleTimeoutSeconds",
        "ignoreFileNames",
        "logLevel",
        "maxFileBytes",
        "mcpStructuredText",
        "rankingIndex",
        "redactSecrets",
        "shareOverlays",
        "toolMaxTotalChars",
        "toolMaxTotalTokens",
    ]


def test_a_bad_ranking_index_is_a_warning_and_the_default() -> None:
    warnings: list[str] = []
    got = Settings().merged({"rankingIndex": "sometimes"}, "initializationOptions", warnings)
    assert got.ranking_index == "on-demand"
    assert warnings and "rankingIndex" in warnings[0]
    assert Settings().merged({"rankingIndex": "off"}, "x", []).ranking_index == "off"


# ---- environment --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "raw", "expected"),
    [
        ("READMANY_MAX_FILE_BYTES", "100", {"max_file_bytes": 100}),
        ("READMANY_CACHE_BYTES", "0", {"cache_bytes": 0}),
        ("READMANY_IDLE_TIMEOUT_SECONDS", "2.5", {"idle_timeout_seconds": 2.5}),
        ("READMANY_MCP_STRUCTURED_TEXT", "true", {"mcp_structured_text": True}),
        ("READMANY_RANKING_INDEX", "always", {"ranking_index": "always"}),
        ("READMANY_IDLE_TIMEOUT_SECONDS", "10", {"idle_timeout_seconds": 10.0}),
        ("READMANY_SHARE_OVERLAYS", "false", {"share_overlays": False}),
        ("READMANY_LOG_LEVEL", "DEBUG", {"log_level": "DEBUG"}),  # not JSON: a string
        ("READMANY_LOG_LEVEL", '"INFO"', {"log_level": "INFO"}),  # JSON string
        ("READMANY_TOOL_MAX_TOTAL_TOKENS", "60000", {"tool_max_total_tokens": 60000}),
        ("READMANY_TOOL_MAX_TOTAL_TOKENS", "1000", {"tool_max_total_tokens": 1000}),
        ("READMANY_TOOL_MAX_TOTAL_CHARS", "120000", {"tool_max_total_chars": 120000}),
    ],
)
def test_environment_overrides(variable: str, raw: str, expected: dict[str, Any]) -> None:
    settings, warnings = load_settings(environ={variable: raw})
    assert (changed(settings), warnings) == (expected, [])


def test_list_settings_from_the_environment() -> None:
    settings, warnings = load_settings(
        environ={
            "READMANY_DENY_PATTERNS": "*.secret,,private/",  # comma-separated, empty parts dropped
            "READMANY_IGNORE_FILE_NAMES": '[".x", ".y,z"]',  # a JSON array, taken as is
            "READMANY_DEFAULT_EXCLUDES": "",  # empty: no default excludes at all
        }
    )
    assert warnings == []
    assert settings.deny_patterns == ["*.secret", "private/"]
    assert settings.ignore_file_names == [".x", ".y,z"]
    assert settings.default_excludes == []


@pytest.mark.parametrize(
    ("variable", "raw", "message"),
    [
        ("READMANY_MAX_FILE_BYTES", "lots", "maxFileBytes: Expected `int`, got `str`"),
        ("READMANY_MAX_FILE_BYTES", "1.5", "maxFileBytes: Expected `int`, got `float`"),
        ("READMANY_SHARE_OVERLAYS", "1", "shareOverlays: Expected `bool`, got `int`"),
        ("READMANY_LOG_LEVEL", "3", "logLevel: Expected `str`, got `int`"),
        ("READMANY_DENY_PATTERNS", '{"a": 1}', "denyPatterns: Expected `array`, got `object`"),
        # below maxTotalTokens' smallest accepted value: no answer could carry its notices
        (
            "READMANY_TOOL_MAX_TOTAL_TOKENS",
            "999",
            "toolMaxTotalTokens: Expected `int` >= 1000 - at `$.toolMaxTotalTokens`",
        ),
        ("READMANY_TOOL_MAX_TOTAL_CHARS", "3999", "toolMaxTotalChars: Expected `int` >= 4000 - at"),
        ("READMANY_TOOL_MAX_TOTAL_CHARS", "lots", "toolMaxTotalChars: Expected `int`, got `str`"),
    ],
)
def test_a_bad_environment_value_warns_and_keeps_the_default(
    variable: str, raw: str, message: str
) -> None:
    settings, warnings = load_settings(environ={variable: raw})
    assert settings == Settings()
    assert len(warnings) == 1
    assert warnings[0].startswith(f"environment: ignoring setting {message}"), warnings


@pytest.mark.parametrize("key", ["redactSecrets", "rankingIndex", "maxFileBytes", "shareOverlays"])
def test_a_lone_surrogate_is_a_warning_and_the_default(key: str) -> None:
    """An environment value that is not UTF-8 (``READMANY_REDACT_SECRETS=$'\\xff'``
    reaches Python as ``"\\udcff"``) or a JSON ``"\\ud800"`` in initializationOptions:
    msgspec raised UnicodeEncodeError matching an enumerated value, and the CLI died
    with a traceback (the LSP server answered -32603 and kept no workspace folder)."""
    for value in ("\udcff", "\ud800"):
        warnings: list[str] = []
        got = Settings().merged({key: value, "cacheBytes": 7}, "initializationOptions", warnings)
        assert got == msgspec.structs.replace(Settings(), cache_bytes=7)
        assert warnings == [
            f"initializationOptions: ignoring setting {key}: not valid Unicode (a lone surrogate)"
        ]
    settings, warnings = load_settings(environ={"READMANY_REDACT_SECRETS": "\udcff"})
    assert settings == Settings() and len(warnings) == 1


def test_a_bad_value_spoils_only_its_own_setting() -> None:
    settings, warnings = load_settings(
        environ={"READMANY_MAX_FILE_BYTES": "lots", "READMANY_CACHE_BYTES": "7"}
    )
    assert changed(settings) == {"cache_bytes": 7}
    assert [w.split(":")[1] for w in warnings] == [" ignoring setting maxFileBytes"]


def test_other_readmany_variables_are_not_settings() -> None:
    environ = {"READMANY_TOKEN": "t", "READMANY_NO_DAEMON": "1", "READMANY_BOGUS": "x"}
    assert load_settings(environ=environ) == (Settings(), [])


def test_the_process_environment_is_the_default_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("READMANY_MAX_FILE_BYTES", "4096")
    assert load_settings()[0].max_file_bytes == 4096


# ---- initializationOptions over the environment -------------------------------------------

ENV_100 = {"READMANY_MAX_FILE_BYTES": "100"}


def test_options_win_over_the_environment() -> None:
    settings, warnings = load_settings({"maxFileBytes": 200}, environ=ENV_100)
    assert (settings.max_file_bytes, warnings) == (200, [])


def test_snake_case_keys_are_accepted_too() -> None:
    settings, warnings = load_settings({"max_file_bytes": 5, "shareOverlays": False}, environ={})
    assert (changed(settings), warnings) == ({"max_file_bytes": 5, "share_overlays": False}, [])


def test_unknown_option_keys_are_ignored_silently() -> None:
    """Other keys of initializationOptions (the token, request defaults) are not settings."""
    options = {"authToken": "x", "maxTotalChars": 5, "bogus": 1}
    assert load_settings(options, environ=ENV_100) == (load_settings(environ=ENV_100)[0], [])


@pytest.mark.parametrize(
    ("value", "got"),
    [("x", "str"), (None, "null"), (True, "bool"), (1.5, "float"), ([1], "array")],
)
def test_a_bad_option_warns_and_keeps_the_environment_value(value: Any, got: str) -> None:
    settings, warnings = load_settings({"maxFileBytes": value}, environ=ENV_100)
    assert settings.max_file_bytes == 100
    assert warnings == [
        "initializationOptions: ignoring setting maxFileBytes: "
        f"Expected `int`, got `{got}` - at `$.maxFileBytes`"
    ]


def test_list_options_replace_the_whole_list_and_are_not_split() -> None:
    settings, warnings = load_settings({"denyPatterns": ["*.secret"]}, environ={})
    assert (settings.deny_patterns, warnings) == (["*.secret"], [])
    settings, warnings = load_settings({"denyPatterns": "*.a,*.b"}, environ={})
    assert settings.deny_patterns == list(DEFAULT_DENY_PATTERNS)
    assert warnings[0].startswith("initializationOptions: ignoring setting denyPatterns")


def test_merged_leaves_the_original_alone() -> None:
    base = Settings(max_file_bytes=1)
    warnings: list[str] = []
    new = base.merged({"maxFileBytes": 2, "nope": 3}, "test", warnings)
    assert (base.max_file_bytes, new.max_file_bytes, warnings) == (1, 2, [])


# ---- a connection: environment, initializationOptions, didChangeConfiguration -------------


@pytest.fixture()
def service() -> Iterator[Service]:
    """A service whose own settings came from a READMANY_MAX_FILE_BYTES=100 environment."""
    s = Service(load_settings(environ=ENV_100)[0], watch=False, snapshots=False, warm_cache=False)
    yield s
    s.close()


def connection(
    service: Service, options: dict[str, Any], config: dict[str, Any] | None = None
) -> tuple[ReadManyServer, list[str]]:
    server = ReadManyServer(service, kind="test")
    server.init_options = options
    server.config = config or {}
    warnings: list[str] = []
    server.apply_settings(warnings)
    return server, warnings


def test_a_connection_starts_from_the_services_settings(service: Service) -> None:
    server, warnings = connection(service, {})
    assert (changed(server.settings), warnings) == ({"max_file_bytes": 100}, [])
    server.close()


def test_a_clis_environment_replaces_the_daemons(service: Service) -> None:
    """``initializationOptions.environment`` (sent by the CLI) stands in for the daemon's
    own environment: an empty one means the defaults, not the daemon's 100."""
    server, warnings = connection(
        service, {"environment": {"READMANY_CACHE_BYTES": "7", "HOME": "/x"}}
    )
    assert (changed(server.settings), warnings) == ({"cache_bytes": 7}, [])
    server.close()
    server, warnings = connection(service, {"environment": {}})
    assert (server.settings, warnings) == (Settings(), [])
    server.close()
    server, warnings = connection(service, {"environment": {"READMANY_CACHE_BYTES": "x"}})
    assert server.settings == Settings()
    assert warnings[0].startswith("environment: ignoring setting cacheBytes")
    server.close()


def test_configuration_wins_over_options_which_win_over_the_environment(
    service: Service,
) -> None:
    server, warnings = connection(
        service,
        {"environment": {"READMANY_MAX_FILE_BYTES": "300"}, "maxFileBytes": 200, "cacheBytes": 9},
        {"maxFileBytes": 400},
    )
    assert (changed(server.settings), warnings) == ({"max_file_bytes": 400, "cache_bytes": 9}, [])
    server.close()


def test_a_bad_configuration_value_keeps_the_options_value(service: Service) -> None:
    server, warnings = connection(service, {"maxFileBytes": 200}, {"maxFileBytes": "big"})
    assert server.settings.max_file_bytes == 200
    assert [w.partition(": Expected")[0] for w in warnings] == [
        "workspace/didChangeConfiguration: ignoring setting maxFileBytes"
    ]
    server.close()


def test_request_defaults_come_from_the_same_options(service: Service) -> None:
    server, warnings = connection(service, {"maxTotalChars": 5000, "logLevel": "INFO"})
    assert server.read_defaults == {"maxTotalChars": 5000}
    assert (server.settings.log_level, warnings) == ("INFO", [])
    server.close()
