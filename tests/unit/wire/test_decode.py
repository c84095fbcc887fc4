"""Decoding of ReadManyParams: aliases of the four reference shapes, -32602 naming fields."""

from __future__ import annotations

import pytest

from readmany_daemon.errors import InvalidParams, jsonrpc_code
from readmany_daemon.wire.decode import decode_files_params, decode_read_params
from readmany_daemon.wire.messages import FileSpec


def test_seed_003_snake_case_aliases_fold() -> None:
    p = decode_read_params(
        {
            "paths": ["src/**/*.ts"],
            "per_file_max_lines": 10,
            "per_file_max_chars": 99,
            "max_total_files": 3,
            "max_total_chars": 1000,
            "prefer_full_read": True,
            "file_filtering_options": {"respect_git_ignore": False, "respect_sii_ignore": False},
        }
    )
    assert (p.per_file_max_lines, p.per_file_max_chars, p.max_total_files, p.max_total_chars) == (
        10,
        99,
        3,
        1000,
    )
    assert p.prefer_full_read
    assert not p.file_filtering_options.respect_git_ignore
    assert not p.file_filtering_options.respect_ignore_files


@pytest.mark.parametrize(
    "alias", ["respect_gemini_ignore", "respect_qwen_ignore", "respectIgnoreFiles"]
)
def test_ignore_file_aliases(alias: str) -> None:
    p = decode_read_params({"paths": ["a"], "fileFilteringOptions": {alias: False}})
    assert not p.file_filtering_options.respect_ignore_files


def test_seed_001_files_with_windows_and_seed_002_globs() -> None:
    p = decode_read_params(
        {
            "files": [{"path": "src/a.ts"}, {"path": "src/b.ts", "offset": 40, "limit": 120}],
            "stopOnError": False,
        }
    )
    assert p.files == [FileSpec("src/a.ts"), FileSpec("src/b.ts", 40, 120)]
    p = decode_read_params(
        {
            "paths": ["**/*.js"],
            "include": ["**/*.test.js"],
            "useDefaultExcludes": False,
            "exclude": ["temp/"],
        }
    )
    assert not p.use_default_excludes and p.include == ["**/*.test.js"]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({}, "$.paths"),
        ({"paths": []}, "$.paths"),
        ({"paths": [3]}, "$.paths[0]"),
        ({"paths": [""]}, "$.paths[0]"),
        ({"files": [{"path": "a", "offset": 0}]}, "$.files[0].offset"),
        ({"files": [{"path": "a", "limit": -1}]}, "$.files[0].limit"),
        ({"paths": ["a"], "maxTotalFiles": "20"}, "$.maxTotalFiles"),
        ({"paths": ["a"], "format": "yaml"}, "$.format"),
        ({"paths": ["a"], "packing": "random"}, "$.packing"),
        ({"paths": ["a"], "perFileMaxLines": 5, "per_file_max_lines": 6}, "$.per_file_max_lines"),
        ([1, 2], "$"),
    ],
)
def test_invalid_params_name_the_field(raw: object, field: str) -> None:
    with pytest.raises(InvalidParams) as info:
        decode_read_params(raw)
    assert info.value.field == field
    assert field.split(".")[-1].split("[")[0].lstrip("$") in str(info.value) or field == "$"
    assert jsonrpc_code(info.value) == -32602


def test_unknown_field_is_named() -> None:
    with pytest.raises(InvalidParams, match="bogus"):
        decode_read_params({"paths": ["a"], "bogus": 1})


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        # A member sent under a snake_case spelling is named as sent, at any depth.
        ({"paths": ["a"], "max_total_tokens": "x"}, "$.max_total_tokens", "at `$.max_total"),
        ({"paths": ["a"], "maxTotalTokens": "x"}, "$.maxTotalTokens", "at `$.maxTotalTokens`"),
        (
            {"paths": ["a"], "file_filtering_options": {"respect_git_ignore": 1}},
            "$.file_filtering_options.respect_git_ignore",
            "at `$.file_filtering_options.respect_git_ignore`",
        ),
        (
            {"paths": ["a"], "fileFilteringOptions": {"respect_git": 1}},
            "$.fileFilteringOptions.respect_git",
            "unknown field `respect_git` - at `$.fileFilteringOptions`",
        ),
        (
            {"paths": ["a"], "file_filtering_options": {"respect_git": 1}},
            "$.file_filtering_options.respect_git",
            "unknown field `respect_git` - at `$.file_filtering_options`",
        ),
        # An enumerated value holding a lone surrogate is shown as sent, JSON-escaped.
        ({"paths": ["a"], "format": "x\ud800y"}, "$.format", "Invalid enum value 'x\\ud800y'"),
        ({"paths": ["a"], "packing": "\udfff"}, "$.packing", "Invalid enum value '\\udfff'"),
        ({"paths": ["a"], "order": "\t\ud800"}, "$.order", "Invalid enum value '\\t\\ud800'"),
        ({"paths": ["a"], "format": "é\ud800"}, "$.format", "Invalid enum value 'é\\ud800'"),
        (
            {"paths": ["a"], "file_filtering_options": "x"},
            "$.file_filtering_options",
            "at `$.file_filtering_options`",
        ),
        (
            {"changes": {"base": "\ud800"}},
            "$.changes.base",
            "a lone surrogate in a revision - at `$.changes.base`",
        ),
    ],
)
def test_a_refusal_names_the_member_as_the_client_sent_it(
    raw: dict[str, object], field: str, words: str
) -> None:
    with pytest.raises(InvalidParams) as info:
        decode_read_params(raw)
    assert info.value.field == field
    assert words in str(info.value) and "\ufffd" not in str(info.value)


def test_a_files_refusal_names_the_member_as_sent() -> None:
    with pytest.raises(InvalidParams) as info:
        decode_files_params({"patterns": ["a"], "file_filtering_options": {"bad_key": 1}})
    assert info.value.field == "$.file_filtering_options.bad_key"
