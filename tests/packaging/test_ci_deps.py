"""`.ci/run --deps-only` installs the prerequisites and nothing else; `--dry-run` prints what it
would run. Run here on a copy of the script with a PATH made for each case (the programs it looks
for present or not), as a fresh Debian or Ubuntu machine would have them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.e2e

ALWAYS = ("bash", "dirname", "id")
"""What the script itself runs on any machine."""
EVERY_PROGRAM = (
    "node",
    "npm",
    "strace",
    "systemd-analyze",
    "setpriv",
    "unshare",
    "ip",
    "mount",
    "git",
)
APT_INSTALL = "would run: env DEBIAN_FRONTEND=noninteractive apt-get install -y"
CHROMIUM = [] if Path("/usr/bin/chromium").exists() else ["chromium"]


def dry_run(
    tmp_path: Path, *present: str, args: tuple[str, ...] = ("--deps-only", "--dry-run")
) -> subprocess.CompletedProcess[str]:
    checkout, path = tmp_path / "checkout", tmp_path / "bin"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", checkout / ".ci" / "run")
    path.mkdir()
    for name in ALWAYS:
        (path / name).symlink_to(shutil.which(name) or name)
    for name in present:  # `command -v` finds it; the dry run never runs it
        (path / name).write_text("#!/bin/sh\nexit 99\n")
        (path / name).chmod(0o755)
    done = subprocess.run(
        [str(path / "bash"), str(checkout / ".ci" / "run"), *args],
        env={"PATH": str(path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sorted(p.name for p in checkout.iterdir()) == [".ci"]  # nothing made, nothing run
    return done


def installs(shown: str) -> list[list[str]]:
    return [
        line.removeprefix(APT_INSTALL).split()
        for line in shown.splitlines()
        if line.startswith(APT_INSTALL)
    ]


def test_the_script_parses() -> None:
    subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")], check=True, timeout=30)


def test_a_bare_machine_gets_every_package_and_npm_after_nodejs(tmp_path: Path) -> None:
    done = dry_run(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        "would run: python3 -m venv --without-pip .venv",
        "would run: python3 -m pip --python .venv/bin/python install -q uv",
    ]
    assert lines.count("would run: env DEBIAN_FRONTEND=noninteractive apt-get update") == 1
    # npm on its own, after nodejs: where NodeSource's nodejs brought npm, it is not asked for.
    assert installs(done.stdout) == [
        [*CHROMIUM, "nodejs", "strace", "systemd", "util-linux", "iproute2", "mount", "git"],
        ["npm"],
    ]
    assert "scripts/check.py" not in done.stdout  # --deps-only stops before the tests


def test_a_machine_with_everything_installs_nothing(tmp_path: Path) -> None:
    done = dry_run(tmp_path, *EVERY_PROGRAM)
    assert done.returncode == 0, done.stderr
    assert installs(done.stdout) == ([CHROMIUM] if CHROMIUM else [])


def test_node_without_npm_gets_npm_only_never_nodejs_again(tmp_path: Path) -> None:
    done = dry_run(tmp_path, *(name for name in EVERY_PROGRAM if name != "npm"))
    assert installs(done.stdout) == ([CHROMIUM] if CHROMIUM else []) + [["npm"]]


def test_a_missing_piece_of_util_linux_is_asked_for(tmp_path: Path) -> None:
    done = dry_run(tmp_path, *(name for name in EVERY_PROGRAM if name != "setpriv"))
    assert installs(done.stdout) == [[*CHROMIUM, "util-linux"]]


@pytest.mark.parametrize("args", [("--dry-run",), ("--deps-only", "--no-such-flag")])
def test_a_wrong_argument_is_refused_before_anything_runs(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    done = dry_run(tmp_path, args=args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(".ci/run: ")
