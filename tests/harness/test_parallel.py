"""On xdist workers a test marked `alone` runs with nothing beside it, a cache in the checkout is
filled by one worker at a time, and the modules that start processes run first (tests/parallel.py)."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from pathlib import Path
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
