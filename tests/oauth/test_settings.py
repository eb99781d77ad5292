"""Turning OAuth on, on the real `svc-mcp --http`: both settings or neither, clear text only to
loopback or a listed host, no `--no-auth` beside it, the static token refused unless kept with
`--keep-static-token`, the issuer's port in the gateway's confinement."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.mcp.conftest import SVC_MCP, PortalStub, run_commands
from tests.mcp.test_mcp_gateway import INITIALIZE, MCP_HEADERS
from tests.oauth.conftest import auth_server, service_client, start_gateway
from tests.support import reserved_port

STATIC = "static-gateway-token-for-the-oauth-tests-0123"
NOWHERE = {"PORTAL_API_BASE": "http://127.0.0.1:9"}


@pytest.mark.e2e
def test_unusable_settings_are_refused_with_what_to_do() -> None:
    with reserved_port() as port:
        serve = [SVC_MCP, "--http", "--port", str(port)]
        issuer = "https://idp.example.test"
        public = "https://mcp.example.test/mcp"
        half, clear, no_auth, keep_alone, flags_without_http = run_commands(
            [
                (serve, {**NOWHERE, "SVC_MCP_OAUTH_ISSUER": issuer}),
                (
                    [*serve, "--oauth-issuer", "http://idp.example.test", "--public-url", public],
                    NOWHERE,
                ),
                ([*serve, "--no-auth", "--oauth-issuer", issuer, "--public-url", public], NOWHERE),
                ([*serve, "--keep-static-token"], NOWHERE),
                ([SVC_MCP, "--oauth-issuer", issuer, "tools"], NOWHERE),
            ]
        )
        assert half.returncode == 2
        assert "SVC_MCP_PUBLIC_URL" in half.stderr
        assert clear.returncode == 2
        assert "plain http to idp.example.test" in clear.stderr
        assert "SVC_MCP_INSECURE_HOSTS" in clear.stderr
        assert no_auth.returncode == 2
        assert "--no-auth and OAuth" in no_auth.stderr
        assert keep_alone.returncode == 2
        assert "SVC_MCP_OAUTH_ISSUER" in keep_alone.stderr
        assert flags_without_http.returncode == 2
        assert "need --http" in flags_without_http.stderr


def test_a_listed_clear_text_issuer_is_accepted(portal: PortalStub, tmp_path: Path) -> None:
    with (
        reserved_port() as port,
        start_gateway(
            portal,
            tmp_path / "gateway.log",
            "http://idp.internal.test:8080",
            port,
            SVC_MCP_INSECURE_HOSTS="idp.internal.test",
        ) as gateway,
    ):
        metadata = httpx.get(gateway.base_url + "/.well-known/oauth-protected-resource/mcp")
        assert metadata.json()["authorization_servers"] == ["http://idp.internal.test:8080"]
        assert "connects: " in gateway.log()
        confined = next(line for line in gateway.log().splitlines() if "confined" in line)
        assert "8080" in confined.partition("connects: ")[2]


def test_the_static_token_only_with_keep_static_token(
    portal: PortalStub, idp_root: Path, tmp_path: Path
) -> None:
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        static = {**MCP_HEADERS, "Authorization": f"Bearer {STATIC}"}
        with auth_server(idp_root, [url], [service_client("ci")], "k1") as (idp, _):
            with start_gateway(
                portal, tmp_path / "off.log", idp.issuer, port, SVC_MCP_GATEWAY_TOKEN=STATIC
            ) as gateway:
                assert httpx.post(url, json=INITIALIZE, headers=static).status_code == 401
                assert "--keep-static-token would accept it" in gateway.log()
            with reserved_port() as port:
                url = f"http://127.0.0.1:{port}/mcp"
                idp.resources.append(url)
                idp.restart(idp.jwks)
                with start_gateway(
                    portal,
                    tmp_path / "kept.log",
                    idp.issuer,
                    port,
                    "--keep-static-token",
                    SVC_MCP_GATEWAY_TOKEN=STATIC,
                ) as gateway:
                    assert httpx.post(url, json=INITIALIZE, headers=static).status_code == 200
                    token = idp.token("ci", resource=url)
                    bearer = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
                    assert httpx.post(url, json=INITIALIZE, headers=bearer).status_code == 200
                    wrong = {**MCP_HEADERS, "Authorization": f"Bearer {STATIC}x"}
                    assert httpx.post(url, json=INITIALIZE, headers=wrong).status_code == 401
                    log = gateway.log()
                    assert 'client_id="static-token"' in log
                    assert STATIC not in log
                    # The start-up line says either credential suffices, not that both are needed.
                    (kept,) = [
                        line for line in log.splitlines() if "svc-mcp: --keep-static-token" in line
                    ]
                    assert "either one suffices" in kept
                    assert "every request needs" not in kept


def test_the_public_host_is_accepted_in_host_and_origin() -> None:
    from svc_mcp.serve.gateway.app import GatewayOptions, transport_security
    from svc_mcp.serve.oauth.settings import OAuthSettings

    oauth = OAuthSettings("https://idp.example.test", "https://mcp.example.test/mcp")
    with_oauth = transport_security(GatewayOptions(), oauth)
    assert "mcp.example.test" in (with_oauth.allowed_hosts or [])
    assert "https://mcp.example.test" in (with_oauth.allowed_origins or [])
    assert "mcp.example.test" not in (transport_security(GatewayOptions()).allowed_hosts or [])
