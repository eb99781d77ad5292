"""Every test has a home of its own: the real one is neither read in this process nor handed to
the processes a test starts, and the package caches stay reachable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import HOME_VARIABLES, KEPT_CACHES, REAL_HOME, real_home_reads
from tests.mcp.conftest import process_env
from tests.support import ROOT, run_checked


@pytest.mark.e2e
def test_a_started_process_finds_the_tests_home_not_the_real_one(own_home: Path) -> None:
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, pathlib, json; print(json.dumps("
            "[str(pathlib.Path.home()), dict(os.environ)]))",
        ],
        env=process_env({}),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    home, environ = json.loads(shown)
    assert Path(home) == own_home != REAL_HOME
    for name in HOME_VARIABLES:
        assert Path(environ[name]).is_relative_to(own_home), name
    for name, value in KEPT_CACHES.items():
        assert environ[name] == value


def test_opening_a_file_in_the_real_home_is_seen() -> None:
    with pytest.raises(FileNotFoundError):
        open(REAL_HOME / ".svc-mcp-test-no-such-file", encoding="utf-8")  # noqa: SIM115
    seen = list(real_home_reads)
    real_home_reads.clear()  # this test's own probe must not fail it
    assert seen == [str(REAL_HOME / ".svc-mcp-test-no-such-file")]


def test_each_test_has_a_fresh_home(own_home: Path) -> None:
    assert os.environ["HOME"] == str(own_home)
    assert not any(own_home.iterdir())


@pytest.mark.e2e
def test_the_guard_holds_when_the_real_home_is_in_the_temporary_folder(tmp_path: Path) -> None:
    # A fresh run whose real HOME lies under /tmp, as a newcomer's `env -i HOME=$(mktemp -d)`:
    # the temporary folder is allowed, the home in it is not.
    home = Path(tempfile.mkdtemp(prefix="svc-mcp-real-home-"))
    try:
        probe = (
            "import tests.conftest as c, sys\n"
            "try:\n    open(sys.argv[1])\nexcept FileNotFoundError:\n    pass\n"
            "print(c.real_home_reads)"
        )
        shown = run_checked(
            [sys.executable, "-c", probe, str(home / ".secret")],
            env={**os.environ, "HOME": str(home)},
            cwd=ROOT,
            timeout=60,
        ).stdout
    finally:
        shutil.rmtree(home)
    assert shown.strip() == repr([str(home.resolve() / ".secret")])
