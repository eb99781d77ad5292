"""What every test shares: a home of its own (no test reads or writes the real user's home), and a
test that starts a process is marked e2e (tests/e2e.py); on xdist workers, a test marked `alone`
runs with nothing beside it (tests/parallel.py).

Every variable a program uses to find the user's files points into a temporary folder: for the
whole run (session fixtures, and every process they start), then a fresh one for each test. The
package caches stay where they are (uv's and npm's, read here before HOME moves, and npm's own
settings file), so tests that run uv or npm neither download again nor lose the registry the
machine is configured for. In this process an audit hook fails a test that opens a file in the
real home outside those caches and this interpreter's own folders.
"""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import e2e, parallel, support_claude_code
from tests.support import failure_text

REAL_HOME = Path(os.environ.get("HOME") or Path.home()).resolve()
_XDG_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or REAL_HOME / ".cache")
KEPT_CACHES = {
    "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR") or str(_XDG_CACHE / "uv"),
    "NPM_CONFIG_CACHE": os.environ.get("NPM_CONFIG_CACHE") or str(REAL_HOME / ".npm"),
}
"""uv's and npm's caches as the user has them (their default places are under HOME)."""
if (REAL_HOME / ".npmrc").is_file() and "NPM_CONFIG_USERCONFIG" not in os.environ:
    KEPT_CACHES["NPM_CONFIG_USERCONFIG"] = str(REAL_HOME / ".npmrc")
HOME_VARIABLES = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "CODEX_HOME",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
)
"""Where programs look for the user's files; each points into the test's own home."""


_REAL_HOME_PREFIX = str(REAL_HOME) + os.sep


def _allowed_roots() -> tuple[str, ...]:
    """The folders a test may open files in even where they lie in the real home. A folder that
    holds the whole home (the temporary folder, when HOME is under /tmp) excuses nothing in it:
    the guard holds for any HOME."""
    roots = {
        str(Path(__file__).resolve().parent.parent),
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        tempfile.gettempdir(),
        str(Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"),  # tests' own homes
        *(entry for entry in sys.path if entry),
        *KEPT_CACHES.values(),
    }
    prefixes = {str(Path(root).resolve()) + os.sep for root in roots}
    return tuple(sorted(p for p in prefixes if not _REAL_HOME_PREFIX.startswith(p)))


_ALLOWED = _allowed_roots()
real_home_reads: list[str] = []


def _watch_real_home(event: str, args: tuple[object, ...]) -> None:
    if event != "open" or not args or not isinstance(args[0], str | Path):
        return
    path = os.path.abspath(args[0])
    if path.startswith(_REAL_HOME_PREFIX) and not (path + os.sep).startswith(_ALLOWED):
        real_home_reads.append(path)


sys.addaudithook(_watch_real_home)


def point_home_at(home: Path) -> dict[str, str]:
    """The variables that make `home` the user's home (with the kept caches)."""
    variables = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "CODEX_HOME": str(home / ".codex"),
        "APPDATA": str(home / "AppData" / "Roaming"),
        "LOCALAPPDATA": str(home / "AppData" / "Local"),
        "USERPROFILE": str(home),
    }
    return variables | KEPT_CACHES


def pytest_configure(config: pytest.Config) -> None:
    e2e.install()
    parallel.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    parallel.unconfigure(config)
    e2e.uninstall()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    e2e.mark(items)  # before `-m` selects
    parallel.run_order(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> parallel.WholeModules | None:
    return parallel.WholeModules(config, log) if config.getvalue("dist") == "load" else None


def pytest_collection_finish(session: pytest.Session) -> None:
    support_claude_code.prefetch(session.items, point_home_at)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    with parallel.turn(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A `subprocess.run(..., check=True)` that failed shows the command's output, which
    CalledProcessError's message leaves out (tests/support.py's run_checked puts it there)."""
    report = yield
    failed = call.excinfo.value if call.excinfo is not None else None
    if isinstance(failed, subprocess.CalledProcessError):
        shown = failure_text(failed.cmd, failed.returncode, failed.stdout, failed.stderr)
        report.sections.append(("the failed command's output", shown))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with e2e.guarding(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with e2e.guarding(item):
        return (yield)


@pytest.fixture(scope="session", autouse=True)
def session_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A home for the whole run, inherited by session fixtures and every process they start."""
    saved = {name: os.environ.get(name) for name in (*HOME_VARIABLES, *KEPT_CACHES)}
    os.environ.update(point_home_at(tmp_path_factory.mktemp("session-home")))
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def own_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A home of this test's own; the test fails if it opened a file in the real home."""
    home = tmp_path_factory.mktemp("home")
    for name, value in point_home_at(home).items():
        monkeypatch.setenv(name, value)
    real_home_reads.clear()
    yield home
    read, real_home_reads[:] = list(real_home_reads), []
    assert not read, f"the test read the real home: {sorted(set(read))[:5]}"
