"""``null`` is "not given" (PROTOCOL §2, issue 27): every optional member sent as
``null``, at any depth and in any spelling, is an absent one; a ``null`` required
member is still -32602 naming it."""

from __future__ import annotations

from typing import Any

import pytest

from readmany_daemon.errors import InvalidParams
from readmany_daemon.wire.decode import (
    decode_changed_since_params,
    decode_files_params,
    decode_read_params,
    decode_rescan_params,
    decode_status_params,
    decode_stop_daemon_params,
)
from readmany_daemon.wire.fold import drop_nulls, fold_read_params
from readmany_daemon.wire.messages import ReadManyParams


def test_every_optional_read_field_may_be_null() -> None:
    import msgspec

    every = {f.encode_name: None for f in msgspec.structs.fields(ReadManyParams)}
    params = decode_read_params({**every, "paths": ["a.txt"]})
    assert params == decode_read_params({"paths": ["a.txt"]})


def test_the_issue_case_and_nested_nulls_in_every_spelling() -> None:
    raw: dict[str, Any] = {
        "paths": ["a.txt", {"path": "b.txt", "offset": None, "cells": None}],
        "files": [{"path": "c.txt", "offset": None, "limit": None, "column": None}],
        "file_filtering_options": {"respect_git_ignore": None, "respect_gemini_ignore": None},
        "per_file_max_lines": None,
        "max_total_chars": None,
        "known": None,
    }
    params = decode_read_params(raw)
    assert params.files[0].offset is None and params.files[0].limit is None
    assert params.per_file_max_lines == 200 and params.max_total_chars == 200000
    assert params.file_filtering_options.respect_git_ignore is True
    assert decode_read_params({"paths": ["a.txt"], "files": None}).files == []
    assert decode_read_params({"paths": ["a"], "fileFilteringOptions": None}).paths == ["a"]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"paths": ["a"], "files": [{"path": None}]}, "$.files[0].path"),
        ({"paths": [{"path": None, "offset": 2}]}, "$.paths[0].path"),
        ({"paths": ["a"], "known": [{"path": "a", "sha256": None}]}, "$.known[0].sha256"),
        ({"paths": ["a"], "known": [{"path": None, "sha256": "0" * 64}]}, "$.known[0].path"),
        ({"paths": [None]}, "$.paths[0]"),
    ],
)
def test_a_null_required_member_is_named(raw: Any, field: str) -> None:
    with pytest.raises(InvalidParams) as exc:
        decode_read_params(raw)
    assert exc.value.field == field
    assert field.rsplit(".", 1)[-1].split("[")[0] in str(exc.value)


def test_the_other_methods_take_null_as_absent() -> None:
    files = decode_files_params(
        {"patterns": None, "root": None, "exclude": None, "file_filtering_options": None}
    )
    assert files.patterns == [] and files.file_filtering_options.respect_git_ignore
    nested = decode_files_params({"fileFilteringOptions": {"respectGitIgnore": None}})
    assert nested.file_filtering_options.respect_git_ignore is True
    assert decode_rescan_params({"root": None}).root is None
    assert decode_stop_daemon_params({"reason": None}).reason is None
    decode_status_params({"anything": None})
    with pytest.raises(InvalidParams) as exc:
        decode_changed_since_params({"clock": None})
    assert exc.value.field == "$.clock"


def test_fold_drops_nulls_without_copying_what_has_none() -> None:
    raw = {"paths": ["a"], "files": [{"path": "b"}]}
    assert drop_nulls(raw) is raw
    assert drop_nulls({"a": [{"b": None, "c": [None]}]}) == {"a": [{"c": [None]}]}
    assert fold_read_params({"paths": ["a"], "max_total_files": None}) == {"paths": ["a"]}
