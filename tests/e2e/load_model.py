"""The load test's model of the tree and its checks (``test_load.py`` tells the whole
method): the content of each file version (``render``), what the writer has finished
(``Model``, ``Snap``), the writer itself (``Writer``), and the checks of each answer
against a snap (``Checker``, ``Results``).
"""

from __future__ import annotations

import os
import random
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from readmany_daemon.client import RpcError
from tests.helpers import write_tree

if TYPE_CHECKING:
    from tests.e2e.test_load import Worker

#: Live files the writer keeps between these counts (every expansion stays under the
#: 200 entries an answer lists, so presence is decidable from one answer).
LIVE_MIN, LIVE_MAX = 40, 100
#: Live folders and the static files beside them.
LIVE_DIRS = 6
STATIC_FILES = 40
#: Pause between two writer operations (an ``Event.wait``, so the stop is immediate).
WRITER_PAUSE = 0.004
#: Share of writer operations followed at once by a read of the folders they changed.
PROBE_RATE = 0.3
#: Lines per file; a window asks for lines 2-3.
LINES = 5
LINE_RE = re.compile(r"^id=(\d+) v=(\d+) line=(\d+) x{24}$")
MAX_REPORTED = 40


def render(ident: int, version: int) -> str:
    """The content of version ``version`` of file ``ident``: same size for most
    successive versions (so a same-size overwrite within one mtime tick happens)."""
    return "".join(f"id={ident} v={version} line={k} {'x' * 24}\n" for k in range(1, LINES + 1))


# ------------------------------------------------------------------------------ the model


@dataclass
class Snap:
    """What the writer had finished when a request was sent."""

    seq: int  # finished operations so far
    state: dict[str, tuple[int, int]]  # live path -> (id, last finished version)
    inflight: frozenset[str]  # paths of the operation running at the snap
    starts: int  # operations started so far


class Model:
    """The writer's published record of the live files. Thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seq = 0
        self.starts = 0
        self.state: dict[str, tuple[int, int]] = {}
        self.deleted: dict[str, int] = {}  # path -> seq of its finished delete
        self.created: dict[str, int] = {}  # path -> seq of its first finished write
        #: (kind "w"/"d", path, start counter of its operation); seq = index + 1
        self.log: list[tuple[str, str, int]] = []
        self.ids: dict[str, int] = {}  # every path ever started -> its file id
        self.max_started: dict[str, int] = {}  # path -> highest version started
        self.last_start: dict[str, int] = {}  # path -> start counter of its last op
        self.inflight: frozenset[str] = frozenset()
        self.current = 0  # start counter of the operation in flight
        self.recent_deleted: list[str] = []

    def snap(self) -> Snap:
        with self.lock:
            return Snap(self.seq, dict(self.state), self.inflight, self.starts)

    def begin(self, touched: dict[str, tuple[int, int]]) -> None:
        """An operation starts on ``touched`` (path -> (id, version it may show))."""
        with self.lock:
            self.starts += 1
            for path, (ident, version) in touched.items():
                self.ids[path] = ident
                self.max_started[path] = max(self.max_started.get(path, 0), version)
                self.last_start[path] = self.starts
            self.inflight = frozenset(touched)
            self.current = self.starts

    def finish(self, writes: dict[str, tuple[int, int]], deletes: list[str]) -> None:
        with self.lock:
            for path, value in writes.items():
                self.seq += 1
                self.log.append(("w", path, self.current))
                self.state[path] = value
                self.created.setdefault(path, self.seq)
            for path in deletes:
                self.seq += 1
                self.log.append(("d", path, self.current))
                self.state.pop(path, None)
                self.deleted[path] = self.seq
                self.recent_deleted.append(path)
            del self.recent_deleted[:-32]
            self.inflight = frozenset()

    def touched_after(self, path: str, snap: Snap) -> bool:
        """Whether the writer was changing ``path`` at ``snap`` or started on it later."""
        with self.lock:
            return path in snap.inflight or self.last_start.get(path, 0) > snap.starts

    def known(self, path: str) -> bool:
        with self.lock:
            return path in self.ids

    def deleted_before(self, path: str, snap: Snap) -> bool:
        with self.lock:
            seq = self.deleted.get(path)
        return seq is not None and seq <= snap.seq


class Writer:
    """Creates, edits (in place, atomic save), deletes and renames files below
    ``live/``, publishing each finished operation to ``model``."""

    def __init__(self, root: Path, model: Model, stop: threading.Event, seed: int) -> None:
        self.root = root
        self.model = model
        self.stop = stop
        self.rng = random.Random(seed)
        self.next_id = 0
        self.next_dir = 0
        self.dirs = [f"live/d{k}" for k in range(LIVE_DIRS)]
        self.ops: Counter[str] = Counter()
        self.error: BaseException | None = None
        self.prober: Worker | None = None

    def new_path(self) -> tuple[str, int]:
        self.next_id += 1
        folder = self.rng.choice(self.dirs)
        if self.rng.random() < 0.05:  # a new folder (mkdir + write in one operation)
            self.next_dir += 1
            folder = f"{folder}/n{self.next_dir}"
            self.dirs.append(folder)
        return f"{folder}/f{self.next_id}.txt", self.next_id

    def create(self) -> list[str]:
        path, ident = self.new_path()
        self.model.begin({path: (ident, 1)})
        write_tree(self.root, {path: render(ident, 1)})
        self.model.finish({path: (ident, 1)}, [])
        return [path]

    def edit_in_place(self, path: str, ident: int, version: int) -> list[str]:
        self.model.begin({path: (ident, version + 1)})
        with open(self.root / path, "w", encoding="utf-8") as f:
            f.write(render(ident, version + 1))
        self.model.finish({path: (ident, version + 1)}, [])
        return [path]

    def atomic_save(self, path: str, ident: int, version: int) -> list[str]:
        folder, _, name = path.rpartition("/")
        tmp = f"{folder}/.{name}.{self.model.starts}.tmp"
        self.model.begin({path: (ident, version + 1), tmp: (ident, version + 1)})
        (self.root / tmp).write_text(render(ident, version + 1), encoding="utf-8")
        os.replace(self.root / tmp, self.root / path)
        self.model.finish({path: (ident, version + 1)}, [tmp])
        return [path, tmp]

    def delete(self, path: str, ident: int, version: int) -> list[str]:
        self.model.begin({path: (ident, version)})
        (self.root / path).unlink()
        self.model.finish({}, [path])
        return [path]

    def rename(self, path: str, ident: int, version: int) -> list[str]:
        # The target keeps the file's id; its name only has to be new.
        target = f"{self.rng.choice(self.dirs)}/r{ident}-{self.model.starts}.txt"
        self.model.begin({path: (ident, version), target: (ident, version)})
        (self.root / target).parent.mkdir(parents=True, exist_ok=True)
        os.rename(self.root / path, self.root / target)
        self.model.finish({target: (ident, version)}, [path])
        return [target, path]

    def step(self) -> list[str]:
        """One operation; returns the paths it wrote or removed."""
        live = self.model.snap().state
        if len(live) < LIVE_MIN:
            kind = "create"
        elif len(live) >= LIVE_MAX:
            kind = "delete"
        else:
            kind = self.rng.choices(
                ["create", "edit", "save", "delete", "rename"], [3, 5, 3, 2, 2]
            )[0]
        self.ops[kind] += 1
        if kind == "create":
            return self.create()
        path = self.rng.choice(sorted(live))
        ident, version = live[path]
        return {
            "edit": self.edit_in_place,
            "save": self.atomic_save,
            "delete": self.delete,
            "rename": self.rename,
        }[kind](path, ident, version)

    def fill(self) -> None:
        while len(self.model.state) < (LIVE_MIN + LIVE_MAX) // 2:
            self.create()

    def run(self) -> None:
        """Operations until ``stop``; after some, the writer's own connection asks at
        once for the folders it just changed (write, then read: no watcher delay)."""
        prober = self.prober
        try:
            if prober is not None:
                prober.client = prober.daemon.session(prober.root)
            while not self.stop.is_set():
                touched = self.step()
                if prober is not None and self.rng.random() < PROBE_RATE:
                    try:
                        prober.probe(touched)
                    except RpcError as exc:
                        prober.results.error(f"writer probe: {exc.code} {exc.message}")
                self.stop.wait(WRITER_PAUSE)
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            if prober is not None and prober.client is not None:
                prober.client.exit()


# ------------------------------------------------------------------------------ checking


@dataclass
class Results:
    """What the clients saw: latencies per method and kind, errors, violations."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_kind: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    violation_count: Counter[str] = field(default_factory=Counter)
    checked: Counter[str] = field(default_factory=Counter)
    fresh_instances: int = 0

    def timed(self, method: str, kind: str, seconds: float) -> None:
        with self.lock:
            self.latency[method].append(seconds)
            self.by_kind[kind].append(seconds)

    def error(self, text: str) -> None:
        with self.lock:
            self.errors.append(text)

    def violation(self, what: str, detail: str) -> None:
        with self.lock:
            self.violation_count[what] += 1
            if len(self.violations) < MAX_REPORTED:
                self.violations.append(f"{what}: {detail}")

    def count(self, what: str, n: int = 1) -> None:
        with self.lock:
            self.checked[what] += n


def parse(content: str) -> tuple[int, int, list[int]] | None:
    """``(id, version, line numbers)`` of a whole content (window notices dropped), or
    None when it is torn (empty, cut, lines of two versions)."""
    found: set[tuple[int, int]] = set()
    numbers: list[int] = []
    for line in content.splitlines():
        if line.startswith("["):
            continue  # a window's "[Showing lines …]" notice
        m = LINE_RE.match(line)
        if m is None:
            return None
        found.add((int(m[1]), int(m[2])))
        numbers.append(int(m[3]))
    if len(found) != 1:
        return None
    ident, version = found.pop()
    if content.rstrip("\n").splitlines()[-1].startswith("id=") and not content.endswith("\n"):
        return None  # cut in the middle of the last line
    return ident, version, numbers


class Checker:
    def __init__(self, model: Model, static: dict[str, str], results: Results) -> None:
        self.model = model
        self.static = static
        self.results = results

    def content(
        self, path: str, text: str, snap: Snap, lines: list[int] | None, where: str
    ) -> None:
        """``text`` shown for ``path`` must be whole and at least as new as ``snap``."""
        self.results.count("contents")
        if path in self.static:
            if text != self.static[path]:
                self.results.violation("static content", f"{where} {path}: {text[:60]!r}")
            return
        if not self.model.known(path):
            self.results.violation("phantom file", f"{where} {path}")
            return
        got = parse(text)
        touched = self.model.touched_after(path, snap)
        if got is None:
            if not touched:
                self.results.violation("torn content", f"{where} {path}: {text[:80]!r}")
            return
        ident, version, numbers = got
        with self.model.lock:
            want_id = self.model.ids[path]
            ceiling = self.model.max_started.get(path, 0)
        if ident != want_id or version > ceiling:
            self.results.violation(
                "foreign content", f"{where} {path}: id={ident} v={version} (ceiling {ceiling})"
            )
        expected_lines = lines if lines is not None else list(range(1, LINES + 1))
        if numbers != expected_lines:
            self.results.violation("wrong lines", f"{where} {path}: {numbers}")
        if path in snap.state and version < snap.state[path][1]:
            self.results.violation(
                "stale content",
                f"{where} {path}: v={version} < v={snap.state[path][1]} finished before",
            )

    def listing(
        self, listed: set[str], match: Callable[[str], bool], snap: Snap, where: str
    ) -> None:
        """Presence (no lost file) and absence (no deleted file) in one expansion."""
        self.results.count("listings")
        for path in snap.state:
            if match(path) and path not in listed and not self.model.touched_after(path, snap):
                self.results.violation("lost file", f"{where}: {path} finished before, missing")
        for path in self.static:
            if match(path) and path not in listed:
                self.results.violation("lost static file", f"{where}: {path}")
        self.ghosts(listed, snap, where)

    def ghosts(self, listed: set[str], snap: Snap, where: str) -> None:
        for path in listed:
            if path in self.static:
                continue
            if not self.model.known(path):
                self.results.violation("phantom file", f"{where}: {path}")
            elif self.model.deleted_before(path, snap):
                self.results.violation("deleted file listed", f"{where}: {path}")


# -------------------------------------------------------------------------------- clients
