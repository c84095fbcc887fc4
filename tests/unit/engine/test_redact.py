"""Secrets redacted, not dropped (issue 14 item 4), in-process: the engine over real trees."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from readmany_daemon.content.cache import ContentCache
from readmany_daemon.engine import redact as redact_mod
from readmany_daemon.engine.redact import redact
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.settings import Settings
from readmany_daemon.wire.decode import decode_read_params
from tests.helpers import answer, seeded_secrets, write_tree

REPO = Path(__file__).resolve().parents[3]
FORMATS = ("separator", "heredoc", "xml", "json")


def _ask(ws: Workspace, **params: Any) -> Any:
    return answer(ws, decode_read_params(params))


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, dict[str, str], list[str]]:
    files, secrets = seeded_secrets()
    write_tree(tmp_path, files)
    return tmp_path, files, secrets


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_seeded_secret_in_any_format(corpus: Any, fmt: str) -> None:
    root, files, secrets = corpus
    ws = Workspace.open(str(root), Settings(), cache=ContentCache(1 << 24))
    for _ in range(2):  # cold, then from the cache
        r = _ask(ws, paths=["."], format=fmt, maxTotalChars=10**6, maxTotalFiles=100)
        wire = r.llm_content + json.dumps([f.message for f in r.files])
        assert [s for s in secrets if s in wire] == []
        assert {f.path for f in r.files if f.status == "ok"} == set(files)
        assert "«redacted:" in r.llm_content
        assert "never write a placeholder back into a file" in r.llm_content


def test_lines_and_surroundings_are_kept(corpus: Any) -> None:
    root, files, _ = corpus
    ws = Workspace.open(str(root), Settings())
    r = _ask(ws, paths=list(files), maxTotalChars=10**6)
    content = json.loads(_ask(ws, paths=list(files), format="json").llm_content)["results"]
    for f in r.files:
        shown = content[f.path]["content"].split("\n")
        disk = files[f.path].split("\n")
        assert len(shown) == len(disk), f.path
        flagged = {x.line for x in f.redactions}
        for n, (a, b) in enumerate(zip(shown, disk, strict=True), start=1):
            assert (a != b) == (n in flagged), (f.path, n)
        # sha256 is the disk bytes'; chars counts what is shown
        assert f.sha256 == hashlib.sha256(files[f.path].encode()).hexdigest()
        assert f.chars == len(content[f.path]["content"])
    pem = next(f for f in r.files if f.path == "certs/server-key.txt")
    assert [(x.line, x.kind) for x in pem.redactions] == [(n, "private-key") for n in range(3, 11)]
    assert "certs/server-key.txt lines 3-10 (private-key)" in r.llm_content


def test_sentinel_shape_and_same_value_same_sentinel() -> None:
    key = "AKIA" + "Q7" * 8
    out = redact(f"a = {key}\nb = '{key}'\n")
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    sentinel = f"«redacted:aws-access-key:{digest}»"
    assert out.text == f"a = {sentinel}\nb = '{sentinel}'\n"
    assert out.lines == ((1, "aws-access-key"), (2, "aws-access-key"))
    plain = "nothing = 'here'\n"
    assert redact(plain).text is plain


#: Shapes a secret is written in, beyond `name = value` (``{v}``: the value).
SHAPES = (
    ("db_password: str = '{v}'", "password"),  # Python annotated assignment
    ("db_password: Optional[str] = '{v}'", "password"),
    ("const apiKey: string = '{v}';", "api-key"),  # TypeScript
    ('config["password"] = "{v}"', "password"),  # subscript assignment
    ("config['api_key'] = '{v}'", "api-key"),
    ("ENV['SECRET_TOKEN'] = '{v}'", "token"),
    ("<password>{v}</password>", "password"),  # XML element
    ("  <db:Password>{v}</db:Password>", "password"),
    ('<add key="ApiKey" value="{v}" />', "api-key"),  # .NET appSettings
    ('<add name="ClientSecret" value="{v}"/>', "secret"),
)


@pytest.mark.parametrize(("shape", "kind"), SHAPES)
def test_common_shapes_are_redacted(shape: str, kind: str) -> None:
    value = "Xk9#mP2$" + "vL7qR4!nT8wZ"  # built here, so this file holds no secret
    text = "before\n" + shape.format(v=value) + "\nafter\n"
    out = redact(text)
    assert out.text == text.replace(value, redact_mod.sentinel(kind, value))
    assert out.lines == ((2, kind),)


@pytest.mark.parametrize(
    "url",
    [
        "postgres://admin:{v}@db.example.com/app",
        "DATABASE_URL=mysql+pymysql://app_user:{v}@10.0.0.5:3306/db",
        "redis://default:{v}@[::1]:6379/0",
        'requests.get("https://bot:{v}@api.example.org/v1")',
    ],
)
def test_the_password_of_a_url_is_redacted_alone(url: str) -> None:
    value = "Xk9mP2vL7qR4" + "nT8wZa"
    out = redact(url.format(v=value))
    assert out.text == url.format(v=redact_mod.sentinel("password", value))
    assert out.lines == ((1, "password"),)


@pytest.mark.parametrize(
    "text",
    [
        "https://user:password@example.com/",  # a placeholder, no digit
        "postgres://app:${DB_PASSWORD}@db/app",  # a variable
        "http://user:pass@host",  # too short to be a secret
        "git+ssh://git@github.com:org/repo.git",  # no password
        "password: str = field(default_factory=str)",  # code
        "token: Optional[Token] = None",
        "if password == expected_password2:",
        "<token>{{ vault_token }}</token>",
        '<add key="Timeout" value="a9b8c7d6e5f4" />',  # not a secret's name
    ],
)
def test_code_and_placeholders_in_those_shapes_are_kept(text: str) -> None:
    assert redact(text).lines == ()


def test_a_window_lists_only_its_redacted_lines(corpus: Any) -> None:
    root, _, secrets = corpus
    ws = Workspace.open(str(root), Settings())
    r = _ask(ws, files=[{"path": "certs/server-key.txt", "offset": 5, "limit": 2}])
    (f,) = r.files
    assert [x.line for x in f.redactions] == [5, 6]
    assert [s for s in secrets if s in r.llm_content] == []
    r = _ask(ws, files=[{"path": "certs/server-key.txt", "offset": 11}])
    assert r.files[0].redactions is None and "Secrets redacted" not in r.llm_content


def test_turned_off_per_request_and_by_setting(corpus: Any) -> None:
    root, _, secrets = corpus
    on = Workspace.open(str(root), Settings())
    off = Workspace.open(str(root), Settings(redact_secrets=False))
    everything = {"paths": ["."], "maxTotalChars": 10**6, "maxTotalFiles": 100}
    shown = _ask(on, **everything, redactSecrets=False).llm_content
    assert all(s in shown for s in secrets)
    assert all(s in _ask(off, **everything).llm_content for s in secrets)
    hidden = _ask(off, **everything, redact_secrets=True).llm_content
    assert [s for s in secrets if s in hidden] == []


def test_a_receipt_of_a_redacted_copy_does_not_hide_the_real_values(tmp_path: Path) -> None:
    """The hash is of the bytes on disk, so a redacted answer's receipt equals the real
    text's: asking without redaction must send the content (the values the caller lacks)."""
    token = "ghp_" + "k3Jd9" * 8
    write_tree(
        tmp_path,
        {"s.py": f"T = '{token}'\n" + "x = 1  # a line of filler\n" * 100, "plain.py": "y = 2\n"},
    )
    ws = Workspace.open(str(tmp_path), Settings(), cache=ContentCache(1 << 24))
    first = _ask(ws, paths=["s.py", "plain.py"])
    assert token not in first.llm_content
    known = [{"path": f.path, "sha256": f.sha256} for f in first.files]
    for _ in range(2):  # cold, then with the scan kept beside the cached text
        real = _ask(ws, paths=["s.py", "plain.py"], redactSecrets=False, known=known)
        assert [f.status for f in real.files] == ["ok", "unchanged"]
        assert token in real.llm_content
    # redacted again: the caller holds either copy, and gets the one it would be sent
    again = _ask(ws, paths=["s.py", "plain.py"], known=known)
    assert [f.status for f in again.files] == ["unchanged", "unchanged"]
    off = Workspace.open(str(tmp_path), Settings(redact_secrets=False))
    assert _ask(off, paths=["s.py"], known=known[:1]).files[0].status == "ok"


def test_deny_rules_come_first(tmp_path: Path) -> None:
    write_tree(tmp_path, {".env": "AWS_ACCESS_KEY_ID=AKIA" + "Z9" * 8 + "\n"})
    ws = Workspace.open(str(tmp_path), Settings())
    (f,) = _ask(ws, paths=[".env"], redactSecrets=False).files
    assert f.code == "denied" and f.redactions is None


def test_overlay_text_is_redacted(tmp_path: Path) -> None:
    token = "ghp_" + "a1B2" * 9
    write_tree(tmp_path, {"a.py": "x = 1\n"})
    buffer = SimpleNamespace(text=f"x = 1\nT = '{token}'\n", version=1)
    ws = Workspace.open(str(tmp_path), Settings(), overlay=lambda path: buffer)
    r = _ask(ws, paths=["a.py"])
    assert token not in r.llm_content
    assert r.files[0].source == "overlay"
    assert [(x.line, x.kind) for x in r.files[0].redactions] == [(2, "github-token")]


def test_a_file_over_max_file_bytes_is_redacted_in_its_window(tmp_path: Path) -> None:
    token = "glpat-" + "x9Y8" * 6
    body = "".join(f"line {n}\n" for n in range(2000))
    write_tree(tmp_path, {"big.txt": f"k = {token}\n" + body})
    ws = Workspace.open(str(tmp_path), Settings(max_file_bytes=1000))
    r = _ask(ws, files=[{"path": "big.txt", "limit": 3}])
    (f,) = r.files
    assert token not in r.llm_content and f.status == "ok"
    assert [x.line for x in f.redactions] == [1]
    assert f.total_lines == 2001


def test_a_warm_read_does_not_scan_again(tmp_path: Path, monkeypatch: Any) -> None:
    token = "xoxb-" + "1234567890-" + "Ab3" * 8
    write_tree(tmp_path, {"big.py": f"T = '{token}'\n" + "pass\n" * 400})
    old = (tmp_path / "big.py").stat().st_mtime - 3600  # not racy: the cache keeps it
    os.utime(tmp_path / "big.py", (old, old))
    ws = Workspace.open(str(tmp_path), Settings(), cache=ContentCache(1 << 24))
    calls: list[int] = []
    real = redact_mod.redact

    def counting(text: str) -> Any:
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(redact_mod, "redact", counting)
    # the first read puts the text in the content cache and its redaction beside it
    for _ in range(4):
        r = _ask(ws, paths=["big.py"])
        assert token not in r.llm_content
    assert r.files[0].source == "cache"
    assert len(calls) == 1


def test_no_false_positive_on_this_repository() -> None:
    """The project's own tracked files: sources, docs, tests, editors. Every
    redaction here would be a false positive (the tests draw their fake keys at run
    time): none."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    found: list[tuple[str, int, str]] = []
    scanned = 0
    for rel in filter(None, listed.split("\0")):
        path = REPO / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        scanned += 1
        found.extend((rel, line, kind) for line, kind in redact(text).lines)
    assert scanned > 100
    assert found == []
