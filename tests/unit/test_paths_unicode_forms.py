"""NFC and NFD spellings at the layers that compare them (PROTOCOL §3): ``paths.nfc``,
the request's ``exclude`` (``GitPatterns``) and ``Index.glob``. Paths keep their
on-disk spelling; ignore files keep git's byte-for-byte matching."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from readmany_daemon.index.model import Index
from readmany_daemon.paths import nfc, spellings
from readmany_daemon.rules.kinds import ALL
from readmany_daemon.rules.patterns import GitPatterns
from readmany_daemon.settings import Settings
from tests.helpers import write_tree


def NFD(s: str) -> str:
    return unicodedata.normalize("NFD", s)


def NFC(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def test_nfc_composes_and_keeps_the_rest() -> None:
    assert nfc(NFD("café")) == NFC("café") != NFD("café")
    assert nfc(NFD("학점인정")) == NFC("학점인정")
    assert nfc("plain/ascii.txt") == "plain/ascii.txt"
    raw = os.fsdecode(b"bad\xff") + NFD("é")
    assert nfc(raw) == os.fsdecode(b"bad\xff") + NFC("é")  # the escape stays
    assert spellings("a.txt") == ("a.txt",)
    assert spellings(NFD("é")) == (NFD("é"), NFC("é"))


def test_exclude_matches_either_form_and_keeps_the_paths() -> None:
    paths = [NFD("docs/café/a.md"), NFC("docs/café/b.md"), NFD("x/학점인정.txt"), "z.md"]
    for typed in (NFC, NFD):
        ex = GitPatterns([typed("café/"), typed("*학점*")])
        assert ex.keep(paths) == ["z.md"]
        assert ex.match(NFD("docs/café/a.md")) and ex.match(NFC("docs/café/b.md"))
    assert GitPatterns(["!café/", "*.md"]).keep(paths) == [NFD("x/학점인정.txt")]


def test_glob_matches_either_form(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            NFD("docs/café/a.md"): "",
            NFC("docs/café/b.md"): "",
            NFD("notes/학점인정 신청.txt"): "",
            ".gitignore": NFC("*신청*\n"),  # bytes: hides no NFD name
        },
    )
    ix = Index.build(str(tmp_path), Settings())
    both = sorted([NFD("docs/café/a.md"), NFC("docs/café/b.md")], key=os.fsencode)
    for typed in (NFC, NFD):
        assert ix.glob(typed("docs/café/*.md"), ALL) == both
        assert ix.glob(typed("**/caf?/*.md"), ALL) == both
        assert ix.glob(typed("**/*학점인정*"), ALL) == [NFD("notes/학점인정 신청.txt")]
    assert ix.glob("docs/*/b.md", ALL) == [NFC("docs/café/b.md")]
