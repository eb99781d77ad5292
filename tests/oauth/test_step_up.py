"""Per-person policy and a step-up that works, with the official MCP client's own OAuth flow
(dynamic registration, authorization code + PKCE, `resource`) against the authorization server
configured as docs/team-gateway.md shows (`grants`: bob may hold `svc:intel`, everyone `svc:read`).

bob signs in with `svc:read`, calls `submit_intel`, the gateway's 403 `insufficient_scope` sends
his client to step up, the server grants `svc:intel` to his registered client and the intel is
stored. alice's step-up is answered with a token without it: her write is refused, naming the
scope and whom to ask, and her session goes on. alice signing in through bob's client still
cannot write: the policy is per person, not per client."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import httpx2
import jwt
import pytest
from mcp import ClientSession, MCPError
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyUrl

from tests.mcp.conftest import SERVICE_TOKEN, PortalStub, ServiceStub, service_stub
from tests.mcp.test_service_tools import signed_envelope
from tests.oauth.conftest import AuthServer, auth_server, start_gateway
from tests.oauth.test_client_flow import CALLBACK, Browser, MemoryStorage
from tests.support import Server, closed_url, reserved_port

BOB, ALICE = "bob@team.example", "alice@team.example"
GRANTS = {"*": ["svc:read"], BOB: ["svc:read", "svc:intel"]}
"""docs/team-gateway.md's policy: everyone reads, bob may also forward intel."""


@dataclass(frozen=True)
class Stack:
    gateway: Server
    idp: AuthServer
    service: ServiceStub
    url: str


@pytest.fixture(scope="module")
def stack(
    portal: PortalStub, idp_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("oauth-step-up")
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with (
            service_stub(root) as service,
            auth_server(idp_root, [url], [], "k1", grants=GRANTS) as (idp, _),
            start_gateway(
                portal, root / "gateway.log", idp.issuer, port, **service.env()
            ) as gateway,
        ):
            yield Stack(gateway, idp, service, url)


def host(url: str, person: str, storage: MemoryStorage) -> OAuthClientProvider:
    """A host as the official client is one: registers itself dynamically (unless `storage`
    already holds a registration) and sends `person`'s browser to sign in."""
    redirect_uri = CALLBACK
    browser = Browser(redirect_uri, user=person)
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name=f"svc-mcp step-up test ({person})",
            redirect_uris=[AnyUrl(redirect_uri)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )


@dataclass
class Attempt:
    written: bool
    refusal: str
    read_after: bool
    scopes: set[str]


def attempt_write(
    url: str, person: str, storage: MemoryStorage, envelope: dict[str, object]
) -> Attempt:
    """`person` signs in (least scope first: the challenge's `svc:read`), reads, then calls
    `submit_intel`, then reads again in the same session."""
    provider = host(url, person, storage)

    async def session() -> Attempt:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            first = await mcp.call_tool("portal_catalog", {})
            assert first.is_error is False
            written, refusal = False, ""
            try:
                result = await mcp.call_tool("submit_intel", {"envelope": envelope})
                written = result.is_error is False
                refusal = "" if written else str(result.content)
            except MCPError as error:
                refusal = str(error)
            after = await mcp.call_tool("portal_catalog", {})
            assert storage.tokens is not None
            scopes = set((storage.tokens.scope or "").split())
            return Attempt(written, refusal, after.is_error is False, scopes)

    return anyio.run(session)


def intel_records(service: ServiceStub) -> dict[str, dict[str, object]]:
    answer = httpx.get(service.base_url + "/api/v1/intel", headers=service.headers())
    answer.raise_for_status()
    return {record["id"]: record for record in answer.json()["data"]}


def stored_intel(service: ServiceStub) -> set[str]:
    return set(intel_records(service))


def test_bob_steps_up_and_his_intel_is_stored(stack: Stack) -> None:
    storage = MemoryStorage()
    envelope = signed_envelope(id="bob-step-up-1")
    bob = attempt_write(stack.url, BOB, storage, envelope)
    assert bob.written, bob.refusal
    # The intel names who forwarded it, as the access line does: never the e-mail address.
    record = intel_records(stack.service)["bob-step-up-1"]
    shown = record["forwarded_by"]
    assert re.fullmatch(r"email:[0-9a-f]{12}", shown), shown
    assert "team.example" not in shown
    assert "svc:intel" in bob.scopes
    # One registration, for the least scope first; the step-up asked the same client for more.
    assert storage.client is not None
    assert storage.client.grant_types == ["authorization_code", "refresh_token"]
    access = [line for line in stack.gateway.log().splitlines() if 'tool="submit_intel"' in line]
    assert any(f'sub="{shown}"' in line and storage.client.client_id in line for line in access)


def test_alice_is_refused_with_the_scope_named_and_her_session_goes_on(stack: Stack) -> None:
    alice = attempt_write(stack.url, ALICE, MemoryStorage(), signed_envelope(id="alice-1"))
    assert not alice.written
    assert "svc:intel" not in alice.scopes
    assert alice.read_after, "the refused step-up ended her session"
    assert "alice-1" not in stored_intel(stack.service)
    # What the gateway answers her token: one clear message naming the scope and whom to ask.
    answer = refused_write(stack, alice_token(stack))
    assert answer.status_code == 403
    message = answer.json()["error"]["message"]  # a JSON-RPC error: the host shows it
    assert "svc:intel" in message
    assert stack.idp.issuer in message
    assert "administrator" in message


def test_alice_through_bobs_client_still_cannot_write(stack: Stack) -> None:
    bobs = MemoryStorage()
    bob = attempt_write(stack.url, BOB, bobs, signed_envelope(id="bob-step-up-2"))
    assert bob.written, bob.refusal
    borrowed = MemoryStorage()
    borrowed.client = bobs.client  # bob's registration, alice at the keyboard
    alice = attempt_write(stack.url, ALICE, borrowed, signed_envelope(id="alice-2"))
    assert not alice.written
    assert "svc:intel" not in alice.scopes
    assert "alice-2" not in stored_intel(stack.service)


def test_a_registered_client_gets_no_client_credentials_grant(stack: Stack) -> None:
    answer = httpx.post(
        stack.idp.issuer + "/reg",
        json={
            "client_name": "a script that would be everyone",
            "grant_types": ["client_credentials"],
            "response_types": [],
            "redirect_uris": [],
        },
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_client_metadata"


def alice_token(stack: Stack) -> str:
    """An access token alice got by the whole flow, asking for everything."""
    storage = MemoryStorage()
    attempt_write(stack.url, ALICE, storage, signed_envelope(id="alice-3"))
    assert storage.tokens is not None
    token = storage.tokens.access_token
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["email"] == ALICE
    return token


def refused_write(stack: Stack, token: str) -> httpx.Response:
    return httpx.post(
        stack.url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "submit_intel", "arguments": {"envelope": {}}},
        },
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )


def test_registrations_are_kept_across_a_restart_with_a_store(
    idp_root: Path, tmp_path: Path
) -> None:
    with closed_url("/mcp") as url, auth_server(idp_root, [url], [], "k1") as (idp, _):
        idp.store = str(tmp_path / "clients.json")
        idp.restart(idp.jwks)
        registered = httpx.post(
            idp.issuer + "/reg",
            json={"redirect_uris": ["http://127.0.0.1:1/callback"], "client_name": "a host"},
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]

        def known() -> bool:
            asked = httpx.get(
                idp.issuer + "/auth",
                params={
                    "client_id": client_id,
                    "response_type": "code",
                    "redirect_uri": "http://127.0.0.1:1/callback",
                    "scope": "svc:read",
                    "resource": url,
                    "code_challenge": "x" * 43,
                    "code_challenge_method": "S256",
                },
            )
            return "invalid_client" not in asked.text and asked.status_code in (302, 303)

        assert known()
        idp.restart(idp.jwks)  # a key rotation, say
        assert known(), "the registration did not survive the restart"
        idp.store = None
        idp.restart(idp.jwks)
        assert not known()  # in memory only: what the store is for


def test_only_the_token_holder_may_say_whom_intel_is_forwarded_for(stack: Stack) -> None:
    service = stack.service
    by_token = httpx.post(
        service.base_url + "/api/v1/intel",
        json=signed_envelope(id="forwarded-by-token"),
        headers={**service.headers(), "X-Svc-Forwarded-By": "u-4f1c9a"},
    )
    assert by_token.status_code == 201, by_token.text
    with httpx.Client(base_url=service.base_url) as browser:
        origin = {"Origin": service.base_url}
        login = browser.post("/api/v1/auth/login", json={"token": SERVICE_TOKEN}, headers=origin)
        assert login.status_code == 200, login.text
        by_session = browser.post(
            "/api/v1/intel",
            json=signed_envelope(id="forwarded-by-session"),
            headers={**origin, "X-Svc-Forwarded-By": "someone-else"},
        )
        assert by_session.status_code == 201, by_session.text
    records = intel_records(service)
    assert records["forwarded-by-token"]["forwarded_by"] == "u-4f1c9a"
    assert records["forwarded-by-session"]["forwarded_by"] is None
