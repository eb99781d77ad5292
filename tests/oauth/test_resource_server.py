"""The gateway as an OAuth resource server against a real authorization server (oidc-provider on
loopback): the metadata document, the 401 challenge, every token it must refuse, the scope a
write needs, a key rotation without restart, and the caller named in the log (never the token)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from tests.mcp.conftest import PortalStub
from tests.mcp.test_mcp_gateway import INITIALIZE, MCP_HEADERS
from tests.oauth.conftest import (
    AuthServer,
    auth_server,
    service_client,
    signing_key,
    start_gateway,
)
from tests.support import Server, reserved_port

READ_CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "portal_catalog", "arguments": {}},
}
INTEL_CALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "submit_intel", "arguments": {"envelope": {}}},
}


@dataclass
class Setup:
    gateway: Server
    url: str
    idp: AuthServer
    key: ec.EllipticCurvePrivateKey
    other: AuthServer

    def post(self, body: dict[str, Any], token: str | None) -> httpx.Response:
        headers = dict(MCP_HEADERS)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.post(self.url, json=body, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def setup(
    portal: PortalStub, idp_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setup]:
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        clients = [service_client("reader", "svc:read"), service_client("analyst")]
        with (
            auth_server(idp_root, [url, "https://elsewhere.example/mcp"], clients, "k1") as (
                idp,
                key,
            ),
            auth_server(idp_root, [url], clients, "k1") as (other, _),
        ):
            log = tmp_path_factory.mktemp("oauth-gateway") / "gateway.log"
            with start_gateway(portal, log, idp.issuer, port) as gateway:
                yield Setup(gateway, url, idp, key, other)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def parts(token: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    header, payload, signature = token.split(".")
    pad = lambda text: text + "=" * (-len(text) % 4)  # noqa: E731
    return (
        json.loads(base64.urlsafe_b64decode(pad(header))),
        json.loads(base64.urlsafe_b64decode(pad(payload))),
        signature,
    )


def test_the_metadata_document_names_the_issuer_and_the_scopes(setup: Setup) -> None:
    base = setup.url.removesuffix("/mcp")
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        answer = httpx.get(base + path)
        assert answer.status_code == 200, path
        assert answer.json() == {
            "resource": setup.url,
            "authorization_servers": [setup.idp.issuer],
            "scopes_supported": ["svc:read", "svc:intel"],
            "bearer_methods_supported": ["header"],
            "resource_name": "svc-mcp",
        }
    preflight = httpx.options(
        base + "/.well-known/oauth-protected-resource/mcp",
        headers={"Origin": "https://inspector.example", "Access-Control-Request-Method": "GET"},
    )
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    # No authorization server here: its metadata is the issuer's.
    assert httpx.get(base + "/.well-known/oauth-authorization-server").status_code == 404


def test_no_token_is_challenged_with_the_metadata_and_the_scope(setup: Setup) -> None:
    answer = setup.post(INITIALIZE, None)
    assert answer.status_code == 401
    metadata = setup.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert answer.headers["WWW-Authenticate"] == (
        f'Bearer resource_metadata="{metadata}", scope="svc:read"'
    )


def test_a_token_of_the_issuer_for_this_gateway_calls_a_tool(setup: Setup) -> None:
    token = setup.idp.token("analyst", resource=setup.url)
    assert setup.post(INITIALIZE, token).status_code == 200
    answer = setup.post(READ_CALL, token)
    assert answer.status_code == 200
    assert answer.json()["result"]["isError"] is False
    log = setup.gateway.log()
    assert 'call="tools/call" tool="portal_catalog" sub="analyst" client_id="analyst"' in log
    assert token not in log
    assert token.split(".")[2] not in log


def refused(setup: Setup, token: str) -> None:
    answer = setup.post(INITIALIZE, token)
    assert answer.status_code == 401, answer.text
    assert answer.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token", ')
    assert token not in setup.gateway.log()


def test_a_token_for_another_resource_is_refused(setup: Setup) -> None:
    refused(setup, setup.idp.token("analyst", resource="https://elsewhere.example/mcp"))


def test_a_token_of_another_issuer_is_refused(setup: Setup) -> None:
    # Same kid, same audience, same claims but `iss`: signed by another server's key.
    refused(setup, setup.other.token("analyst", resource=setup.url))


def test_forged_tokens_are_refused(setup: Setup) -> None:
    real = setup.idp.token("analyst", resource=setup.url)
    header, claims, signature = parts(real)
    # alg none, with and without a signature.
    unsigned = f"{b64(json.dumps({**header, 'alg': 'none'}).encode())}.{real.split('.')[1]}."
    refused(setup, unsigned)
    refused(setup, unsigned + signature)
    # HMAC keyed with the issuer's public key (the algorithm confusion) and with anything.
    public = setup.key.public_key()
    pem = public.public_bytes(
        encoding=__import__("cryptography").hazmat.primitives.serialization.Encoding.PEM,
        format=__import__(
            "cryptography"
        ).hazmat.primitives.serialization.PublicFormat.SubjectPublicKeyInfo,
    )
    hs_header = {"kid": header["kid"], "typ": header["typ"]}
    refused(setup, jwt.encode(claims, "x" * 32, algorithm="HS256", headers=hs_header))
    refused(setup, hmac_signed(claims, hs_header, pem))
    # Re-signed by a stranger's key under the issuer's kid.
    stranger, _ = signing_key(header["kid"])
    refused(setup, jwt.encode(claims, stranger, algorithm="ES256", headers=hs_header))
    # The issuer's own signature over claims changed afterwards.
    tampered = {**claims, "scope": "svc:read svc:intel", "sub": "root"}
    refused(setup, f"{real.split('.')[0]}.{b64(json.dumps(tampered).encode())}.{signature}")
    # Expired (beyond the 30 s leeway), signed by the issuer's own key.
    old = {**claims, "iat": claims["iat"] - 7200, "exp": int(time.time()) - 120}
    refused(setup, jwt.encode(old, setup.key, algorithm="ES256", headers=hs_header))
    # Not yet valid, and a token of another type (an ID token's `typ`).
    future = {**claims, "nbf": int(time.time()) + 600}
    refused(setup, jwt.encode(future, setup.key, algorithm="ES256", headers=hs_header))
    refused(
        setup, jwt.encode(claims, setup.key, algorithm="ES256", headers={**hs_header, "typ": "JWT"})
    )
    # The control: the same claims signed by the issuer's key pass.
    assert (
        setup.post(
            INITIALIZE, jwt.encode(claims, setup.key, algorithm="ES256", headers=hs_header)
        ).status_code
        == 200
    )


def hmac_signed(claims: dict[str, Any], header: dict[str, Any], secret: bytes) -> str:
    """HS256 by hand: PyJWT itself refuses a PEM public key as an HMAC secret."""
    import hashlib
    import hmac

    head = b64(json.dumps({**header, "alg": "HS256"}).encode())
    body = b64(json.dumps(claims).encode())
    mac = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(mac)}"


def test_a_read_only_token_may_not_submit_intel(setup: Setup) -> None:
    token = setup.idp.token("reader", scope="svc:read", resource=setup.url)
    assert setup.post(READ_CALL, token).status_code == 200
    answer = setup.post(INTEL_CALL, token)
    assert answer.status_code == 403
    assert answer.headers["WWW-Authenticate"].startswith(
        'Bearer error="insufficient_scope", scope="svc:intel"'
    )
    assert 'call="tools/call" tool="submit_intel" sub="reader"' in setup.gateway.log()


def test_the_static_token_is_not_accepted(setup: Setup) -> None:
    refused(setup, "gateway-token-for-the-tests-0123456789")


def test_a_key_rotation_needs_no_restart(setup: Setup) -> None:
    before = setup.idp.token("analyst", resource=setup.url)
    assert setup.post(INITIALIZE, before).status_code == 200
    _, old_jwk = None, setup.idp.jwks[0]
    new_key, new_jwk = signing_key("k2")
    setup.idp.restart([new_jwk, old_jwk])
    rotated = setup.idp.token("analyst", resource=setup.url)
    assert parts(rotated)[0]["kid"] == "k2"
    assert setup.post(INITIALIZE, rotated).status_code == 200
    assert setup.post(INITIALIZE, before).status_code == 200
    setup.key = new_key


def test_a_body_past_the_limit_is_refused_before_it_is_kept(setup: Setup) -> None:
    token = setup.idp.token("analyst", resource=setup.url)
    huge = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (5 << 20) + b'"}}'
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    answer = httpx.post(setup.url, content=huge, headers=headers, timeout=60)
    assert answer.status_code == 413
    assert answer.json()["error"] == "bad_request"


def test_scopes_are_separated_by_the_space_only(setup: Setup) -> None:
    """RFC 6749 §3.3: `%x20` separates scope tokens; any other white space is part of one."""
    real = setup.idp.token("analyst", resource=setup.url)
    header, claims, _ = parts(real)
    signed = {"kid": header["kid"], "typ": header["typ"]}
    for separator in ("\u2003", "\x1f", "\u00a0", "\t", "\n"):
        scope = f"svc:read{separator}svc:intel"
        token = jwt.encode({**claims, "scope": scope}, setup.key, algorithm="ES256", headers=signed)
        assert setup.post(INTEL_CALL, token).status_code == 403, repr(separator)
    spaced = {**claims, "scope": "svc:read  svc:intel"}
    token = jwt.encode(spaced, setup.key, algorithm="ES256", headers=signed)
    assert setup.post(INTEL_CALL, token).status_code == 200
