"""The fast loop (`pytest -m "not e2e"`) starts no process: a test that does is marked e2e, by
the fixtures it uses or explicitly, and an unmarked one that tries is stopped (tests/e2e.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.e2e import e2e_fixture


def test_an_unmarked_test_cannot_start_a_process() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"started a process \(true\) but is not"):
        subprocess.run(["true"], check=False)


def test_nor_through_asyncio_or_a_fork() -> None:
    async def start() -> None:
        await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")

    with pytest.raises(pytest.fail.Exception, match="not marked e2e"):
        asyncio.run(start())
    with pytest.raises(pytest.fail.Exception, match=r"os\.fork"):
        os.fork()


@pytest.mark.e2e
def test_a_marked_test_may() -> None:
    assert subprocess.run(["true"], check=False).returncode == 0


@e2e_fixture()
def declared() -> Iterator[str]:
    yield "a fixture that would start a process"


@pytest.fixture
def through(declared: str) -> str:
    return declared


def test_a_test_using_a_declared_fixture_is_marked(
    through: str, request: pytest.FixtureRequest
) -> None:
    assert request.node.get_closest_marker("e2e") is not None
    assert subprocess.run(["true"], check=False).returncode == 0
