"""Plain helpers shared by every test folder: one git runner, one tree writer, one
private process environment. (Fixtures live in ``tests/conftest.py``.)

- ``git``: git with ``core.fsmonitor=false`` (no daemon left behind, no hook answering
  for the file system) and ``protocol.file.allow=always`` (local submodules), raising
  on failure with git's stderr in the message.
- ``write_tree``: files (relative POSIX path -> text or bytes; text as UTF-8) under a
  folder.
- ``deep_tree`` / ``remove_tree``: a chain of nested folders thousands of levels deep,
  built and removed without recursion (``shutil.rmtree`` recurses once per level).
- ``outline_coverage``: how much of a Python file's top level an answer's outline
  entries cover, judged by ``ast`` (PROTOCOL §4 "Outlines", the outline budget).
- ``GIT_ENV`` / ``make_env``: the git variables every test runs git under (no system
  config, a committer identity) and a whole process environment with a private HOME
  and XDG folders for the ``readmany`` processes a test starts.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from readmany_daemon.engine import answer as engine_answer
from readmany_daemon.engine.workspace import Workspace
from readmany_daemon.wire.cursor import read_request
from readmany_daemon.wire.messages import ReadManyParams, ReadManyResult

__all__ = [
    "GIT_ENV",
    "Coverage",
    "answer",
    "committed_tree",
    "deep_tree",
    "git",
    "make_env",
    "outline_coverage",
    "remove_tree",
    "short_tmp",
    "write_tree",
]

#: Git variables for every git a test runs: no system config (``HOME`` is private, so
#: there is no global config or excludes file either) and a committer identity.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(cwd: Path | str, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run ``git ARGS`` in ``cwd`` (fsmonitor off) under ``env`` (None: this process's
    environment) and return its stdout (undecodable bytes kept as surrogate escapes, as
    ``os.fsdecode`` does). A failure raises ``CalledProcessError`` carrying stderr."""
    proc = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(
            proc.returncode, proc.args, proc.stdout, os.fsdecode(proc.stderr)
        )
    return os.fsdecode(proc.stdout)


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Create ``files`` (relative POSIX path -> content; text is written as UTF-8) under
    ``root``, with their parent folders."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


def committed_tree(root: Path, files: Mapping[str, str | bytes]) -> str:
    """A git repository at ``root`` (branch ``main``) whose one commit holds ``files``
    (``write_tree``), committed as ``GIT_ENV``'s identity; returns the commit id."""
    env = {**os.environ, **GIT_ENV}
    write_tree(root, files)
    git(root, "init", "-q", "-b", "main", env=env)
    git(root, "add", "-A", env=env)
    git(root, "commit", "-qm", "base", env=env)
    return git(root, "rev-parse", "HEAD", env=env).strip()


def deep_tree(base: Path, levels: int, files: Mapping[int, str], name: str = "d") -> list[str]:
    """Create ``levels`` nested folders ``base/name/name/…`` (``base`` must exist) and in
    the folder at depth ``k`` (1-based; ``levels`` is the deepest) a file for each
    ``files[k]`` (its name; content: the name and a newline). Built folder by folder
    through descriptors (``mkdir``/``open`` relative to the previous one), so neither a
    path nor the stack grows with the depth. Returns the files' ``base``-relative POSIX
    paths, in byte order (deepest last)."""
    made: list[str] = []
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for depth in range(1, levels + 1):
            os.mkdir(name, dir_fd=fd)
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
            leaf = files.get(depth)
            if leaf is not None:
                out = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd)
                os.write(out, (leaf + "\n").encode())
                os.close(out)
                made.append("/".join([name] * depth + [leaf]))
    finally:
        os.close(fd)
    return sorted(made, key=os.fsencode)


@contextmanager
def short_tmp() -> Iterator[Path]:
    """A new folder with a short path in /tmp (room for thousands of levels under
    PATH_MAX), removed afterwards with :func:`remove_tree` at whatever depth it holds."""
    path = Path(tempfile.mkdtemp(prefix="rmdeep", dir="/tmp"))
    try:
        yield path
    finally:
        remove_tree(path)


def remove_tree(path: Path) -> None:
    """Remove folder ``path`` and everything below it, at any depth, in time linear in
    the number of entries: each sub-folder's own sub-folders are first moved up into
    ``path`` (renames through descriptors), so no path and no stack grows with the depth
    (``shutil.rmtree`` recurses once per level and fails thousands of levels down; GNU
    ``rm -rf`` copes, but takes seconds on a 2,000-level chain). Symbolic links are
    removed, never followed. Raises ``AssertionError`` if anything is left."""
    import secrets

    tag = f".rm-{secrets.token_hex(8)}-"
    moved = 0
    top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        while names := os.listdir(top):
            for name in names:
                if not stat.S_ISDIR(os.lstat(name, dir_fd=top).st_mode):
                    os.unlink(name, dir_fd=top)
                    continue
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
                try:
                    for child in os.listdir(sub):
                        if stat.S_ISDIR(os.lstat(child, dir_fd=sub).st_mode):
                            moved += 1
                            os.rename(child, f"{tag}{moved}", src_dir_fd=sub, dst_dir_fd=top)
                        else:
                            os.unlink(child, dir_fd=sub)
                finally:
                    os.close(sub)
                os.rmdir(name, dir_fd=top)
    finally:
        os.close(top)
    os.rmdir(path)
    assert not os.path.lexists(path), f"{path} could not be removed"


def make_env(home: Path, runtime: Path | None = None) -> dict[str, str]:
    """A process environment with a private ``home`` and XDG folders below it (no user
    git config, no global excludes, no ``READMANY_*`` or ``GIT_*`` variable of the
    caller), ``GIT_ENV`` and ``READMANY_NO_DAEMON=1``. ``runtime`` is the
    ``XDG_RUNTIME_DIR`` (created 0700); by default a new short ``/tmp/rmw…`` folder, so
    that a daemon socket path fits ``sun_path`` (whoever made it removes it; directly in
    ``/tmp``, not in the session's 0700 folder, so that tests can let other users in)."""
    home.mkdir(parents=True, exist_ok=True)
    if runtime is None:
        runtime = Path(tempfile.mkdtemp(prefix="rmw", dir="/tmp"))
    else:
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("READMANY_", "GIT_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_RUNTIME_DIR=str(runtime),
        READMANY_NO_DAEMON="1",
        **GIT_ENV,
    )
    return env


def answer(ws: Workspace, params: ReadManyParams) -> ReadManyResult:
    """``engine.answer.answer`` for validated ``params`` whose cursor (if any) is not yet
    decoded: decodes it as an adapter's edge would (``wire.cursor.read_request``)."""
    return engine_answer.answer(ws, read_request(params))


def planted_credentials(seed: int = 0) -> tuple[dict[str, str], list[tuple[str, ...]]]:
    """A tree of fake credentials of every kind readmany redacts (PROTOCOL §4's table),
    in several file types, made from ``seed``: ``(files, credentials)``, 43 credentials,
    each the tuple of the values no answer may show (a private key: each line of its
    body; any other: its one value). Nothing here is a real key: every value is drawn at
    random when the tests run."""
    import base64
    import json
    import random
    import string

    rng = random.Random(seed)
    alnum = string.ascii_letters + string.digits

    def draw(n: int, chars: str = alnum) -> str:
        while True:
            value = "".join(rng.choice(chars) for _ in range(n))
            if chars == string.digits or (
                any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            ):
                return value

    def b64url(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    upper = string.ascii_uppercase + string.digits
    aws_id = "AKIA" + draw(16, upper)
    aws_id2 = "ASIA" + draw(16, upper)
    aws_secret = draw(40, alnum + "/+")
    github = [f"{p}_{draw(36)}" for p in ("ghp", "gho", "ghu", "ghs", "ghr")]
    github_pat = "github_pat_" + draw(82, alnum + "_")
    gitlab = "glpat-" + draw(20, alnum + "-_")
    slack = f"xoxb-{draw(11, string.digits)}-{draw(12, string.digits)}-{draw(24)}"
    slack_user = f"xoxp-{draw(11, string.digits)}-{draw(24)}"
    hook = f"T{draw(8, upper)}/B{draw(8, upper)}/{draw(24)}"
    stripe = ["sk_live_" + draw(24), "rk_live_" + draw(24), "sk_test_" + draw(24)]
    google = "AIza" + draw(35, alnum + "-_")
    openai = ["sk-" + draw(48), "sk-proj-" + draw(64, alnum + "-_")]
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": draw(10), "iat": rng.randrange(10**9)}).encode())
    jwt = f"{header}.{payload}.{b64url(rng.randbytes(32))}"
    body = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(8)]
    password = draw(18, alnum + "!@#%^&*")
    db_secret = draw(32)
    api_key = draw(40)
    token = draw(24)
    annotated = draw(20, alnum + "!@#%^&*$")
    subscripted = [draw(20, alnum + "!@#%^&*$"), draw(32)]
    xml_password, xml_key = draw(20, alnum + "!@#%^&*"), draw(32)
    url_password = draw(18)
    pem = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----\n"])
    files = {
        "config/app.env": (
            f"# deployment\nAWS_ACCESS_KEY_ID={aws_id}\nAWS_SECRET_ACCESS_KEY={aws_secret}\n"
            f"DB_PASSWORD={password}\nGITLAB_TOKEN={gitlab}\nDEBUG=1\n"
        ),
        "src/settings.py": (
            "import os\n\n"
            f'GITHUB_TOKEN = "{github[0]}"\n'
            f"STRIPE_KEY = '{stripe[0]}'\n"
            f'OPENAI_API_KEY = "{openai[0]}"\n'
            "token = os.environ.get('TOKEN')\n"
            f"client = Client(api_key='{api_key}')\n"
            "def f():\n    return 1\n"
        ),
        "src/keys.ts": (
            "export const keys = {\n"
            + "".join(f'  k{i}: "{value}",\n' for i, value in enumerate(github[1:]))
            + f'  pat: "{github_pat}",\n  google: "{google}",\n  rk: "{stripe[1]}",\n'
            + f'  test: "{stripe[2]}",\n  proj: "{openai[1]}",\n}};\n'
        ),
        "deploy/values.yaml": (
            "slack:\n"
            f"  bot: {slack}\n  user: {slack_user}\n"
            f"  webhook: https://hooks.slack.com/services/{hook}\n"
            f"secret: {db_secret}\naws:\n  session: {aws_id2}\n"
        ),
        "service-account.json": json.dumps(
            {"type": "service_account", "private_key": pem, "token": token}, indent=2
        )
        + "\n",
        "certs/server-key.txt": "Generated for the tests.\n" + pem + "trailer line\n",
        "src/db.py": (
            f"db_password: str = '{annotated}'\n"
            f'config["password"] = "{subscripted[0]}"\n'
            f"config['api_key'] = '{subscripted[1]}'\n"
            f'DSN = "postgres://admin:{url_password}@db.example.com:5432/app"\n'
        ),
        "config/web.config": (
            "<configuration>\n  <appSettings>\n"
            f'    <add key="ApiKey" value="{xml_key}" />\n'
            "  </appSettings>\n  <database>\n"
            f"    <password>{xml_password}</password>\n"
            "  </database>\n</configuration>\n"
        ),
        "docs/auth.md": (
            f"# Auth\n\nSend the header:\n\n    Authorization: Bearer {jwt}\n\nThat is all.\n"
        ),
    }
    # issue 23 item 6: what was missed (Django's startproject key, a URL password with no
    # user, an Authorization header), and one more of several kinds
    django_key = "django-insecure-" + draw(
        50, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"
    )
    redis_password = draw(22)
    basic = base64.b64encode(f"deploy:{draw(16)}".encode()).decode()
    bearer = [draw(32, alnum + "-._~"), draw(40)]
    slack_app = (
        f"xapp-1-A{draw(10, upper)}-{draw(13, string.digits)}-{draw(64, 'abcdef0123456789')}"
    )
    client_secret = draw(28, alnum + "-_")
    yaml_password = draw(20, alnum + "!#%&*+=?")
    ts_key = draw(32)
    hex_token = draw(40, "abcdef0123456789")
    glptt = "glptt-" + draw(40, "abcdef0123456789")
    ssh_body = [base64.b64encode(rng.randbytes(51)).decode() for _ in range(5)]
    ssh = "\n".join(
        ["-----BEGIN OPENSSH PRIVATE KEY-----", *ssh_body, "-----END OPENSSH PRIVATE KEY-----\n"]
    )
    files.update(
        {
            "site/settings.py": (
                "from pathlib import Path\n\n"
                "BASE_DIR = Path(__file__).resolve().parent.parent\n\n"
                "# SECURITY WARNING: keep the secret key used in production secret!\n"
                f"SECRET_KEY = '{django_key}'\n\n"
                "DEBUG = True\n"
                f'CACHES = {{"default": {{"LOCATION": "redis://:{redis_password}@cache:6379/0"}}}}\n'
            ),
            "docs/api.md": (
                "# API\n\n```sh\n"
                f"curl -H 'Authorization: Basic {basic}' https://ci.example.org/api\n"
                f'curl -H "Authorization: Bearer {bearer[0]}" https://api.example.org/v2\n'
                "```\n"
            ),
            "src/client.py": (
                "import requests\n\n"
                f'HEADERS = {{"Authorization": "Bearer {bearer[1]}"}}\n'
                f"SLACK_APP_TOKEN = '{slack_app}'\n"
                f'TRIGGER = "{glptt}"\n'
            ),
            "config/App.config": (
                '<?xml version="1.0"?>\n<configuration>\n  <appSettings>\n'
                f'    <add name="ClientSecret" value="{client_secret}"/>\n'
                "  </appSettings>\n</configuration>\n"
            ),
            "deploy/db.yaml": f"database:\n  user: app\n  password: {yaml_password}\n",
            "src/api.ts": f"export const apiKey: string = '{ts_key}';\n",
            "config/tokens.json": json.dumps({"api_token": hex_token}, indent=2) + "\n",
            "keys/id_ed25519.txt": ssh,
        }
    )
    credentials: list[tuple[str, ...]] = [
        (aws_id,), (aws_id2,), (aws_secret,), *((g,) for g in github), (github_pat,),
        (gitlab,), (slack,), (slack_user,), (hook,), *((k,) for k in stripe), (google,),
        *((k,) for k in openai), (jwt,), tuple(body), (password,), (db_secret,), (api_key,),
        (token,), (annotated,), *((v,) for v in subscripted), (xml_password,), (xml_key,),
        (url_password,), (django_key,), (redis_password,), (basic,), *((b,) for b in bearer),
        (slack_app,), (client_secret,), (yaml_password,), (ts_key,), (hex_token,), (glptt,),
        tuple(ssh_body),
    ]  # fmt: skip
    return files, credentials


def seeded_secrets(seed: int = 0) -> tuple[dict[str, str], list[str]]:
    """A tree of fake credentials of every format readmany redacts, in several file
    types, made from ``seed``: ``(files, secrets)``, where ``secrets`` are the values
    (and each line of a private key's body) that no answer may show. Nothing here is a
    real key: every value is drawn at random when the tests run."""
    files, credentials = planted_credentials(seed)
    return files, [value for credential in credentials for value in credential]


class Coverage(NamedTuple):
    """What :func:`outline_coverage` found: the top-level definitions judged (``defs``),
    how many an entry names (``named``: same name, starting on the same line) or covers
    (``covered``: named, or inside a collapsed or folded entry's lines), the names of
    those neither named nor covered (``missed``), whether the entries reach the last
    one's last line (``reaches_end``), and the last line an entry reaches (0: none)."""

    defs: int
    named: int
    covered: int
    missed: list[str]
    reaches_end: bool
    last_line: int

    @property
    def fraction(self) -> float:
        """``covered / defs`` (1.0 without definitions)."""
        return self.covered / self.defs if self.defs else 1.0


def outline_coverage(text: str, entries: Sequence[Any], first: int = 1) -> Coverage:
    """How the outline ``entries`` (``FileResult.outline``: objects with ``name``,
    ``line_start``, ``line_end``, ``depth``, or their wire dicts) cover the top-level
    ``def``/``class`` statements of Python ``text`` that end at or after line ``first``
    (1-based; the first line not shown for a cut file). A definition starts at its first
    decorator, as outlines count it."""
    import ast

    defs = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            if end >= first:
                defs.append((node.name, start, end))
    rows = [
        (e["name"], e["lineStart"], e["lineEnd"])
        if isinstance(e, dict)
        else (e.name, e.line_start, e.line_end)
        for e in entries
    ]
    named_at = {(name, start) for name, start, _ in rows}
    named = covered = 0
    missed = []
    for name, start, end in defs:
        if (name, start) in named_at:
            named += 1
            covered += 1
        elif any(" … " in n and s <= start and e >= end for n, s, e in rows):
            covered += 1
        else:
            missed.append(name)
    last = max((e for _, _, e in rows), default=0)
    reaches = not defs or last >= max(end for _, _, end in defs)
    return Coverage(len(defs), named, covered, missed, reaches, last)


def lsp_frames(*messages: Mapping[str, Any]) -> bytes:
    """``messages`` (JSON-RPC objects) framed for LSP's base protocol, one after another:
    ``Content-Length`` (bytes of the UTF-8 body), a blank line, the body."""
    out = b""
    for m in messages:
        body = json.dumps(m).encode()
        out += b"Content-Length: %d\r\n\r\n" % len(body) + body
    return out
