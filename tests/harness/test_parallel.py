"""On xdist workers a test marked `alone` runs with nothing beside it, a cache in the checkout is
filled by one worker at a time, and the modules that start processes run first (tests/parallel.py)."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from tests import parallel


class FakeItem:
    def __init__(
        self, nodeid: str, *, alone: bool = False, e2e: bool = False, fixtures: tuple[str, ...] = ()
    ) -> None:
        self.nodeid = nodeid
        self.module = nodeid.split("::")[0]
        self.alone = alone
        self.e2e = e2e
        self.fixturenames = fixtures

    def get_closest_marker(self, name: str) -> object:
        marked = {"alone": self.alone, "e2e": self.e2e}.get(name, False)
        return object() if marked else None


def turn(item: FakeItem) -> AbstractContextManager[None]:
    return parallel.turn(cast(pytest.Item, item))


def waits(holder: FakeItem, waiter: FakeItem) -> bool:
    """Whether `waiter`'s turn waits while `holder`'s is held (each opens its own lock files, as
    two workers do)."""
    entered = threading.Event()

    def take() -> None:
        with turn(waiter):
            entered.set()

    with turn(holder):
        thread = threading.Thread(target=take)
        thread.start()
        waited = not entered.wait(0.3)
    thread.join(5)
    assert entered.is_set(), "the waiting turn never came once the other ended"
    return waited


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parallel.LOCKS_VARIABLE, str(tmp_path))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")


def test_an_alone_test_waits_for_the_other_worker_and_holds_it_off(worker: None) -> None:
    ordinary, alone = FakeItem("tests/a.py::t"), FakeItem("tests/b.py::t", alone=True)
    assert waits(ordinary, alone)
    assert waits(alone, ordinary)
    assert waits(alone, FakeItem("tests/c.py::t", alone=True))


def test_ordinary_tests_run_side_by_side(worker: None) -> None:
    assert not waits(FakeItem("tests/a.py::t"), FakeItem("tests/b.py::t"))


def test_without_xdist_nothing_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    alone = FakeItem("tests/b.py::t", alone=True)
    assert not waits(FakeItem("tests/a.py::t"), alone)


def test_a_cache_is_filled_by_one_worker_at_a_time(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    entered = threading.Event()

    def fill() -> None:
        with parallel.one_at_a_time(cache):
            entered.set()

    with parallel.one_at_a_time(cache):
        thread = threading.Thread(target=fill)
        thread.start()
        assert not entered.wait(0.3)
    thread.join(5)
    assert entered.is_set()


def test_a_shared_folder_is_filled_once_and_again_after_a_fill_that_failed(tmp_path: Path) -> None:
    folder = tmp_path / "node-tools"
    fills: list[int] = []

    def fill(into: Path) -> None:
        fills.append(threading.get_ident())
        (into / "package.json").write_text("{}")

    def broken(into: Path) -> None:
        (into / "half-written").write_text("")
        raise OSError("the download broke")

    with pytest.raises(OSError, match="the download broke"):
        parallel.fill_once(folder, broken)
    callers = [threading.Thread(target=parallel.fill_once, args=(folder, fill)) for _ in range(4)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(10)
    assert len(fills) == 1
    assert sorted(path.name for path in folder.iterdir()) == [parallel.FILLED, "package.json"]


def test_processes_first_then_downloads_then_in_process_each_module_whole_and_in_order() -> None:
    items = [
        FakeItem("tests/a.py::fast"),
        FakeItem("tests/b.py::fast"),
        FakeItem("tests/b.py::starts", e2e=True),
        FakeItem("tests/c.py::claude", e2e=True, fixtures=("tmp_path", "claude_code")),
        FakeItem("tests/c.py::starts", e2e=True),
        FakeItem("tests/d.py::fast"),
        FakeItem("tests/e.py::starts", e2e=True),
    ]
    ordered = cast(list[pytest.Item], items)
    parallel.run_order(ordered)
    assert [item.nodeid for item in ordered] == [
        "tests/b.py::fast",
        "tests/b.py::starts",
        "tests/e.py::starts",
        "tests/c.py::claude",
        "tests/c.py::starts",
        "tests/a.py::fast",
        "tests/d.py::fast",
    ]


class FakeConfig:
    def getvalue(self, name: str) -> object:
        return {"tx": ["2*popen"], "dist": "load"}[name]

    def getoption(self, name: str) -> object:
        return {"maxschedchunk": None}[name]


class FakeWorker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def shutdown(self) -> None:
        self.shutting_down = True


def test_each_worker_is_sent_whole_modules_the_next_while_one_test_is_left() -> None:
    collection = [
        *(f"tests/a.py::t{n}" for n in range(3)),
        "tests/b.py::only",
        *(f"tests/c.py::t{n}" for n in range(5)),
        "tests/d.py::only",
        "tests/e.py::only",
    ]
    scheduler = parallel.WholeModules(cast(pytest.Config, FakeConfig()))
    first, second = FakeWorker("gw0"), FakeWorker("gw1")
    for worker in (first, second):
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    assert (first.sent, second.sent) == ([0, 1, 2], [3, 4, 5, 6, 7, 8])  # b's one test and all of c

    scheduler.mark_test_complete(first, 0)
    assert first.sent == [0, 1, 2]  # two left: nothing more yet
    scheduler.mark_test_complete(first, 1)
    assert first.sent == [0, 1, 2, 9, 10]  # one left: d, and e to make two
    scheduler.mark_test_complete(first, 2)
    assert first.shutting_down  # nothing is left to send
    assert not second.shutting_down
