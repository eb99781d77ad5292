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
STEPS = [
    ("ruff check", [sys.executable, "-m", "ruff", "check", "."]),
    ("ruff format --check", [sys.executable, "-m", "ruff", "format", "--check", "."]),
    ("mypy --strict", [sys.executable, "-m", "mypy"]),
    # tests/parallel.py keeps the timing tests alone and starts the modules with processes first.
    ("pytest", [sys.executable, "-m", "pytest", "-q", *WORKERS, *NOT_SOAK, *sys.argv[1:]]),
]
INTERRUPTED = 130
"""The shell's code for a command ended by Ctrl-C (SIGINT)."""
interrupted: list[int] = []


def _note(signum: int, frame: FrameType | None) -> None:
    # The step got the terminal's Ctrl-C too (and `uv run` forwards it here once more): let it
    # end, instead of raising KeyboardInterrupt mid-wait, which printed two tracebacks.
    interrupted.append(signum)


def main() -> int:
    signal.signal(signal.SIGINT, _note)
    for name, command in STEPS:
        print(f"== {name}", flush=True)
        code = subprocess.call(command)
        if interrupted:
            print(f"== {name} interrupted (Ctrl-C)", flush=True)
            return INTERRUPTED
        if code != 0:
            print(f"== {name} failed (exit {code})", flush=True)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
