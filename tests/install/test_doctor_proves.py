"""Doctor proves each entry as its host will run it: with the entry's own settings, through one
read per backend, whatever the entry is called, while this shell's variables are unset. Real
`svc-stub service` and `svc-mcp --http` processes; each host's file written by `svc-mcp install`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from svc_mcp.hosts.table import HOSTS, StartupLimit
from tests.install.conftest import (
    HOST_NAMES,
    SERVICE_TOKEN,
    WRONG_SERVICE_TOKEN,
    Home,
    RunCli,
    StartService,
    refused_requests,
)
from tests.support import PORT, closed_url, running_server

pytestmark = pytest.mark.e2e

GATEWAY_TOKEN = "svc-doctor-gateway-token-3f8a1c6e9b2d7e5a"
WRONG_GATEWAY_TOKEN = "svc-doctor-wrong-gateway-token-000000000"


def _doctor(run_cli: RunCli, *args: str, env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    result = run_cli("doctor", "--toolsets", "analytics", "--json", *args, env=env)
    findings = {f["check"]: f for f in map(json.loads, result.stdout.splitlines())}
    return result.returncode, findings, result.stdout + result.stderr


@pytest.mark.parametrize("client", HOST_NAMES)
def test_doctor_fails_a_wrong_url_or_token_in_the_entry_and_passes_a_right_one(
    client: str,
    start_service: StartService,
    fake_home: Home,
    run_cli: RunCli,
    fake_uvx: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What this test proves is the wrong URL and token, not the host's start-up limit (doctor
    # applies that, test_entries_run proves it): a loaded machine may start an entry (a uvx
    # stand-in, here) later than Gemini CLI's 5 s, so each host waits as long as the slowest.
    monkeypatch.setitem(HOSTS, client, replace(HOSTS[client], startup=StartupLimit(60.0)))
    service = start_service(SERVICE_TOKEN)
    with closed_url() as nowhere:
        stdio = {
            "wrong-url": (nowhere, SERVICE_TOKEN),
            "wrong-token": (service.base_url, WRONG_SERVICE_TOKEN),
            "prod": (service.base_url, SERVICE_TOKEN),  # not called svc: found all the same
        }
        for name, (base, token) in stdio.items():
            installed = run_cli(
                *("install", "--client", client, "--name", name, "--source", "github"),
                *("--uvx", str(fake_uvx), "--env", f"SERVICE_API_BASE={base}"),
                *("--env", f"SERVICE_API_TOKEN={token}"),
            )
            assert installed.returncode == 0, installed.stderr
        remote = HOSTS[client].url_key is not None
        gateway_env = {
            "SVC_MCP_GATEWAY_TOKEN": GATEWAY_TOKEN,
            "SERVICE_API_BASE": service.base_url,
            "SERVICE_API_TOKEN": SERVICE_TOKEN,
        }
        with running_server(
            ["-m", "svc_mcp", "--http", "--port", PORT],
            log_path=tmp_path / "gateway.log",
            ready_path="/mcp",
            env=gateway_env,
        ) as gateway:
            if remote:
                gateways = {"gateway": f"{gateway.base_url}/mcp", "gateway-down": f"{nowhere}/mcp"}
                for name, url in gateways.items():
                    args = ("install", "--client", client, "--name", name, "--http", url)
                    assert run_cli(*args).returncode == 0

            # This shell has none of the backends' variables: only the entries carry them.
            code, findings, said = _doctor(run_cli, env={"SVC_MCP_GATEWAY_TOKEN": GATEWAY_TOKEN})
            check = f"host.{client}.user"
            wrong_url = findings[f"{check}.wrong-url"]
            assert (wrong_url["status"], wrong_url["kind"]) == ("fail", "unreachable")
            assert "'wrong-url'" in wrong_url["message"]
            assert "fix SERVICE_API_BASE in the entry's env" in wrong_url["message"]
            wrong_token = findings[f"{check}.wrong-token"]
            assert (wrong_token["status"], wrong_token["kind"]) == ("fail", "unauthorized")
            assert "'wrong-token'" in wrong_token["message"]
            assert (
                "fix SERVICE_API_TOKEN (or DASHBOARD_API_TOKEN) in the entry's env"
                in (wrong_token["message"])
            )
            assert findings[f"{check}.prod"]["status"] == "ok", findings[f"{check}.prod"]
            assert "get_system answered" in findings[f"{check}.prod"]["message"]
            # The entry's own start-up line says how it confined itself (the kernel has Landlock).
            assert "svc-mcp: confined (Landlock ABI" in findings[f"{check}.prod"]["message"]
            assert findings["service.answers"]["status"] == "warn"  # this shell's, not needed
            assert findings["service.answers"]["environment"] == "this shell"
            assert code == 8  # the first failure: the wrong URL
            if remote:
                assert findings[f"{check}.gateway"]["status"] == "ok", findings[f"{check}.gateway"]
                down = findings[f"{check}.gateway-down"]
                assert down["status"] == "fail"
                assert "check the URL and SVC_MCP_GATEWAY_TOKEN" in down["message"]
            for secret in (SERVICE_TOKEN, WRONG_SERVICE_TOKEN, GATEWAY_TOKEN):
                assert secret not in said

            if remote:
                code, findings, said = _doctor(
                    run_cli, "--name", "gateway", env={"SVC_MCP_GATEWAY_TOKEN": WRONG_GATEWAY_TOKEN}
                )
                refused = findings[f"{check}.gateway"]
                assert (refused["status"], code) == ("fail", 2)
                assert "'gateway'" in refused["message"]
                assert "the gateway refused the token: HTTP 401" in refused["message"]
                assert "SVC_MCP_GATEWAY_TOKEN" in refused["message"]
                assert WRONG_GATEWAY_TOKEN not in said

                code, findings, said = _doctor(run_cli, "--name", "gateway", env={})
                unset = findings[f"{check}.gateway"]
                assert (unset["status"], code) == ("fail", 2)
                assert "SVC_MCP_GATEWAY_TOKEN, which is not set here; export it" in unset["message"]
                assert "Illegal header" not in said
        assert refused_requests(service) == 1, (
            "the wrong token sent once, by the one run that started it"
        )


def test_name_narrows_doctor_to_that_entry_alone(
    start_service: StartService, fake_home: Home, run_cli: RunCli, fake_uvx: Path
) -> None:
    """With the shell's variables unset, the named entry passes and the other is not started."""
    service = start_service(SERVICE_TOKEN)
    for name, token in (("prod", SERVICE_TOKEN), ("stale", WRONG_SERVICE_TOKEN)):
        installed = run_cli(
            *("install", "--client", "claude-code", "--name", name, "--source", "github"),
            *("--uvx", str(fake_uvx), "--env", f"SERVICE_API_BASE={service.base_url}"),
            *("--env", f"SERVICE_API_TOKEN={token}"),
        )
        assert installed.returncode == 0, installed.stderr
    code, findings, _ = _doctor(run_cli, "--name", "prod", env={})
    assert code == 0, findings
    assert [c for c in findings if c.startswith("host.")] == ["host.claude-code.user.prod"]
    assert refused_requests(service) == 0  # the stale entry's wrong token was never sent


def test_install_says_the_gateway_token_must_be_in_the_hosts_environment(
    fake_home: Home, run_cli: RunCli
) -> None:
    with closed_url("/mcp") as url:
        result = run_cli("install", "--client", "cursor", "--http", url)
        assert result.returncode == 0, result.stderr
        assert (
            "Cursor sends SVC_MCP_GATEWAY_TOKEN from its own environment: export it where Cursor "
            "runs, then start it (it is not set here)"
        ) in result.stderr
        prompted = run_cli("install", "--client", "vscode", "--http", url)
        assert "SVC_MCP_GATEWAY_TOKEN from its own environment" not in prompted.stderr  # it asks


def test_a_referenced_variable_unset_here_is_named(
    start_service: StartService, fake_home: Home, run_cli: RunCli, fake_uvx: Path
) -> None:
    service = start_service(SERVICE_TOKEN)
    env = {"SERVICE_API_BASE": service.base_url, "SERVICE_API_TOKEN": SERVICE_TOKEN}
    install = ("install", "--client", "claude-code", "--source", "github", "--uvx", str(fake_uvx))
    assert run_cli(*install, "--env-refs", env=env).returncode == 0

    code, findings, _ = _doctor(run_cli, env={})
    entry = findings["host.claude-code.user"]
    assert (entry["status"], entry["kind"], code) == ("fail", "unauthorized", 3)
    assert "(not set here, so passed empty: SERVICE_API_TOKEN)" in entry["message"]
    code, findings, _ = _doctor(run_cli, env={"SERVICE_API_TOKEN": SERVICE_TOKEN})
    assert findings["host.claude-code.user"]["status"] == "ok"
    assert "not set here" not in findings["host.claude-code.user"]["message"]


def test_an_entry_that_runs_unconfined_is_a_warning(
    start_service: StartService, fake_home: Home, run_cli: RunCli, fake_uvx: Path
) -> None:
    service = start_service(SERVICE_TOKEN)
    env = {"SERVICE_API_BASE": service.base_url, "SERVICE_API_TOKEN": SERVICE_TOKEN}
    install = ("install", "--client", "claude-code", "--source", "github", "--uvx", str(fake_uvx))
    assert run_cli(*install, env=env).returncode == 0
    path = fake_home.user_file("claude-code")
    document = json.loads(path.read_text())
    document["mcpServers"]["svc"]["env"]["SVC_MCP_CONFINEMENT"] = "off"
    path.write_text(json.dumps(document))

    _, findings, _ = _doctor(run_cli, env={})
    entry = findings["host.claude-code.user"]
    assert entry["status"] == "warn", entry
    assert "svc-mcp: unconfined" in entry["message"]
