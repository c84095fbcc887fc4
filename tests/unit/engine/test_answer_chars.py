"""``maxAnswerChars``: the whole ``llmContent`` within a number of characters, framing,
notices and cursor included (what a client that moves long text to a file counts), in
every format; ``maxTotalChars`` keeps counting content only."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readmany_daemon.engine.answer import answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import InvalidParams
from readmany_daemon.settings import Settings
from readmany_daemon.wire.cursor import decode_read_request
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import to_builtins
from tests.helpers import write_tree

FORMATS = ["separator", "heredoc", "xml", "json"]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    files: dict[str, str] = {}
    for i in range(400):
        # Long names: the framing and the notices weigh as much as the content.
        name = f"pkg/sub_{i % 7}/a_rather_long_module_name_number_{i:04d}.py"
        files[name] = "".join(f"value_{i}_{n} = {n} * {i}\n" for n in range(5 + i % 60))
    write_tree(tmp_path, files)
    return Workspace.open(str(tmp_path), Settings())


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_whole_text_fits_and_still_parses(ws: Workspace, fmt: str) -> None:
    limit = 6000
    params = decode_read_params(
        {"paths": ["pkg/**/*.py"], "maxTotalChars": limit, "maxAnswerChars": limit, "format": fmt}
    )
    r = answer(ws, params)
    assert len(r.llm_content) <= limit
    assert r.summary.read >= 1 and r.next_cursor  # content, and the way to the rest
    if fmt == "xml":
        ET.fromstring(r.llm_content)
    if fmt == "json":
        json.loads(r.llm_content)
    # maxTotalChars alone counts content only: the same budget's text is longer.
    plain = answer(
        ws, decode_read_params({"paths": ["pkg/**/*.py"], "maxTotalChars": limit, "format": fmt})
    )
    assert len(plain.llm_content) > limit


def test_every_page_of_a_cursor_chain_fits_and_each_file_comes_once(ws: Workspace) -> None:
    limit = 5000
    raw: dict[str, object] = {"paths": ["pkg/**/*.py"], "maxAnswerChars": limit}
    seen: list[str] = []
    in_line: set[str] = set()  # cut inside line 1: the next piece goes on in it
    for _ in range(400):
        r = answer(ws, decode_read_request(raw))
        assert len(r.llm_content) <= limit
        for f in to_builtins(r.files):
            if f["status"] in ("ok", "partial") and f.get("lineStart", 1) == 1:
                if f["path"] in in_line:
                    in_line.discard(f["path"])
                else:
                    seen.append(f["path"])
                if f.get("nextColumn") is not None:
                    in_line.add(f["path"])
        if not r.next_cursor:
            break
        raw = {"cursor": r.next_cursor}
    assert sorted(seen) == sorted(set(seen))
    assert len(seen) == 400


def test_below_the_minimum_is_invalid_params_naming_the_field() -> None:
    with pytest.raises(InvalidParams) as e:
        decode_read_params({"paths": ["a"], "maxAnswerChars": 3999})
    assert "maxAnswerChars" in str(e.value)
    assert decode_read_params({"paths": ["a"], "max_answer_chars": 4000}).max_answer_chars == 4000


PACKINGS = ["auto", "smallest-first", "request-order", "outlines"]


@pytest.fixture
def empties(tmp_path: Path) -> Workspace:
    """300 folders of an empty ``__init__.py`` and a few tiny modules: nearly all of the
    answer is framing (an empty file's ``[Empty file.]`` line included), none content."""
    files: dict[str, str] = {f"d{i}/__init__.py": "" for i in range(300)}
    files.update({f"d{i}/tiny.py": "x = 1\n" for i in range(0, 300, 30)})
    write_tree(tmp_path, files)
    return Workspace.open(str(tmp_path), Settings())


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("packing", PACKINGS)
def test_many_empty_files_fit_in_every_packing_and_format(
    empties: Workspace, packing: str, fmt: str
) -> None:
    limit = 4000
    raw = {
        "paths": ["**/*.py"],
        "packing": packing,
        "format": fmt,
        "maxAnswerChars": limit,
        "maxTotalFiles": 400,
    }
    r = answer(empties, decode_read_params(raw))
    assert len(r.llm_content) <= limit
    assert r.summary.read >= 1 and r.next_cursor  # files given, and the way to the rest
    if fmt == "xml":
        ET.fromstring(r.llm_content)
    if fmt == "json":
        json.loads(r.llm_content)


#: A file of the random trees: empty, one short line, or a few lines (so that framing
#: and content weigh alike, and files with no content at all are common).
_BODIES = st.one_of(
    st.just(""),
    st.just("\n"),
    st.text(alphabet="abc =1", max_size=12).map(lambda s: s + "\n"),
    st.integers(1, 40).map(lambda n: "".join(f"line_{k} = {k}\n" for k in range(n))),
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    bodies=st.lists(_BODIES, min_size=150, max_size=320),
    packing=st.sampled_from(PACKINGS),
    fmt=st.sampled_from(FORMATS),
)
def test_random_trees_of_empty_and_tiny_files_fit(
    tmp_path_factory: pytest.TempPathFactory, bodies: list[str], packing: str, fmt: str
) -> None:
    root = tmp_path_factory.mktemp("tree")
    write_tree(root, {f"p{i % 9}/m{i}/__init__.py": b for i, b in enumerate(bodies)})
    ws = Workspace.open(str(root), Settings())
    limit = 4000
    raw = {
        "paths": ["**/*.py"],
        "packing": packing,
        "format": fmt,
        "maxAnswerChars": limit,
        "maxTotalFiles": 1000,
    }
    r = answer(ws, decode_read_params(raw))
    assert len(r.llm_content) <= limit
    assert r.summary.read >= 1


@pytest.mark.parametrize("packing", ["auto", "request-order"])
def test_a_wide_glob_fills_the_answer_not_one_character(tmp_path: Path, packing: str) -> None:
    """``maxAnswerChars`` well below ``maxTotalChars`` over a glob too wide for
    smallest first (as ``'**/*.py'`` on Django): the answer held one character of the
    first file (the framing of the files maxTotalFiles takes passed the limit, so
    packing fewer content characters came down to one); now whole files fill it."""
    files = {"a/__init__.py": "".join(f"setting_{k} = {k}\n" for k in range(60))}
    # Deep paths: the files maxTotalFiles takes have more framing than the answer holds.
    body = "".join(f"value_{k} = {k}\n" for k in range(30))
    deep = "a_long_folder_name/" * 8
    files.update({f"a/m{i:04}/{deep}module.py": body for i in range(1100)})
    write_tree(tmp_path, files)
    ws = Workspace.open(str(tmp_path), Settings())
    limit = 4000
    r = answer(
        ws, decode_read_params({"paths": ["**/*.py"], "packing": packing, "maxAnswerChars": limit})
    )
    assert len(r.llm_content) <= limit and r.next_cursor
    whole = [f.path for f in r.files if f.status == "ok"]
    assert whole[0] == "a/__init__.py" and r.summary.total_chars >= 1000


def _functions(n: int, name: str) -> str:
    """A module of ``n`` short functions: its outline block after a cut is large."""
    return "".join(
        f"def {name}_{k}(x):\n    return x + {k}  # some padding text here\n\n" for k in range(n)
    )


@pytest.mark.parametrize("limit", [4000, 5000, 6000, 8000])
@pytest.mark.parametrize("packing", ["auto", "request-order", "smallest-first", "outlines"])
def test_a_cut_files_outline_block_is_planned_within_the_answer(
    tmp_path: Path, limit: int, packing: str
) -> None:
    """A file the answer cuts carries an outline block of its rest; planned at up to
    4,000 characters beside a content cut that filled the answer, it passed the limit,
    every re-packing shrank to nothing, and the chain returned the same empty page for
    ever. Now the block gets half of what the cut file may take: each page delivers
    (and fits), and the chain delivers every line of every file exactly once."""
    sizes = {"a.py": 40, "b.py": 100, "c.py": 100, "big/code.py": 600}
    files = {path: _functions(n, path.replace("/", "_")[:-3]) for path, n in sizes.items()}
    write_tree(tmp_path, files)
    ws = Workspace.open(str(tmp_path), Settings())
    raw: dict[str, object] = {"paths": list(files), "maxAnswerChars": limit, "packing": packing}
    raw["preferFullRead"] = True  # every line of every file, through the cursors
    lines: dict[str, list[int]] = {path: [] for path in files}
    cut: str | None = None
    for _ in range(200):
        r = answer(ws, decode_read_request(raw))
        assert len(r.llm_content) <= limit
        given = [f for f in r.files if f.status in ("ok", "partial")]
        # A page gives content, or (packing outlines) the outlines of the files next;
        # the rest of a file cut on the page before comes first, as content.
        assert given or (packing == "outlines" and "[Outline only" in r.llm_content)
        if cut is not None:
            assert given and given[0].path == cut, (cut, r.llm_content[:300])
        cut = next((f.path for f in given if f.status == "partial"), None)
        for f in given:
            first = f.line_start or 1
            last = f.line_end or files[f.path].count("\n")
            lines[f.path].extend(range(first, last + 1))
        if not r.next_cursor:
            break
        raw = {"cursor": r.next_cursor}
    else:
        raise AssertionError("the chain never ended")
    for path, text in files.items():
        assert sorted(lines[path]) == list(range(1, text.count("\n") + 1)), path


def test_a_file_that_fits_is_not_left_out_for_the_one_cut_after_it(tmp_path: Path) -> None:
    """Two files in request order, the first of 3,800 characters: within 6,000
    characters it comes whole and the second is cut (with its outline block) or left
    for the next page, never both left out."""
    files = {"small.py": _functions(40, "small")[:3800], "big.py": _functions(600, "big")}
    write_tree(tmp_path, files)
    ws = Workspace.open(str(tmp_path), Settings())
    r = answer(ws, decode_read_params({"paths": ["small.py", "big.py"], "maxAnswerChars": 6000}))
    assert len(r.llm_content) <= 6000
    assert r.files[0].path == "small.py" and r.files[0].status == "ok"
