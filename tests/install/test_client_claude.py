"""`--client claude` means the Claude installed here: Claude Code (its `claude` command on PATH or
its `~/.claude.json`), Claude Desktop (its configuration folder), both, or a one-line refusal.
And real Claude Code, installed from npm into a temporary prefix, connects to what install wrote."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.install.conftest import Home, RunCli, servers_of
from tests.support_claude_code import QUIET_CLAUDE_CODE


@pytest.fixture
def path_without_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holds only an empty folder of ours (a test puts a `claude` there) and this Python's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent)]))
    return bin_dir


def _fake_claude(bin_dir: Path) -> None:
    program = bin_dir / "claude"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)


def test_only_claude_codes_cli_means_claude_code(
    path_without_claude: Path, fake_home: Home, run_cli: RunCli
) -> None:
    _fake_claude(path_without_claude)
    result = run_cli("install", "--client", "claude")
    assert result.returncode == 0, result.stderr
    assert "--client claude means Claude Code (--client claude-code): found here" in result.stderr
    assert "svc" in servers_of("claude-code", fake_home.user_file("claude-code"))
    assert not fake_home.user_file("claude-desktop").exists()


def test_only_claude_desktops_folder_means_claude_desktop(
    path_without_claude: Path, fake_home: Home, run_cli: RunCli
) -> None:
    fake_home.user_file("claude-desktop").parent.mkdir(parents=True)
    result = run_cli("install", "--client", "claude")
    assert result.returncode == 0, result.stderr
    assert "means Claude Desktop (--client claude-desktop)" in result.stderr
    assert "svc" in servers_of("claude-desktop", fake_home.user_file("claude-desktop"))
    assert not fake_home.user_file("claude-code").exists()


def test_both_are_written_and_named(
    path_without_claude: Path, fake_home: Home, run_cli: RunCli
) -> None:
    fake_home.user_file("claude-code").write_text("{}")
    fake_home.user_file("claude-desktop").parent.mkdir(parents=True)
    result = run_cli("install", "--client", "claude")
    assert result.returncode == 0, result.stderr
    assert "means Claude Code (--client claude-code) and Claude Desktop" in result.stderr
    for client in ("claude-code", "claude-desktop"):
        assert "svc" in servers_of(client, fake_home.user_file(client))
    removed = run_cli("uninstall", "--client", "claude")
    assert removed.returncode == 0
    for client in ("claude-code", "claude-desktop"):
        assert "svc" not in servers_of(client, fake_home.user_file(client))


def test_neither_is_one_line_saying_why(
    path_without_claude: Path, fake_home: Home, run_cli: RunCli
) -> None:
    result = run_cli("install", "--client", "claude")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "none of Claude Code, Claude Desktop is installed here" in result.stderr
    assert "no `claude` on PATH" in result.stderr
    assert "--client claude-code or --client claude-desktop" in result.stderr
    assert os.listdir(fake_home.home) == []


UNSHARE = shutil.which("unshare") or "/usr/bin/unshare"


@pytest.mark.e2e
def test_real_claude_code_connects_to_what_install_wrote(
    claude_code: Path, path_without_claude: Path, fake_home: Home, run_cli: RunCli
) -> None:
    (path_without_claude / "claude").symlink_to(claude_code.resolve())  # only Claude Code here
    result = run_cli("install", "--client", "claude")
    assert result.returncode == 0, result.stderr
    assert "means Claude Code" in result.stderr

    # In a network namespace of its own (loopback only), with its optional traffic off: Claude
    # Code may reach nothing beyond this machine, and needs nothing to start a stdio entry.
    got = subprocess.run(
        [UNSHARE, "--net", "--", str(claude_code), "mcp", "get", "svc"],
        env={"HOME": str(fake_home.home), "PATH": os.environ["PATH"], **QUIET_CLAUDE_CODE},
        cwd=fake_home.project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stdout + got.stderr
    assert "Connected" in got.stdout, got.stdout
