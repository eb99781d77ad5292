"""The confinement settings and what each process says at start, without confining this process:
where the kernel cannot confine (simulated here), `auto` runs and says why, `require` refuses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from server_stub.portal.demo_data import write_demo_data
from svc_mcp.serve.confinement import line_in, status_line
from svc_serving import confine as confinement
from svc_serving.confine import ConfinementError, Policy, confine, missing_with, mode_from
from svc_serving.confine_paths import runtime_paths
from tests.support import ROOT

SETTING = "SVC_TEST_CONFINEMENT"


def no_landlock(policy: Policy) -> int:
    raise ConfinementError("the kernel has no Landlock (ENOSYS; Linux 5.13 or later has it)")


@pytest.fixture
def policy() -> Policy:
    return Policy(process="svc-test", writes=(Path("/srv/db"),), connect_ports=(8080, 443))


@pytest.mark.parametrize(
    ("value", "mode"),
    [("", "auto"), ("auto", "auto"), ("REQUIRE", "require"), (" off ", "off")],
)
def test_the_setting_takes_three_values(
    monkeypatch: pytest.MonkeyPatch, value: str, mode: str
) -> None:
    monkeypatch.setenv(SETTING, value)
    assert mode_from(SETTING).value == mode


def test_another_value_stops_start_up_with_one_line(
    monkeypatch: pytest.MonkeyPatch, policy: Policy, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(SETTING, "yes")
    with pytest.raises(SystemExit) as exited:
        confine(policy, SETTING)
    assert exited.value.code == 2
    assert capsys.readouterr().err == (f"svc-test: {SETTING} must be one of auto, require, off\n")


def test_without_landlock_auto_runs_and_says_why(
    monkeypatch: pytest.MonkeyPatch, policy: Policy, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(confinement, "restrict", no_landlock)
    monkeypatch.delenv(SETTING, raising=False)
    line = confine(policy, SETTING)
    assert line.startswith("svc-test: unconfined: the kernel has no Landlock")
    assert f"set {SETTING}=require to refuse instead" in line
    assert capsys.readouterr().err == line + "\n"


def test_without_landlock_require_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch, policy: Policy, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(confinement, "restrict", no_landlock)
    monkeypatch.setenv(SETTING, "require")
    with pytest.raises(SystemExit) as exited:
        confine(policy, SETTING)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"svc-test: refusing to start unconfined ({SETTING}=require): the kernel")
    assert err.count("\n") == 1


def test_the_line_states_what_was_applied_and_what_an_old_abi_lacks(policy: Policy) -> None:
    line = confinement.describe(policy, 3)
    assert line.startswith(
        "svc-test: confined (Landlock ABI 3, no_new_privs, seccomp): writes: /srv/db;"
    )
    assert "connects: 443, 8080; binds: none; new sockets: TCP only" in line
    assert "TCP bind and connect are not restricted" in line
    assert missing_with(7) == []


def test_the_runtime_never_includes_home_or_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    monkeypatch.setattr(sys, "path", [str(home), "/", *sys.path])
    paths = [str(path) for path in runtime_paths()]
    assert str(home) not in paths
    assert "/" not in paths
    assert sys.prefix in paths or any(sys.prefix.startswith(p + "/") for p in paths)


@pytest.mark.e2e
def test_a_stub_with_a_bad_setting_refuses_in_one_line(tmp_path: Path) -> None:
    write_demo_data(tmp_path)
    completed = subprocess.run(
        [sys.executable, "-m", "server_stub", "portal", "--data", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "SVC_STUB_CONFINEMENT": "maybe"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines()[-1] == (
        "svc-stub portal: SVC_STUB_CONFINEMENT must be one of auto, require, off"
    )


def test_doctor_finds_the_line_an_entry_wrote() -> None:
    stderr = "svc-mcp: serving\nsvc-mcp: confined (Landlock ABI 7, no_new_privs): writes: none\n"
    assert line_in(stderr) == "svc-mcp: confined (Landlock ABI 7, no_new_privs): writes: none"
    assert line_in("svc-mcp --http: unconfined: SVC_MCP_CONFINEMENT=off") is not None
    assert line_in("svc-mcp: serving MCP at http://127.0.0.1:8765/mcp") is None


def test_the_status_line_says_what_a_server_would_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_MCP_CONFINEMENT", "off")
    assert status_line() == "svc-mcp: unconfined: SVC_MCP_CONFINEMENT=off"
    monkeypatch.setenv("SVC_MCP_CONFINEMENT", "auto")
    monkeypatch.setattr(confinement, "landlock_abi", lambda: 7)
    monkeypatch.setenv("SERVICE_API_BASE", "https://svc.example.com")
    assert "connects: 443, 8081" in status_line()
