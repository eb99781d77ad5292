"""The quick start's second command takes minutes; Ctrl-C stops it with one line and exit 130,
not the two KeyboardInterrupt tracebacks it printed (the terminal's Ctrl-C reaches the step, and
`uv run` forwards it to the script once more)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT


@pytest.mark.e2e
def test_ctrl_c_stops_the_check_with_one_line() -> None:
    check = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "check.py"), "--co"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        assert check.stdout is not None
        first = check.stdout.readline()
        assert first == "== ruff check\n"
        os.killpg(check.pid, signal.SIGINT)  # Ctrl-C: the whole group
        os.kill(check.pid, signal.SIGINT)  # and once more, as `uv run` forwards it
        out, err = check.communicate(timeout=60)
    finally:
        if check.poll() is None:
            os.killpg(check.pid, signal.SIGKILL)
            check.wait()
    assert check.returncode == 130, (out, err)
    assert out.splitlines()[-1].endswith(" interrupted (Ctrl-C)"), out
    assert "Traceback" not in err, err


CTRL_C_WHILE_STARTING = """
import os, signal, sys
if sys.argv[0] in ("-c", "-m"):  # a step, not check.py itself
    os.killpg(0, signal.SIGINT)  # the terminal's Ctrl-C, while the step still imports `site`
"""


@pytest.mark.e2e
def test_ctrl_c_while_a_step_is_starting_is_still_one_line(tmp_path: Path) -> None:
    # Python that gets SIGINT while importing `site` dies with "Fatal Python error" and a traceback.
    (tmp_path / "sitecustomize.py").write_text(CTRL_C_WHILE_STARTING)
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check.py"), "--co"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert check.returncode == 130, (check.stdout, check.stderr)
    assert check.stdout == "== ruff check\n== ruff check interrupted (Ctrl-C)\n"
    assert check.stderr == ""
