"""Real source trees for slow tests and benchmarks: a package's sdist from the registry,
fetched once into a cache, unpacked, and put under git as a user's clone would be.

- ``sdist_tree(name, version)``: the unpacked sdist's top folder (``Path``), a git work
  tree with every file committed. The first call runs ``pip download --no-binary :all:
  --no-deps NAME==VERSION`` (the registry pip is configured for), later calls reuse the
  cache. Raises ``RuntimeError`` naming the package when pip cannot get it.
- ``django_tree()``: Django 5.2's sdist tree (2,8xx ``.py`` files), the real tree the
  packing, outline and redaction measures name.
- ``npm_tree(name, version)``: an npm package's tarball (``npm pack NAME@VERSION``, from
  the registry npm is configured for), unpacked once into the cache: its ``package/``
  folder. Raises ``RuntimeError`` naming the package when npm cannot get it.

The cache folder is ``$READMANY_TEST_CACHE`` or ``~/.cache/readmany-tests``; a lock
file serialises concurrent first calls. Trees in it are read-only by convention: a
test that changes files copies the tree first.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tarfile
import warnings
import zipfile
from pathlib import Path

from tests.helpers import GIT_ENV, git

__all__ = ["cache_dir", "django_tree", "npm_tree", "sdist_tree"]


def cache_dir() -> Path:
    """The folder sdists and their trees are cached in (created on demand)."""
    base = os.environ.get("READMANY_TEST_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "readmany-tests"
    )
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _download(name: str, version: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    existing = sorted(dest.iterdir())
    if existing:
        return existing[0]
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:"]
    command += ["--no-deps", "-d", str(dest), f"{name}=={version}"]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    files = sorted(dest.iterdir())
    if proc.returncode != 0 or not files:
        raise RuntimeError(
            f"pip download of the {name}=={version} sdist failed: {proc.stderr[-2000:]}"
        )
    return files[0]


def extract_tar(tf: tarfile.TarFile, into: Path) -> None:
    """Unpack ``tf`` into ``into`` with tarfile's ``"data"`` filter (PEP 706: no absolute
    paths, nothing outside ``into``, no devices, no links out), which Python has since
    3.11.4 and 3.12. An older Python 3.11 (Debian 12 ships 3.11.2) lacks it: there only
    regular files and folders that stay inside ``into`` are unpacked, owned by the
    current user (anything else raises ``tarfile.TarError``)."""
    if hasattr(tarfile, "data_filter"):
        tf.extractall(into, filter="data")
        return
    base = into.resolve()
    members = tf.getmembers()
    for member in members:
        target = (base / member.name).resolve()
        if not (member.isfile() or member.isdir()) or not target.is_relative_to(base):
            raise tarfile.TarError(f"refusing to unpack {member.name!r} from {tf.name!r}")
        # as the filter: ours, not the archive's owner (git refuses a tree owned by
        # another user), and no set-id or group/other write bits
        member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
        member.mode &= 0o755
    with warnings.catch_warnings():  # (a Python that has the filter warns without one)
        warnings.simplefilter("ignore", DeprecationWarning)
        tf.extractall(into, members=members)  # each member checked above


def _unpack(archive: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(into)
    else:
        with tarfile.open(archive) as tf:
            extract_tar(tf, into)
    tops = [p for p in into.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise RuntimeError(f"{archive.name} does not unpack to one folder: {tops}")
    return tops[0]


def sdist_tree(name: str, version: str) -> Path:
    """The unpacked sdist of ``name==version`` as a git work tree (one commit of every
    file), fetched and built once per cache. Raises ``RuntimeError`` when pip cannot
    download it."""
    root = cache_dir()
    done = root / f"{name}-{version}.tree"
    marker = done / ".ready"
    with open(root / f".{name}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            archive = _download(name, version, root / "archives" / f"{name}-{version}")
            if done.exists():
                subprocess.run(["rm", "-rf", str(done)], check=True)
            top = _unpack(archive, done / "unpacked")
            env = {**os.environ, **GIT_ENV}
            git(top, "init", "-q", "-b", "main", env=env)
            git(top, "add", "-A", env=env)
            git(top, "commit", "-q", "-m", f"{name} {version} sdist", env=env)
            marker.write_text(str(top.relative_to(done)), encoding="utf-8")
        return done / marker.read_text(encoding="utf-8")


def django_tree() -> Path:
    """Django 5.2's sdist as a git work tree (see ``sdist_tree``)."""
    return sdist_tree("django", "5.2")


def npm_tree(name: str, version: str) -> Path:
    """The ``package/`` folder of ``npm pack NAME@VERSION``, unpacked once into the cache
    (``npm-NAME-VERSION/``; not a git work tree). Raises ``RuntimeError`` when npm is
    missing or cannot get the package."""
    root = cache_dir()
    done = root / f"npm-{name}-{version}"
    marker = done / ".ready"
    with open(root / f".npm-{name}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            archives = root / "archives" / f"npm-{name}-{version}"
            archives.mkdir(parents=True, exist_ok=True)
            if not any(archives.glob("*.tgz")):
                proc = subprocess.run(
                    ["npm", "pack", "--silent", f"{name}@{version}"],
                    cwd=archives,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if proc.returncode != 0:
                    raise RuntimeError(f"npm pack {name}@{version} failed: {proc.stderr[-2000:]}")
            tarballs = sorted(archives.glob("*.tgz"))
            if not tarballs:
                raise RuntimeError(f"npm pack {name}@{version} left no tarball")
            archive = tarballs[-1]
            if done.exists():
                subprocess.run(["rm", "-rf", str(done)], check=True)
            done.mkdir(parents=True)
            with tarfile.open(archive) as tf:
                extract_tar(tf, done)
            marker.write_text("package", encoding="utf-8")
        return done / marker.read_text(encoding="utf-8")
