"""The README's quick start: exactly two set-up commands, and CI runs the second one as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A venv of its own first: the system pip refuses installs on an externally managed Python.
SET_UP = (
    "python3 -m venv --without-pip .venv && python3 -m pip --python .venv/bin/python install -q uv"
)
DEMO_COMMAND = f"{SET_UP} && UV_SYSTEM_CERTS=1 .venv/bin/uv run svc-mcp demo"
TEST_COMMAND = (
    f"{SET_UP} && UV_SYSTEM_CERTS=1 .venv/bin/uv run --locked --extra dev scripts/check.py"
)


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```$", quick_start, re.S | re.M)
    assert len(blocks) == 1, "the quick start has one block of commands"
    return [line for line in blocks[0].splitlines() if line.strip()]


def ci_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_the_quick_start_is_the_demo_and_the_check() -> None:
    assert quick_start_commands() == [DEMO_COMMAND, TEST_COMMAND]


def test_ci_runs_the_readme_test_command() -> None:
    *set_up, run = TEST_COMMAND.split(" && ")
    ci = ci_commands()
    assert run in ci, "CI runs the README's test command byte for byte"
    # CI sets up the same way, one command per line.
    positions = [ci.index(step) for step in set_up]
    assert positions == sorted(positions)
    assert positions[-1] < ci.index(run)
