"""Opaque access tokens, introspected (RFC 7662) by a gateway given a client of its own at the
real authorization server; without that client the gateway takes JWTs only."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from svc_mcp.serve.oauth.introspection import REFUSAL_SECONDS
from svc_mcp.serve.oauth.keys import IssuerUnavailable
from tests.mcp.conftest import PortalStub
from tests.oauth.conftest import CLIENT_SECRET, auth_server, service_client, start_gateway
from tests.oauth.hostile_issuer import RESOURCE, hostile_issuer
from tests.oauth.keyset_harness import Clock, running_verifier
from tests.support import reserved_port

MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "portal_catalog", "arguments": {}},
}


def post(url: str, token: str) -> httpx.Response:
    return httpx.post(url, json=CALL, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})


def test_opaque_tokens_are_introspected_only_when_configured(
    portal: PortalStub, idp_root: Path, tmp_path: Path
) -> None:
    with reserved_port() as port, reserved_port() as plain_port:
        url, plain_url = (f"http://127.0.0.1:{p}/mcp" for p in (port, plain_port))
        elsewhere = "https://elsewhere.example/mcp"
        clients = [service_client("reports", "svc:read"), service_client("svc-gateway", "svc:read")]
        with auth_server(idp_root, [url, plain_url, elsewhere], clients, "k1") as (idp, _):
            idp.opaque = [url, plain_url, elsewhere]
            idp.restart(idp.jwks)
            introspecting = {
                "SVC_MCP_OAUTH_CLIENT_ID": "svc-gateway",
                "SVC_MCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET,
            }
            with (
                start_gateway(portal, tmp_path / "gw.log", idp.issuer, port, **introspecting) as gw,
                start_gateway(portal, tmp_path / "plain.log", idp.issuer, plain_port),
            ):
                token = idp.token("reports", scope="svc:read", resource=url)
                assert token.count(".") != 2, "an opaque token"
                answer = post(url, token)
                assert answer.status_code == 200, answer.text
                assert answer.json()["result"]["isError"] is False
                assert (
                    'call="tools/call" tool="portal_catalog" sub="reports" client_id="reports"'
                    in gw.log()
                )
                assert token not in gw.log()
                # A token for another resource, a made-up one: refused.
                assert (
                    post(
                        url, idp.token("reports", scope="svc:read", resource=elsewhere)
                    ).status_code
                    == 401
                )
                assert post(url, "made-up-opaque-token-0123456789").status_code == 401
                # Without a client of its own the gateway takes JWTs only.
                plain = idp.token("reports", scope="svc:read", resource=plain_url)
                assert post(plain_url, plain).status_code == 401


def test_a_made_up_opaque_token_is_asked_about_once() -> None:
    """Refusals are kept (bounded, 30 s): a made-up token sent again and again is introspected
    once, not once per request; an introspection endpoint that fails is the issuer's trouble
    (503), not the token's."""
    clock = Clock()
    client = ("svc-gateway", CLIENT_SECRET)
    with hostile_issuer("k1") as issuer:

        async def scenario() -> None:
            async with running_verifier(
                issuer.issuer, RESOURCE, clock, introspection_client=client
            ) as (verifier, _):
                async with anyio.create_task_group() as group:
                    for _ in range(64):
                        group.start_soon(verifier.verify_token, "made-up-opaque-token")
                for _ in range(500):
                    assert await verifier.verify_token("made-up-opaque-token") is None
                assert issuer.introspections <= 4  # those in flight together, then none
                asked = issuer.introspections
                clock.now += REFUSAL_SECONDS
                assert await verifier.verify_token("made-up-opaque-token") is None
                assert issuer.introspections == asked + 1
                issuer.introspection_status = 502
                with pytest.raises(IssuerUnavailable):
                    await verifier.verify_token("another-opaque-token")

        anyio.run(scenario)
