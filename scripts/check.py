"""The project's whole check, as CI runs it: lint, format, types, tests.

Run it with `.venv/bin/uv run --locked --extra dev scripts/check.py [pytest args...]`. Ctrl-C
stops it with one line and exit code 130.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from types import FrameType

WORKERS = ["-n", "3", "--dist", "load"]
"""Three workers on the 2 cores CI has: a third of the suite's time is spent waiting (downloads on
a fresh machine, servers starting, deadlines running out), which a third worker fills: 9 min 46 s
against 13 min 24 s on two, both from a fresh HOME (2026-11-28)."""
NOT_SOAK = ["-m", "not soak"]
"""The load and soak tests are left to CI's own step, which runs them at full length right after
(.ci/run): at the 10 s of this run they proved less and kept the other worker idle for a minute.
An `-m` of yours replaces this one."""
RUN_MODULE = """
import runpy, signal, sys
try:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
except KeyboardInterrupt:
    sys.exit(130)
runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
"""
"""`python -m <module> <args>` for a step started with Ctrl-C held back (see `run_step`): it lets
one in once the interpreter is up, and a Ctrl-C that came meanwhile ends the step quietly."""
STEPS = [
    ("ruff check", ["ruff", "check", "."]),
    ("ruff format --check", ["ruff", "format", "--check", "."]),
    ("mypy --strict", ["mypy"]),
    # tests/parallel.py keeps the timing tests alone and starts the modules with processes first.
    ("pytest", ["pytest", "-q", *WORKERS, *NOT_SOAK, *sys.argv[1:]]),
]
INTERRUPTED = 130
"""The shell's code for a command ended by Ctrl-C (SIGINT)."""
interrupted: list[int] = []


def _note(signum: int, frame: FrameType | None) -> None:
    # The step got the terminal's Ctrl-C too (and `uv run` forwards it here once more): let it
    # end, instead of raising KeyboardInterrupt mid-wait, which printed two tracebacks.
    interrupted.append(signum)


def run_step(module_and_args: list[str]) -> int:
    # A Ctrl-C that reaches Python while it imports `site` is a "Fatal Python error" with a
    # traceback, so the step starts with SIGINT blocked (the mask outlives exec) until RUN_MODULE.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        step = subprocess.Popen([sys.executable, "-c", RUN_MODULE, *module_and_args])
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    return step.wait()


def main() -> int:
    signal.signal(signal.SIGINT, _note)
    for name, module_and_args in STEPS:
        print(f"== {name}", flush=True)
        code = run_step(module_and_args)
        if interrupted:
            print(f"== {name} interrupted (Ctrl-C)", flush=True)
            return INTERRUPTED
        if code != 0:
            print(f"== {name} failed (exit {code})", flush=True)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
