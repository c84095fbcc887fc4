"""Token budgets (issue 13 item 2, engine side): the o200k counter, ``maxTotalTokens``,
``perFileMaxTokens`` and ``summary.estimatedTokens``."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.content import tokens
from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine import budget as budget_mod
from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.items import Piece
from readmany_daemon.engine.notices import Notices
from readmany_daemon.engine.render import render_json
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code, InvalidParams, Status, jsonrpc_code
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import FileResult
from tests.helpers import write_tree

FORMATS = ["separator", "heredoc", "xml", "json"]

SAMPLE = (
    "def main() -> None:\n    print('héllo, wörld')  # 日本語のコメント 🎉\n"
    "<|endoftext|> <|fim_prefix|> special-token text counts as ordinary text\n"
    "\t\tmixed   whitespace\r\n" + "x" * 300 + "\n"
)


def public_count(text: str) -> int:
    return tokens._public_counter()(text)


def test_fast_path_agrees_with_the_public_api() -> None:
    """The compiled module loaded alone counts as the package's public API does."""
    assert tokens.counter_kind() == "binding"
    rng = random.Random(7)
    samples = [SAMPLE, "", "<|endoftext|>", "a\udcffb"[:1], Path(__file__).read_text()]
    samples += [
        "".join(rng.choice(SAMPLE) for _ in range(rng.randrange(1, 400))) for _ in range(50)
    ]
    for text in samples:
        assert tokens.count(text) == public_count(text), text[:40]
    assert tokens.count("<|endoftext|>") == 7  # ordinary text, not the one special token


def test_the_public_api_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_count", None)
    monkeypatch.setattr(tokens, "_binding_counter", lambda: None)
    assert tokens.counter_kind() == "public"
    assert tokens.count(SAMPLE) == public_count(SAMPLE)


def test_names_that_are_not_utf8_are_counted_as_sent() -> None:
    assert tokens.count("a\udcffb.txt") == tokens.count("a\ufffdb.txt")


def test_the_boundary_margin_bounds_concatenation() -> None:
    """Sum of the parts' counts plus the margin a boundary is never below the whole."""
    text = Path(__file__).read_text() + SAMPLE * 3
    rng = random.Random(3)
    for _ in range(3000):
        i = rng.randrange(1, len(text))
        a, b = text[max(0, i - rng.randrange(1, 50)) : i], text[i : i + rng.randrange(1, 50)]
        assert tokens.count(a + b) <= tokens.count(a) + tokens.count(b) + tokens.BOUNDARY_MARGIN


def test_the_cli_help_does_not_load_the_counter() -> None:
    code = (
        "import sys\n"
        "from readmany_daemon import cli\n"
        "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in sys.modules if 'bpe' in m]\n"
        "assert not loaded, loaded\n"
        "from readmany_daemon.content import tokens\n"
        "assert tokens._count is None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=60)


# ---------------------------------------------------------------------------- params


def test_max_total_tokens_below_1000_is_invalid_params() -> None:
    assert decode_read_params({"paths": ["a"], "maxTotalTokens": 1000}).max_total_tokens == 1000
    assert decode_read_params({"paths": ["a"], "per_file_max_tokens": 5}).per_file_max_tokens == 5
    with pytest.raises(InvalidParams) as info:
        decode_read_params({"paths": ["a"], "maxTotalTokens": 999})
    assert jsonrpc_code(info.value) == -32602
    assert "maxTotalTokens" in str(info.value)


# ---------------------------------------------------------------------------- budgets


def make_tree(root: Path, n: int = 40, seed: int = 1) -> None:
    """``n`` files of mixed words (unicode, markup, quotes) and one long line, dated an
    hour back (so the content cache trusts them at once)."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "γάμμα", "δ", "日本", "🎉", "x = 1", "<tag>", "]]>", '"q"', "\\"]
    files: dict[str, str] = {}
    for i in range(n):
        lines = [
            " ".join(rng.choice(words) for _ in range(rng.randrange(1, 30)))
            for _ in range(rng.randrange(1, 120))
        ]
        files[f"src/f{i:03}.txt"] = "\n".join(lines) + "\n"
    files["src/long.txt"] = "word " * 30000  # one long line
    write_tree(root, files)
    past = time.time_ns() - 3600 * 10**9
    for name in files:
        os.utime(root / name, ns=(past, past))


def ask(ws: Workspace, **params: Any) -> Any:
    return answer(ws, decode_read_params(params))


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    make_tree(tmp_path)
    return Workspace.open(str(tmp_path), Settings(), cache=ContentCache(64 << 20))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("limit", [1000, 1500, 4000, 20000])
def test_max_total_tokens_bounds_the_whole_answer(ws: Workspace, fmt: str, limit: int) -> None:
    r = ask(ws, paths=["src/**"], format=fmt, maxTotalTokens=limit, maxTotalChars=10**7)
    assert tokens.count(r.llm_content) <= r.summary.estimated_tokens <= limit
    cut = [f for f in r.files if f.status == Status.PARTIAL]
    assert len(cut) <= 1
    if cut:
        assert cut[0].code == Code.BUDGET and r.packing.partial_included_path == cut[0].path
    assert r.summary.read >= 1  # something fits in each of these budgets
    assert r.next_cursor is not None and r.summary.omitted > 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_cut_file_continues(ws: Workspace, fmt: str) -> None:
    """The token budget cuts the last file that fits as the chars budget does: partial,
    code ``budget``, the continuation notice, ``nextOffset``; the cursor resumes it."""
    r = ask(ws, paths=["src/f000.txt", "src/long.txt"], format=fmt, maxTotalTokens=3000)
    first, cut = r.files
    assert first.status == Status.OK
    assert (cut.status, cut.code) == (Status.PARTIAL, Code.BUDGET)
    assert cut.next_column is not None  # a long line cut short, continued in it
    assert f"column={cut.next_column}" in r.llm_content.replace("\\", "")
    assert tokens.count(r.llm_content) <= 3000


def test_estimated_tokens_is_an_upper_bound_close_to_the_count(ws: Workspace) -> None:
    for fmt in FORMATS:
        r = ask(ws, paths=["src/**"], format=fmt, maxTotalFiles=100, maxTotalChars=10**6)
        exact = tokens.count(r.llm_content)
        assert exact <= r.summary.estimated_tokens <= exact * 1.02
        assert f"~{r.summary.estimated_tokens:,} tokens" in r.return_display


@pytest.mark.parametrize("fmt", FORMATS)
def test_per_file_max_tokens_cuts_one_file(ws: Workspace, fmt: str) -> None:
    r = ask(ws, paths=["src/f00*.txt", "src/long.txt"], format=fmt, perFileMaxTokens=200)
    for f in r.files:
        assert f.status in (Status.OK, Status.PARTIAL)
        if f.status == Status.PARTIAL:
            assert f.code is None and (f.next_offset or f.next_column)
    long = r.files[-1]
    assert long.status == Status.PARTIAL and long.next_column is not None
    again = ask(ws, paths=["src/long.txt"], format="separator", perFileMaxTokens=200)
    body = again.llm_content.split("---\n", 1)[1].rsplit("\n[Showing", 1)[0]
    assert tokens.count(body) <= 200
    whole = ask(ws, paths=["src/long.txt"], perFileMaxChars=10**6)
    assert whole.files[0].status == Status.OK  # no token cap: the default


def test_notices_of_many_omitted_files_stay_within_the_budget(tmp_path: Path) -> None:
    write_tree(tmp_path, {f"d/{'n' * 60}{i:04}.txt": "x\n" for i in range(400)})
    ws = Workspace.open(str(tmp_path), Settings())
    for fmt in FORMATS:
        r = ask(ws, paths=["d/*"], format=fmt, maxTotalTokens=1000, maxTotalFiles=3)
        assert tokens.count(r.llm_content) <= 1000, fmt
        assert r.summary.read == 3 and r.summary.omitted == 397 and r.next_cursor


def test_counts_are_kept_with_the_cache_entry(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Warm, a whole file and a window of it are not counted again."""
    calls: list[int] = []
    real = tokens.count

    def counting(text: str) -> int:
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(budget_mod.tokens, "count", counting)
    shapes: list[dict[str, Any]] = [
        {"paths": ["src/f001.txt"]},
        {"files": [{"path": "src/f001.txt", "offset": 3, "limit": 5}]},
        {"paths": ["src/f001.txt"], "lineNumbers": True},
        {"files": [{"path": "src/long.txt", "offset": 1, "column": 7}]},
        {"paths": ["src/f001.txt"], "format": "json"},
    ]
    big = [n for n in (len(Path(ws.root, "src/f001.txt").read_text()),) if n >= 1024]
    assert big, "the sample file must be cacheable"
    for shape in shapes:
        ask(ws, **shape)  # cold: counted
        calls.clear()
        r = ask(ws, **shape)  # warm
        assert r.files[0].source == "cache"
        content_counts = [n for n in calls if n > 500]
        assert content_counts == [], shape


def test_render_json_is_json_dumps() -> None:
    rng = random.Random(5)
    for _ in range(200):
        pieces = []
        for i in range(rng.randrange(0, 5)):
            status = rng.choice([Status.OK, Status.PARTIAL, Status.ERROR, Status.OMITTED])
            content = "".join(rng.choice('ab\n"\\é\t<') for _ in range(rng.randrange(0, 20)))
            r = FileResult(path=f"p{i}", status=status, source="disk", chars=len(content))
            r.code, r.message = ("x", "y") if status != Status.OK else (None, None)
            shown = status in (Status.OK, Status.PARTIAL)
            pieces.append(Piece(r, rng.choice(["k", f"k{i}"]), content if shown else None))
        notices = Notices(hints=["[h]"] if rng.random() < 0.5 else [])
        text = render_json(pieces, notices)
        doc = json.loads(text)
        assert json.dumps(doc, ensure_ascii=False, indent=2) == text


def test_a_huge_answer_without_a_token_budget_estimates_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past EXACT_COUNT_CHARS counted, an answer without a token budget estimates the
    rest (a full read of a 1 GB tree would count for a minute); under a token budget
    every text is counted and the count stays an upper bound."""
    from readmany_daemon.engine import answer as answer_mod

    code = "def f(x):\n    return x + 1  # a comment\n" * 200
    write_tree(tmp_path, {f"m{i:02}.py": code for i in range(30)})
    for i in range(30):
        os.utime(tmp_path / f"m{i:02}.py", (time.time() - 3600,) * 2)
    params = {"paths": ["*.py"], "maxTotalChars": 10**7}

    def fresh() -> Workspace:  # no counts kept from another run
        tokens._memo.clear()
        tokens._keyed.clear()
        return Workspace.open(str(tmp_path), Settings(), cache=ContentCache(64 << 20))

    exact = ask(fresh(), **params)
    truth = tokens.count(exact.llm_content)
    assert truth <= exact.summary.estimated_tokens
    monkeypatch.setattr(answer_mod, "EXACT_COUNT_CHARS", 5000)
    counted: list[int] = []
    real = tokens.count
    monkeypatch.setattr(tokens, "count", lambda text: counted.append(len(text)) or real(text))
    mixed = ask(fresh(), **params)
    assert mixed.summary.total_chars == exact.summary.total_chars
    assert sum(counted) < 5000 + 2 * len(code)  # two files at most, not twenty
    assert abs(mixed.summary.estimated_tokens - truth) < truth * 0.3
    counted.clear()
    budgeted = ask(fresh(), **params, maxTotalTokens=10**6)
    # every file counted, the 20 files' one shown text once (``count_keyed``)
    assert budgeted.summary.read == 20
    assert sum(counted) >= budgeted.summary.total_chars // 20
    assert tokens.count(budgeted.llm_content) <= budgeted.summary.estimated_tokens


def test_tally_counts_exactly_while_it_lasts() -> None:
    tally = tokens.Tally(100)
    assert tally("hello world") == tokens.count("hello world") and not tally.estimated
    assert tally("x" * 200) == tokens.count("x" * 200)  # charged, now spent
    assert tally("word " * 20) == tokens.estimate("word " * 20) and tally.estimated
    assert tokens.Tally(None).exact("x" * 10**6)
    assert tokens.estimate("abcdefghij") == 3 and tokens.estimate("日本語") == 3
    # one non-ASCII character does not make a whole file count as CJK text
    ascii_only = tokens.estimate("x = 1\n" * 1000 + "e")
    assert tokens.estimate("x = 1\n" * 1000 + "é") - ascii_only in (0, 1)


def test_count_keyed_counts_a_text_once_by_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens._keyed.clear()
    counted: list[str] = []
    real = tokens.count
    monkeypatch.setattr(tokens, "count", lambda text: counted.append(text) or real(text))
    texts = ["def f(x):\n    return x\n" * 40, "another text", "def f(x):\n    return x\n" * 40]
    got = [tokens.count_keyed(t, tokens.count_key(t)) for t in texts]
    assert got == [real(t) for t in texts]
    assert counted == texts[:2]  # the copy's count is the first one's
    monkeypatch.setattr(tokens, "KEYED_KEPT", 2)
    assert tokens.count_keyed("third", tokens.count_key("third")) == real("third")
    assert len(tokens._keyed) == 1  # full: started over
    tokens._keyed.clear()
