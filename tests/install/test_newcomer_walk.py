"""The README's path from the quick start to a host, as a newcomer walks it (issue 35): in the
checkout, `.venv/bin/uv run svc-mcp install --client claude` and `--client codex`, then
`.venv/bin/uv run svc-mcp doctor` in the same checkout, with only HOME and PATH set (and uv kept
offline on the user's cache: tests reach nothing beyond loopback); real Claude Code's
`claude mcp list` says Connected and real Codex lists the entry. Doctor used to call the entry it
had just written "foreign, not started" there: its `.venv/bin/uv` is inside the folder doctor runs
in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from svc_mcp.hosts.expansion import entry_env
from svc_mcp.hosts.ours import not_ours
from svc_mcp.hosts.table import HOSTS
from tests.conftest import KEPT_CACHES
from tests.install.conftest import SERVICE_TOKEN, StartService
from tests.mcp.conftest import PortalStub
from tests.support import ROOT
from tests.support_claude_code import QUIET_CLAUDE_CODE, claude_code  # noqa: F401
from tests.support_npm import npm

CODEX_PACKAGE = "@openai/codex@0.171.0"  # pinned, as CLAUDE_CODE_PACKAGE is
THIS_UV = Path(sys.executable).parent / "uv"
"""The quick start's `.venv/bin/uv`: the uv beside the Python these tests run in."""
ENTRY_ARGS = ["run", "--project", str(ROOT), "svc-mcp"]


def test_doctor_in_the_checkout_may_start_the_entry_install_wrote_there() -> None:
    assert THIS_UV.is_file(), "the quick start puts uv into .venv"
    for scope in ("user", "project"):
        why = not_ours(str(THIS_UV), ENTRY_ARGS, scope=scope, project=ROOT, environ={})
        assert why is None, (scope, why)


def test_another_uv_inside_the_folder_is_still_refused(tmp_path: Path) -> None:
    uv = tmp_path / "bin" / "uv"
    uv.parent.mkdir()
    uv.write_text("#!/bin/sh\n")
    uv.chmod(0o755)
    args = ["run", "--project", str(tmp_path), "svc-mcp"]
    why = not_ours(str(uv), args, scope="user", project=tmp_path, environ={})
    assert why is not None
    assert "is inside this project folder" in why


def test_doctor_gives_an_entry_the_uv_setting_install_wrote_into_it() -> None:
    """Doctor starts the entry as the host would: with install's own `UV_SYSTEM_CERTS=1` (behind a
    proxy that re-signs TLS, uv needs it), not naming it as a variable it left out."""
    env = {"SERVICE_API_BASE": "http://127.0.0.1:9", "UV_SYSTEM_CERTS": "1", "UV_INDEX_URL": "x"}
    passed = entry_env(HOSTS["claude-code"], {"env": env}, {})
    assert passed.values == {"SERVICE_API_BASE": "http://127.0.0.1:9", "UV_SYSTEM_CERTS": "1"}
    assert passed.left_out == ("UV_INDEX_URL",)
    other = entry_env(HOSTS["claude-code"], {"env": {"UV_SYSTEM_CERTS": "/tmp/x"}}, {})
    assert other.values == {}
    assert other.left_out == ("UV_SYSTEM_CERTS",)


@pytest.fixture(scope="session")
def codex(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real Codex CLI from the npm registry, in a temporary prefix."""
    prefix = tmp_path_factory.mktemp("codex")
    npm("install", "-g", "--prefix", str(prefix), "--no-audit", "--no-fund", CODEX_PACKAGE)
    return prefix / "bin" / "codex"


@pytest.mark.e2e
def test_from_the_checkout_to_claude_code_and_codex_with_only_home_and_path(
    claude_code: Path,  # noqa: F811
    codex: Path,
    portal: PortalStub,
    start_service: StartService,
    tmp_path: Path,
) -> None:
    home = tmp_path / "newcomer"
    home.mkdir()
    bin_dir = home / ".local" / "bin"  # where `npm install -g --prefix ~/.local` puts them
    bin_dir.mkdir(parents=True)
    (bin_dir / "claude").symlink_to(claude_code.resolve())
    (bin_dir / "codex").symlink_to(codex)
    newcomer = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), "/usr/local/bin", "/usr/bin", "/bin"]),
        "UV_CACHE_DIR": KEPT_CACHES["UV_CACHE_DIR"],
        "UV_OFFLINE": "1",
    }
    service = start_service(SERVICE_TOKEN)
    backends = portal.env("auditor") | {
        "SERVICE_API_BASE": service.base_url,
        "SERVICE_API_TOKEN": SERVICE_TOKEN,
    }

    def in_checkout(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(THIS_UV), "run", "svc-mcp", *args],
            cwd=ROOT,
            env=newcomer | backends,
            capture_output=True,
            text=True,
            timeout=120,
        )

    for client in ("claude", "codex"):
        installed = in_checkout("install", "--client", client)
        assert installed.returncode == 0, installed.stderr
    doctor = in_checkout("doctor", "--json")
    findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
    for check in ("host.claude-code.user", "host.codex.user"):
        assert check in findings, doctor.stdout + doctor.stderr
        finding = findings[check]
        assert finding["status"] in ("ok", "warn"), finding  # warn: unconfined on this machine
        assert "foreign" not in finding["message"], finding["message"]
        assert "not passed" not in finding["message"], finding["message"]
        assert "listed 24 tools" in finding["message"], finding["message"]
        assert "get_system answered; portal_whoami answered" in finding["message"]
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr

    host_env = newcomer | QUIET_CLAUDE_CODE
    listed = subprocess.run(
        ["claude", "mcp", "list"], cwd=home, env=host_env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stdout + listed.stderr
    (line,) = [x for x in listed.stdout.splitlines() if x.startswith("svc:")]
    assert "Connected" in line, listed.stdout
    codex_listed = subprocess.run(
        ["codex", "mcp", "list", "--json"], cwd=home, env=newcomer, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert codex_listed.returncode == 0, codex_listed.stderr
    (entry,) = [e for e in json.loads(codex_listed.stdout) if e["name"] == "svc"]
    assert entry["enabled"] is True, entry
    assert entry["transport"]["command"] == str(THIS_UV), entry
    assert entry["transport"]["args"] == ENTRY_ARGS, entry
