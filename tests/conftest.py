"""What every test shares: no test writes the real user's state directory, and a test that starts
a process is marked e2e (tests/e2e.py)."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator

import pytest

from tests import e2e


def pytest_configure(config: pytest.Config) -> None:
    e2e.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    e2e.uninstall()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    e2e.mark(items)  # before `-m` selects


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with e2e.guarding(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with e2e.guarding(item):
        return (yield)


@pytest.fixture(scope="session", autouse=True)
def temporary_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """XDG_STATE_HOME in a temporary directory for the whole run, inherited by every process a
    test starts (the gateway keeps its token there when SVC_MCP_GATEWAY_TOKEN is unset)."""
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state-home"))
    yield
    if saved is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = saved
