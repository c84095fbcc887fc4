"""What changed since a commit, as git says it (PROTOCOL §3 "What changed since a commit").

git itself is asked, never a port of it, through the one subprocess wrapper
(``rules.git.GitCall``), in the root's folder (paths come root-relative: ``--relative``):

* :func:`base_commit`: ``git rev-parse --verify REF^{commit}`` → the base's commit id;
* :func:`changes_since`: ``git ls-files --others --exclude-standard -z`` (the untracked
  files git does not ignore), ``git diff -z --name-status -M BASE`` (every file that
  differs between the base and the working tree, staged or not: added, modified,
  renamed, deleted) and ``git diff -U0 -M BASE`` (the changed lines: the hunks' new
  sides). When a file is deleted and untracked files exist, the diffs run against a
  copy of the index, in a temporary folder, that holds the untracked files as
  intent-to-add (``git add -N``): a file moved in the working tree and not staged is
  then git's rename too. The workspace and its index are never written.

Units: lines 1-based; a hunk is ``(start, count)`` of the new side (``count`` 0: lines
were deleted after line ``start``, 0 for the top of the file).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from typing import Final

import msgspec

from readmany_daemon.rules.git import GitCall, git_env, repo_location

__all__ = ["ChangeSet", "FileChange", "NotAWorkTree", "UnknownBase", "base_commit", "changes_since"]


class NotAWorkTree(Exception):
    """The root is not in a git work tree (or git could not run there)."""


class UnknownBase(Exception):
    """git does not know the base (no commit, branch or tag of that name)."""


class FileChange(msgspec.Struct, frozen=True):
    """One changed file (root-relative path in :attr:`ChangeSet.files`): ``new`` for a
    file the base does not hold (added, copied or untracked: read whole), else its
    ``hunks`` against the base, ``(start, count)`` of the new side each, in line order
    (none for a file renamed unchanged or a mode change). ``bytewise``: the hunks come
    from ``git diff --text`` for a file git's diff takes for binary (a ``-diff`` or
    ``binary`` attribute, UTF-16 text): git counts its lines at each ``0x0A`` byte,
    which are the text's lines only in an encoding where that byte is always a newline
    (not UTF-16 or UTF-32: the reader then shows the whole file as changed)."""

    new: bool
    hunks: tuple[tuple[int, int], ...] = ()
    bytewise: bool = False


class ChangeSet(msgspec.Struct, frozen=True):
    """What differs between commit ``base`` (its id) and the working tree: ``files``
    (root-relative path → :class:`FileChange`, the files that exist now), ``deleted``
    (paths at the base, sorted) and ``renamed`` (``(from, to)`` pairs, sorted by
    ``to``)."""

    base: str
    files: dict[str, FileChange]
    deleted: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...]


#: Options that keep git's diff output the same whatever the user's configuration says
#: (external diff tools, textconv, prefixes, colour, submodule formats).
_DIFF: Final = (
    "-c",
    "core.quotePath=true",
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--relative",
    "--ignore-submodules=all",
    "-M",
)


def _run(root: str, args: list[str], env: dict[str, str] | None = None) -> bytes:
    """git's stdout of ``git -C root ARGS``; raises :class:`NotAWorkTree` when it fails."""
    call = GitCall(args, root, env)
    rc, out = call.result()
    if rc != 0:
        raise NotAWorkTree(call.error or os.fsdecode(call.err).strip() or f"git {args[0]} failed")
    return out


def base_commit(root: str, ref: str) -> str:
    """The commit id ``ref`` names in the repository of folder ``root`` (absolute, real).
    Raises :class:`NotAWorkTree` when ``root`` is in no git work tree, and
    :class:`UnknownBase` when git knows no commit of that name."""
    if repo_location(root) is None:
        raise NotAWorkTree(f"{root} is not in a git work tree")
    call = GitCall(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], root
    )
    rc, out = call.result()
    if rc == 1 or (rc == 0 and not out.strip()):  # --quiet: an unknown name, no message
        raise UnknownBase(f"git knows no commit {ref!r}")
    if rc != 0:  # git could not run, or refuses the repository (128: fatal)
        raise NotAWorkTree(call.error or f"git rev-parse exited {rc}")
    return out.decode("ascii", "replace").strip()


def changes_since(root: str, base: str) -> ChangeSet:
    """The :class:`ChangeSet` between commit id ``base`` and the working tree of folder
    ``root`` (absolute, real; paths relative to it, files outside it left out). Raises
    :class:`NotAWorkTree` when git fails there."""
    loc = repo_location(root)
    if loc is None:
        raise NotAWorkTree(f"{root} is not in a git work tree")
    untracked = [
        os.fsdecode(p)
        for p in _run(root, ["ls-files", "--others", "--exclude-standard", "-z"]).split(b"\0")
        if p and not p.endswith(b"/")  # a nested repository's folder: not a file
    ]
    status = [*_DIFF, "-z", "--name-status", base, "--"]
    patch = [*_DIFF, "-U0", "--src-prefix=a/", "--dst-prefix=b/", base, "--"]
    files, deleted, renamed = _name_status(_run(root, status))
    hunks = _hunks(_run(root, patch))
    if untracked and deleted:
        # A deleted file may have moved to an untracked one: ask again with them as
        # intent-to-add in a copy of the index, so git pairs them (a rename). Only
        # those pairs are taken from it: the copy, written now, no longer marks a
        # tracked file changed in the same second as the index was written (git's
        # racy-timestamp rule) as one to compare by content.
        new_files, moved_hunks = set(untracked), {}
        with tempfile.TemporaryDirectory(prefix="readmany-gitdiff-") as tmp:
            env = _intent_index(root, loc.gitdir, tmp, untracked)
            moved = [
                (a, b)
                for a, b in _name_status(_run(root, status, env))[2]
                if a in deleted and b in new_files
            ]
            if moved:
                moved_hunks = _hunks(_run(root, patch, env))
        for a, b in moved:
            deleted.remove(a)
            renamed.append((a, b))
            files[b] = False
            hunks[b] = moved_hunks.get(b, [])
        untracked = [p for p in untracked if p not in files]
    quiet = [p for p, new in files.items() if not new and not hunks.get(p)]
    bytewise = _text_hunks(root, base, quiet, renamed, hunks) if quiet else set()
    changes = {
        path: FileChange(
            new=new, hunks=() if new else tuple(hunks.get(path, ())), bytewise=path in bytewise
        )
        for path, new in files.items()
    }
    for path in untracked:
        changes.setdefault(path, FileChange(new=True))
    return ChangeSet(
        base=base,
        files=dict(sorted(changes.items(), key=lambda kv: os.fsencode(kv[0]))),
        deleted=tuple(sorted(deleted, key=os.fsencode)),
        renamed=tuple(sorted(renamed, key=lambda r: os.fsencode(r[1]))),
    )


#: Paths per ``git diff --text`` call of :func:`_text_hunks` (its command line).
TEXT_DIFF_BATCH: Final = 200


def _text_hunks(
    root: str,
    base: str,
    quiet: list[str],
    renamed: list[tuple[str, str]],
    hunks: dict[str, list[tuple[int, int]]],
) -> set[str]:
    """The hunks, by ``git diff --text``, of ``quiet`` (changed files git's diff gave no
    hunk: binary to git, a rename unchanged or a mode change; each with its old path
    when renamed, so git pairs them again), added to ``hunks``; the paths that got
    some. git says "Binary files differ" for a file it takes for binary, whose lines a
    changes read would otherwise call unchanged."""
    old_of = {b: a for a, b in renamed}
    got: set[str] = set()
    for k in range(0, len(quiet), TEXT_DIFF_BATCH):
        batch = quiet[k : k + TEXT_DIFF_BATCH]
        specs = [f":(literal){p}" for p in batch]
        specs += [f":(literal){old_of[p]}" for p in batch if p in old_of]
        patch = [*_DIFF, "--text", "-U0", "--src-prefix=a/", "--dst-prefix=b/", base, "--"]
        for path, found in _hunks(_run(root, [*patch, *specs])).items():
            if found and path in batch and not hunks.get(path):
                hunks[path] = found
                got.add(path)
    return got


def _intent_index(root: str, gitdir: str, tmp: str, untracked: list[str]) -> dict[str, str]:
    """git's environment with ``GIT_INDEX_FILE`` a copy (in ``tmp``) of the repository's
    index holding ``untracked`` as intent-to-add; the real index is never written."""
    index = os.path.join(tmp, "index")
    with contextlib.suppress(FileNotFoundError):  # no index yet: git makes the copy's
        shutil.copyfile(os.path.join(gitdir, "index"), index)
    env = {**git_env(), "GIT_INDEX_FILE": index, "GIT_LITERAL_PATHSPECS": "1"}
    listed = os.path.join(tmp, "untracked")
    with open(listed, "wb") as fh:
        fh.write(b"\0".join(os.fsencode(p) for p in untracked))
    _run(
        root, ["add", "--intent-to-add", "--pathspec-from-file", listed, "--pathspec-file-nul"], env
    )
    return env


def _name_status(out: bytes) -> tuple[dict[str, bool], list[str], list[tuple[str, str]]]:
    """``git diff -z --name-status -M`` parsed: the files that exist now (path → whether
    the base lacks it), the deleted paths and the ``(from, to)`` renames."""
    fields = out.split(b"\0")
    files: dict[str, bool] = {}
    deleted: list[str] = []
    renamed: list[tuple[str, str]] = []
    i = 0
    while i < len(fields) and fields[i]:
        kind = fields[i][:1]
        if kind in (b"R", b"C"):
            old, new = os.fsdecode(fields[i + 1]), os.fsdecode(fields[i + 2])
            i += 3
            if kind == b"R":
                renamed.append((old, new))
                files[new] = False  # its hunks are against the old path's content
            else:
                files[new] = True  # a copy: new to the base
            continue
        path = os.fsdecode(fields[i + 1])
        i += 2
        if kind == b"D":
            deleted.append(path)
        elif kind == b"A":
            files[path] = True
        else:  # M, T (type change), U (unmerged)
            files[path] = False
    return files, deleted, renamed


_HUNK: Final = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _hunks(patch: bytes) -> dict[str, list[tuple[int, int]]]:
    """``git diff -U0`` parsed: each file's (new path) hunks as ``(start, count)`` of the
    new side. Hunk bodies are skipped by their counts, so a line that reads like a
    header inside one (an added ``++ x``) is never taken for one."""
    out: dict[str, list[tuple[int, int]]] = {}
    current: list[tuple[int, int]] | None = None
    lines = patch.split(b"\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith(b"diff --git "):
            current = None
        elif line.startswith(b"+++ "):
            name = _unquote(line[4:])
            current = None if name is None else out.setdefault(name, [])
        elif line.startswith(b"@@ "):
            m = _HUNK.match(line)
            if m is None:
                continue
            old_n = int(m.group(2)) if m.group(2) is not None else 1
            start = int(m.group(3))
            new_n = int(m.group(4)) if m.group(4) is not None else 1
            if current is not None:
                current.append((start, new_n))
            body = old_n + new_n
            while body > 0 and i < len(lines):
                if not lines[i].startswith(b"\\"):  # "\ No newline at end of file"
                    body -= 1
                i += 1
    return out


_ESCAPES: Final = {
    ord("a"): 7,
    ord("b"): 8,
    ord("t"): 9,
    ord("n"): 10,
    ord("v"): 11,
    ord("f"): 12,
    ord("r"): 13,
    ord('"'): 34,
    ord("\\"): 92,
}


def _unquote(raw: bytes) -> str | None:
    """The path of a ``+++ b/PATH`` header (git's C-style quoting undone), or None for
    ``/dev/null``. git ends the header with a tab when the name holds a space."""
    raw = raw.removesuffix(b"\t")
    if raw.startswith(b'"') and raw.endswith(b'"'):
        body, out, k = raw[1:-1], bytearray(), 0
        while k < len(body):
            c = body[k]
            if c == 92 and k + 1 < len(body):  # a backslash
                nxt = body[k + 1]
                if 48 <= nxt <= 55:  # \ooo: a byte in octal
                    out.append(int(body[k + 1 : k + 4], 8))
                    k += 4
                    continue
                out.append(_ESCAPES.get(nxt, nxt))
                k += 2
                continue
            out.append(c)
            k += 1
        raw = bytes(out)
    if raw == b"/dev/null" or not raw.startswith(b"b/"):
        return None
    return os.fsdecode(raw[2:])
