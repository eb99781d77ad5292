"""Real Claude Code as the tests run it: from the npm registry into a prefix of the run's own, with
its optional traffic off (run it in a network namespace of loopback only: it reaches nothing
beyond this machine).

On a fresh machine the download takes minutes. In a parallel run it is installed once, into the
run's shared folder, and started in the background as soon as the first worker has collected
(`prefetch`), so the wait overlaps other tests instead of holding a worker."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from tests import parallel
from tests.e2e import e2e_fixture
from tests.support import ROOT
from tests.support_npm import npm

CLAUDE_CODE_PACKAGE = "@anthropic-ai/claude-code@2.1.197"
"""Pinned, as the other npm packages the tests run are. Unpinned, npm takes the newest release
whose `engines` the machine's Node.js meets: 2.1.197 on Debian's Node 20, but 2.1.332 (Node 22
and newer) where NodeSource's newer Node is installed, and the 2.1.332 seen here, forced onto
Node 20, ended the step-up test's session without calling the tool. Raise it on purpose, with a
run that passes."""
QUIET_CLAUDE_CODE = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def install(prefix: Path) -> Path:
    """Claude Code in `prefix` (its native program comes in the package; its install script is not
    run), installed by the first caller while other workers wait."""
    npm_install = ("install", "-g", "--no-audit", "--no-fund", CLAUDE_CODE_PACKAGE)
    parallel.fill_once(prefix, lambda folder: npm(*npm_install, "--prefix", str(folder)))
    return prefix / "bin" / "claude"


def shared_prefix() -> Path | None:
    """The run's one prefix, in a parallel run; None otherwise."""
    folder = parallel.shared_folder()
    return None if folder is None else folder / "claude-code"


def prefetch(items: Sequence[pytest.Item], home: Callable[[Path], Mapping[str, str]]) -> None:
    """On the first worker of a parallel run whose tests use Claude Code, starts its install in the
    background (a process of its own, so no worker waits on it until a test needs it), with the
    home variables `home` gives for a folder of its own."""
    prefix = shared_prefix()
    if prefix is None or os.environ.get("PYTEST_XDIST_WORKER") != "gw0":
        return
    if not any("claude_code" in getattr(item, "fixturenames", ()) for item in items):
        return
    prefix.mkdir(exist_ok=True)
    (own_home := prefix.parent / "claude-code-home").mkdir(exist_ok=True)
    with (prefix.parent / "claude-code-prefetch.log").open("ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "tests.support_claude_code", str(prefix)],
            env={**os.environ, **home(own_home)}, cwd=ROOT,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip


@e2e_fixture(scope="session")
def claude_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real Claude Code from the npm registry: the run's shared install, or one of this worker's."""
    return install(parallel.run_folder("claude-code", tmp_path_factory))


if __name__ == "__main__":
    install(Path(sys.argv[1]))
