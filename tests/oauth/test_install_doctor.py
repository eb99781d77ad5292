"""`svc-mcp install --http URL` and `svc-mcp doctor` against a real gateway with OAuth: the entry
carries no token (each host signs in itself), and doctor says the gateway's mode and checks its
metadata and the issuer's discovery."""

from __future__ import annotations

import json
from pathlib import Path

from tests.install.conftest import Home, RunCli, servers_of
from tests.mcp.conftest import PortalStub
from tests.oauth.conftest import auth_server, start_gateway
from tests.support import reserved_port


def doctor_entry(run_cli: RunCli) -> dict[str, object]:
    result = run_cli("doctor", "--json")
    findings = {f["check"]: f for f in map(json.loads, result.stdout.splitlines())}
    entry: dict[str, object] = findings["host.cursor.user"]
    return entry


def test_install_writes_no_token_and_doctor_checks_the_sign_in(
    portal: PortalStub, idp_root: Path, fake_home: Home, run_cli: RunCli, tmp_path: Path
) -> None:
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with (
            auth_server(idp_root, [url], [], "k1") as (idp, _),
            start_gateway(portal, tmp_path / "gateway.log", idp.issuer, port),
        ):
            result = run_cli("install", "--client", "cursor", "--http", url)
            assert result.returncode == 0, result.stderr
            assert f"does OAuth: Cursor signs in to {idp.issuer} itself" in result.stderr
            assert "SVC_MCP_GATEWAY_TOKEN" not in result.stderr
            (entry,) = servers_of("cursor", fake_home.user_file("cursor")).values()
            assert entry == {"url": url}

            found = doctor_entry(run_cli)
            assert found["status"] == "ok", found
            assert found["mode"] == "oauth"
            assert found["issuer"] == idp.issuer
            assert found["scopes"] == ["svc:read", "svc:intel"]

            idp.stop()  # the authorization server down: no host can sign in
            found = doctor_entry(run_cli)
            assert (found["status"], found["kind"]) == ("fail", "unreachable"), found
            assert "does not answer discovery" in str(found["message"])


def test_claude_code_asks_for_the_least_scope_and_doctor_tells_a_sign_in_that_cannot_succeed(
    portal: PortalStub, idp_root: Path, fake_home: Home, run_cli: RunCli, tmp_path: Path
) -> None:
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with (
            auth_server(idp_root, [url], [], "k1") as (idp, _),
            start_gateway(portal, tmp_path / "gateway.log", idp.issuer, port),
        ):
            result = run_cli("install", "--client", "claude-code", "--http", url)
            assert result.returncode == 0, result.stderr
            user_file = fake_home.user_file("claude-code")
            (entry,) = servers_of("claude-code", user_file).values()
            # What Claude Code needs to ask for the least scope first (it would ask for every scope
            # the gateway lists, svc:intel for everyone).
            assert entry == {"type": "http", "url": url, "oauth": {"scopes": "svc:read"}}
            findings = {
                f["check"]: f
                for f in map(json.loads, run_cli("doctor", "--json").stdout.splitlines())
            }
            found = findings["host.claude-code.user"]
            assert found["status"] == "ok", found
            assert found["asks_for"] == ["svc:read"]
            # How the person signs in, and why a write stays refused for whoever may forward intel:
            # real Claude Code never steps up past the pinned scopes (tests/oauth/test_claude_code.py).
            message = str(found["message"])
            assert "`claude mcp login svc`" in message
            assert "never steps up past the scopes its entry pins" in message
            assert "who may hold svc:intel adds it to the entry's `oauth.scopes`" in message

            # Pinned to both: nothing beyond the pin is left to say.
            document = json.loads(user_file.read_text())
            document["mcpServers"]["svc"]["oauth"] = {"scopes": "svc:read svc:intel"}
            user_file.write_text(json.dumps(document))
            findings = {
                f["check"]: f
                for f in map(json.loads, run_cli("doctor", "--json").stdout.splitlines())
            }
            found = findings["host.claude-code.user"]
            assert (found["status"], found["asks_for"]) == ("ok", ["svc:read", "svc:intel"]), found
            assert "steps up" not in str(found["message"])

            # Hand-edited to ask for a scope the authorization server does not offer.
            document = json.loads(user_file.read_text())
            document["mcpServers"]["svc"]["oauth"] = {"scopes": "svc:read svc:admin"}
            user_file.write_text(json.dumps(document))
            findings = {
                f["check"]: f
                for f in map(json.loads, run_cli("doctor", "--json").stdout.splitlines())
            }
            found = findings["host.claude-code.user"]
            assert (found["status"], found["kind"]) == ("fail", "misconfigured"), found
            assert "cannot sign in" in str(found["message"])
            assert "svc:admin" in str(found["message"])
