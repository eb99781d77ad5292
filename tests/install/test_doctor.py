"""`svc-mcp doctor` against real `svc-stub portal` and `svc-stub service` processes."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console

from svc_mcp.hosts.findings import Finding, render
from tests.install.conftest import (
    SERVICE_TOKEN,
    WRONG_SERVICE_TOKEN,
    CliRun,
    Home,
    RunCli,
    StartService,
    refused_requests,
    servers_of,
)
from tests.mcp.conftest import PortalStub
from tests.support import closed_url

Findings = dict[str, dict[str, Any]]


def doctor(run_cli: RunCli, *args: str, env: dict[str, str]) -> tuple[CliRun, Findings]:
    """Runs doctor (JSON lines: stdout is no terminal here) and indexes the findings by check."""
    result = run_cli("doctor", *args, env=env)
    findings = [json.loads(line) for line in result.stdout.splitlines()]
    assert len({finding["check"] for finding in findings}) == len(findings)
    return result, {finding["check"]: finding for finding in findings}


def test_everything_needed_works(
    portal: PortalStub,
    start_service: StartService,
    fake_home: Home,
    run_cli: RunCli,
    fake_uvx: Path,
) -> None:
    service = start_service(SERVICE_TOKEN)
    env = {
        "PORTAL_API_BASE": portal.base_url,
        "PORTAL_SESSION_TOKEN": portal.tokens["auditor"],
        "SERVICE_API_BASE": service.base_url,
        "SERVICE_API_TOKEN": SERVICE_TOKEN,
    }
    install = ("install", "--client", "cursor", "--source", "github", "--uvx", str(fake_uvx))
    assert run_cli(*install, env=env).returncode == 0

    result, findings = doctor(run_cli, "--json", env=env)
    assert result.returncode == 0, result.stdout
    assert list(findings) == [
        "service.base_url",
        "service.token",
        "service.answers",
        "service.auth",
        "portal.base_url",
        "portal.token",
        "portal.answers",
        "portal.identity",
        "host.cursor.user",
    ]
    assert {finding["status"] for finding in findings.values()} == {"ok", "info"}
    assert findings["portal.base_url"]["source"] == "PORTAL_API_BASE"
    assert findings["portal.token"]["message"] == "set (from PORTAL_SESSION_TOKEN)"
    assert findings["service.token"]["message"] == "set (from SERVICE_API_TOKEN)"
    assert findings["portal.identity"]["message"] == "signed in as alice (human, role auditor)"
    assert findings["service.auth"]["auth_required"] is True
    cursor_file = fake_home.user_file("cursor")
    assert findings["host.cursor.user"]["path"] == str(cursor_file)
    assert (
        "env: SERVICE_API_BASE, SERVICE_API_TOKEN, PORTAL_API_BASE, PORTAL_SESSION_TOKEN"
        in (findings["host.cursor.user"]["message"])
    )
    for token in (portal.tokens["auditor"], SERVICE_TOKEN):
        assert token not in result.stdout + result.stderr
    assert refused_requests(service) == 0


def test_an_unreachable_service_fails_only_when_needed(
    portal: PortalStub, fake_home: Home, run_cli: RunCli
) -> None:
    with closed_url() as nowhere:
        env = {"PORTAL_API_BASE": portal.base_url, "SERVICE_API_BASE": nowhere}

        result, findings = doctor(run_cli, env=env)
        assert result.returncode == 8
        failure = findings["service.answers"]
        assert failure["status"] == "fail"
        assert failure["kind"] == "unreachable"
        assert failure["message"].startswith(f"cannot reach the data service at {nowhere}")
        assert "service.auth" not in findings
        assert findings["portal.answers"]["status"] == "ok"
        assert findings["portal.identity"]["message"].startswith("anonymous")
        assert findings["hosts"]["status"] == "warn"  # advice, not a failure

        portal_only, findings = doctor(run_cli, "--toolsets", "portal", env=env)
        assert portal_only.returncode == 0
        assert not [check for check in findings if check.startswith("service.")]


def test_a_wrong_token_is_sent_once_and_never_shown(
    start_service: StartService, fake_home: Home, run_cli: RunCli
) -> None:
    service = start_service(SERVICE_TOKEN)
    env = {"SERVICE_API_BASE": service.base_url, "DASHBOARD_API_TOKEN": WRONG_SERVICE_TOKEN}
    result, findings = doctor(run_cli, "--toolsets", "analytics", env=env)
    assert result.returncode == 3
    assert findings["service.token"]["source"] == "DASHBOARD_API_TOKEN"
    assert findings["service.answers"]["status"] == "ok"
    refused = findings["service.auth"]
    assert (refused["status"], refused["kind"]) == ("fail", "unauthorized")
    assert "refused the token in SERVICE_API_TOKEN (or DASHBOARD_API_TOKEN)" in refused["message"]
    assert refused_requests(service) == 1
    assert WRONG_SERVICE_TOKEN not in result.stdout + result.stderr


def test_a_lockout_is_reported_with_its_retry_after(
    start_service: StartService, fake_home: Home, run_cli: RunCli
) -> None:
    service = start_service(SERVICE_TOKEN)
    wrong = {"Authorization": f"Bearer {WRONG_SERVICE_TOKEN}"}
    statuses = [
        httpx.get(f"{service.base_url}/api/v1/system", headers=wrong).status_code for _ in range(8)
    ]
    assert statuses == [401] * 7 + [429]

    env = {"SERVICE_API_BASE": service.base_url, "SERVICE_API_TOKEN": SERVICE_TOKEN}
    result, findings = doctor(run_cli, "--toolsets", "analytics", env=env)
    assert result.returncode == 6
    assert findings["service.answers"]["status"] == "ok"  # the probes need no token
    locked = findings["service.auth"]
    assert locked["kind"] == "locked_out"
    assert isinstance(locked["retry_after"], int)
    assert locked["retry_after"] > 0
    assert f"retry after {locked['retry_after']} seconds" in locked["message"]
    assert refused_requests(service) == 9, "the 8 above and doctor's one request"


def test_a_required_token_that_is_not_set(
    start_service: StartService, fake_home: Home, run_cli: RunCli
) -> None:
    service = start_service(SERVICE_TOKEN)
    env = {"SERVICE_API_BASE": service.base_url}
    result, findings = doctor(run_cli, "--toolsets", "analytics", env=env)
    assert result.returncode == 3
    assert findings["service.token"]["message"] == (
        "not set (SERVICE_API_TOKEN or DASHBOARD_API_TOKEN or SERVICE_API_TOKEN_FILE)"
    )
    assert findings["service.auth"]["message"].endswith(
        "set SERVICE_API_TOKEN (or DASHBOARD_API_TOKEN)"
    )
    assert refused_requests(service) == 0


def test_a_service_without_auth_is_not_sent_the_token(
    start_service: StartService, fake_home: Home, run_cli: RunCli
) -> None:
    service = start_service("")
    env = {"SERVICE_API_BASE": service.base_url, "SERVICE_API_TOKEN": WRONG_SERVICE_TOKEN}
    result, findings = doctor(run_cli, "--toolsets", "analytics", env=env)
    assert result.returncode == 0
    assert findings["service.auth"]["auth_required"] is False
    assert "not needed, so it was not sent" in findings["service.auth"]["message"]


def test_a_refused_portal_session(portal: PortalStub, fake_home: Home, run_cli: RunCli) -> None:
    env = {"PORTAL_API_BASE": portal.base_url, "PORTAL_SESSION_TOKEN": "no-such-session-token"}
    result, findings = doctor(run_cli, "--toolsets", "portal", env=env)
    assert result.returncode == 3
    assert findings["portal.answers"]["status"] == "ok"
    assert findings["portal.identity"]["kind"] == "unauthorized"
    assert "PORTAL_SESSION_TOKEN" in findings["portal.identity"]["message"]
    assert "no-such-session-token" not in result.stdout + result.stderr


def test_settings_show_their_source_and_a_bad_one_is_misconfigured(
    fake_home: Home, run_cli: RunCli
) -> None:
    result, findings = doctor(run_cli, env={"SERVICE_API_BASE": "not a url"})
    assert findings["portal.base_url"]["message"] == "http://127.0.0.1:8081 (default)"
    assert findings["portal.token"]["set"] is False
    bad = findings["service.settings"]
    assert (bad["status"], bad["kind"]) == ("fail", "misconfigured")
    assert "SERVICE_API_BASE" in bad["message"]
    assert "service.answers" not in findings
    assert result.returncode != 0
    assert run_cli("doctor", "--toolsets", "nothing").returncode == 2


def test_hosts_are_found_and_a_missing_command_fails(
    portal: PortalStub, fake_home: Home, run_cli: RunCli, fake_uvx: Path
) -> None:
    env = {"PORTAL_API_BASE": portal.base_url}
    for client in ("cursor", "gemini"):
        args = ("install", "--client", client, "--source", "github", "--uvx", str(fake_uvx))
        assert run_cli(*args, env=env).returncode == 0
    # Installing refuses a command that is not there; a file edited by hand may still hold one.
    gone = {"mcpServers": {"svc": {"command": "/gone/uvx", "args": ["svc-mcp"], "env": {}}}}
    fake_home.user_file("claude-code").write_text(json.dumps(gone))
    gemini = fake_home.user_file("gemini")
    settings = json.loads(gemini.read_text())
    settings["mcpServers"]["svc"]["command"] = "uvx"
    gemini.write_text(json.dumps(settings))
    fake_home.user_file("claude-desktop").parent.mkdir(parents=True)
    fake_home.user_file("claude-desktop").write_text("{not json")

    result, findings = doctor(run_cli, "--toolsets", "portal", env=env)
    assert result.returncode == 2
    assert findings["host.cursor.user"]["status"] == "ok"
    assert findings["host.cursor.user"]["command"] == str(fake_uvx)
    missing = findings["host.claude-code.user"]
    assert (missing["status"], missing["kind"]) == ("fail", "misconfigured")
    assert "runs /gone/uvx, which is not there" in missing["message"]
    assert findings["host.gemini.user"]["status"] == "warn"
    assert "by name, which a GUI host may not find" in findings["host.gemini.user"]["message"]
    broken = findings["host.claude-desktop.user"]  # one line saying so, and nothing started
    assert (broken["status"], broken.get("kind")) == ("warn", None)
    assert "not read:" in broken["message"]
    assert "is not valid JSON" in broken["message"]
    assert "svc" in servers_of("cursor", fake_home.user_file("cursor"))


def test_a_terminal_gets_one_rich_line_per_finding() -> None:
    findings = [
        Finding("portal.answers", "ok", "the portal answers at http://127.0.0.1:8081"),
        Finding(
            "service.auth", "fail", "refused " + "x" * 200 + " [bold]not markup[/]", "unauthorized"
        ),
        Finding("hosts", "warn", "no MCP host has a server called 'svc'"),
    ]
    out = io.StringIO()
    render(findings, Console(file=out, force_terminal=True, width=60))
    lines = out.getvalue().splitlines()
    assert len(lines) == len(findings) + 1
    assert "✓" in lines[0]
    assert "✗" in lines[1]
    assert "[bold]not markup[/]" in lines[1]
    assert "1 needed check(s) failed" in lines[-1]


ODD_PORTAL = {
    "/api/page": {"ok": True, "data": {"title": "Home", "cards": []}},
    "/api/whoami": {"ok": True, "data": {"id": "mallory"}},
}


class _OddPortal(BaseHTTPRequestHandler):
    """A portal that answers, but proves an identity that is no `Identity` record."""

    def do_GET(self) -> None:
        body = json.dumps(ODD_PORTAL.get(self.path, {"ok": False})).encode()
        self.send_response(200 if self.path in ODD_PORTAL else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_doctor_checks_the_backends_through_the_tool_rows(fake_home: Home, run_cli: RunCli) -> None:
    """Doctor calls `portal_page` and `portal_whoami` on the core's call path, so an identity
    that does not match the row's record is a failure, as it would be for every tool call."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OddPortal)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {
            "PORTAL_API_BASE": f"http://127.0.0.1:{server.server_port}",
            "PORTAL_SESSION_TOKEN": "a-session-token-of-enough-length",
        }
        result, findings = doctor(run_cli, "--toolsets", "portal", env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert findings["portal.answers"]["status"] == "ok"
    identity = findings["portal.identity"]
    assert (identity["status"], identity["kind"]) == ("fail", "server_error")
    assert "GET /api/whoami with a payload that does not match Identity" in identity["message"]
    assert result.returncode == 10  # the exit code of server_error
