"""The deployment units in deploy/systemd: each scored by `systemd-analyze security
--offline=true` at an exposure of 2.0 or lower, and each keeps the promises docs/security.md makes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT

UNITS = sorted((ROOT / "deploy" / "systemd").glob("*.service"))
EXPOSURE = re.compile(r"Overall exposure level for \S+: (\d+\.\d+)")
SHARED_SETTINGS = [
    "DynamicUser=yes",
    "NoNewPrivileges=yes",
    "CapabilityBoundingSet=",
    "ProtectSystem=strict",
    "ProtectHome=yes",
    "SystemCallFilter=@system-service landlock_create_ruleset landlock_add_rule landlock_restrict_self",
    "IPAddressDeny=any",
    "IPAddressAllow=localhost",
]


def exposure(unit: Path) -> float:
    assert shutil.which("systemd-analyze"), "systemd-analyze is missing: apt-get install systemd"
    completed = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found = EXPOSURE.search(completed.stdout)
    assert found, completed.stdout + completed.stderr
    return float(found.group(1))


def test_there_is_a_unit_per_long_running_service() -> None:
    names = [unit.name for unit in UNITS]
    assert names == [
        "svc-mcp-gateway.service",
        "svc-stub-portal.service",
        "svc-stub-service.service",
    ]


@pytest.mark.e2e
@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.stem)
def test_exposure_is_at_most_two(unit: Path) -> None:
    assert exposure(unit) <= 2.0


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.stem)
def test_the_unit_keeps_the_readme_promises(unit: Path) -> None:
    lines = unit.read_text().splitlines()
    for setting in SHARED_SETTINGS:
        assert setting in lines, (unit.name, setting)
    assert any(line.endswith("_CONFINEMENT=require") for line in lines)
    # No AF_UNIX: once confined, no process opens a Unix socket (the seccomp filter agrees).
    families = "RestrictAddressFamilies=AF_INET AF_INET6"
    if "stub-service" in unit.name:
        # The guard keys a loopback peer by its local user: sock_diag over netlink, and the real
        # uids (a private user namespace would show every other user as 65534).
        assert f"{families} AF_NETLINK" in lines
        assert not [line for line in lines if line.startswith("PrivateUsers=")]
    else:
        assert families in lines
    writable = [line for line in lines if line.startswith(("ReadWritePaths=", "StateDirectory="))]
    # Only the data service writes, and only its database's folder.
    assert writable == (["StateDirectory=svc-service"] if "service.service" in unit.name else [])
