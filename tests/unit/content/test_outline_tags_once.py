"""``outline_and_tags``: the outline and the tags of a text from one parse are exactly
``outline`` and ``tags`` of it (two parses), over real modules of the standard library
in several shapes, Markdown, broken and empty source, a file without a grammar and one
with a ``#!`` line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from readmany_daemon.content.outline import outline, outline_and_tags, tags

STDLIB = Path(os.__file__).parent
MODULES = sorted(STDLIB.glob("*.py"))[:40] + sorted((STDLIB / "asyncio").glob("*.py"))[:10]
OTHERS = {
    "README.md": "# Title\n\nSome text.\n\n## Part\n\nmore\n",
    "broken.py": "def f(:\n    return [\nclass C(\n    x = 1\n",
    "empty.py": "",
    "notes.txt": "no grammar\n",
    "script": "#!/usr/bin/env python3\ndef main():\n    return run()\n",
    "lib.rs": "pub struct S;\nimpl S { fn go(&self) -> u8 { helper() } }\n",
}


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_one_parse_gives_what_two_give_on_real_modules(module: Path) -> None:
    text = module.read_text(encoding="utf-8", errors="replace")
    assert outline_and_tags(text, module.name) == (
        outline(text, module.name),
        tags(text, module.name),
    )


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_one_parse_gives_what_two_give_on_other_shapes(name: str) -> None:
    text = OTHERS[name]
    assert outline_and_tags(text, name) == (outline(text, name), tags(text, name))
