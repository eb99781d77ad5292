"""The README's quick start: exactly two set-up commands, and CI runs the second one as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO_COMMAND = "python3 -m pip install uv && python3 -m uv run svc-mcp demo"
TEST_COMMAND = (
    "python3 -m pip install uv && python3 -m uv run --locked --extra dev scripts/check.py"
)


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```$", quick_start, re.S | re.M)
    assert len(blocks) == 1, "the quick start has one block of commands"
    return [line for line in blocks[0].splitlines() if line.strip()]


def ci_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_the_quick_start_is_the_demo_and_the_check() -> None:
    assert quick_start_commands() == [DEMO_COMMAND, TEST_COMMAND]


def test_ci_runs_the_readme_test_command() -> None:
    install, run = TEST_COMMAND.split(" && ")
    ci = ci_commands()
    assert run in ci, "CI runs the README's test command byte for byte"
    # CI installs uv the same way, only quieter.
    quiet = ["--quiet", "--disable-pip-version-check"]
    installs = [" ".join(w for w in line.split() if w not in quiet) for line in ci]
    assert install in installs
    assert installs.index(install) < ci.index(run)
