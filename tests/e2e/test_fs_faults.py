"""File-system faults, end to end: the real ``readmany serve --socket`` daemon (and the
in-process CLI where it makes sense) over trees with unreadable files and folders, files
changed between listing and reading, special files, symlink loops and escapes, odd
names, a 10 GB sparse file and lowered inotify limits.

Every case checks the same three things: the answer is right, each file has its status
and code (PROTOCOL §4: never an exception, never a silent drop), and the daemon keeps
serving afterwards (``still_serving``). Waits are ``wait_for`` with a deadline.

What users get (decided here, documented by the assertions):

* an unreadable file → ``error``/``permission-denied``; a file below a folder that
  cannot be searched → ``permission-denied`` too (not ``not-found``);
* an unreadable folder named (or the folder a glob's literal part names) →
  ``error``/``permission-denied``; an expansion over it answers everything else and
  adds a ``[Warning: locked/ cannot be listed (Permission denied); …]`` line to
  ``llmContent``; ``readMany/status`` lists it in the root's warnings; once readable
  again its files show up on the next answer (the folder is re-listed at every check);
* FIFOs, sockets, devices: never opened; named → ``not-a-file``; expansions leave them
  out (as git does); symlinks to ``/dev/null``/``/dev/zero`` → ``outside-workspace``;
* symlink loops → ``not-found`` ("a symbolic link loop"); links leaving the root →
  ``outside-workspace`` when named or matched, never followed by an expansion (a link
  to a folder is an entry, not a folder to enter);
* file names with newlines, 255-byte components, ~3.5 KB paths: listed and read
  exactly; bytes that are not UTF-8 are shown as U+FFFD in labels (JSON needs valid
  Unicode) and the file is read;
* a 10 GB sparse file: the default read is ``partial`` (lines 1-200, total unknown),
  a line window exact, ``preferFullRead`` ``too-large``; each in well under a second.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from readmany_daemon.client import Client
from tests import machine_settings
from tests.e2e.daemon_helpers import Daemon, status_root, wait_for
from tests.helpers import make_env

DEADLINE = 10.0
#: Run as root without the capabilities that bypass file permissions: a ``chmod 000``
#: then denies as it would for any user. (Dropping to another uid is not possible here:
#: the interpreter lives below ``/root``, mode 0700.)
NO_DAC = [
    "setpriv",
    "--bounding-set=-dac_override,-dac_read_search",
    "--inh-caps=-dac_override,-dac_read_search",
    "--",
]


def unprivileged_prefix() -> list[str]:
    """The command prefix under which ``chmod`` denies, or a skip with the reason."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root and setpriv is unavailable: chmod 000 would not deny")
    return NO_DAC


def ask(client: Client, paths: list[Any], **params: Any) -> dict[str, Any]:
    """``readMany/read`` in the json format; the result with ``byPath`` (files by label)
    and ``results`` (the parsed ``llmContent``) added."""
    result: dict[str, Any] = client.request(
        "readMany/read",
        {"paths": paths, "format": "json", "maxTotalFiles": 1000, **params},
    )
    result["byPath"] = {f["path"]: f for f in result["files"]}
    result["results"] = json.loads(result["llmContent"])["results"]
    return result


def cli(root: Path, env: dict[str, str], *args: str, prefix: list[str] | None = None) -> Any:
    """The in-process CLI (``read --json --no-daemon --format json``), same extras."""
    proc = subprocess.run(
        [
            *(prefix or []),
            sys.executable,
            "-m",
            "readmany_daemon",
            "read",
            "--json",
            "--no-daemon",
            "--format",
            "json",
            "--max-total-files",
            "1000",
            "--root",
            str(root),
            *args,
        ],
        env=env,
        capture_output=True,
        timeout=60,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    result: dict[str, Any] = json.loads(proc.stdout)
    result["byPath"] = {f["path"]: f for f in result["files"]}
    result["results"] = json.loads(result["llmContent"])["results"]
    return result


def codes(result: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {p: (f["status"], f.get("code")) for p, f in result["byPath"].items()}


def still_serving(client: Client, root: Path) -> None:
    """The daemon answers a plain read after the fault."""
    (root / "alive.txt").write_text("alive\n")
    got = ask(client, ["alive.txt"])
    assert got["results"]["alive.txt"]["content"] == "alive\n"


# ----------------------------------------------------------------------------- permissions


def test_unreadable_files_and_folders(tmp_path: Path) -> None:
    prefix = unprivileged_prefix()
    root = tmp_path / "ws"
    (root / "locked").mkdir(parents=True)
    (root / "open").mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "noread.txt").write_text("secret\n")
    (root / "locked" / "s.txt").write_text("s\n")
    (root / "open" / "o.txt").write_text("o\n")
    os.chmod(root / "noread.txt", 0)
    os.chmod(root / "locked", 0)
    paths = ["a.txt", "noread.txt", "locked/s.txt", "locked/", "locked/*", "**"]
    expected = {
        "a.txt": ("ok", None),
        "noread.txt": ("error", "permission-denied"),
        "locked/s.txt": ("error", "permission-denied"),
        "locked": ("error", "permission-denied"),  # the named folder
        "locked/*": ("error", "permission-denied"),  # a glob inside it
        "open/o.txt": ("ok", None),  # from "**": the rest still answers
    }
    warning = (
        "[Warning: locked/ cannot be listed (Permission denied); its files are missing from **.]"
    )
    d = Daemon(make_env(tmp_path / "home"), prefix=prefix)
    try:
        by_cli = cli(root, d.env, *paths, prefix=prefix)
        assert codes(by_cli) == expected
        assert warning in by_cli["llmContent"] or warning in json.dumps(by_cli["results"])
        d.start()
        with d.session(root) as client:
            got = client.request("readMany/read", {"paths": paths})
            assert {f["path"]: (f["status"], f.get("code")) for f in got["files"]} == expected
            assert warning in got["llmContent"]
            assert got["summary"]["errors"] == 4 and got["summary"]["read"] == 2
            warnings = status_root(client, root).get("warnings", [])
            assert "locked: not listed: Permission denied" in warnings
            # readable again: the next answer lists the folder (no event says so: a
            # chmod changes no folder's mtime, but an unlisted folder is re-listed)
            os.chmod(root / "locked", 0o755)
            os.chmod(root / "noread.txt", 0o644)
            again = ask(client, ["noread.txt", "**"])
            assert again["results"]["noread.txt"]["content"] == "secret\n"
            assert again["results"]["locked/s.txt"]["content"] == "s\n"
            assert "cannot be listed" not in again["llmContent"]
            assert "locked: not listed: Permission denied" not in status_root(client, root).get(
                "warnings", []
            )
            still_serving(client, root)
    finally:
        os.chmod(root / "locked", 0o755)
        os.chmod(root / "noread.txt", 0o644)
        d.cleanup()


# ----------------------------------------------------------------------------- races


def test_changes_between_listing_and_reading(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for name in ("gone.txt", "short.txt", "swapped.txt", "kept.txt"):
        (root / name).write_text(f"{name} version one\n" * 10)
    with daemon.session(root) as client:
        listed = [f["path"] for f in client.request("readMany/files", {})["files"]]
        assert listed == ["gone.txt", "kept.txt", "short.txt", "swapped.txt"]
        (root / "gone.txt").unlink()
        os.truncate(root / "short.txt", 5)
        (root / "new.tmp").write_text("two\n")
        os.replace(root / "new.tmp", root / "swapped.txt")
        # named paths: always the file as it is now
        got = ask(client, listed, sync="none")
        assert codes(got)["gone.txt"] == ("error", "not-found")
        assert got["results"]["short.txt"]["content"] == "short"
        assert got["results"]["swapped.txt"]["content"] == "two\n"
        # an expansion from an index that may not have the deletion yet: either the
        # file is gone from it, or it is there as not-found; never stale content
        loose = ask(client, ["*.txt"], sync="none")
        assert codes(loose).get("gone.txt", ("error", "not-found")) == ("error", "not-found")
        assert loose["results"]["short.txt"]["content"] == "short"
        # with the barrier: gone
        fresh = ask(client, ["*.txt"])
        assert sorted(fresh["results"]) == ["kept.txt", "short.txt", "swapped.txt"]
        still_serving(client, root)


REC = 64  # bytes per appended record: records never straddle a page


def test_hammered_files_are_read_consistently(daemon: Daemon, tmp_path: Path) -> None:
    """A writer thread replaces, truncates, deletes and appends for a bounded number of
    rounds while the daemon answers; every answer shows each file as one version."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "swap.txt").write_text("R0:\n")
    (root / "trunc.txt").write_text("T" * 4000)
    (root / "del.txt").write_text("D0\n")
    (root / "grow.txt").write_text("")
    grown = "".join(f"G{i:05d}".ljust(REC - 1, ".") + "\n" for i in range(400))
    done = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            grow = os.open(root / "grow.txt", os.O_WRONLY | os.O_APPEND)
            try:
                for i in range(1, 401):
                    tmp = root / f".swap{i}.tmp"
                    tmp.write_text(f"R{i}:" + "x" * (i % 50) + "\n")
                    os.replace(tmp, root / "swap.txt")
                    if i % 10 == 0:
                        (root / ".t.tmp").write_text("T" * 4000)
                        os.replace(root / ".t.tmp", root / "trunc.txt")
                    else:
                        os.truncate(root / "trunc.txt", 4000 - (i % 10) * 300)
                    if i % 2:
                        (root / "del.txt").unlink()
                    else:
                        (root / ".d.tmp").write_text(f"D{i}\n")  # whole, or not there
                        os.replace(root / ".d.tmp", root / "del.txt")
                    os.write(grow, grown[(i - 1) * REC : i * REC].encode())
            finally:
                os.close(grow)
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)
        finally:
            done.set()

    with daemon.session(root) as client:
        thread = threading.Thread(target=writer)
        thread.start()
        answers = 0
        while not done.is_set() or answers < 5:
            # named paths, then an expansion (apart: a named del.txt that is gone and the
            # expansion's del.txt that is back would share one key of the json format)
            named = ask(
                client, ["swap.txt", "trunc.txt", "del.txt", "grow.txt"], preferFullRead=True
            )
            if answers % 2:
                named = ask(client, ["*.txt"], preferFullRead=True)
            for f in named["files"]:
                key = f["path"]
                if f["status"] == "error":
                    assert (key, f.get("code")) == ("del.txt", "not-found"), f
                    continue
                assert f["status"] == "ok", f
                text = named["results"][key]["content"]
                assert hashlib.sha256(text.encode()).hexdigest() == f["sha256"]
                if key == "swap.txt":
                    m = re.fullmatch(r"R(\d+):(x*)\n", text)
                    assert m and len(m[2]) == int(m[1]) % 50, text
                elif key == "trunc.txt":
                    assert text == "T" * len(text), text[:50]
                elif key == "del.txt":
                    assert re.fullmatch(r"D\d+\n", text), text
                elif key == "grow.txt":
                    assert len(text) % REC == 0 and text == grown[: len(text)]
            answers += 1
        thread.join()
        assert not errors, errors
        still_serving(client, root)


# ----------------------------------------------------------------------------- special files


def test_special_files_never_block(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    os.mkfifo(root / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock"))  # (AF_UNIX paths are short; tmp_path is)
    (root / "devnull").symlink_to("/dev/null")
    (root / "devzero").symlink_to("/dev/zero")
    named = ["fifo", "sock", "devnull", "devzero"]
    expected = {
        "fifo": ("error", "not-a-file"),
        "sock": ("error", "not-a-file"),
        "devnull": ("error", "outside-workspace"),
        "devzero": ("error", "outside-workspace"),
    }
    try:
        os.mknod(root / "chr", 0o644 | stat.S_IFCHR, os.makedev(1, 5))  # like /dev/zero
        named.append("chr")
        expected["chr"] = ("error", "not-a-file")
    except PermissionError:
        pass  # no CAP_MKNOD here: the symlinks to devices still cover devices
    try:
        want_all = {**expected, "a.txt": ("ok", None)}
        # the expansion leaves FIFOs, sockets and devices out; device links are entries
        want_glob = {
            "a.txt": ("ok", None),
            "devnull": ("error", "outside-workspace"),
            "devzero": ("error", "outside-workspace"),
        }
        assert codes(cli(root, daemon.env, *named, "a.txt")) == want_all
        assert codes(cli(root, daemon.env, "**")) == want_glob
        with daemon.session(root) as client:
            assert codes(ask(client, [*named, "a.txt"])) == want_all
            assert codes(ask(client, ["**"])) == want_glob
            assert codes(ask(client, [*named, "**"], preferFullRead=True)) == want_all
            still_serving(client, root)
    finally:
        sock.close()


# ----------------------------------------------------------------------------- symlinks


def test_symlink_loops_and_escapes(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "o.txt").write_text("outside\n")
    (root / "a.txt").write_text("a\n")
    (root / "sub" / "b.txt").write_text("b\n")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "sub" / "up").symlink_to("..")
    (root / "outfile").symlink_to(outside / "o.txt")
    (root / "outdir").symlink_to(outside)
    (root / "rel-out").symlink_to("../outside")
    (root / "inlink.txt").symlink_to("sub/b.txt")
    named = ["loop1", "loop1/x", "outfile", "outdir", "outdir/o.txt", "rel-out/o.txt"]
    want_named = {
        "loop1": ("error", "not-found"),
        "loop1/x": ("error", "not-found"),
        "outfile": ("error", "outside-workspace"),
        "outdir": ("error", "outside-workspace"),
        "outdir/o.txt": ("error", "outside-workspace"),
        "rel-out/o.txt": ("error", "outside-workspace"),
    }
    # "**": the links are entries, never followed: no sub/up/a.txt, no outdir/o.txt
    want_glob = {
        "a.txt": ("ok", None),
        "inlink.txt": ("ok", None),
        "loop1": ("error", "not-found"),
        "loop2": ("error", "not-found"),
        "outdir": ("error", "outside-workspace"),
        "outfile": ("error", "outside-workspace"),
        "rel-out": ("error", "outside-workspace"),
        "sub/b.txt": ("ok", None),
        "sub/up": ("error", "not-a-file"),
    }
    by_cli = cli(root, daemon.env, *named)
    assert codes(by_cli) == want_named
    assert "loop" in by_cli["byPath"]["loop1"]["message"]
    assert codes(cli(root, daemon.env, "**")) == want_glob
    with daemon.session(root) as client:
        assert codes(ask(client, named)) == want_named
        got = ask(client, ["**"])
        assert codes(got) == want_glob
        assert "outside\n" not in got["llmContent"]
        assert got["results"]["inlink.txt"]["content"] == "b\n"
        still_serving(client, root)


# ----------------------------------------------------------------------------- odd names


def test_long_odd_and_undecodable_names(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    broot = os.fsencode(root)
    files: dict[bytes, bytes] = {
        b"L" * 251 + b".txt": b"long name\n",
        b"new\nline.txt": b"newline\n",
        b"bad\xff\xfe.txt": b"undecodable\n",
        "caf\u00e9 \u2603.txt".encode(): b"unicode\n",
    }
    deep = b"/".join(b"%02d" % i * 125 for i in range(14))  # 14 x 250 bytes
    assert len(broot) + len(deep) + 10 < os.pathconf(broot, "PC_PATH_MAX")
    os.makedirs(broot + b"/" + deep)
    files[deep + b"/deep.txt"] = b"deep\n"
    for rel, data in files.items():
        with open(broot + b"/" + rel, "wb") as f:
            f.write(data)
    # labels: valid Unicode; an undecodable byte shows as U+FFFD
    want = {rel.decode("utf-8", "replace"): data.decode() for rel, data in files.items()}
    by_cli = cli(root, daemon.env, "**")
    assert {k: v["content"] for k, v in by_cli["results"].items()} == want
    named = [os.fsdecode(rel) for rel in files]
    by_cli = cli(root, daemon.env, *named)
    assert sorted(v["content"] for v in by_cli["results"].values()) == sorted(want.values())
    with daemon.session(root) as client:
        got = ask(client, ["**"])
        assert {k: v["content"] for k, v in got["results"].items()} == want
        assert all(f["status"] == "ok" for f in got["files"])
        # names that are valid Unicode can be asked for by name over the wire too
        wire = [os.fsdecode(rel) for rel in files if b"\xff" not in rel]
        again = ask(client, wire)
        assert [f["status"] for f in again["files"]] == ["ok"] * len(wire)
        still_serving(client, root)


# ----------------------------------------------------------------------------- a 10 GB file


def test_sparse_10gb_file_answers_at_once(daemon: Daemon, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    big = root / "big.log"
    try:
        with open(big, "wb") as f:
            f.write(b"".join(b"line %d\n" % i for i in range(1, 200_001)))  # ~1.8 MB
        os.truncate(big, 10 << 30)  # the rest is a hole: no disk used
        with daemon.session(root) as client:
            t0 = time.monotonic()
            default = ask(client, ["big.log"])
            window = ask(client, [{"path": "big.log", "offset": 150_000, "limit": 3}])
            full = ask(client, ["big.log"], preferFullRead=True)
            elapsed = time.monotonic() - t0
            f = default["byPath"]["big.log"]
            assert (f["status"], f["lineStart"], f["lineEnd"], f["nextOffset"]) == (
                "partial",
                1,
                200,
                201,
            )
            assert "totalLines" not in f or f["totalLines"] is None  # not counted: 10 GB
            assert default["results"]["big.log"]["content"].startswith("line 1\nline 2\n")
            w = window["byPath"]["big.log"]
            assert w["status"] == "ok"
            assert window["results"]["big.log:150000-150002"]["content"] == (
                "line 150000\nline 150001\nline 150002\n"
                # Its position (no "of N": a 10 GB file is not counted).
                "[Showing lines 150000-150002. Continue with offset=150003.]"
            )
            assert codes(full) == {"big.log": ("skipped", "too-large")}
            assert elapsed < 5.0, f"{elapsed:.1f} s: the file was read far beyond its window"
            by_cli = cli(root, daemon.env, "big.log")
            assert codes(by_cli) == {"big.log": ("partial", None)}
            still_serving(client, root)
    finally:
        big.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- inotify limits

_WATCHES = "/proc/sys/fs/inotify/max_user_watches"
_QUEUED = "/proc/sys/fs/inotify/max_queued_events"
#: Watches left free for the daemon above the count of watches in use: the cookie folder
#: and the root come first (``walked_dirs``: ``""`` first), and the count may be off by
#: a few (other processes of this user add and drop watches meanwhile).
_HEADROOM = 12
#: Empty folders added to the tree so that the headroom never covers every folder.
_SPARE_FOLDERS = 40


def _watches_in_use() -> int:
    """inotify watches held by this user's processes now (from /proc/*/fdinfo)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != os.geteuid():
                continue
            for fd in os.listdir(f"/proc/{pid}/fdinfo"):
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    total += sum(1 for line in f if line.startswith("inotify wd:"))
        except OSError:
            continue
    return total


def _watched_inodes(pid: int) -> set[int]:
    """Inode numbers of the folders ``pid``'s inotify instances watch (from fdinfo)."""
    found: set[int] = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                found.update(
                    int(m.group(1), 16)
                    for m in re.finditer(r"^inotify wd:\S+ ino:([0-9a-f]+)", f.read(), re.M)
                )
        except OSError:
            continue
    return found


def _all_threads_stopped(pid: int) -> bool:
    """Every thread of ``pid`` is stopped (``T``): a SIGSTOP has taken effect."""
    states = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            states.append(
                Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            )
    return bool(states) and all(s in ("T", "t") for s in states)


@pytest.mark.slow
def test_lowered_inotify_limits_degrade_but_answers_stay_right(tmp_path: Path) -> None:
    """The daemon starts its watcher while ``max_user_watches`` leaves it a dozen watches
    for 49 folders and ``max_queued_events`` is 16; both are restored as soon as the
    watcher is set up. They are system-wide: the test is in the slow tier and a guard
    process restores them should this process die (tests/machine_settings.py).

    Deterministic under load: the burst goes to a folder the daemon's inotify instance
    (read from its fdinfo) really watches, written while every daemon thread is stopped,
    so its 16-event queue must overflow; the waits are for events that must come."""
    root = tmp_path / "ws"
    for i in range(8):
        (root / f"d{i}").mkdir(parents=True)
        (root / f"d{i}" / "f.txt").write_text(f"{i}\n")
    for i in range(_SPARE_FOLDERS):
        (root / f"x{i:02}").mkdir()
    stack = contextlib.ExitStack()
    try:
        limits = stack.enter_context(machine_settings.changed([_WATCHES, _QUEUED]))
    except OSError as exc:
        pytest.skip(f"cannot change fs.inotify limits here ({exc.strerror})")
    d = Daemon(make_env(tmp_path / "home"))
    try:
        with stack:  # the limits are restored (and the guard ends) once the watcher is set up
            d.start()
            limits.set(_QUEUED, 16)
            limits.set(_WATCHES, _watches_in_use() + _HEADROOM)
            client = d.session(root)
            client.request("readMany/files", {})  # indexed; the watcher starts
            state = wait_for(
                lambda: (s := status_root(client, root)["watcher"]["state"]) != "starting" and s,
                60,
            )
        with client:
            assert state == "degraded"
            watcher = status_root(client, root)["watcher"]
            assert watcher["unwatched"] > 0
            assert any("watch limit" in w for w in watcher["warnings"])
            top = client.request("readMany/status", {})["watcher"]
            assert top["state"] == "degraded"
            # answers stay right: new files in unwatched folders, edits
            for i in range(8):
                (root / f"d{i}" / "new.txt").write_text(f"new {i}\n")
            (root / "d7" / "f.txt").write_text("edited\n")
            got = ask(client, ["**"])
            assert sorted(got["results"]) == sorted(
                [f"d{i}/f.txt" for i in range(8)] + [f"d{i}/new.txt" for i in range(8)]
            )
            assert got["results"]["d7/f.txt"]["content"] == "edited\n"
            # a burst while the daemon cannot read its 16-event queue: overflow → rescan.
            # The burst goes where the daemon holds a watch (the root, unless others took
            # its watch first), once every daemon thread is stopped.
            watched = _watched_inodes(d.pid)
            folders = [root, *(root / f"d{i}" for i in range(8))]
            target = next((f for f in folders if f.stat().st_ino in watched), None)
            assert target is not None, f"the daemon watches none of {folders} (fdinfo: {watched})"
            os.kill(d.pid, signal.SIGSTOP)
            try:
                wait_for(lambda: _all_threads_stopped(d.pid), 60)
                for i in range(100):
                    (target / f"burst{i}.txt").write_text("b\n")
            finally:
                os.kill(d.pid, signal.SIGCONT)
            wait_for(
                lambda: any(
                    "overflow" in w for w in status_root(client, root)["watcher"]["warnings"]
                ),
                60,
            )
            pattern = "burst*.txt" if target == root else f"{target.name}/burst*.txt"
            got = ask(client, [pattern])
            assert len(got["results"]) == 100
            still_serving(client, root)
    finally:
        d.cleanup()
    assert machine_settings.read_setting(_WATCHES) == limits.original[_WATCHES]
    assert machine_settings.read_setting(_QUEUED) == limits.original[_QUEUED]
