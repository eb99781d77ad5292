"""Real Claude Code as the tests run it: from the npm registry into a prefix of the run's own, with
its optional traffic off (run it in a network namespace of loopback only: it reaches nothing
beyond this machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import e2e_fixture
from tests.support_npm import npm

CLAUDE_CODE_PACKAGE = "@anthropic-ai/claude-code"
QUIET_CLAUDE_CODE = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


@e2e_fixture(scope="session")
def claude_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real Claude Code from the npm registry, in a temporary prefix (its native program comes in
    the package; its install script is not run)."""
    prefix = tmp_path_factory.mktemp("claude-code")
    npm("install", "-g", "--prefix", str(prefix), "--no-audit", "--no-fund", CLAUDE_CODE_PACKAGE)
    return prefix / "bin" / "claude"
