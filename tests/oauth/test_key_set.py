"""The gateway's token verifier against a real authorization server, on an injected clock: a key
rotation is picked up at the first token of the new key, a stream of unknown kids refetches the
key set at most once per period, and a validated token costs no network call (the server can be
down)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx

from svc_mcp.serve.oauth_settings import OAuthSettings
from svc_mcp.serve.oauth_tokens import LEEWAY_SECONDS, REFETCH_SECONDS, JwtVerifier
from tests.oauth.conftest import auth_server, service_client, signing_key

RESOURCE = "http://127.0.0.1:9/mcp"


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_rotation_rate_limit_and_no_network_per_token(idp_root: Path) -> None:
    clock = Clock()
    with auth_server(idp_root, [RESOURCE], [service_client("ci")], "k1") as (idp, _):

        async def check(token: str) -> str | None:
            async with httpx.AsyncClient() as http:
                verifier.http = http
                access = await verifier.verify_token(token)
            return access.subject if access is not None else None

        verifier = JwtVerifier(OAuthSettings(idp.issuer, RESOURCE), httpx.AsyncClient(), clock)
        first = idp.token("ci", resource=RESOURCE)
        assert anyio.run(check, first) == "ci"

        # Rotation: the new key signs, the old one is still published.
        k1 = idp.jwks[0]
        _, k2 = signing_key("k2")
        idp.restart([k2, k1])
        second = idp.token("ci", resource=RESOURCE)
        assert anyio.run(check, second) == "ci"

        # Another rotation within the period: the unknown kid waits for the next period.
        _, k3 = signing_key("k3")
        idp.restart([k3, k2])
        third = idp.token("ci", resource=RESOURCE)
        assert anyio.run(check, third) is None
        clock.now += REFETCH_SECONDS
        assert anyio.run(check, third) == "ci"

        # The server gone: tokens already seen, and new ones of known keys, still pass.
        fourth = idp.token("ci", resource=RESOURCE)
        idp.stop()
        assert anyio.run(check, first) == "ci"
        assert anyio.run(check, fourth) == "ci"
        # Until they expire (beyond the leeway), by the injected clock.
        clock.now += 600 + LEEWAY_SECONDS + 1
        assert anyio.run(check, fourth) is None
