"""An editable install (`pip install -e .` in a venv) without uv on PATH: the entry runs the venv's
own `svc-mcp`, which runs the checkout as it is, and install says so; doctor starts it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from svc_mcp.hosts.runners import Runners
from tests.install.conftest import Home, RunCli, servers_of
from tests.mcp.conftest import PortalStub
from tests.support import ROOT

VENV_SCRIPT = Path(sys.executable).parent / "svc-mcp"


def test_an_editable_install_without_uv_writes_the_venvs_own_command(
    portal: PortalStub, fake_home: Home, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What this installation finds on a machine where uv is nowhere: the venv's own svc-mcp,
    # installed from this checkout.
    found = Runners(script=str(VENV_SCRIPT), checkout=ROOT)
    monkeypatch.setattr("svc_mcp.hosts.local_entry.this_installation", lambda environ: found)
    env = {"PORTAL_API_BASE": portal.base_url}
    result = run_cli("install", "--client", "cursor", env=env)
    assert result.returncode == 0, result.stderr
    assert f"uv is not on PATH, so the entry runs {VENV_SCRIPT}" in result.stderr
    entry = servers_of("cursor", fake_home.user_file("cursor"))["svc"]
    assert (entry["command"], entry["args"]) == (str(VENV_SCRIPT), [])

    doctor = run_cli("doctor", "--toolsets", "portal", "--json")
    findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
    assert findings["host.cursor.user"]["status"] == "ok", findings["host.cursor.user"]
    assert doctor.returncode == 0
