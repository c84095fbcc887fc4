"""The framed formats parse (PROTOCOL §5), whatever names and contents hold.

Random answers, rendered as ``xml`` and ``json``, are read back with a real parser
(``xml.etree.ElementTree``, ``json.loads``): every framed file's text must equal its
content as delivered, and the notices must sit inside the document. Names and contents
hold ``]]>``, ``<``, ``&``, quotes, C0 controls, carriage returns, U+FFFE and, for names,
bytes that are not UTF-8. The expected text is written here from the protocol's words,
not from the renderer: a C0 control XML cannot carry (all but tab, LF, CR) is shown as
U+2400 + its code, U+FFFE/U+FFFF and lone surrogates as U+FFFD; ``json`` carries every
character of the content, and a name's bytes that are not UTF-8 as U+FFFD.

Two levels: ``render`` over random pieces (every character, every status, notices with
unlisted counts), and ``answer`` over random trees on disk with random budgets.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readmany_daemon.engine.items import Piece
from readmany_daemon.engine.notices import Notices
from readmany_daemon.engine.render import render
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.errors import Code, Status
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from readmany_daemon.wire.messages import FileResult, wire_safe
from tests.helpers import answer

#: Characters that break naive framing: CDATA's end, markup, quotes, controls, CR.
NASTY = ["]]>", "]]", "]", "<", ">", "&", "&amp;", '"', "'", "\r", "\r\n", "\n", "\t", "\x00",
         "\x01", "\x08", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f", "\x85", "\ufffe", "\uffff",
         "\u2028", "<![CDATA[", "</document_content>", "</documents>", "--",
         "\U0001f600"]  # fmt: skip

nasty_text = st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=8)), max_size=12).map(
    "".join
)

#: A file name as the engine holds it: ``os.fsdecode`` of bytes (no ``/``, no NUL),
#: bytes that are not UTF-8 as surrogate escapes.
name_bytes = st.lists(
    st.one_of(
        st.sampled_from([s.encode() for s in NASTY if s not in ("\x00",)]),
        st.binary(min_size=1, max_size=3),
        st.sampled_from([b"\xff", b"\xc3", b"\xe9", b"\x80abc"]),
    ),
    min_size=1,
    max_size=6,
).map(lambda parts: b"".join(parts).replace(b"/", b"_").replace(b"\x00", b"_"))
names = name_bytes.filter(lambda b: b not in (b".", b"..")).map(os.fsdecode)


def xml_expected(text: str) -> str:
    """``text`` as an XML parser reads it back from the ``xml`` format (PROTOCOL §5)."""
    out = []
    for ch in text:
        c = ord(ch)
        if c < 0x20 and ch not in "\t\n\r":
            out.append(chr(0x2400 + c))
        elif ch in "\ufffe\uffff" or 0xD800 <= c <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)


def name_on_the_wire(name: str) -> str:
    """A name as every answer shows it: its bytes that are not UTF-8 as U+FFFD."""
    return os.fsencode(name).decode("utf-8", "replace")


_COUNT = re.compile(r"^\[(Omitted|Skipped) (\d+) file\(s\)[^:\]]*(?:: (.*))?\.\]$", re.DOTALL)


def check_counts(notices: list[str], omitted: int, skipped: int) -> None:
    """Each kind's count is stated once and the names shown plus "and N more" add up to
    it (PROTOCOL §4)."""
    stated = {"Omitted": 0, "Skipped": 0}
    for line in notices:
        m = _COUNT.match(line)
        if not m:
            continue
        assert stated[m.group(1)] == 0, notices
        total = int(m.group(2))
        stated[m.group(1)] = total
        if m.group(3) is None:
            continue
        more = re.search(r", and (\d+) more$", m.group(3)) or re.fullmatch(
            r"and (\d+) more", m.group(3)
        )
        rest = int(more.group(1)) if more else 0
        assert rest < total, line
    assert stated == {"Omitted": omitted, "Skipped": skipped}, notices


# --------------------------------------------------------------------- render level

STATUSES = [
    (Status.OK, None),
    (Status.PARTIAL, None),
    (Status.PARTIAL, Code.BUDGET),
    (Status.OMITTED, Code.BUDGET),
    (Status.OMITTED, Code.STOPPED),
    (Status.SKIPPED, Code.BINARY),
    (Status.ERROR, Code.NOT_FOUND),
    (Status.ERROR, Code.OUT_OF_RANGE),
]


@st.composite
def pieces_and_notices(draw: st.DrawFn) -> tuple[list[Piece], Notices]:
    pieces = []
    for name in draw(st.lists(names, max_size=8, unique=True)):
        status, code = draw(st.sampled_from(STATUSES))
        content = draw(nasty_text) if status in (Status.OK, Status.PARTIAL) else None
        if status == Status.OMITTED and code == Code.BUDGET and draw(st.booleans()):
            content = "[Outline only:]\n" + draw(nasty_text)  # given as its outline
        message = draw(st.one_of(st.none(), nasty_text)) if status == Status.ERROR else None
        result = FileResult(
            path=name, status=status, source="disk", chars=len(content or ""), code=code
        )
        result.message = message
        pieces.append(Piece(result, name, content, draw(st.booleans())))
    unlisted_omitted = draw(st.integers(0, 300))
    unlisted_skipped = draw(st.integers(0, 300))
    notices = Notices(
        continuations=draw(st.lists(st.tuples(names, nasty_text), max_size=2)),
        cursor=draw(st.one_of(st.none(), st.text(min_size=1, max_size=20))),
        hints=draw(st.lists(nasty_text, max_size=2)),
        unlisted_omitted=unlisted_omitted,
        unlisted_skipped=unlisted_skipped,
        unlisted_omitted_names=[
            (n, Code.BUDGET) for n in draw(st.lists(names, max_size=min(unlisted_omitted, 60)))
        ][:50],
        unlisted_skipped_names=[
            (n, Code.BINARY) for n in draw(st.lists(names, max_size=min(unlisted_skipped, 60)))
        ][:50],
    )
    return pieces, notices


def _framed(pieces: list[Piece]) -> list[tuple[str, str]]:
    """(name, text) of each entry ``xml`` frames, in order: ok and partial files with
    content, and errors as ``[Error: …]``."""
    out = []
    for p in pieces:
        r = p.result
        if r.status in (Status.OK, Status.PARTIAL, Status.OMITTED) and p.content is not None:
            out.append((r.path, p.content))
        elif r.status == Status.ERROR:
            out.append((r.path, f"[Error: {r.message or r.code}]"))
    return out


def _counts(pieces: list[Piece], notices: Notices) -> tuple[int, int]:
    omitted = sum(p.result.status == Status.OMITTED for p in pieces) + notices.unlisted_omitted
    skipped = sum(p.result.status == Status.SKIPPED for p in pieces) + notices.unlisted_skipped
    return omitted, skipped


@given(pieces_and_notices())
@settings(max_examples=300, deadline=None)
def test_xml_parses_and_gives_back_each_text(case: tuple[list[Piece], Notices]) -> None:
    pieces, notices = case
    text = wire_safe(render("xml", pieces, notices))  # as the answer sends it
    root = ET.fromstring(text)  # raises on anything not well-formed
    assert root.tag == "documents"
    docs = root.findall("document")
    framed = _framed(pieces)
    assert len(docs) == len(framed)
    for i, (doc, (name, body)) in enumerate(zip(docs, framed, strict=True), start=1):
        assert doc.get("index") == str(i)
        assert (doc.findtext("source") or "") == xml_expected(name)
        tag = "document_outline" if doc.find("document_outline") is not None else "document_content"
        assert (doc.findtext(tag) or "") == xml_expected(body)
        assert (tag == "document_outline") == body.startswith("[Outline only:]")
    notice_texts = [n.text or "" for n in root.findall("notice")]
    assert [child.tag for child in root] == ["document"] * len(docs) + ["notice"] * len(
        notice_texts
    )
    check_counts(notice_texts, *_counts(pieces, notices))
    if notices.cursor:
        assert any(xml_expected(notices.cursor) in n for n in notice_texts)


@given(pieces_and_notices())
@settings(max_examples=300, deadline=None)
def test_json_parses_and_gives_back_each_content(case: tuple[list[Piece], Notices]) -> None:
    pieces, notices = case
    text = wire_safe(render("json", pieces, notices))
    text.encode("utf-8")  # valid Unicode: a strict decoder takes it too
    doc = json.loads(text)
    results = doc["results"]
    assert len(results) == len(pieces)  # every entry, none lost to a repeated key
    for (key, value), p in zip(results.items(), pieces, strict=True):
        want = name_on_the_wire(p.key)
        assert key == want or key.startswith(want + " ("), (key, want)
        r = p.result
        if r.status in (Status.OK, Status.PARTIAL):
            assert value == {"status": "ok", "content": p.content}
        elif p.content is not None:
            assert value == {"status": "outline", "outline": p.content}
        else:
            assert value["status"] == "error" and value["code"] == r.code
    check_counts(doc.get("notices", []), *_counts(pieces, notices))


# --------------------------------------------------------------------- answer level

contents = st.one_of(
    nasty_text.map(lambda t: t.replace("\x00", "")),  # text: a NUL makes a file binary
    st.lists(
        st.sampled_from(
            [
                "line <a & b>\n",
                "x]]>y\r\n",
                "\x01\x02 ctl\n",
                "é\n",
                "def f]]>():\n  pass\n",
                "# H <&\n",
            ]
        ),
        max_size=60,
    ).map("".join),
    st.binary(max_size=64),
)


@st.composite
def trees(draw: st.DrawFn) -> dict[bytes, bytes]:
    files = {}
    for base in draw(st.lists(name_bytes.filter(lambda b: b not in (b".", b"..")), max_size=10)):
        name = base + draw(st.sampled_from([b"", b".py", b".md"]))  # .py, .md: outlined
        body = draw(contents)
        folder = draw(st.sampled_from([b"", b"d/", b"d/e]]>/"]))
        files[folder + name] = body if isinstance(body, bytes) else body.encode("utf-8")
    return files


def _write(root: Path, files: dict[bytes, bytes]) -> None:
    base = os.fsencode(root)
    for rel, data in files.items():
        path = os.path.join(base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


#: A cut file's notice and what follows it: its outline block (PROTOCOL §4 "Outlines").
_CUT = re.compile(r"\n?\[Showing lines [^\n]*\](?:\n\[(?:Outline|No )[^\n]*\]\n(?:.*\n)*)?$")


@given(
    trees(),
    st.fixed_dictionaries(
        {
            "maxTotalFiles": st.integers(1, 12),
            "maxTotalChars": st.integers(1, 400),
            "perFileMaxChars": st.integers(1, 300),
            "perFileMaxLines": st.integers(1, 30),
            "lineNumbers": st.booleans(),
            "packing": st.sampled_from(["auto", "request-order", "smallest-first", "outlines"]),
        }
    ),
    st.lists(st.sampled_from(["**", "d/**", "missing.txt", "*", "d/e]]>/*"]), min_size=1),
)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_answers_parse_in_both_framed_formats(
    files: dict[bytes, bytes], budget: dict[str, Any], paths: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, files)
        ws = Workspace.open(str(root), Settings())
        got = {
            fmt: answer(ws, decode_read_params({"paths": paths, "format": fmt, **budget}))
            for fmt in ("json", "xml")
        }
    as_json, as_xml = got["json"], got["xml"]
    for r in (as_json, as_xml):
        msgspec.json.encode(r)  # the whole result is valid UTF-8 JSON (no lone surrogate)
        assert isinstance(msgspec.to_builtins(r)["attachments"], list)
    on_disk: dict[str, list[str]] = {}  # wire label -> the texts of the files it names
    for rel, data in files.items():
        try:
            text = data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            continue
        on_disk.setdefault(name_on_the_wire(os.fsdecode(rel)), []).append(text)
    doc = json.loads(as_json.llm_content)
    results = list(doc["results"].values())
    assert len(results) == len(as_json.files)
    check_counts(doc.get("notices", []), as_json.summary.omitted, as_json.summary.skipped)
    framed: list[tuple[str, str]] = []
    for f, value in zip(as_json.files, results, strict=True):
        if f.status in (Status.OK, Status.PARTIAL):
            assert value["status"] == "ok"
            framed.append((f.path, value["content"]))
            if f.encoding != "utf-8" or f.replaced_bytes or budget["lineNumbers"]:
                continue  # not the bytes' strict UTF-8 decoding (mostly-UTF-8: U+FFFD)
            if f.status == Status.OK:
                assert value["content"] in on_disk[f.path], f
            elif f.line_start == 1:
                shown = _CUT.sub("", value["content"])
                assert any(text.startswith(shown) for text in on_disk[f.path]), f
        elif f.status == Status.ERROR:
            framed.append((f.path, f"[Error: {f.message or f.code}]"))
        elif f.outline is not None:  # given as its outline (packing: "outlines")
            assert value["status"] == "outline" and value["outline"].startswith("[Outline"), f
            framed.append((f.path, value["outline"]))
    xml_root = ET.fromstring(as_xml.llm_content)
    docs = xml_root.findall("document")
    assert [
        (d.findtext("source") or "", d.findtext("document_content") or "")
        if d.find("document_outline") is None
        else (d.findtext("source") or "", d.findtext("document_outline") or "")
        for d in docs
    ] == [(xml_expected(name), xml_expected(body)) for name, body in framed]
    check_counts(
        [n.text or "" for n in xml_root.iter("notice")],
        as_xml.summary.omitted,
        as_xml.summary.skipped,
    )
