"""On two xdist workers a test marked `alone` runs with nothing beside it, and tests go to the
workers a file (or a listed folder) at a time (tests/parallel.py)."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, cast

import pytest

from tests import parallel


class FakeItem:
    def __init__(self, nodeid: str, *, alone: bool = False) -> None:
        self.nodeid = nodeid
        self.marks: list[pytest.MarkDecorator] = []
        self.alone = alone

    def get_closest_marker(self, name: str) -> object:
        return object() if name == "alone" and self.alone else None

    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.marks.append(mark)


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


def test_tests_go_to_workers_a_file_or_a_listed_folder_at_a_time() -> None:
    items = [
        FakeItem("tests/mcp/test_x.py::test_one"),
        FakeItem("tests/mcp/test_x.py::test_two[a]"),
        FakeItem("tests/release/test_y.py::test_three"),
    ]
    parallel.group(cast(Any, items))
    groups = [item.marks[0].args for item in items]
    assert groups == [
        ("tests/mcp/test_x.py",),
        ("tests/mcp/test_x.py",),
        ("tests/release/",),
    ]
    assert all(item.marks[0].name == "xdist_group" for item in items)
