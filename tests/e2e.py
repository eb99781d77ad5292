"""Which tests start processes: those are marked `e2e`, so `pytest -m "not e2e"` is the fast loop.

A test is marked by the fixtures it uses (a fixture that starts a process is declared with
`e2e_fixture` instead of `pytest.fixture`) or by an explicit `pytest.mark.e2e`. While a test that
is not marked sets up or runs, starting a process fails it with the fix in the message, so the
marks cannot drift from what the tests do. tests/conftest.py wires these into pytest's hooks.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import pytest

F = TypeVar("F", bound=Callable[..., Any])

_E2E_FIXTURES: set[Callable[..., Any]] = set()


def e2e_fixture(**options: Any) -> Callable[[F], F]:
    """`pytest.fixture(**options)` for a fixture that starts a process: every test that uses it,
    directly or through another fixture, is marked e2e."""

    def declare(function: F) -> F:
        _E2E_FIXTURES.add(function)
        fixture: F = pytest.fixture(**options)(function)
        return fixture

    return declare


def starts_processes(item: pytest.Item) -> bool:
    """Whether one of the fixtures `item` uses is an `e2e_fixture`."""
    # pytest has no public way from an item to the fixture definitions it resolved; the names
    # alone are not enough (tests/service's `service` is in-process, tests/mcp's a real stub).
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definition.func in _E2E_FIXTURES
        for definitions in info.name2fixturedefs.values()
        for definition in definitions
    )


def mark(items: Iterable[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("e2e") is None and starts_processes(item):
            item.add_marker(pytest.mark.e2e)


class _Guard:
    """The node id of the test now setting up or running when it is not marked e2e."""

    unmarked: str | None = None


def refuse(what: str) -> None:
    """Fails the running test when it is not marked e2e; `what` names the process."""
    if _Guard.unmarked is not None:
        pytest.fail(
            f"{_Guard.unmarked} started a process ({what}) but is not marked e2e: mark the test "
            "`@pytest.mark.e2e` (or its module `pytestmark = pytest.mark.e2e`), or declare the "
            "fixture that starts it with `@e2e_fixture(...)` from tests/e2e.py instead of "
            "`@pytest.fixture(...)`; `pytest -m 'not e2e'` must start no process.",
            pytrace=False,
        )


@contextlib.contextmanager
def guarding(item: pytest.Item) -> Iterator[None]:
    """While the block runs, starting a process fails `item` unless it is marked e2e."""
    _Guard.unmarked = None if item.get_closest_marker("e2e") else item.nodeid
    try:
        yield
    finally:
        _Guard.unmarked = None


def _command(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    command = kwargs.get("args", args[0] if args else "?")
    return command if isinstance(command, str) else " ".join(map(str, command))


_PATCHED: list[tuple[Any, str, Any]] = []


def install() -> None:
    """Routes every way this interpreter starts a process through `refuse`."""
    popen_init = subprocess.Popen.__init__

    @functools.wraps(popen_init)
    def guarded_popen(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        refuse(_command(args, kwargs))
        popen_init(self, *args, **kwargs)

    _patch(subprocess.Popen, "__init__", guarded_popen)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        original = getattr(os, name, None)
        if original is not None:
            _patch(os, name, _refusing(original, f"os.{name}"))


def _refusing(original: Callable[..., Any], what: str) -> Callable[..., Any]:
    @functools.wraps(original)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        refuse(what)
        return original(*args, **kwargs)

    return guarded


def _patch(owner: Any, name: str, replacement: Any) -> None:
    _PATCHED.append((owner, name, getattr(owner, name)))
    setattr(owner, name, replacement)


def uninstall() -> None:
    while _PATCHED:
        owner, name, original = _PATCHED.pop()
        setattr(owner, name, original)
