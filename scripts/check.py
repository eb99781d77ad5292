"""The project's whole check, as CI runs it: lint, format, types, tests.

Run it with `.venv/bin/uv run --locked --extra dev scripts/check.py [pytest args...]`. Ctrl-C
stops it with one line and exit code 130.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from types import FrameType

WORKERS = ["-n", "2", "--dist", "load"]
STEPS = [
    ("ruff check", [sys.executable, "-m", "ruff", "check", "."]),
    ("ruff format --check", [sys.executable, "-m", "ruff", "format", "--check", "."]),
    ("mypy --strict", [sys.executable, "-m", "mypy"]),
    # Two workers (the machine CI runs on has 2 cores); tests/parallel.py keeps timing tests alone.
    ("pytest", [sys.executable, "-m", "pytest", "-q", *WORKERS, *sys.argv[1:]]),
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
