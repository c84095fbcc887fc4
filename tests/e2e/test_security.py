"""Security of the engine behind the shared daemon, end to end (real processes):

- Confinement: no way of naming a path (``..``, symlinks, absolute, encoded, backslashes,
  NUL, ``~``, escaping globs) yields content from outside the root, via the socket and
  the CLI.
- Deny rules: ``.git/`` internals and ``denyPatterns`` never listed or read, however named
  and with every ignore kind off.
- Read-only: the whole range of requests leaves the workspace byte-identical.

The sockets' side (other users, TCP, a socket another user serves) is in
``test_security_sockets.py``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.client import Client, RpcError
from readmany_daemon.settings import DEFAULT_DENY_PATTERNS
from tests.e2e.daemon_helpers import (
    PY,
    Daemon,
    cli,
    fresh_daemon,
)
from tests.helpers import git, write_tree

daemon = fresh_daemon  # the fixture (tests/e2e/daemon_helpers.py)

# --------------------------------------------------------------------- confinement


def _leaks(answer: Any, secrets: list[str]) -> list[str]:
    text = json.dumps(answer, ensure_ascii=False)
    return [s for s in secrets if s in text]


def _read_all(c: Client, entry: Any, **more: Any) -> dict[str, Any]:
    """``readMany/read`` of one entry with every filter off; an RPC error as a dict."""
    params: dict[str, Any] = {
        "useDefaultExcludes": False,
        "fileFilteringOptions": {"respectGitIgnore": False, "respectIgnoreFiles": False},
        "maxTotalFiles": 10_000,
        "preferFullRead": True,
        **more,
    }
    if isinstance(entry, dict):
        params["files"] = [entry]
    else:
        params["paths"] = [entry]
    try:
        result: dict[str, Any] = c.request("readMany/read", params)
    except RpcError as exc:
        return {"rpcError": exc.code, "message": exc.message}
    return result


def _outcome(answer: dict[str, Any]) -> str:
    if "rpcError" in answer:
        return f"rpc {answer['rpcError']}"
    return ",".join(sorted({f"{f['status']}:{f.get('code', '')}" for f in answer["files"]}))


@pytest.fixture
def confined(tmp_path: Path, daemon: Daemon) -> dict[str, Any]:
    """A root with symlinks out of it, and secrets beside it, in HOME and in /tmp."""
    marker = uuid.uuid4().hex
    secrets = {
        "outside": f"OUTSIDE-{marker}",
        "home": f"HOMESECRET-{marker}",
        "overlay": f"OVERLAYSECRET-{marker}",
    }
    outside = tmp_path / "outside"
    write_tree(
        outside, {"outside-secret.txt": secrets["outside"] + "\n", "d/deep.txt": secrets["outside"]}
    )
    home = Path(daemon.env["HOME"])
    write_tree(home, {"home-secret.txt": secrets["home"] + "\n"})
    root = tmp_path / "ws"
    write_tree(root, {"a.txt": "alpha\n", "sub/b.txt": "beta\n", "sub/%2e%2e/x.txt": "literal\n"})
    os.symlink(outside / "outside-secret.txt", root / "link_file")
    os.symlink(outside, root / "link_dir")
    os.symlink("../..", root / "sub" / "link_up")
    os.symlink("a.txt", root / "link_in")
    return {"root": root, "outside": outside, "home": home, "secrets": secrets}


def _escapes(outside: Path, home: Path) -> list[Any]:
    sec = outside / "outside-secret.txt"
    return [
        "../outside/outside-secret.txt",
        "./../outside/outside-secret.txt",
        "sub/../../outside/outside-secret.txt",
        "sub/../../../../../../../../" + str(sec).lstrip("/"),
        str(sec),
        str(outside),
        sec.as_uri(),
        "%2e%2e%2foutside%2foutside-secret.txt",
        "..%2foutside/outside-secret.txt",
        "..%2Foutside%2Foutside-secret.txt",
        "%2E%2E/outside/outside-secret.txt",
        "..\\outside\\outside-secret.txt",
        "sub\\..\\..\\outside\\outside-secret.txt",
        "..",
        "../",
        "link_file",
        "link_dir",
        "link_dir/outside-secret.txt",
        "link_dir/**",
        "link_dir/d/deep.txt",
        "sub/link_up/outside/outside-secret.txt",
        "sub/link_up/**",
        "~",
        "~/home-secret.txt",
        str(home / "home-secret.txt"),
        "../**",
        "../outside/*",
        "../*/outside-secret.txt",
        "**/../../outside/*",
        "{..,sub}/outside/outside-secret.txt",
        "[.][.]/outside/outside-secret.txt",
        "/etc/*",
        str(outside) + "/**",
        "a.txt\x00../outside/outside-secret.txt",
        "../outside/outside-secret.txt\x00",
        {"path": "../outside/outside-secret.txt", "offset": 1, "limit": 5},
        {"path": str(sec), "offset": 1},
        {"path": "link_file", "limit": 3},
    ]


def test_confinement_via_socket_and_cli(daemon: Daemon, confined: dict[str, Any]) -> None:
    root, outside, home = confined["root"], confined["outside"], confined["home"]
    secrets = list(confined["secrets"].values())
    escapes = _escapes(outside, home)
    daemon.start()
    observed: dict[str, str] = {}
    with daemon.session(root) as c:
        # an editor buffer for the outside file must not be served for it either
        c.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": (outside / "outside-secret.txt").as_uri(),
                    "languageId": "plaintext",
                    "version": 1,
                    "text": confined["secrets"]["overlay"],
                }
            },
        )
        for entry in escapes:
            answer = _read_all(c, entry)
            assert not _leaks(answer, secrets), (entry, answer)
            if "files" in answer:
                for f in answer["files"]:
                    assert f["status"] in ("error", "skipped"), (entry, f)
            observed[repr(entry)] = _outcome(answer)
            patterns = [entry["path"] if isinstance(entry, dict) else entry]
            try:
                listing = c.request("readMany/files", {"patterns": patterns})
            except RpcError:
                continue
            # the symlinks themselves are entries of the root (as git lists them)
            names = {f["path"] for f in listing["files"]}
            assert names <= {"link_file", "link_dir"}, (entry, listing)
        # every visible file at once: nothing outside, the symlinks out are not read
        everything = _read_all(c, "**")
        assert not _leaks(everything, secrets)
        ok = {f["path"] for f in everything["files"] if f["status"] == "ok"}
        assert {"a.txt", "sub/b.txt"} <= ok and not ok & {"link_file", "link_dir"}
        listing = c.request(
            "readMany/files",
            {"useDefaultExcludes": False, "fileFilteringOptions": {"respectGitIgnore": False}},
        )
        assert all(not f["path"].startswith(("..", "/", "link_dir/")) for f in listing["files"])
        # a literal folder named %2e%2e is just a folder inside
        assert "literal" in _read_all(c, "sub/%2e%2e/x.txt")["llmContent"]
    print("\nconfinement outcomes:", json.dumps(observed, indent=1))

    # The CLI, answering in its own process and through the daemon.
    plain = [e for e in escapes if isinstance(e, str) and "\x00" not in e]
    windows = [e for e in escapes if isinstance(e, dict)]
    nul = [e for e in escapes if isinstance(e, str) and "\x00" in e]
    params = json.dumps({"files": windows, "paths": nul})
    off = ["--no-gitignore", "--no-ignore-files", "--no-default-excludes"]
    for mode in (["--no-daemon"], []):
        run = cli(daemon.env, "read", "--json", "--root", str(root), *off, *mode,
                  "--max-total-files", "10000", "--prefer-full-read", "--", *plain)  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert not _leaks(run.stdout + run.stderr, secrets)
        answer = json.loads(run.stdout)
        assert all(f["status"] in ("error", "skipped") for f in answer["files"]), answer["files"]
        run = cli(daemon.env, "read", "--json", "--root", str(root), *mode, "--params", params)
        assert run.returncode in (0, 2), run.stderr
        assert not _leaks(run.stdout + run.stderr, secrets)
        listed = cli(daemon.env, "files", "--root", str(root), *off, *mode, "--", *plain)
        assert listed.returncode in (0, 2), listed
        assert set(listed.stdout.splitlines()) <= {"link_file", "link_dir"}, listed.stdout
        text = cli(daemon.env, "read", "--root", str(root), *mode, "--", *plain)
        assert text.returncode == 0 and not _leaks(text.stdout + text.stderr, secrets)


# ------------------------------------------------------------------------- deny rules


_DENY_KINDS = (
    "ENV", "ENVLOCAL", "SUBENV", "PEM", "RSA", "RSAPUB", "CUSTOM", "GITCONFIG", "NESTED",
    "COMMITMSG",
)  # fmt: skip


def _deny_tree(root: Path, env: dict[str, str], marker: str) -> list[str]:
    """A repository (and a nested one) with denied files, each holding a marker; the
    markers."""
    write_tree(
        root,
        {
            "a.txt": "alpha\n",
            ".env": f"ENV-{marker}\n",
            ".env.local": f"ENVLOCAL-{marker}\n",
            ".env.example": "EXAMPLE=1\n",
            "sub/.env": f"SUBENV-{marker}\n",
            "k.pem": f"PEM-{marker}\n",
            "id_rsa": f"RSA-{marker}\n",
            "id_rsa.pub": f"RSAPUB-{marker}\n",
            "conf/app.custom": f"CUSTOM-{marker}\n",
            ".gitignore": ".env*\n",
        },
    )
    git(root, "init", "-q", env=env)
    git(root, "config", "readmany.marker", f"GITCONFIG-{marker}", env=env)
    git(root, "add", "a.txt", ".gitignore", env=env)
    git(root, "commit", "-qm", f"COMMITMSG-{marker}", env=env)
    nested = root / "vendor" / "lib"
    write_tree(nested, {"x.txt": "x\n"})
    git(nested, "init", "-q", env=env)
    git(nested, "config", "readmany.marker", f"NESTED-{marker}", env=env)
    return [f"{k}-{marker}" for k in _DENY_KINDS]


def _is_denied_path(p: str) -> bool:
    parts = p.split("/")
    return (
        ".git" in parts
        or p.startswith("gitlink/")
        or parts[-1] in (".env", ".env.local")
        or parts[-1].endswith((".pem", ".custom"))
        or parts[-1].startswith("id_rsa")
    )


def test_deny_rules_never_listed_or_read(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    secrets = _deny_tree(root, daemon.env, uuid.uuid4().hex)
    denied = [
        ".git", ".git/", ".git/config", ".git/HEAD", "./.git/config", ".git//config",
        "sub/../.git/config", ".git/**", "**/.git/**", ".git/*", ".git/objects/**",
        ".git/logs/HEAD", ".git/COMMIT_EDITMSG", str(root / ".git" / "config"),
        "vendor/lib/.git/config", "vendor/**/.git/*", ".env", ".env.local", "sub/.env",
        "**/.env", ".env*", "k.pem", "*.pem", "id_rsa", "id_rsa.pub", "id_rsa*",
        "conf/app.custom", "**/*.custom",
        {"path": ".git/config", "offset": 1, "limit": 10},
        {"path": ".env", "offset": 1},
    ]  # fmt: skip
    deny = [*DEFAULT_DENY_PATTERNS, "*.custom"]
    env = dict(daemon.env, READMANY_DENY_PATTERNS=json.dumps(deny))
    daemon.env = env
    daemon.start()
    observed: dict[str, str] = {}

    with daemon.session(root) as c:
        bad = []
        for entry in denied:
            answer = _read_all(c, entry)
            observed[repr(entry)] = _outcome(answer)
            if _leaks(answer, secrets) or any(
                f["status"] in ("ok", "partial") and _is_denied_path(f["path"])
                for f in answer.get("files", [])
            ):
                bad.append((entry, _outcome(answer), _leaks(answer, secrets)))
        assert not bad, bad
        everything = _read_all(c, "**")
        assert not _leaks(everything, secrets)
        shown = {f["path"] for f in everything["files"]}
        assert not [p for p in shown if _is_denied_path(p)], shown
        assert {"a.txt", ".env.example", "vendor/lib/x.txt"} <= shown  # the control
        listing = c.request(
            "readMany/files",
            {"useDefaultExcludes": False,
             "fileFilteringOptions": {"respectGitIgnore": False, "respectIgnoreFiles": False}},
        )  # fmt: skip
        paths = [f["path"] for f in listing["files"]]
        assert ".env.example" in paths and not [p for p in paths if _is_denied_path(p)], paths
    # A connection that sets denyPatterns to nothing still never sees .git/ internals.
    with daemon.session(root, {"denyPatterns": []}) as c:
        for entry in (".git/config", ".git/**", "gitlink/config", "vendor/lib/.git/config"):
            answer = _read_all(c, entry)
            assert not _leaks(answer, secrets[7:]), (entry, answer)  # .git/ markers
            observed[f"denyPatterns=[] {entry}"] = _outcome(answer)
    print("\ndeny outcomes:", json.dumps(observed, indent=1))

    off = ["--no-gitignore", "--no-ignore-files", "--no-default-excludes"]
    plain = [e for e in denied if isinstance(e, str)]
    for mode in (["--no-daemon"], []):
        run = cli(env, "read", "--json", "--root", str(root), *off, *mode,
                  "--max-total-files", "10000", "--", *plain)  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert not _leaks(run.stdout + run.stderr, secrets)
        assert not [
            f
            for f in json.loads(run.stdout)["files"]
            if f["status"] in ("ok", "partial") and _is_denied_path(f["path"])
        ]
        listed = cli(env, "files", "--root", str(root), *off, *mode)
        assert listed.returncode == 0, listed.stderr
        names = listed.stdout.splitlines()
        assert ".env.example" in names and not [p for p in names if _is_denied_path(p)], names
        listed = cli(env, "files", "--root", str(root), *off, *mode, "--", *plain)
        assert not [p for p in listed.stdout.splitlines() if _is_denied_path(p)], listed.stdout


# -------------------------------------------------------------------------- read-only


def tree_state(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path below ``root`` (``.git/`` excluded), folders included: its type, mode,
    mtime_ns and bytes (a symlink's target; a folder's sorted names). A file created and
    removed again still shows, as its folder's mtime."""
    state: dict[str, tuple[Any, ...]] = {}
    for folder, dirs, files in os.walk(root):
        if folder == str(root):
            dirs[:] = [d for d in dirs if d != ".git"]
        st = os.lstat(folder)
        names = sorted(os.listdir(folder))
        rel = os.path.relpath(folder, root)
        state[rel] = ("dir", st.st_mode, st.st_mtime_ns, tuple(names))
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                data: Any = os.readlink(p)
            else:
                data = Path(p).read_bytes()
            state[os.path.relpath(p, root)] = ("entry", st.st_mode, st.st_mtime_ns, data)
    return state


def _realistic_tree(root: Path, env: dict[str, str]) -> None:
    write_tree(
        root,
        {
            ".gitignore": "*.log\nbuild/\n",
            ".readmanyignore": "notes/private.md\n",
            "README.md": "# project\n",
            "src/a.py": "def a():\n    return 1\n",
            "src/b.py": "import a\n" * 50,
            "src/pkg/c.py": "x = 'ü'\r\ny = 2\r\n",
            "src/no_newline.py": "z = 3",
            "docs/guide.md": "".join(f"line {i}\n" for i in range(1, 600)),
            "docs/ünïcode name.md": "snowman ☃\n",
            "notes/private.md": "hidden by the tool ignore file\n",
            "build/out.log": "ignored\n",
            "app.log": "ignored too\n",
            "node_modules/pkg/index.js": "module.exports = 1\n",
            ".env": "TOKEN=x\n",
            "empty.txt": "",
        },
    )
    (root / "utf16.txt").write_bytes("hello utf16\n".encode("utf-16"))
    (root / "bin.dat").write_bytes(bytes(range(256)) * 64)
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    (root / "big.txt").write_bytes(b"".join(b"%07d %s\n" % (i, b"b" * 60) for i in range(40_000)))
    git(root, "init", "-q", env=env)
    git(root, "add", "-A", env=env)
    git(root, "commit", "-qm", "one", env=env)
    (root / "src" / "b.py").write_text("import a\n" * 60)
    git(root, "commit", "-qam", "two", env=env)
    os.symlink("src/a.py", root / "link_in")
    os.symlink("src", root / "srclink")
    os.symlink("nowhere.txt", root / "broken_link")
    (root / "src" / "ro.py").write_text("read only\n")
    os.chmod(root / "src" / "ro.py", 0o444)


def test_read_only_whatever_is_asked(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _realistic_tree(root, daemon.env)
    before = tree_state(root)
    daemon.start()
    mixed = [
        "src", "docs/*.md", "big.txt", "img.png", "bin.dat", "utf16.txt", "link_in",
        "srclink/a.py", "broken_link", ".env", "build/out.log", "notes/private.md",
        "missing.txt", "node_modules/**", "**/*.py", "{README,empty}.*", "../x",
    ]  # fmt: skip
    answers = 0
    with daemon.session(root) as c, daemon.session(root, {"maxFileBytes": 100_000}) as small:
        clock = c.request("readMany/status", {})["clock"]
        for fmt in ("separator", "heredoc", "xml", "json"):
            for extra in ({}, {"lineNumbers": True, "absolutePaths": True}):
                r = c.request("readMany/read", {"paths": mixed, "format": fmt, **extra})
                answers += 1
                assert r["files"]
        variants: list[dict[str, Any]] = [
            {"files": [{"path": "big.txt", "offset": 30_000, "limit": 50},
                       {"path": "docs/guide.md", "offset": 550}]},
            {"paths": ["big.txt"], "preferFullRead": True},
            {"paths": ["**"], "packing": "smallest-first", "maxTotalChars": 5_000},
            {"paths": ["missing.txt", "src"], "stopOnError": True},
            {"paths": ["src"], "recursive": False, "include": ["docs/**"], "exclude": ["*.md"]},
            {"paths": ["**"], "useDefaultExcludes": False,
             "fileFilteringOptions": {"respectGitIgnore": False, "respectIgnoreFiles": False}},
            {"paths": ["**"], "sync": "stat"},
            {"paths": ["**"], "sync": "none"},
            {"paths": ["img.png", "src/a.py"], "format": "json"},
        ]  # fmt: skip
        for params in variants:
            for conn in (c, small):
                conn.request("readMany/read", params)
                answers += 1
        # cursor pages through everything
        page = c.request("readMany/read", {"paths": ["**"], "maxTotalFiles": 3})
        pages = 1
        while "nextCursor" in page and pages < 30:
            page = c.request("readMany/read", {"cursor": page["nextCursor"]})
            pages += 1
        assert pages > 2 and "nextCursor" not in page
        c.request("readMany/files", {})
        c.request("readMany/files", {"patterns": ["src/**", "*.md"], "useDefaultExcludes": False})
        c.request("readMany/changedSince", {"clock": clock})
        c.request("readMany/rescan", {})
        c.request("readMany/status", {})
        # overlays: an edited buffer, an unsaved new file; never written to disk
        for rel, text in (("src/a.py", "def a():\n    return 2\n"), ("src/unsaved.py", "new\n")):
            uri = (root / rel).as_uri()
            c.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": text}})  # fmt: skip
            c.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                              "end": {"line": 0, "character": 0}},
                                    "text": "# edited\n"}],
            })  # fmt: skip
        r = c.request("readMany/read", {"paths": ["src/a.py", "src/unsaved.py"]})
        assert r["files"][0]["source"] == "overlay", r["files"]
        assert "# edited" in r["llmContent"]
        for rel in ("src/a.py", "src/unsaved.py"):
            c.notify("textDocument/didClose", {"textDocument": {"uri": (root / rel).as_uri()}})
        c.request("readMany/read", {"paths": ["src/a.py"]})

    # the CLI, through the daemon and in its own process
    for mode in ([], ["--no-daemon"]):
        for fmt in ("separator", "heredoc", "xml", "json"):
            run = cli(daemon.env, "read", "--root", str(root), "--format", fmt, "--line-numbers",
                      *mode, "--", *mixed)  # fmt: skip
            assert run.returncode == 0, run.stderr
        first = json.loads(cli(daemon.env, "read", "--json", "--root", str(root),
                               "--max-total-files", "4", *mode, "**").stdout)  # fmt: skip
        assert first.get("nextCursor")
        nxt = cli(daemon.env, "read", "--root", str(root), "--cursor", first["nextCursor"], *mode)
        assert nxt.returncode == 0, nxt.stderr
        for args in ([], ["-0"], ["--no-gitignore", "--no-ignore-files", "--no-default-excludes"]):
            assert cli(daemon.env, "files", "--root", str(root), *args, *mode).returncode == 0
    assert cli(daemon.env, "status").returncode == 0
    assert cli(daemon.env, "stop").returncode == 0  # saves its snapshots on the way out
    assert daemon.proc is not None and daemon.proc.wait(15) == 0
    after = tree_state(root)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, [(k, before.get(k), after.get(k)) for k in changed][:5]
    assert answers >= 26


def test_deny_rules_hold_through_symlinks(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    secrets = _deny_tree(root, daemon.env, uuid.uuid4().hex)
    os.symlink(".git", root / "gitlink")
    os.symlink(".env", root / "envlink")
    os.symlink("../.git/config", root / "sub" / "cfglink")
    daemon.env = dict(
        daemon.env, READMANY_DENY_PATTERNS=json.dumps([*DEFAULT_DENY_PATTERNS, "*.custom"])
    )
    daemon.start()
    leaked = {}
    with daemon.session(root) as c:
        for entry in (
            "gitlink/config",
            "gitlink/HEAD",
            "gitlink/**",
            "sub/cfglink",
            "envlink",
            "**",
        ):
            answer = _read_all(c, entry)
            if found := _leaks(answer, secrets):
                leaked[entry] = found
    run = cli(daemon.env, "read", "--json", "--no-daemon", "--root", str(root),
              "--no-gitignore", "envlink", "sub/cfglink", "**")  # fmt: skip
    if found := _leaks(run.stdout, secrets):
        leaked["cli"] = found
    assert not leaked, leaked


def test_a_folder_swapped_for_a_link_out_mid_request_is_never_followed(
    daemon: Daemon, tmp_path: Path
) -> None:
    """A writer in the workspace flips ``sub`` between a real folder and a link to a
    folder outside while requests run: no answer may hold the outside file (each open
    walks the path from the root without following links), and every race is a per-file
    status, never a JSON-RPC error."""
    import threading

    root, outside = tmp_path / "ws", tmp_path / "outside"
    secret = f"OUTSIDE-{uuid.uuid4().hex}"
    write_tree(root, {"sub/x.txt": "inside\n", "a.txt": "a\n"})
    write_tree(outside, {"x.txt": secret + "\n"})
    daemon.start()
    stop = threading.Event()
    flips = 0

    def flipper() -> None:
        nonlocal flips
        real, link = root / "real", root / "lnk"
        while not stop.is_set():
            os.rename(root / "sub", real)
            os.symlink(outside, link)
            os.rename(link, root / "sub")  # sub -> outside
            os.unlink(root / "sub")
            os.rename(real, root / "sub")  # sub is the real folder again
            flips += 1

    leaked: list[Any] = []
    errors: list[str] = []
    with daemon.session(root) as c:
        thread = threading.Thread(target=flipper, daemon=True)
        thread.start()
        try:
            for n in range(150):
                for entry in ("sub/x.txt", "sub/**", "sub"):
                    sync = "none" if n % 2 else "auto"
                    answer = _read_all(c, entry, sync=sync, format="json")
                    if "files" not in answer:  # a JSON-RPC error
                        errors.append(f"{entry}: {answer}")
                        continue
                    if _leaks(answer, [secret]):
                        leaked.append((entry, answer.get("files")))
        finally:
            stop.set()
            thread.join(10)
    assert flips > 10, flips
    assert not leaked, leaked[:3]
    assert not errors, errors[:5]


def test_python_m_run_inside_a_workspace_never_imports_its_modules(
    daemon: Daemon, tmp_path: Path
) -> None:
    """``python -m readmany_daemon`` puts the current folder first on ``sys.path``; an
    editor starts the server inside the workspace. Modules the workspace holds under
    standard-library names (json, typing, argparse) must not run, and must not break the
    read."""
    tree = tmp_path / "tree"
    tree.mkdir()
    marker = tmp_path / "ran"
    for name in ("json", "typing", "argparse", "hashlib", "asyncio"):
        (tree / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r})\nraise SystemExit('shadowed {name}')\n"
        )
    (tree / "notes.txt").write_text("hello\n")
    proc = subprocess.run(
        [*PY, "read", "--no-daemon", "notes.txt"],
        env=daemon.env,
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--- notes.txt ---\nhello\n" in proc.stdout
    assert not marker.exists(), marker.read_text()
