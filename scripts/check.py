"""The project's whole check, as CI runs it: lint, format, types, tests.

Run it with `.venv/bin/uv run --locked --extra dev scripts/check.py [pytest args...]`.
"""

from __future__ import annotations

import subprocess
import sys

WORKERS = ["-n", "2", "--dist", "load"]
STEPS = [
    ("ruff check", [sys.executable, "-m", "ruff", "check", "."]),
    ("ruff format --check", [sys.executable, "-m", "ruff", "format", "--check", "."]),
    ("mypy --strict", [sys.executable, "-m", "mypy"]),
    # Two workers (the machine CI runs on has 2 cores); tests/parallel.py keeps timing tests alone.
    ("pytest", [sys.executable, "-m", "pytest", "-q", *WORKERS, *sys.argv[1:]]),
]


def main() -> int:
    for name, command in STEPS:
        print(f"== {name}", flush=True)
        code = subprocess.call(command)
        if code != 0:
            print(f"== {name} failed (exit {code})", flush=True)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
