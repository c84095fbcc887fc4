"""The notice and ``stale`` of a read answer (``runtime/stale.py``, PROTOCOL §4 "Stale
files"): its text and token cost, and its place in each ``llmContent`` format, before the
content or, for ``order: "stable"``, after it."""

from __future__ import annotations

import json
import xml.dom.minidom

from readmany_daemon.content import tokens
from readmany_daemon.runtime.stale import Stale, notice_text, place_notice


def test_notice_placement_in_every_format_and_its_cost() -> None:
    stale = [Stale("src/app/main.py", "modified"), Stale("docs/old notes.md", "deleted")]
    text = notice_text(stale)
    assert text == (
        "[Changed since given to you: src/app/main.py (modified), docs/old notes.md "
        '(deleted). Read again: {"paths": ["src/app/main.py"]}]'
    )
    assert tokens.count(text) <= 40 * len(stale)
    many = [Stale(f"src/pkg/module_{i:02d}.py", "modified") for i in range(20)]
    assert tokens.count(notice_text(many)) <= 40 * len(many)
    sep = place_notice(["--- a.txt ---\nA\n\n", "--- End of content ---"], "separator", stale)
    assert sep[0] == text + "\n\n" and sep[1].startswith("--- a.txt ---")
    assert place_notice(["@a.txt\n<<'X'\nA\nX"], "heredoc", stale)[0] == text + "\n\n"
    xml_parts = ['<documents><document index="1"><source>a</source>', "</document></documents>"]
    placed = "".join(place_notice(xml_parts, "xml", stale))
    assert placed.index("<notice>") < placed.index("<document ")
    xml.dom.minidom.parseString(placed)
    after = "".join(place_notice(xml_parts, "xml", stale, after=True))
    assert after.startswith("".join(xml_parts)[: -len("</documents>")])
    xml.dom.minidom.parseString(after)
    body = json.dumps({"results": {"a": {"status": "ok", "content": "A"}}}, indent=2)
    doc = json.loads("".join(place_notice([body], "json", stale)))
    assert list(doc) == ["stale", "results"]
    assert doc["stale"][0] == {"path": "src/app/main.py", "change": "modified"}
    later = json.loads("".join(place_notice([body], "json", stale, after=True)))
    assert list(later) == ["results", "stale"]
    sep_after = place_notice(["--- a.txt ---\nA\n\n"], "separator", stale, after=True)
    assert sep_after[0] == "--- a.txt ---\nA\n\n" and text in sep_after[1]
    assert place_notice(["x"], "separator", []) == ["x"]
