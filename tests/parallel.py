"""The suite on xdist workers (`scripts/check.py` runs `-n 3 --dist load`) without making a
timing test race another worker.

A test marked `alone` (a throughput ratio, a load or soak figure, resident memory) runs while the
other workers run nothing: every test holds a shared lock while it sets up, runs and tears down,
an `alone` test an exclusive one, and a gate in front keeps a stream of shared holders from
starving it. Without xdist (the fast loop, a single file) none of this does anything.

Why `load` and not `loadgroup`/`loadfile`: those schedulers keep tests by node id, and under
pytest 9 schemathesis gives all operations of a test one id, so they ran 2 of its 35 tests (and
xdist 3.8's group suffix no longer reaches the id). `load` sends tests by index, and
`WholeModules` (installed by the conftest for `--dist load`) sends them a whole module at a time.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from xdist.scheduler import LoadScheduling
from xdist.workermanage import WorkerController

LOCKS_VARIABLE = "SVC_TEST_LOCKS"
"""The folder of the run's two lock files, made by the xdist controller, inherited by workers."""


def configure(config: pytest.Config) -> None:
    """In the xdist controller of a parallel run, makes the lock folder the workers inherit."""
    parallel = getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput")
    if parallel and LOCKS_VARIABLE not in os.environ:
        os.environ[LOCKS_VARIABLE] = tempfile.mkdtemp(prefix="svc-mcp-test-locks-")
        config.stash[_MADE] = os.environ[LOCKS_VARIABLE]


def unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_MADE, None)
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(LOCKS_VARIABLE, None)


_MADE = pytest.StashKey[str]()


def shared_folder() -> Path | None:
    """The folder all workers of this parallel run share (removed when the run ends); None in a
    run without xdist."""
    folder = os.environ.get(LOCKS_VARIABLE) if "PYTEST_XDIST_WORKER" in os.environ else None
    return Path(folder) if folder else None


@contextlib.contextmanager
def turn(item: pytest.Item) -> Iterator[None]:
    """Holds the run lock, exclusively for an `alone` test, while `item` sets up, runs and tears
    down; nothing in a run without the lock folder."""
    folder = shared_folder()
    if folder is None:
        yield
        return
    gate, run = (_open(folder / name) for name in ("gate", "run"))
    try:
        if item.get_closest_marker("alone"):
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(run, fcntl.LOCK_EX)
        else:
            fcntl.flock(gate, fcntl.LOCK_SH)
            fcntl.flock(run, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield
    finally:
        os.close(run)  # closing drops the locks
        os.close(gate)


WAITS_FOR_A_DOWNLOAD = frozenset({"claude_code"})
"""Fixtures whose first use waits on a download started in the background when the run begins
(tests/support_claude_code.py): minutes on a fresh machine."""


def run_order(items: list[pytest.Item]) -> None:
    """Orders the run, each module kept whole and in its place among its kind: first the modules
    that start processes (a test marked `e2e`), then those that wait on a background download (by
    then it is done, instead of a worker and the `alone` gate waiting on it), then the in-process
    ones, so that the run ends on a minute of small tests that keep every worker busy."""
    starting = {item.module for item in items if item.get_closest_marker("e2e")}
    downloading = {
        item.module
        for item in items
        if WAITS_FOR_A_DOWNLOAD.intersection(getattr(item, "fixturenames", ()))
    }

    def kind(item: pytest.Item) -> int:
        if item.module in downloading:
            return 1
        return 0 if item.module in starting else 2

    items.sort(key=kind)  # stable: the order within each kind


class WholeModules(LoadScheduling):
    """`--dist load` that sends a worker one whole module at a time, the next one as it reaches
    the last test of the one before (tests by index, as `load` sends them).

    `load` itself sends chunks of a fixed number of tests: in a run that opens with the long
    modules that start processes, one chunk held two minutes of them, and that worker ran on alone
    for two minutes after the other two had finished (2026-11-29: 627 s against 499 and 503)."""

    def check_schedule(self, node: WorkerController, duration: float = 0) -> None:
        if node.shutting_down:
            return
        if not self.pending:
            node.shutdown()
        elif len(self.node2pending[node]) < 2:
            # A worker runs a test once it holds the next (its teardown depends on it): refill
            # while one is left, not after.
            self._send_tests(node, 0)

    def _send_tests(self, node: WorkerController, num: int) -> None:
        """Sends `node` the next whole modules, at least two tests (`num` is `load`'s chunk)."""
        assert self.collection is not None
        sent: list[int] = []
        while self.pending and len(sent) < 2:
            module = _module_of(self.collection[self.pending[0]])
            while self.pending and _module_of(self.collection[self.pending[0]]) == module:
                sent.append(self.pending.pop(0))
        if sent:
            self.node2pending[node].extend(sent)
            node.send_runtest_some(sent)


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


@contextlib.contextmanager
def one_at_a_time(path: Path) -> Iterator[None]:
    """Holds `path`.lock exclusively: a cache in the checkout is filled by one worker at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = _open(path.with_name(path.name + ".lock"))
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)


FILLED = ".filled"
"""Written in a folder once `fill_once` has filled it: a folder without it is filled again."""


def fill_once(folder: Path, fill: Callable[[Path], object]) -> Path:
    """`folder` as `fill` leaves it, filled by its first caller only: later ones (other workers, a
    background process) wait on its lock and find it done."""
    with one_at_a_time(folder):
        if not (folder / FILLED).is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            fill(folder)
            (folder / FILLED).write_text("")
    return folder


def run_folder(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where a session fixture keeps what it makes: the run's shared folder (made once for all
    workers, with `fill_once`), or a folder of this process's own."""
    shared = shared_folder()
    return shared / name if shared is not None else tmp_path_factory.mktemp(name)
