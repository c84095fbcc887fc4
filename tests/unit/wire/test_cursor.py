"""wire.cursor: the nextCursor token both ways, and decode_read_request at the edge."""

from __future__ import annotations

import base64
import json
import re
import string
import zlib
from typing import Any

import msgspec
import pytest

from readmany_daemon.errors import InvalidParams, jsonrpc_code
from readmany_daemon.wire.cursor import (
    MAX_CURSOR_CHARS,
    SINCE_DIGITS,
    VERSION,
    Continuation,
    Position,
    ReadRequest,
    cursor_digest,
    cursor_stamp,
    decode_cursor,
    decode_read_request,
    encode_cursor,
    encode_position,
    payload_check,
    time_check,
)
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import ReadManyParams

#: What a token may hold: base64url without padding, then the page time's digits.
_TOKEN = re.compile(rf"[A-Za-z0-9_-]+\.[0-9]{{{SINCE_DIGITS + 6}}}")

ROOT = "/home/u/tree"
AT = Position(after=(0, "src/b.py"), beyond=[(0, "src/x.py")], count=2, total=7, since=5)


def _payload(token: str) -> Any:
    """The JSON a token carries (raw deflate of the codec's JSON array, before the
    page time)."""
    body = token.rpartition(".")[0]
    packed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    return json.loads(zlib.decompress(packed, -15))


def _token_of(payload: Any, time: str | None = None, check: bool = True) -> str:
    """A token of ``payload`` as ``wire.cursor`` writes one (``check``: with the right
    checks after the deflated JSON and after the time, page time 0 when ``time`` is
    None), so that what refuses it is its payload."""
    raw = json.dumps(payload).encode()
    sealed = payload_check(raw)
    packed = zlib.compress(raw)[2:-4] + (sealed if check else b"")
    if time is None:
        zero = "0" * SINCE_DIGITS
        time = "." + zero + time_check(sealed, zero)
    return base64.urlsafe_b64encode(packed).decode().rstrip("=") + time


# ---------------------------------------------------------------------------- the codec


def test_the_stamp_is_what_encode_cursor_carries() -> None:
    """A request's stamp, made once, gives the tokens and digest made from its params."""
    params = decode_read_params({"paths": ["a"], "maxTotalFiles": 2, "root": "tree"})
    stamp = cursor_stamp(ROOT, params)
    assert stamp.digest == cursor_digest(ROOT, params)
    assert stamp.asked == {"paths": ["a"], "maxTotalFiles": 2, "root": "tree"}
    for carry in (False, True):
        want = encode_cursor(params, ROOT, AT, carry=carry)
        assert encode_position(stamp, AT, carry=carry) == want


def test_round_trip_keeps_the_position() -> None:
    params = decode_read_params({"paths": ["a.txt", "src/*.py"], "maxTotalFiles": 2})
    position = Position(
        after=(1, "src/b.py"),
        beyond=[(2, "z.md"), (1, "src/x.py"), (1, "src/xy.py"), (3, "")],
        resume=((1, "src/c.py"), 41, None),
        count=12,
        total=(1 << 64) - 1,
        since=1_700_000_000_123_456_789,
    )
    got = decode_cursor(encode_cursor(params, ROOT, position))
    assert got == Continuation(
        params={"paths": ["a.txt", "src/*.py"], "maxTotalFiles": 2},
        digest=cursor_digest(ROOT, params),
        position=Position(
            after=(1, "src/b.py"),
            beyond=[(1, "src/x.py"), (1, "src/xy.py"), (2, "z.md"), (3, "")],
            resume=((1, "src/c.py"), 41, None),
            count=12,
            total=(1 << 64) - 1,
            since=1_700_000_000_123_456_789,
        ),
    )


def test_round_trip_of_a_resume_with_a_limit_and_no_position_yet() -> None:
    params = ReadManyParams(paths=["big.log", "b"])
    got = decode_cursor(encode_cursor(params, ROOT, Position(resume=((0, ""), 201, 50))))
    assert got.position == Position(after=None, resume=((0, ""), 201, 50))


@pytest.mark.parametrize("column", [None, 7])
def test_round_trip_of_a_resume_with_the_cut_files_hash(column: int | None) -> None:
    params = decode_read_params({"paths": ["src/**"]})
    at = Position(resume=((0, "a.py"), 201, None), resume_column=column, resume_sha256="0" * 16)
    assert decode_cursor(encode_cursor(params, ROOT, at)).position == at


def test_token_is_ascii_base64url_without_padding() -> None:
    params = decode_read_params(
        {"paths": ["café/naïve.txt", "日本/*.md", "x\udcff.bin"], "root": "проект"}
    )
    position = Position(after=(1, "日本/a.md"), beyond=[(2, "x\udcff.bin")])
    token = encode_cursor(params, ROOT, position)
    assert token.isascii()
    assert _TOKEN.fullmatch(token)
    got = decode_cursor(token)
    assert got.params == {"paths": ["café/naïve.txt", "日本/*.md", "x\udcff.bin"], "root": "проект"}
    assert got.position == position


def test_payload_format() -> None:
    params = decode_read_params({"paths": ["a", "d/"], "format": "xml"})
    token = encode_cursor(params, ROOT, AT)
    digest = cursor_digest(ROOT, params)
    assert _payload(token) == [
        VERSION,
        {"paths": ["a", "d/"], "format": "xml"},
        digest,
        [0, "src/b.py"],
        [0, 0, "src/x.py"],
        None,
        2,
        7,
    ]
    body, _, time = token.rpartition(".")
    assert time[:SINCE_DIGITS] == "00000000000000000005" and len(time) == SINCE_DIGITS + 6
    sealed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))[-6:]
    assert time[SINCE_DIGITS:] == time_check(sealed, time[:SINCE_DIGITS])


def test_digest_binds_root_and_request_but_not_how_the_root_was_named() -> None:
    a = decode_read_params({"paths": ["a"], "maxTotalFiles": 3})
    named = decode_read_params({"paths": ["a"], "maxTotalFiles": 3, "root": "tree"})
    assert cursor_digest(ROOT, a) == cursor_digest(ROOT, named)
    assert cursor_digest(ROOT, a) != cursor_digest("/home/u/other", a)
    assert cursor_digest(ROOT, a) != cursor_digest(ROOT, decode_read_params({"paths": ["b"]}))


def test_cursor_never_carries_default_valued_params() -> None:
    params = decode_read_params(
        {
            "paths": ["a"],
            "perFileMaxLines": 200,  # the default, sent explicitly
            "recursive": True,  # the default
            "fileFilteringOptions": {"respectGitIgnore": True},  # the default
            "maxTotalChars": 999,
            "root": "tree",
            "cursor": "ignored-here",
        }
    )
    token = encode_cursor(params, ROOT, AT)
    assert decode_cursor(token).params == {"paths": ["a"], "maxTotalChars": 999, "root": "tree"}


def test_non_default_filtering_options_are_carried_whole() -> None:
    params = decode_read_params(
        {"paths": ["a"], "file_filtering_options": {"respect_git_ignore": False}}
    )
    got = decode_cursor(encode_cursor(params, ROOT, AT))
    assert got.params == {
        "paths": ["a"],
        "fileFilteringOptions": {"respectGitIgnore": False, "respectIgnoreFiles": True},
    }


def test_a_request_too_large_to_carry_is_left_out_and_must_be_sent_beside() -> None:
    paths = [f"some/rather/long/folder/file_{i:04}.py" for i in range(300)]
    params = decode_read_params({"paths": paths, "maxTotalFiles": 5})
    token = encode_cursor(params, ROOT, AT)
    assert len(token) <= MAX_CURSOR_CHARS
    assert decode_cursor(token).params is None
    with pytest.raises(InvalidParams) as info:
        decode_read_request({"cursor": token})
    assert info.value.field == "$.cursor"
    req = decode_read_request({"paths": paths, "maxTotalFiles": 5, "cursor": token})
    assert req.params.paths == paths and req.params.cursor is None
    assert req.continuation is not None
    assert req.continuation.digest == cursor_digest(ROOT, req.params)


def _tampered() -> list[str]:
    """A real cursor with characters base64's lenient decoder skips: four spaces, four
    ``=``, four ``!``, two line breaks (each would decode to the same payload were it not
    refused first), and standard base64's ``+`` and ``/`` in place of ``-`` and ``_``."""
    good = _token_of([VERSION, {"paths": [",JWy[):~0N$g"]}, "d", None, [], None, 0, 0])
    body, _, time = good.rpartition(".")
    assert "-" in body or "_" in body
    return [
        body[:4] + "    " + body[4:] + "." + time,
        body + "====." + time,
        body[:8] + "!!!!" + body[8:] + "." + time,
        body[:4] + "\r\n\r\n" + body[4:] + "." + time,
        body.replace("-", "+").replace("_", "/") + "." + time,
    ]


@pytest.mark.parametrize(
    "token",
    [
        "not-a-cursor",
        "!!!",
        "WzEse30",  # base64 of a truncated array
        "aGVsbG8",  # base64 of "hello"
        "é",
        _token_of([VERSION]),
        _token_of({"version": VERSION}),
        _token_of([VERSION, {}, "d", [0, 1], [], None, 0, 0]),
        _token_of([VERSION, [], "d", None, [], None, 0, 0]),
        _token_of([VERSION, {}, "d", None, [1, 2, "x"], None, 0, 0]),  # shares past ""
        _token_of([VERSION, {}, "d", None, [], None, "x", 0]),
        _token_of([VERSION, {}, "d", None, [], None, 0, 0], ""),  # no page time
        _token_of([VERSION, {}, "d", None, [], None, 0, 0], ".5"),  # too few digits
        _token_of([VERSION, {}, "d", None, [], None, 0, 0], "." + "x" * SINCE_DIGITS),
        _token_of([VERSION, {}, "d", None, [], None, 0, 0], "." + "٣" * SINCE_DIGITS),
        base64.urlsafe_b64encode(zlib.compress(b"[" * 60000)[2:-4]).decode(),
        *_tampered(),
    ],
    ids=lambda t: t[:12],
)
def test_bad_token_is_invalid_params_naming_cursor(token: str) -> None:
    with pytest.raises(InvalidParams) as info:
        decode_cursor(token)
    assert info.value.field == "$.cursor"
    assert str(info.value) == "invalid params: cursor is not a cursor readmany issued"
    assert jsonrpc_code(info.value) == -32602


def test_token_of_another_version_is_invalid_params_naming_cursor() -> None:
    old = [
        _token_of([1, {"paths": ["a"]}, [[0, 1]], {}], check=False),
        _token_of([2, {}, "d", None, [], None, 0, 0, 5], "", check=False),  # the time inside
        _token_of([3, {}, "d", None, [], None, 0, 0], check=False),  # no check
    ]
    for token in old:
        with pytest.raises(InvalidParams) as info:
            decode_cursor(token)
        assert info.value.field == "$.cursor"
        assert str(info.value) == "invalid params: cursor from another version"


def test_the_page_time_never_moves_the_tokens_length_or_o200k_count() -> None:
    """The tokens of one position at any page time (a day's nanoseconds, the epoch,
    the stand-in an answer is packed against) have one length and one o200k count, in
    every format's framing: an answer packed against one holds any other in the same
    budget. With the time inside the compressed payload, the counts moved by up to
    ~25 tokens and the lengths by a few characters."""
    import random

    from readmany_daemon.content import tokens
    from readmany_daemon.engine.paging import STAND_IN_SINCE

    rng = random.Random(7)
    for _ in range(150):
        paths = [
            f"d{rng.randrange(6)}/{'n' * rng.randrange(40)}f{rng.randrange(30):02}.py"
            for _ in range(rng.randrange(1, 40))
        ]
        params = decode_read_params({"paths": paths, "maxTotalTokens": 5000})
        position = Position(
            after=(rng.randrange(len(paths)), ""),
            resume=((0, ""), rng.randrange(1, 500), None),
            count=rng.randrange(50),
            total=rng.getrandbits(64),
        )
        times = [0, STAND_IN_SINCE, *(rng.getrandbits(61) for _ in range(6))]
        made = [
            encode_cursor(params, ROOT, msgspec.structs.replace(position, since=t)) for t in times
        ]
        assert len({len(t) for t in made}) == 1
        for frame in ("{}", 'with cursor="{}" and', '"nextCursor": "{}"}}', "<cursor>{}</cursor>"):
            assert len({tokens.count(frame.format(t)) for t in made}) == 1, made
        assert [decode_cursor(t).position.since for t in made] == times


# ------------------------------------------------------------------ decode_read_request


def test_decode_read_request_without_cursor() -> None:
    req = decode_read_request({"paths": ["a.txt"], "max_total_files": 3, "format": "json"})
    assert isinstance(req, ReadRequest)
    assert req.continuation is None
    assert req.params.paths == ["a.txt"]
    assert req.params.max_total_files == 3
    assert req.params.format == "json"
    assert req.params.cursor is None


def test_decode_read_request_with_cursor_answers_the_stored_request() -> None:
    first = decode_read_request(
        {"paths": ["a", "b", "c"], "maxTotalFiles": 1, "root": "tree", "lineNumbers": True}
    )
    token = encode_cursor(first.params, ROOT, AT)
    req = decode_read_request({"cursor": token})
    assert req.continuation == Continuation(
        params={"paths": ["a", "b", "c"], "maxTotalFiles": 1, "root": "tree", "lineNumbers": True},
        digest=cursor_digest(ROOT, first.params),
        position=AT,
    )
    assert req.params.paths == ["a", "b", "c"]
    assert req.params.max_total_files == 1
    assert req.params.root == "tree"
    assert req.params.line_numbers is True
    assert req.params.cursor is None


def test_the_root_a_cursor_request_names_wins_over_the_cursors() -> None:
    """Adapters resolve the root from ``ReadRequest.params``: the request's ``root`` when
    it names one (as the adapters did before the edge decoded once), else the cursor's."""
    named = decode_read_request({"paths": ["a"], "maxTotalFiles": 1, "root": "tree"})
    unnamed = decode_read_request({"paths": ["a"], "maxTotalFiles": 1})
    with_root = encode_cursor(named.params, ROOT, AT)
    without = encode_cursor(unnamed.params, ROOT, AT)
    assert decode_read_request({"cursor": with_root}).params.root == "tree"
    assert decode_read_request({"cursor": without}).params.root is None
    assert decode_read_request({"cursor": without, "root": "/abs"}).params.root == "/abs"
    assert decode_read_request({"cursor": with_root, "root": "/abs"}).params.root == "/abs"


def test_cursor_with_the_same_request_is_accepted() -> None:
    first = decode_read_request({"paths": ["*.txt"], "maxTotalFiles": 2})
    token = encode_cursor(first.params, ROOT, AT)
    req = decode_read_request({"paths": ["*.txt"], "maxTotalFiles": 2, "cursor": token})
    assert req.continuation is not None
    assert req.continuation.position == AT


@pytest.mark.parametrize(
    ("other", "field"),
    [
        ({"paths": ["other/*.md"]}, "$.paths"),
        ({"files": [{"path": "a.txt", "offset": 3}]}, "$.files"),
        ({"include": ["**/*.py"]}, "$.include"),
    ],
)
def test_cursor_with_another_request_names_cursor(other: dict[str, Any], field: str) -> None:
    first = decode_read_request({"paths": ["*.txt"]})
    token = encode_cursor(first.params, ROOT, AT)
    with pytest.raises(InvalidParams) as info:
        decode_read_request({**other, "cursor": token})
    assert info.value.field == "$.cursor"
    assert jsonrpc_code(info.value) == -32602
    assert f"$.cursor continues another request ({field} differs)" in str(info.value)


def test_decode_read_request_with_a_bad_cursor_names_cursor() -> None:
    with pytest.raises(InvalidParams) as info:
        decode_read_request({"cursor": "not-a-cursor"})
    assert info.value.field == "$.cursor"


def test_request_with_nothing_to_read_names_paths() -> None:
    with pytest.raises(InvalidParams) as info:
        decode_read_request({"cursor": ""})
    assert info.value.field == "$.paths"


def test_defaults_fill_what_the_request_leaves_out() -> None:
    defaults = {"perFileMaxLines": 50, "fileFilteringOptions": {"respectGitIgnore": False}}
    req = decode_read_request({"paths": ["a"]}, defaults)
    assert req.params.per_file_max_lines == 50
    assert req.params.file_filtering_options.respect_git_ignore is False
    assert req.params.file_filtering_options.respect_ignore_files is True


def test_request_wins_over_defaults_and_filtering_options_merge_by_key() -> None:
    defaults = {
        "perFileMaxLines": 50,
        "format": "xml",
        "fileFilteringOptions": {"respectGitIgnore": False},
    }
    req = decode_read_request(
        {
            "paths": ["a"],
            "per_file_max_lines": 7,
            "fileFilteringOptions": {"respect_qwen_ignore": False},
        },
        defaults,
    )
    assert req.params.per_file_max_lines == 7
    assert req.params.format == "xml"
    assert req.params.file_filtering_options.respect_git_ignore is False
    assert req.params.file_filtering_options.respect_ignore_files is False


def test_a_cursor_carries_the_defaults_its_request_was_answered_with() -> None:
    first = decode_read_request({"paths": ["a"]}, {"perFileMaxLines": 50})
    token = encode_cursor(first.params, ROOT, AT)
    assert decode_cursor(token).params == {"paths": ["a"], "perFileMaxLines": 50}
    # The continuation answers the stored request: today's defaults do not leak in.
    req = decode_read_request({"cursor": token}, {"perFileMaxLines": 9, "format": "xml"})
    assert req.params.per_file_max_lines == 50
    assert req.params.format == "separator"


def test_a_cursor_changed_in_any_one_character_is_refused() -> None:
    """A cursor mangled on its way back (a model copying 400 characters gets one wrong)
    is refused naming ``$.cursor``, never read as another place that skips files: the
    check after the payload covers its JSON. (A change to bits deflate or base64 do not
    use, such as the last character's low bits, decodes to the same cursor.)"""
    params = decode_read_params({"paths": ["src/**/*.py"], "maxTotalTokens": 5000})
    position = Position(
        after=(0, "src/attr/_compat.py"),
        beyond=[(0, "src/attr/_make.py"), (0, "src/attr/validators.py")],
        resume=((0, "src/attr/_funcs.py"), 120, None),
        count=6,
        total=6091,
        since=1_796_535_608_664_705_280,
    )
    token = encode_cursor(params, ROOT, position)
    original = decode_cursor(token)
    body, _, time = token.rpartition(".")
    alphabet = string.ascii_letters + string.digits + "-_"
    accepted = 0
    for at in range(len(body)):
        for other in alphabet:
            if other == body[at]:
                continue
            edited = body[:at] + other + body[at + 1 :] + "." + time
            try:
                got = decode_cursor(edited)
            except InvalidParams as exc:
                assert exc.field == "$.cursor"
                continue
            assert got == original, (at, other)
            accepted += 1
    assert accepted < len(body)  # nearly every edit is refused


def test_a_changed_page_time_is_refused() -> None:
    """The page time's digits are checked with the payload: a cursor whose time was
    changed (an hour later: files created in the delivered part go unnamed) is
    refused naming ``$.cursor``."""
    params = decode_read_params({"paths": ["src/**/*.py"]})
    token = encode_cursor(params, ROOT, Position(after=(0, "src/a.py"), since=10**18))
    body, _, time = token.rpartition(".")
    later = str(int(time[:SINCE_DIGITS]) + 3_600 * 10**9).zfill(SINCE_DIGITS)
    for edited in (later + time[SINCE_DIGITS:], time[:-1] + str((int(time[-1]) + 1) % 10)):
        with pytest.raises(InvalidParams) as info:
            decode_cursor(f"{body}.{edited}")
        assert info.value.field == "$.cursor"
    assert decode_cursor(token).position.since == 10**18
