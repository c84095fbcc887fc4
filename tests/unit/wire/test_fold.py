"""``wire.fold``: the folding of request spellings, without ``re`` or ``json``, gives
what the regular-expression and ``json`` forms of the same rules give."""

from __future__ import annotations

import json
import random
import re

import pytest

from readmany_daemon.errors import InvalidParams
from readmany_daemon.wire import fold

_SNAKE = re.compile(r"_([a-z])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_PLAIN = re.compile(r"[A-Za-z0-9_]+")


def _random_text(rng: random.Random) -> str:
    alphabet = 'ab_Z9 _-"\\\x00\n\t\x1f\x7f\x85\x9f\xa0\u2028\u2029éü漢🎉_'
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))


def test_matches_the_regular_expression_rules() -> None:
    rng = random.Random(16)
    for _ in range(5000):
        text = _random_text(rng)
        assert fold.one_line(text) == _CONTROL.sub(lambda m: json.dumps(m.group())[1:-1], text)
        plain = f"$.{text}" if _PLAIN.fullmatch(text) else None
        assert fold.member("$", text) == (plain or f"$[{json.dumps(text, ensure_ascii=False)}]")
        assert fold._camel(text) == _SNAKE.sub(lambda m: m.group(1).upper(), text)


def test_aliases_and_conflicts() -> None:
    folded = fold.fold_read_params(
        {"max_total_chars": 5, "file_filtering_options": {"respect_gemini_ignore": False}}
    )
    assert folded == {"maxTotalChars": 5, "fileFilteringOptions": {"respectIgnoreFiles": False}}
    with pytest.raises(InvalidParams) as caught:
        fold.fold_read_params({"maxTotalChars": 1, "max_total_chars": 2})
    assert caught.value.field == "$.max_total_chars"
    with pytest.raises(InvalidParams) as caught:
        fold.fold_read_params({"paths": "a.py"})
    assert caught.value.field == "$.paths" and "Expected `array`, got `str`" in str(caught.value)


def test_one_line_escapes_every_character_that_ends_a_line() -> None:
    # str.splitlines ends a line at C0 separators, NEL (U+0085) and U+2028/U+2029 too
    breaks = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    text = fold.one_line(f"unknown field `a{breaks}b`")
    assert len(text.splitlines()) == 1 and "\\u0085" in text
