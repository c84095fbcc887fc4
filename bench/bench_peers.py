"""Benchmark: readmany against its peers on the same requests, and whether they read the same files.

Usage::

    python bench/bench_peers.py [--trees stdlib,100k] [--runs 5] [--quick] [--setup]

Peers (installed by ``ensure_peers()``, then run offline):

* Gemini CLI's ``read_many_files`` tool, from ``@google/gemini-cli-core`` (pinned in
  ``bench/peers/package.json``, installed by ``npm ci`` there) with a real ``Config``
  (targetDir = the tree; no model, no network), driven by ``bench/peers/gemini_read_many.mjs``:
  *warm* = ``build(params).execute()`` timed inside a long-lived node process (the tool
  as a running Gemini CLI session calls it), *cold* = a node process per request (start,
  imports, ``Config.initialize()``, execute, print);
* repomix (npm, pinned; ``--stdout``, its default XML style, security check and token
  count on, as a user runs it) and files-to-prompt (PyPI, pinned, installed into this
  interpreter's environment; ``--cxml``);
* ``rg --files``, ``fdfind``, ``git ls-files --cached --others --exclude-standard`` for
  the listing, and ``rg --files … | xargs cat`` for raw reading.

readmany runs *cold* as the one-shot CLI (``python -m readmany_daemon read --no-daemon``)
and *warm* over the socket of a private daemon (``readmany serve --socket``, started here
with its own XDG folders, stopped at the end; requests through ``readmany_daemon.client``,
timed to the last byte of the answer).

Requests, the same for all, on each tree:

* ``full``: every ``.py`` file (glob ``**/*.py``), budgets lifted (full content);
* ``default``: the same glob with readmany's default budgets (20 files, 200 lines a file…;
  the peers have no budgets, so for them this is the same call as ``full`` and their
  figures are taken from it, marked "= full");
* ``named10``: ten named ``.py`` files spread over the tree;
* ``listing``: every visible file's path.

Trees: ``stdlib`` — a git snapshot of the interpreter's standard library
(``sysconfig.get_paths()["stdlib"]`` without ``site-packages/``, ``__pycache__/``,
symlinks, files over 1 MiB — gen_tree's source set) in ``bench/.trees/stdlib-src``: the
stdlib folder itself sits inside pyenv's git checkout, whose ``.gitignore`` ignores it
(``/versions``), which would make every gitignore-aware peer answer something else;
``100k`` — ``bench/.trees/stdlib-100k`` (``gen_tree.py``). ``--tree DIR`` measures any folder.

Every (tree, request) pair runs its tools interleaved, round by round in a rotated order,
after one untimed check run per tool whose output is parsed for the file labels; each
figure is the median of ``--runs`` (≥ 5 by default), with its ratio to readmany (warm and
cold) computed from the medians of the same interleaved set. The file check compares
each tool's labels with readmany's warm answer: files only one side reads, and files the
peer cut (Gemini's 2,000-line / 2,000-character truncation warning).

Targets (printed PASS/FAIL; exit status 0 unless ``--strict``): on ``full``, readmany
warm ≥ 20x faster than Gemini's tool (warm, in-process) and readmany cold ≥ 2x faster
than Gemini's tool — both its in-process time (strict) and its own cold process.

Results go to ``bench/results/peers-latest.json``; ``--markdown FILE`` writes the tables.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    REPO_ROOT,
    TREES_DIR,
    python_env,
    reap,
    receive_body,
    table,
    tool_version,
    write_results,
)
from gen_tree import _GIT_IDENTITY, build_tree, stdlib_dir, stdlib_files

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

#: Where ``readmany_daemon`` is imported from: this working copy, or a snapshot named by
#: ``--readmany-src`` / ``READMANY_BENCH_SRC`` (a folder holding ``readmany_daemon/``), so
#: a long run measures one version while the working copy changes under it.
READMANY_SRC = Path(os.environ.get("READMANY_BENCH_SRC") or REPO_ROOT)


def use_readmany_src(src: Path) -> None:
    """Measure the ``readmany_daemon`` found in ``src`` (subprocesses and the client)."""
    global READMANY_SRC
    READMANY_SRC = src.resolve()
    if str(READMANY_SRC) not in sys.path:
        sys.path.insert(0, str(READMANY_SRC))


def readmany_env() -> dict[str, str]:
    """``python_env()`` with ``READMANY_SRC`` first on PYTHONPATH, no READMANY_* settings."""
    env = python_env()
    parts = [str(READMANY_SRC), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    for name in list(env):
        if name.startswith("READMANY_"):
            del env[name]
    return env


PEERS_DIR = Path(__file__).resolve().parent / "peers"
GEMINI_DRIVER = PEERS_DIR / "gemini_read_many.mjs"
#: Pinned in bench/peers/package.json (npm) and here (PyPI).
GEMINI_PACKAGE = "@google/gemini-cli-core"
FILES_TO_PROMPT = "files-to-prompt==0.6"
#: Budgets "lifted": larger than any tree.
HUGE = 10**15
#: Time-outs (s): one peer run, daemon start.
RUN_TIMEOUT = 3600.0
START_TIMEOUT = 120.0
#: No run starts with less memory available than this (other people use the machine).
MIN_MEM_AVAILABLE = 4 * 2**30


def _oom_first() -> None:
    """In a child before exec: make it the OOM killer's first choice (``oom_score_adj``
    1000), so a benchmark process that runs out of memory (readmany's full read of the
    100k tree peaks near 20 GiB) is killed before anybody else's work on the machine."""
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")


def node_heap_flag() -> str:
    """``--max-old-space-size`` at half the machine's memory: what Gemini CLI relaunches
    itself with (its default heap would run out on the 100k tree)."""
    total = 8 * 2**30
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
    return f"--max-old-space-size={total // 2 // 2**20}"


PASS, FAIL, NA = "PASS", "FAIL", "n/a"
REQUESTS = ("full", "default", "named10", "listing")
REQUEST_TITLES = {
    "full": "`**/*.py`, budgets lifted (full content)",
    "default": "`**/*.py`, default budgets",
    "named10": "ten named files",
    "listing": "listing (every visible path)",
}


# ---------------------------------------------------------------------------- peers setup


@dataclass
class Peers:
    """Which peers can run here: command prefixes, versions, and why one can't."""

    node: str | None = None
    gemini: bool = False
    repomix: list[str] | None = None
    files_to_prompt: list[str] | None = None
    rg: str | None = None
    fd: str | None = None
    git: str | None = None
    versions: dict[str, str | None] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)


def _npm_installed() -> bool:
    """Whether ``bench/peers/node_modules`` holds the pinned packages."""
    try:
        wanted = json.loads((PEERS_DIR / "package.json").read_text())["dependencies"]
    except (OSError, ValueError, KeyError):
        return False
    for name, version in wanted.items():
        meta = PEERS_DIR / "node_modules" / name / "package.json"
        try:
            if json.loads(meta.read_text()).get("version") != version:
                return False
        except (OSError, ValueError):
            return False
    return True


def _files_to_prompt_cmd() -> list[str] | None:
    """``files-to-prompt`` beside this interpreter, as ``python -m``-free argv, or None."""
    beside = Path(sys.executable).parent / "files-to-prompt"
    if beside.is_file():
        return [str(beside)]
    proc = subprocess.run(
        [sys.executable, "-c", "import files_to_prompt.cli"], capture_output=True, check=False
    )
    if proc.returncode == 0:
        return [sys.executable, "-m", "files_to_prompt.cli"]
    return None


def ensure_peers(install: bool = True, log: Callable[[str], None] = print) -> Peers:
    """Find the peers; with ``install``, run ``npm ci`` in ``bench/peers`` when its
    node_modules lacks the pinned packages and ``pip install files-to-prompt`` when
    missing (both from their registries; everything runs offline afterwards)."""
    peers = Peers()
    peers.node = shutil.which("node")
    npm = shutil.which("npm")
    if peers.node is None or npm is None:
        why = "node/npm not installed (apt-get install nodejs npm; node ≥ 20)"
        peers.missing.update(gemini=why, repomix=why)
    else:
        if not _npm_installed() and install:
            log("peers: npm ci in bench/peers (pinned gemini-cli-core and repomix) …")
            proc = subprocess.run(
                [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=PEERS_DIR,
                capture_output=True,
                text=True,
                check=False,
                timeout=1800,
            )
            if proc.returncode != 0:
                log(f"peers: npm ci failed: {proc.stderr.strip()[-500:]}")
        if _npm_installed():
            peers.gemini = True
            peers.repomix = [
                peers.node,
                str(PEERS_DIR / "node_modules" / "repomix" / "bin" / "repomix.cjs"),
            ]
            for name in (GEMINI_PACKAGE, "repomix"):
                with contextlib.suppress(OSError, ValueError):
                    meta = PEERS_DIR / "node_modules" / name / "package.json"
                    peers.versions[name] = json.loads(meta.read_text())["version"]
            peers.versions["node"] = tool_version([peers.node, "--version"])
        else:
            why = "npm packages not installed: python bench/bench_peers.py --setup"
            peers.missing.update(gemini=why, repomix=why)
    peers.files_to_prompt = _files_to_prompt_cmd()
    if peers.files_to_prompt is None and install:
        log(f"peers: pip install {FILES_TO_PROMPT} …")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", FILES_TO_PROMPT],
            check=False,
            timeout=600,
        )
        peers.files_to_prompt = _files_to_prompt_cmd()
    if peers.files_to_prompt is None:
        peers.missing["files-to-prompt"] = f"not installed: pip install {FILES_TO_PROMPT}"
    else:
        peers.versions["files-to-prompt"] = tool_version([*peers.files_to_prompt, "--version"])
    peers.rg = shutil.which("rg")
    peers.fd = shutil.which("fdfind") or shutil.which("fd")
    peers.git = shutil.which("git")
    for name, path in (("rg", peers.rg), ("fd", peers.fd), ("git", peers.git)):
        if path is None:
            peers.missing[name] = "not on PATH"
        else:
            peers.versions[name] = tool_version([path, "--version"])
    return peers


# ---------------------------------------------------------------------------------- trees


STDLIB_MARKER = "readmany-bench-stdlib.json"


def stdlib_tree(dest: Path | None = None) -> Path:
    """A git snapshot of the standard library's source files at ``dest``
    (``bench/.trees/stdlib-src``): reused when its marker names the same folder and list."""
    dest = (TREES_DIR / "stdlib-src") if dest is None else dest
    source = stdlib_dir()
    files = stdlib_files(source)
    wanted = {"stdlib": str(source), "files": len(files), "python": sys.version.split()[0]}
    marker = dest / ".git" / STDLIB_MARKER
    with contextlib.suppress(OSError, ValueError):
        if json.loads(marker.read_text()) == wanted:
            return dest.resolve()
    if dest.exists():
        if not marker.exists():
            raise RuntimeError(f"{dest} exists and is not a stdlib snapshot: not touched")
        shutil.rmtree(dest)
    partial = dest.with_name(f".{dest.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    for rel in files:
        target = partial / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, target)
    env = dict(os.environ, GIT_AUTHOR_DATE="2000-01-01T00:00:00+0000")
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "stdlib")):
        subprocess.run(
            ["git", *_GIT_IDENTITY, *args], cwd=partial, env=env, check=True, capture_output=True
        )
    (partial / ".git" / STDLIB_MARKER).write_text(json.dumps(wanted))
    partial.rename(dest)
    return dest.resolve()


def named_files(tree: Path, count: int = 10) -> list[str]:
    """``count`` tracked ``.py`` files of 1-64 KB spread evenly over the sorted list."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.py"], cwd=tree, capture_output=True, check=True
    ).stdout
    paths = [p.decode() for p in out.split(b"\0") if p]
    sized = [p for p in paths if 1024 <= (tree / p).stat().st_size <= 65536] or paths
    if len(sized) <= count:
        return sized
    step = len(sized) / count
    return [sized[int(i * step + step / 2)] for i in range(count)]


# -------------------------------------------------------------------------------- daemon


class PrivateDaemon:
    """``readmany serve --socket`` with its own socket and XDG folders under a fresh
    ``/tmp`` folder; ``stop()`` runs ``readmany stop --socket`` and waits (SIGTERM, then
    SIGKILL, only for the process started here)."""

    def __init__(self, prefix: str = "rmp") -> None:
        self.home = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
        env = readmany_env()
        for name in ("cache", "state", "run"):
            (self.home / name).mkdir(mode=0o700)
        env.update(
            XDG_CACHE_HOME=str(self.home / "cache"),
            XDG_STATE_HOME=str(self.home / "state"),
            XDG_RUNTIME_DIR=str(self.home / "run"),
        )
        self.env = env
        self.socket = str(self.home / "run" / "daemon.sock")
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def start(self) -> None:
        self._log = open(self.home / "serve.log", "ab")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "readmany_daemon", "serve", "--socket", self.socket],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            env=self.env,
            cwd="/",
            preexec_fn=_oom_first,
        )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def connect(self, root: Path | None, timeout: float = START_TIMEOUT) -> Any:
        """An initialized ``readmany_daemon.client.Client`` (root as workspace folder)."""
        from readmany_daemon.client import connect

        deadline = time.monotonic() + timeout
        while True:
            client = connect(self.socket, None if root is None else str(root), timeout=10.0)
            if client is not None:
                client.settimeout(RUN_TIMEOUT)
                return client
            if self.proc is not None and self.proc.poll() is not None:
                tail = (self.home / "serve.log").read_text(errors="replace")[-1500:]
                raise RuntimeError(f"the daemon exited ({self.proc.returncode}): {tail}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no daemon answered at {self.socket} in {timeout:g} s")
            time.sleep(0.005)

    def stop(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                subprocess.run(
                    [sys.executable, "-m", "readmany_daemon", "stop", "--socket", self.socket],
                    env=self.env,
                    capture_output=True,
                    timeout=60,
                    check=False,
                )
                reap(self.proc)
        finally:
            if self._log is not None:
                self._log.close()
            shutil.rmtree(self.home, ignore_errors=True)


@contextlib.contextmanager
def private_daemon(prefix: str = "rmp") -> Iterator[PrivateDaemon]:
    daemon = PrivateDaemon(prefix)
    try:
        daemon.start()
        yield daemon
    finally:
        daemon.stop()


def vm_status(pid: int, field_name: str = "VmRSS") -> int:
    """``VmRSS`` (or another ``Vm*`` line) of ``/proc/PID/status``, in bytes."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {field_name} for pid {pid}")


def raw_request(client: Any, method: str, params: dict[str, Any]) -> tuple[float, bytes]:
    """Send one request on ``client`` and receive its answer as raw bytes; the time is
    taken when the last byte has arrived (nothing decoded before)."""
    sock = client._sock  # the light client has no streaming API
    buf = bytearray(client._buf)
    client._buf.clear()
    client._next_id += 1
    msg_id = client._next_id
    started = time.perf_counter()
    client.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    while True:
        while (end := buf.find(b"\r\n\r\n")) < 0:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the daemon closed the connection")
            buf += chunk
        length = -1
        for line in bytes(buf[:end]).split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        del buf[: end + 4]
        body = receive_body(sock, buf, length)
        seconds = time.perf_counter() - started
        head = bytes(body[:200])
        if b'"method"' in head and b'"id":%d' % msg_id not in head:
            continue  # a notification or a server request: skip it
        client._buf[:] = buf
        return seconds, bytes(body)


def _json_member(raw: bytes, key: str) -> Any:
    """The value of ``"key":`` in a raw JSON answer, decoded without decoding the rest
    (the last occurrence: an unescaped ``"key":`` can't occur inside a JSON string)."""
    at = raw.rfind(b'"%s":' % key.encode())
    if at < 0:
        return None
    text = raw[at + len(key) + 3 :].decode("utf-8", "replace")
    value, _ = json.JSONDecoder().raw_decode(text)
    return value


# --------------------------------------------------------------------------------- tools


@dataclass
class Check:
    """What one tool's answer held: file labels (relative POSIX), bytes, notes."""

    labels: list[str] | None = None  # None: the tool prints no labels
    out_bytes: int = 0
    truncated: int = 0  # files the tool cut (its own warning)
    partial: int = 0  # readmany: files cut by budgets (by design)
    omitted: int = 0
    note: str = ""
    error: str = ""


@dataclass
class Tool:
    """One way to answer a request: ``time()`` returns seconds; ``check()`` one
    untimed run parsed for the labels."""

    name: str
    kind: str  # "readmany-cold", "readmany-warm", "peer"
    time: Callable[[], float]
    check: Callable[[], Check]
    same_as: str | None = None  # the request whose figures this one reuses


def _drain(
    argv: Sequence[str], cwd: Path, env: dict[str, str] | None
) -> tuple[float, int, int, str]:
    """Wall time of ``argv`` with stdout drained here: (seconds, bytes, status, stderr tail)."""
    buf = bytearray(1 << 20)
    total = 0
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            preexec_fn=_oom_first,
        )
        stdout: Any = proc.stdout
        while n := stdout.readinto(buf):
            total += n
        code = proc.wait(timeout=RUN_TIMEOUT)
        seconds = time.perf_counter() - started
        err.seek(0)
        tail = err.read()[-2000:].decode(errors="replace").strip()
    return seconds, total, code, tail.splitlines()[-1] if tail else ""


def _capture(argv: Sequence[str], cwd: Path, env: dict[str, str] | None) -> tuple[Path, int, str]:
    """Run ``argv`` once with stdout to a temporary file: (file, status, stderr tail)."""
    fd, name = tempfile.mkstemp(prefix="rmpeer", suffix=".out")
    with os.fdopen(fd, "wb") as out:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
            check=False,
            timeout=RUN_TIMEOUT,
            preexec_fn=_oom_first,
        )
    lines = proc.stderr.decode(errors="replace").strip().splitlines()
    return Path(name), proc.returncode, lines[-1] if lines else ""


def _relabel(label: str, tree: Path) -> str:
    """A label as a POSIX path relative to ``tree`` (absolute and ``./`` normalised)."""
    root = tree.as_posix().rstrip("/") + "/"
    if label.startswith(root):
        label = label[len(root) :]
    while label.startswith("./"):
        label = label[2:]
    return label


def parse_separator(path: Path, tree: Path) -> list[str]:
    """Labels of ``--- label ---`` blocks (readmany's separator format, Gemini's): a
    separator line at the start or after an empty line naming an existing file."""
    labels: list[str] = []
    prev_blank = True
    with open(path, "rb") as f:
        for raw in f:
            line = raw.rstrip(b"\n")
            if prev_blank and line.startswith(b"--- ") and line.endswith(b" ---") and len(line) > 8:
                label = _relabel(line[4:-4].decode("utf-8", "surrogateescape"), tree)
                if (tree / label).is_file():
                    labels.append(label)
            prev_blank = line == b""
    return labels


def parse_tagged(path: Path, tree: Path, start: bytes, end: bytes) -> list[str]:
    """Labels of lines ``{start}label{end}`` (repomix ``<file path="…">``, files-to-prompt
    ``<source>…</source>``) naming an existing file."""
    labels: list[str] = []
    with open(path, "rb") as f:
        for raw in f:
            line = raw.rstrip(b"\n")
            if line.startswith(start) and line.endswith(end):
                label = _relabel(
                    line[len(start) : -len(end)].decode("utf-8", "surrogateescape"), tree
                )
                if (tree / label).is_file():
                    labels.append(label)
    return labels


def parse_lines(path: Path, tree: Path, sep: bytes = b"\n") -> list[str]:
    data = path.read_bytes()
    return [_relabel(p.decode("utf-8", "surrogateescape"), tree) for p in data.split(sep) if p]


def subprocess_tool(
    name: str,
    kind: str,
    argv: Sequence[str],
    tree: Path,
    parser: Callable[[Path], list[str]] | None,
    env: dict[str, str] | None = None,
    truncation_marker: bytes | None = None,
    listed: Callable[[], list[str]] | None = None,
) -> Tool:
    """A tool that is a process: timed with stdout drained; checked by parsing a capture
    (``parser``), or, for ``xargs cat``, the list it was given (``listed``)."""

    def run_time() -> float:
        seconds, _, code, err = _drain(argv, tree, env)
        if code != 0:
            raise RuntimeError(f"{name} exited {code}: {err}")
        return seconds

    def run_check() -> Check:
        out, code, err = _capture(argv, tree, env)
        try:
            check = Check(out_bytes=out.stat().st_size)
            if code != 0:
                if not err:  # some tools (repomix --stdout) report errors on stdout
                    with open(out, "rb") as f:
                        f.seek(max(0, check.out_bytes - 4000))
                        tail = f.read().decode(errors="replace").strip().splitlines()
                    err = next((line.strip() for line in reversed(tail) if line.strip()), "")
                check.error = f"exit {code}: {err}"[:300]
                return check
            if parser is not None:
                check.labels = parser(out)
            elif listed is not None:
                check.labels = listed()
                check.note = "labels: the list given to cat"
            if truncation_marker is not None:
                with open(out, "rb") as f:
                    check.truncated = sum(line.count(truncation_marker) for line in f)
            return check
        finally:
            out.unlink()

    return Tool(name, kind, run_time, run_check)


def readmany_warm_tool(client: Any, method: str, params: dict[str, Any], tree: Path) -> Tool:
    def run_time() -> float:
        seconds, raw = raw_request(client, method, params)
        if b'"error"' in raw[:100] and b'"result"' not in raw[:100]:
            raise RuntimeError(f"readmany: {raw[:300]!r}")
        return seconds

    def run_check() -> Check:
        _, raw = raw_request(client, method, params)
        files = _json_member(raw, "files") or []
        check = Check(out_bytes=len(raw))
        if method == "readMany/files":
            check.labels = [f["path"] for f in files]
            return check
        check.labels = [f["path"] for f in files if f.get("status") in ("ok", "partial")]
        check.partial = sum(1 for f in files if f.get("status") == "partial")
        summary = _json_member(raw, "summary") or {}
        check.omitted = int(summary.get("omitted", 0) or 0)
        return check

    return Tool("readmany warm (socket)", "readmany-warm", run_time, run_check)


class GeminiServer:
    """The warm Gemini tool: one node process, one request a line."""

    def __init__(self, node: str, tree: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [node, node_heap_flag(), str(GEMINI_DRIVER), "--target", str(tree), "--serve"],
            cwd=PEERS_DIR,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=_oom_first,
        )
        self.tree = tree
        self._id = 0
        ready = self._line()
        if not ready.get("ready"):
            raise RuntimeError(f"gemini driver did not start: {ready}")
        self.version = ready.get("version")

    def _line(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"gemini driver exited ({self.proc.poll()})")
        return dict(json.loads(line))

    def ask(self, include: list[str], labels: bool = False) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self._id += 1
        self.proc.stdin.write(
            json.dumps({"id": self._id, "include": include, "labels": labels}) + "\n"
        )
        self.proc.stdin.flush()
        answer = self._line()
        if answer.get("ms", -1) < 0:
            raise RuntimeError(f"gemini tool failed: {answer.get('error')}")
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def tool(self, include: list[str]) -> Tool:
        def run_time() -> float:
            return float(self.ask(include)["ms"]) / 1000

        def run_check() -> Check:
            answer = self.ask(include, labels=True)
            skipped = answer.get("skippedCount", 0)
            return Check(
                labels=[_relabel(p, self.tree) for p in answer.get("files", [])],
                out_bytes=int(answer.get("chars", 0)),
                truncated=int(answer.get("truncated", 0)),
                note=f"{skipped} skipped: {answer.get('skipped', [])[:3]}" if skipped else "",
                error=answer.get("error") or "",
            )

        return Tool("gemini read_many_files (warm, in-process)", "peer", run_time, run_check)


# ----------------------------------------------------------------------------- measuring


@dataclass
class Result:
    """One tool on one request: runs (s), the check, and the ratios."""

    tree: str
    request: str
    tool: str
    kind: str
    runs: list[float] = field(default_factory=list)
    check: Check | None = None
    error: str = ""
    same_as: str | None = None
    capped: bool = False  # one run only: the check run took over the cap

    @property
    def median(self) -> float | None:
        return statistics.median(self.runs) if self.runs else None

    def to_json(self) -> dict[str, Any]:
        check = None
        if self.check is not None:
            check = {k: v for k, v in self.check.__dict__.items() if k != "labels"}
            check["files"] = None if self.check.labels is None else len(self.check.labels)
        return {
            "tree": self.tree,
            "request": self.request,
            "tool": self.tool,
            "kind": self.kind,
            "runs_ms": [round(s * 1000, 3) for s in self.runs],
            "median_ms": None if self.median is None else round(self.median * 1000, 3),
            "same_as": self.same_as,
            "capped": self.capped,
            "error": self.error,
            "check": check,
        }


def mem_available() -> int:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (a large number when unknown)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 1 << 50


def interleave(
    tools: Sequence[Tool], runs: int, log: Callable[[str], None], slow_cap: float = 300.0
) -> list[Result]:
    """The check run of every tool (the warm-up), then ``runs`` rounds, each in a
    rotated order. A tool that fails is dropped from later rounds; one whose check run
    took over ``slow_cap`` seconds is not run again (its figure is that one run, n=1);
    no run starts while less than ``MIN_MEM_AVAILABLE`` of memory is available."""
    results = [Result("", "", t.name, t.kind) for t in tools]
    alive = [True] * len(tools)

    def memory_ok(i: int) -> bool:
        if mem_available() >= MIN_MEM_AVAILABLE:
            return True
        time.sleep(5)  # another process may be finishing
        if mem_available() >= MIN_MEM_AVAILABLE:
            return True
        results[i].error = f"skipped: less than {MIN_MEM_AVAILABLE / 2**30:.0f} GiB available"
        alive[i] = False
        return False

    for i, tool in enumerate(tools):
        if not memory_ok(i):
            continue
        started = time.perf_counter()
        try:
            check = results[i].check = tool.check()
            if check.error:
                results[i].error = check.error
                alive[i] = False
        except Exception as exc:
            results[i].error = f"{type(exc).__name__}: {exc}"[:400]
            alive[i] = False
        took = time.perf_counter() - started
        log(
            f"    check {tool.name}: {took:.2f} s, {mem_available() / 2**30:.1f} GiB available"
            + (f" ERROR {results[i].error}" if results[i].error else "")
        )
        if alive[i] and took > slow_cap:
            results[i].runs.append(took)
            results[i].capped = True
            alive[i] = False
    for round_ in range(runs):
        for offset in range(len(tools)):
            i = (round_ + offset) % len(tools)
            if not alive[i] or not memory_ok(i):
                continue
            try:
                results[i].runs.append(tools[i].time())
            except Exception as exc:
                results[i].error = f"{type(exc).__name__}: {exc}"[:400]
                alive[i] = False
    return results


@dataclass
class Plan:
    """What to run: trees, requests, runs, which peers."""

    runs: int
    requests: tuple[str, ...]
    gemini_cold: tuple[str, ...] = ("full", "named10")
    slow_cap: float = 300.0
    peers_only: tuple[str, ...] | None = None  # quick smoke: only these peers


def readmany_params(request: str, named: list[str]) -> dict[str, Any]:
    if request == "full":
        return {
            "paths": ["**/*.py"],
            "preferFullRead": True,
            "maxTotalFiles": HUGE,
            "maxTotalChars": HUGE,
        }
    if request == "default":
        return {"paths": ["**/*.py"]}
    if request == "named10":
        return {"paths": list(named)}
    return {}


def readmany_cli(request: str, tree: Path, named: list[str]) -> list[str]:
    base = [sys.executable, "-m", "readmany_daemon"]
    if request == "listing":
        return [*base, "files", "--no-daemon", "--root", str(tree)]
    argv = [*base, "read", "--no-daemon", "--root", str(tree)]
    if request == "full":
        return [
            *argv,
            "**/*.py",
            "--prefer-full-read",
            "--max-total-files",
            str(HUGE),
            "--max-total-chars",
            str(HUGE),
        ]
    if request == "default":
        return [*argv, "**/*.py"]
    return [*argv, *named]


def build_tools(
    request: str,
    tree: Path,
    named: list[str],
    peers: Peers,
    client: Any,
    gemini: GeminiServer | None,
    plan: Plan,
    node_env: dict[str, str],
    listfile: Path,
) -> list[Tool]:
    """The tools for one request on one tree (readmany cold and warm first)."""
    env = readmany_env()
    tools: list[Tool] = []
    cold_parser = (
        (lambda p: parse_lines(p, tree))
        if request == "listing"
        else (lambda p: parse_separator(p, tree))
    )
    tools.append(
        subprocess_tool(
            "readmany cold (CLI --no-daemon)",
            "readmany-cold",
            readmany_cli(request, tree, named),
            tree,
            cold_parser,
            env,
        )
    )
    method = "readMany/files" if request == "listing" else "readMany/read"
    tools.append(readmany_warm_tool(client, method, readmany_params(request, named), tree))

    def wanted(peer: str) -> bool:
        return plan.peers_only is None or peer in plan.peers_only

    if request == "listing":
        if peers.rg and wanted("rg"):
            tools.append(
                subprocess_tool(
                    "rg --files --hidden -g '!.git'",
                    "peer",
                    [peers.rg, "--files", "--hidden", "-g", "!.git"],
                    tree,
                    lambda p: parse_lines(p, tree),
                )
            )
        if peers.fd and wanted("fd"):
            tools.append(
                subprocess_tool(
                    "fdfind --type f --hidden --exclude .git",
                    "peer",
                    [peers.fd, "--type", "f", "--hidden", "--exclude", ".git"],
                    tree,
                    lambda p: parse_lines(p, tree),
                )
            )
        if peers.git and wanted("git"):
            tools.append(
                subprocess_tool(
                    "git ls-files --cached --others --exclude-standard",
                    "peer",
                    [peers.git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                    tree,
                    lambda p: parse_lines(p, tree, b"\0"),
                )
            )
        return tools

    if request == "default":
        # The peers have no budgets: their call is the one of "full" (figures reused).
        return tools
    include = ["**/*.py"] if request == "full" else list(named)
    if gemini is not None and wanted("gemini"):
        tools.append(gemini.tool(include))
        if request in plan.gemini_cold:
            argv = [
                peers.node or "node",
                node_heap_flag(),
                str(GEMINI_DRIVER),
                "--target",
                str(tree),
            ]
            for pattern in include:
                argv += ["--include", pattern]
            tools.append(
                subprocess_tool(
                    "gemini read_many_files (cold, node process)",
                    "peer",
                    argv,
                    tree,
                    lambda p: parse_separator(p, tree),
                    node_env,
                    b"[WARNING: This file was truncated.",
                )
            )
    if peers.repomix and wanted("repomix"):
        argv = [*peers.repomix, "--stdout", "--include", ",".join(include), "."]
        tools.append(
            subprocess_tool(
                "repomix --stdout (xml)",
                "peer",
                argv,
                tree,
                lambda p: parse_tagged(p, tree, b'<file path="', b'">'),
                node_env,
            )
        )
    if peers.files_to_prompt and wanted("files-to-prompt"):
        argv = [
            *peers.files_to_prompt,
            "--cxml",
            *((".", "-e", "py") if request == "full" else named),
        ]
        tools.append(
            subprocess_tool(
                "files-to-prompt --cxml",
                "peer",
                argv,
                tree,
                lambda p: parse_tagged(p, tree, b"<source>", b"</source>"),
            )
        )
    if peers.rg and wanted("xargs"):
        if request == "full":
            shell = "rg --files --hidden -g '!.git' -g '*.py' -0 | xargs -0 cat"

            def listed() -> list[str]:
                out = subprocess.run(
                    ["rg", "--files", "--hidden", "-g", "!.git", "-g", "*.py", "-0"],
                    cwd=tree,
                    capture_output=True,
                    check=True,
                ).stdout
                return [_relabel(p.decode(), tree) for p in out.split(b"\0") if p]
        else:
            listfile.write_text("".join(f"{p}\n" for p in named))
            shell = f"xargs -d '\\n' -a {listfile} cat"

            def listed() -> list[str]:
                return list(named)

        tools.append(
            subprocess_tool(
                shell if request == "full" else "xargs cat (10 names)",
                "peer",
                ["sh", "-c", shell],
                tree,
                None,
                listed=listed,
            )
        )
    return tools


def measure_tree(
    label: str, tree: Path, peers: Peers, plan: Plan, log: Callable[[str], None]
) -> tuple[list[Result], dict[str, Any]]:
    """Every request on one tree; a private daemon for the warm rows."""
    results: list[Result] = []
    named = named_files(tree)
    info: dict[str, Any] = {"tree": str(tree), "named": named}
    node_home = Path(tempfile.mkdtemp(prefix="rmpnode"))
    node_env = dict(os.environ, HOME=str(node_home), NO_COLOR="1", GEMINI_CLI_NO_RELAUNCH="1")
    listfile = node_home / "named.txt"
    gemini: GeminiServer | None = None
    try:
        with private_daemon() as daemon:
            client = daemon.connect(tree)
            started = time.perf_counter()
            client.request("readMany/files", {"patterns": ["README*"]})  # index the root
            info["daemon_index_s"] = round(time.perf_counter() - started, 3)
            info["daemon_rss_after_index"] = vm_status(daemon.pid)
            if (
                peers.gemini
                and peers.node
                and (plan.peers_only is None or "gemini" in plan.peers_only)
            ):
                try:
                    gemini = GeminiServer(peers.node, tree, node_env)
                except Exception as exc:
                    log(f"  gemini driver: {exc}")
                    info["gemini_error"] = str(exc)
            for request in plan.requests:
                log(f"  {label} / {request}")
                tools = build_tools(
                    request, tree, named, peers, client, gemini, plan, node_env, listfile
                )
                got = interleave(tools, plan.runs, log, plan.slow_cap)
                for r in got:
                    r.tree, r.request = label, request
                results.extend(got)
                for r in got:
                    med = f"{r.median * 1000:,.1f} ms" if r.median is not None else r.error
                    log(f"    {r.tool}: {med}")
            info["daemon_peak_rss"] = vm_status(daemon.pid, "VmHWM")
            client.exit()
    finally:
        if gemini is not None:
            gemini.close()
        shutil.rmtree(node_home, ignore_errors=True)
    # The peers' "default" figures are their "full" ones (no budgets in those tools).
    if "default" in plan.requests and "full" in plan.requests:
        for r in [r for r in results if r.request == "full" and r.kind == "peer"]:
            results.append(
                Result(
                    label,
                    "default",
                    r.tool,
                    r.kind,
                    list(r.runs),
                    r.check,
                    r.error,
                    "full",
                    r.capped,
                )
            )
    return results, info


# ------------------------------------------------------------------------------- reports


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:,.1f}"


def _ratio(peer: float | None, ours: float | None) -> str:
    if peer is None or ours is None or ours <= 0:
        return "-"
    return f"{peer / ours:,.1f}x"


def file_check(r: Result, reference: list[str] | None) -> str:
    """How ``r``'s labels compare with readmany's (warm) labels for the same request."""
    c = r.check
    if c is None:
        return r.error or "-"
    if c.error:
        return c.error[:80]
    notes: list[str] = []
    if c.labels is None:
        notes.append("no labels")
    elif reference is not None:
        mine, ref = set(c.labels), set(reference)
        dup = len(c.labels) - len(mine)
        if mine == ref:
            notes.append("same files")
        else:
            extra, missing = sorted(mine - ref), sorted(ref - mine)
            parts = []
            if missing:
                parts.append(f"{len(missing):,} missing (e.g. {missing[0]})")
            if extra:
                parts.append(f"{len(extra):,} extra (e.g. {extra[0]})")
            notes.append("; ".join(parts))
        if dup:
            notes.append(f"{dup} duplicated")
    if c.truncated:
        notes.append(f"{c.truncated:,} files truncated by the tool")
    if c.partial:
        notes.append(f"{c.partial:,} partial (budget)")
    if c.omitted:
        notes.append(f"{c.omitted:,} omitted (budget, listed)")
    if c.note:
        notes.append(c.note[:80])
    return "; ".join(notes)


def rows_for(results: Sequence[Result]) -> list[dict[str, object]]:
    """Table rows: per tree and request, the tools with median, min, max, ratios to
    readmany warm and cold (peer ÷ readmany: above 1 means readmany is faster), files."""
    rows: list[dict[str, object]] = []
    keys: list[tuple[str, str]] = []
    for r in results:
        if (r.tree, r.request) not in keys:
            keys.append((r.tree, r.request))
    for tree, request in keys:
        group = [r for r in results if (r.tree, r.request) == (tree, request)]
        warm = next((r for r in group if r.kind == "readmany-warm"), None)
        cold = next((r for r in group if r.kind == "readmany-cold"), None)
        reference_group = group
        if request == "default":  # peers answered "full": compare their files with that
            reference_group = [r for r in results if (r.tree, r.request) == (tree, "full")] or group
        ref = next((r for r in reference_group if r.kind == "readmany-warm"), None)
        for r in group:
            reference = warm.check.labels if warm and warm.check else None
            if r.same_as and ref and ref.check:
                reference = ref.check.labels
            files = "-"
            if r.check is not None and r.check.labels is not None:
                files = f"{len(r.check.labels):,}"
            rows.append(
                {
                    "tree": tree,
                    "request": request,
                    "tool": r.tool
                    + (" (= full)" if r.same_as else "")
                    + (" (1 run: over the cap)" if r.capped else ""),
                    "median ms": _ms(r.median),
                    "min ms": _ms(min(r.runs) if r.runs else None),
                    "max ms": _ms(max(r.runs) if r.runs else None),
                    "n": len(r.runs),
                    "÷ warm": _ratio(r.median, warm.median if warm else None),
                    "÷ cold": _ratio(r.median, cold.median if cold else None),
                    "files": files,
                    "file check (vs readmany warm)": "reference"
                    if r is warm
                    else file_check(r, reference),
                }
            )
    return rows


def verdicts(results: Sequence[Result]) -> list[dict[str, object]]:
    """The targets on ``full``, per tree."""
    rows: list[dict[str, object]] = []
    for tree in dict.fromkeys(r.tree for r in results):
        group = {r.tool: r for r in results if r.tree == tree and r.request == "full"}
        warm = next((r for r in group.values() if r.kind == "readmany-warm"), None)
        cold = next((r for r in group.values() if r.kind == "readmany-cold"), None)
        gem = group.get("gemini read_many_files (warm, in-process)")
        gem_cold = group.get("gemini read_many_files (cold, node process)")

        def verdict(
            ours: Result | None, theirs: Result | None, factor: float, what: str, tree: str = tree
        ) -> None:
            if ours is None or theirs is None or ours.median is None or theirs.median is None:
                rows.append(
                    {"tree": tree, "target": what, "ratio": "-", "result": f"{NA} (not measured)"}
                )
                return
            ratio = theirs.median / ours.median
            rows.append(
                {
                    "tree": tree,
                    "target": what,
                    "ratio": f"{ratio:,.1f}x",
                    "result": PASS if ratio >= factor else FAIL,
                }
            )

        verdict(
            warm,
            gem,
            20,
            "warm readmany ≥ 20x faster than Gemini's tool (in-process), full content",
        )
        verdict(cold, gem, 2, "cold CLI ≥ 2x faster than Gemini's tool (in-process), full content")
        verdict(
            cold,
            gem_cold,
            2,
            "cold CLI ≥ 2x faster than Gemini's tool (cold node process), full content",
        )
    return rows


# ---------------------------------------------------------------------------------- main


def _git_head() -> str | None:
    """HEAD of the repository, with ``+dirty`` when readmany_daemon/ has changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "readmany_daemon"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty and READMANY_SRC == REPO_ROOT else "")


def main(argv: list[str] | None = None) -> int:
    global RUN_TIMEOUT
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", default="stdlib,100k", help="stdlib, 100k (comma-separated)")
    parser.add_argument("--tree", type=Path, help="measure this folder instead (as it is)")
    parser.add_argument("--runs", type=int, help="timed runs per tool (5; 1 with --quick)")
    parser.add_argument(
        "--requests", default=",".join(REQUESTS), help="full,default,named10,listing"
    )
    parser.add_argument(
        "--peers", help="only these peers: gemini,repomix,files-to-prompt,xargs,rg,fd,git"
    )
    parser.add_argument(
        "--gemini-cold",
        default="full,named10",
        help="requests with a cold Gemini row (full,named10; '' for none)",
    )
    parser.add_argument(
        "--run-timeout",
        type=float,
        default=RUN_TIMEOUT,
        help="a process run longer than this is killed and reported (3600 s)",
    )
    parser.add_argument(
        "--slow-cap",
        type=float,
        default=300.0,
        help="a tool whose check run takes longer is run once (300 s)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: a 200-file tree, one run, no install"
    )
    parser.add_argument(
        "--setup", action="store_true", help="install the peers (npm ci, pip) and exit"
    )
    parser.add_argument(
        "--no-install", action="store_true", help="never install peers (skip what is missing)"
    )
    parser.add_argument(
        "--readmany-src",
        type=Path,
        help="folder holding the readmany_daemon to measure (this working copy)",
    )
    parser.add_argument("--results-dir", type=Path, help="where to write JSON (bench/results)")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target FAILs")
    args = parser.parse_args(argv)

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    if args.readmany_src is not None:
        use_readmany_src(args.readmany_src)
    RUN_TIMEOUT = args.run_timeout

    peers = ensure_peers(install=not (args.no_install or args.quick), log=log)
    if args.setup:
        print(json.dumps({"versions": peers.versions, "missing": peers.missing}, indent=2))
        return 0 if not peers.missing else 1
    for name, why in peers.missing.items():
        log(f"peer {name}: {why}")

    runs = args.runs or (1 if args.quick else 5)
    plan = Plan(
        runs=runs,
        requests=tuple(r for r in args.requests.split(",") if r),
        gemini_cold=tuple(r for r in args.gemini_cold.split(",") if r),
        slow_cap=args.slow_cap,
        peers_only=tuple(p.strip() for p in args.peers.split(",")) if args.peers else None,
    )
    trees: list[tuple[str, Path]] = []
    scratch: Path | None = None
    if args.tree is not None:
        trees.append((args.tree.name, args.tree.resolve()))
    elif args.quick:
        scratch = Path(tempfile.mkdtemp(prefix="rmpq"))
        trees.append(("quick-200", build_tree(scratch / "tree", files=200).root.resolve()))
    else:
        for name in (t.strip() for t in args.trees.split(",") if t.strip()):
            if name == "stdlib":
                trees.append(("stdlib", stdlib_tree()))
            elif name == "100k":
                trees.append(
                    ("100k", build_tree(TREES_DIR / "stdlib-100k", files=100_000).root.resolve())
                )
            else:
                parser.error(f"unknown tree {name!r}")

    results: list[Result] = []
    infos: dict[str, Any] = {}
    started = time.monotonic()
    try:
        for label, tree in trees:
            log(f"tree {label}: {tree}")
            try:
                got, info = measure_tree(label, tree, peers, plan, log)
            except Exception as exc:
                traceback.print_exc()
                infos[label] = {"tree": str(tree), "error": f"{type(exc).__name__}: {exc}"}
                continue
            results.extend(got)
            infos[label] = info
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    rows = rows_for(results)
    targets = verdicts(results)
    text = table(rows) + "\n\n" + table(targets) if targets else table(rows)
    print(text)
    versions = " ".join(f"{k} {v}" for k, v in peers.versions.items() if v)
    print(
        f"\n{runs} runs each after one check run, interleaved; {versions}; "
        f"took {time.monotonic() - started:.0f} s"
    )
    if args.markdown is not None:
        args.markdown.write_text(text + "\n")
    payload = {
        "runs": runs,
        "readmany_src": str(READMANY_SRC),
        "readmany_commit": _git_head(),
        "trees": infos,
        "versions": peers.versions,
        "missing": peers.missing,
        "results": [r.to_json() for r in results],
        "targets": targets,
        "rows": rows,
    }
    path = write_results("peers", payload, args.results_dir)
    print(f"results: {path}")
    if any(r.kind.startswith("readmany") and r.error for r in results) or any(
        "error" in i for i in infos.values()
    ):
        return 1
    if args.strict and any(t["result"] == FAIL for t in targets):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
