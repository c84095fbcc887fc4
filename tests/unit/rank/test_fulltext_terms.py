"""rank/fulltext.py ``term_files``: the files holding each term, kept in an ordinary
table as FTS5's ``fts5vocab`` row table counts them, through puts, replacements, drops,
a fresh index, another connection's writes and a file of the format before."""

from __future__ import annotations

import contextlib
import random
import re
import sqlite3
from pathlib import Path

from readmany_daemon.rank import fulltext
from readmany_daemon.rank.fulltext import FullText

#: Words with case, diacritics, digits, snake and camel case, other scripts: the
#: tokenizer's own business, which the table must count as it does.
_WORDS = [
    "alpha",
    "Alpha",
    "BETA",
    "café",
    "cafe",
    "naïve",
    "x86_64",
    "parse_known_args",
    "getFixtureValue",
    "数据",
    "Ωmega",
    "v2",
    "42",
    "scope",
    "fixture",
    "é",
]


def _stored(path: str) -> tuple[dict[str, int], dict[str, int]]:
    """(``term_files``, the ``fts5vocab`` row table's non-zero counts) read from the file."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        table = dict(db.execute("SELECT term, files FROM term_files"))
        vocab = dict(db.execute("SELECT term, doc FROM docs_terms WHERE doc > 0"))
    return table, vocab


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 12)))


def test_counts_follow_puts_replacements_and_drops(tmp_path: Path) -> None:
    path = str(tmp_path / "cache" / "index-x.rank")
    ft = FullText(path)
    assert _stored(path) == ({}, {})  # a fresh index: nothing counted
    rng = random.Random(7)
    live: set[str] = set()
    for step in range(40):
        names = [f"src/{rng.choice(_WORDS)}_{n}.py" for n in range(rng.randint(0, 6))]
        puts = [(p, f"{step}:1:1", _text(rng)) for p in dict.fromkeys(names)]
        drops = rng.sample(sorted(live - set(names)), k=min(len(live - set(names)), 2))
        assert ft.write(puts, drops)
        live = (live - set(drops)) | set(names)
        table, vocab = _stored(path)
        assert table == vocab, step
        # the counts the ranking asks are the table's (a word of several tokens: its
        # rarest token's), a term of both columns once
        asked = [t.lower() for t in _WORDS] + ["src", "py", "missing"]
        assert ft.counts(asked) == {
            w: min(table.get(t, 0) for t in re.findall(r"[^\W_]+", w)) for w in asked
        }
    assert ft.write([], sorted(live))
    assert _stored(path) == ({}, {})  # every file dropped: no term left
    ft.close()


def test_a_term_in_name_and_body_counts_the_file_once() -> None:
    ft = FullText(None)
    assert ft.write([("scope/scope.py", "1:1:1", "scope Scope SCOPE")], [])
    assert ft.write([("other.py", "1:1:1", "a scope")], [])
    assert ft.counts(["scope", "other", "py"]) == {"scope": 2, "other": 1, "py": 2}
    assert ft.write([("scope/scope.py", "1:1:2", "nothing")], [])  # replaced
    assert ft.counts(["scope", "nothing"]) == {"scope": 2, "nothing": 1}  # its path still
    assert ft.write([], ["other.py"])
    assert ft.counts(["scope", "other"]) == {"scope": 1, "other": 0}


def test_another_connections_writes_are_counted(tmp_path: Path) -> None:
    path = str(tmp_path / "index-y.rank")
    daemon, answer = FullText(path), FullText(path)
    assert daemon.write([("a.py", "1:1:1", "alpha beta"), ("b.py", "1:1:1", "beta")], [])
    assert answer.counts(["alpha", "beta"]) == {"alpha": 1, "beta": 2}
    assert answer.write([("c.py", "1:1:1", "alpha")], ["b.py"])
    assert daemon.counts(["alpha", "beta"]) == {"alpha": 2, "beta": 1}
    table, vocab = _stored(path)
    assert table == vocab
    daemon.close()
    answer.close()


def test_a_file_of_the_format_before_gets_its_counts_on_open(tmp_path: Path) -> None:
    path = str(tmp_path / "index-z.rank")
    # the layout of format 2 as it was written: no ``term_files``
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(
            """
            CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT UNIQUE, mark TEXT);
            CREATE VIRTUAL TABLE docs USING fts5(name, body, tokenize='unicode61');
            CREATE VIRTUAL TABLE docs_terms USING fts5vocab(docs, 'row');
            INSERT INTO files VALUES (1, 'a.py', '1:1:1'), (2, 'b.py', '1:1:1');
            INSERT INTO docs(rowid, name, body) VALUES
                (1, 'a py', 'café alpha'), (2, 'b py', 'alpha Ωmega');
            DELETE FROM docs WHERE rowid = 2;
            DELETE FROM files WHERE id = 2;
            INSERT INTO files VALUES (3, 'c.py', '1:1:1');
            INSERT INTO docs(rowid, name, body) VALUES (3, 'c py', 'alpha');
            """
        )
        db.execute(f"PRAGMA user_version={fulltext.TALLY_FROM}")
    ft = FullText(path)
    # diacritics removed by the tokenizer, as the vocabulary has them
    assert ft.counts(["alpha", "cafe", "ωmega", "py"]) == {
        "alpha": 2,
        "cafe": 1,
        "ωmega": 0,
        "py": 2,
    }
    assert ft.write([("d.py", "1:1:1", "Ωmega alpha")], ["a.py"])
    table, vocab = _stored(path)
    assert table == vocab
    assert table["alpha"] == 2 and "cafe" not in table
    ft.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == fulltext.FORMAT
    # a file of an unknown format is started again, its counts too
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA user_version=99")
    again = FullText(path)
    assert again.count() == 0 and again.counts(["alpha"]) == {"alpha": 0}
    assert _stored(path) == ({}, {})
    again.close()


def _stale(path: str) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT stale FROM term_files_state").fetchone()[0])


def test_a_deferred_build_counts_from_the_vocabulary_until_settled(tmp_path: Path) -> None:
    path = str(tmp_path / "index-d.rank")
    ft, other = FullText(path), FullText(path)
    assert ft.write([("a.py", "1:1:1", "alpha beta")], [])
    ft.defer_counts()
    assert ft.write([("b.py", "1:1:1", "alpha gamma"), ("c.py", "1:1:1", "gamma")], [])
    assert _stale(path) == 1
    table, vocab = _stored(path)
    assert table == {"a": 1, "alpha": 1, "beta": 1, "py": 1}  # left as it was
    # the counts asked meanwhile are the vocabulary's, through either connection
    want = {"alpha": 2, "gamma": 2, "beta": 1}
    assert ft.counts(list(want)) == want and other.counts(list(want)) == want
    # another connection writing meanwhile leaves the stale table too
    assert other.write([("d.py", "1:1:1", "delta")], ["a.py"])
    assert _stored(path)[0] == table and _stale(path) == 1
    assert ft.settle_counts()
    table, vocab = _stored(path)
    assert table == vocab and _stale(path) == 0
    assert ft.counts(["alpha", "beta", "delta"]) == {"alpha": 1, "beta": 0, "delta": 1}
    # written one by one again
    assert ft.write([("e.py", "1:1:1", "beta")], ["d.py"])
    table, vocab = _stored(path)
    assert table == vocab and table["beta"] == 1 and "delta" not in table
    assert ft.settle_counts()  # nothing to make again
    ft.close()
    other.close()
