"""Smaller items of the install issue: `svc-mcp tools` on a narrow terminal, and the data service
stub refusing a database path that is not there."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from svc_mcp.cli.listing import print_table
from svc_mcp.tools.table import TOOLS
from tests.install.conftest import SVC_STUB


def test_tool_names_are_never_cut_on_a_narrow_terminal() -> None:
    for width in (60, 80):
        out = io.StringIO()
        print_table(TOOLS, Console(file=out, width=width, force_terminal=False))
        text = out.getvalue()
        for spec in TOOLS:
            assert spec.name in text, (width, spec.name)
        assert "…" not in text.split("\n", 3)[-1].split()[0]


@pytest.mark.e2e
def test_the_service_stub_refuses_a_database_that_is_not_there(tmp_path: Path) -> None:
    missing = tmp_path / "mistyped.db"
    result = subprocess.run(
        [SVC_STUB, "service", "--db", str(missing), "--port", "9"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"svc-stub: no database at {missing}: check the path, or create one with "
        f"`svc-stub demo-data service --db {missing}`"
    ]
    assert not missing.exists()
