"""Byte-exact framing of llmContent (PROTOCOL §5)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from readmany_daemon.engine.items import Piece
from readmany_daemon.engine.notices import Notices, cut_notice
from readmany_daemon.engine.render import (
    HEREDOC_WORDS,
    djb2_hex6,
    render_heredoc,
    render_json,
    render_separator,
    render_xml,
)
from readmany_daemon.errors import Code, Status
from readmany_daemon.wire.messages import FileResult


def ok(path: str, content: str, key: str | None = None) -> Piece:
    return Piece(
        FileResult(path=path, status=Status.OK, source="disk", chars=len(content)),
        key or path,
        content,
    )


def err(path: str, code: str, message: str) -> Piece:
    return Piece(
        FileResult(
            path=path, status=Status.ERROR, source="disk", chars=0, code=code, message=message
        ),
        path,
    )


def test_djb2_examples_from_protocol() -> None:
    assert djb2_hex6("src/a.ts") == "CF2C32"
    assert djb2_hex6("README.md") == "1F775C"


def test_djb2_pads_short_hashes_and_uses_utf16_units() -> None:
    assert djb2_hex6("") == "001505"  # 5381 = 0x1505
    # A character outside the BMP is two UTF-16 code units.
    h = 5381
    for unit in (0xD83D, 0xDE00):
        h = (h * 33 + unit) & 0xFFFFFFFF
    assert djb2_hex6("\U0001f600") == f"{h:X}".rjust(6, "0")[:6]


def test_separator_exact_bytes() -> None:
    text = render_separator([ok("a.py", "x = 1\n"), ok("b.txt", "no newline")], Notices())
    assert text == "--- a.py ---\nx = 1\n\n--- b.txt ---\nno newline\n\n--- End of content ---"


def test_separator_lists_omitted_skipped_errors_after_files() -> None:
    pieces = [
        ok("a.py", "a\n"),
        Piece(
            FileResult(
                path="b.py", status=Status.OMITTED, source="disk", chars=0, code=Code.BUDGET
            ),
            "b.py",
        ),
        Piece(
            FileResult(
                path="c.png", status=Status.SKIPPED, source="disk", chars=0, code=Code.BINARY
            ),
            "c.png",
        ),
        err("d.py", Code.NOT_FOUND, "File not found: d.py"),
    ]
    text = render_separator(pieces, Notices(cursor="TOKEN"))
    assert text.startswith(
        "--- a.py ---\na\n\n[Omitted 1 file(s) to stay within the budget: b.py.]\n"
    )
    assert '[To read the omitted files, repeat the request with cursor="TOKEN".]' in text
    assert "[Skipped 1 file(s): c.png (binary).]" in text
    assert "[Error: d.py: File not found: d.py]" in text
    assert text.endswith("\n--- End of content ---")


def test_names_at_most_50_omitted() -> None:
    pieces = [
        Piece(
            FileResult(
                path=f"f{i}", status=Status.OMITTED, source="disk", chars=0, code=Code.BUDGET
            ),
            f"f{i}",
        )
        for i in range(70)
    ]
    text = render_separator(pieces, Notices(unlisted_omitted=5))
    line = next(x for x in text.split("\n") if x.startswith("[Omitted"))
    assert "[Omitted 75 file(s)" in line
    assert "f49" in line and "f50," not in line
    assert line.endswith(", f49, and 25 more.]") and line.count("more") == 1


def test_heredoc_blocks_words_and_trailing_newline() -> None:
    text = render_heredoc(
        [
            ok("src/a.ts", "one\ntwo\n"),
            err("missing.ts", Code.NOT_FOUND, "File not found: missing.ts"),
        ],
        Notices(),
    )
    h2 = djb2_hex6("missing.ts")
    assert text == (
        "@src/a.ts\n<<'PINE_1_CF2C32'\none\ntwo\nPINE_1_CF2C32\n\n"
        f"@missing.ts\n<<'MANGO_2_{h2}'\n[Error: File not found: missing.ts]\nMANGO_2_{h2}"
    )


def test_heredoc_delimiter_collision_gets_suffix() -> None:
    body = "PINE_1_1F775C\nPINE_1_1F775C_1\n"
    text = render_heredoc([ok("README.md", body)], Notices())
    assert text.split("\n")[1] == "<<'PINE_1_1F775C_2'"
    assert text.endswith("\nPINE_1_1F775C_2")


def test_heredoc_words_cycle_past_26() -> None:
    pieces = [ok(f"f{i}", "x") for i in range(28)]
    text = render_heredoc(pieces, Notices())
    assert f"<<'{HEREDOC_WORDS[0]}_27_" in text and f"<<'{HEREDOC_WORDS[1]}_28_" in text
    assert "<<'ZEPHYR_26_" in text


def test_xml_keeps_code_verbatim_and_shows_controls_as_pictures() -> None:
    text = render_xml([ok("a&b.py", "if a < b && c > d:\x00\x1b\x7f\n")], Notices())
    root = ET.fromstring(text)
    doc = root.find("document")
    assert doc is not None and doc.get("index") == "1"
    assert doc.findtext("source") == "a&b.py"
    assert doc.findtext("document_content") == "if a < b && c > d:\u2400\u241b\x7f\n"
    assert text == (
        '<documents><document index="1"><source>a&amp;b.py</source><document_content>'
        "<![CDATA[if a < b && c > d:\u2400\u241b\x7f\n]]></document_content></document>"
        "</documents>"
    )


def test_xml_splits_cdata_at_its_end_marker_and_keeps_carriage_returns() -> None:
    pieces = [ok("x]]>.md", "a]]>b]]]>c"), ok("crlf.txt", "<a>\r\n&\r"), ok("e", "")]
    text = render_xml(pieces, Notices())
    assert "<![CDATA[a]]]]><![CDATA[>b]]]]]><![CDATA[>c]]>" in text
    assert "<document_content>&lt;a&gt;&#13;\n&amp;&#13;</document_content>" in text
    docs = ET.fromstring(text).findall("document")
    assert [d.findtext("source") for d in docs] == ["x]]>.md", "crlf.txt", "e"]
    assert [d.findtext("document_content") for d in docs] == ["a]]>b]]]>c", "<a>\r\n&\r", ""]


def test_xml_notices_are_inside_the_root() -> None:
    omitted = Piece(
        FileResult(
            path="b<\x01>.py", status=Status.OMITTED, source="disk", chars=0, code=Code.BUDGET
        ),
        "b.py",
    )
    text = render_xml([ok("a.py", "a\n"), omitted], Notices(cursor="T", hints=["[hint & x]"]))
    root = ET.fromstring(text)
    assert [n.text for n in root.iter("notice")] == [
        "[Omitted 1 file(s) to stay within the budget: b<\u2401>.py.]",
        '[To read the omitted files, repeat the request with cursor="T".]',
        "[hint & x]",
    ]
    assert text.endswith("</document>\n<notice>[Omitted 1 file(s) to stay within the budget: "
                         "b&lt;\u2401&gt;.py.]</notice>\n<notice>[To read the omitted files, "
                         'repeat the request with cursor="T".]</notice>\n'
                         "<notice>[hint &amp; x]</notice>\n</documents>")  # fmt: skip


def test_json_keys_stay_unique_when_names_differ_only_in_undecodable_bytes() -> None:
    pieces = [ok("a\udcff", "one"), ok("a\udcfe", "two")]
    text = render_json(pieces, Notices())
    text.encode("utf-8")  # valid Unicode: no lone surrogate left
    assert json.loads(text)["results"] == {
        "a\ufffd": {"status": "ok", "content": "one"},
        "a\ufffd (2)": {"status": "ok", "content": "two"},
    }


def test_json_shape_of_seed_000() -> None:
    pieces = [
        ok("/p/src/index.ts", "foo();\n"),
        err("/p/src/utils.ts", Code.NOT_FOUND, "File not found: /p/src/utils.ts"),
    ]
    doc = json.loads(render_json(pieces, Notices()))
    assert doc == {
        "results": {
            "/p/src/index.ts": {"status": "ok", "content": "foo();\n"},
            "/p/src/utils.ts": {
                "status": "error",
                "code": "not-found",
                "message": "File not found: /p/src/utils.ts",
            },
        }
    }


def test_cut_notice_text() -> None:
    r = FileResult(
        path="big.py",
        status=Status.PARTIAL,
        source="disk",
        chars=0,
        line_start=1,
        line_end=200,
        total_lines=2500,
        next_offset=201,
    )
    assert cut_notice(r) == "[Showing lines 1-200 of 2500. Continue with offset=201.]"
    assert cut_notice(FileResult(path="a", status=Status.OK, source="disk", chars=0)) is None
