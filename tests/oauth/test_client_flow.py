"""The official MCP Python client's own OAuth flow against the gateway and a real authorization
server: 401 -> protected resource metadata -> the issuer's discovery -> dynamic registration ->
authorization code with PKCE and `resource` (oidc-provider's development login and consent forms,
filled in by plain HTTP requests) -> token -> initialize -> a tool call. Then a write the token's
scope does not cover is refused with 403 `insufficient_scope`, and the subject is in the log."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tests.mcp.conftest import PortalStub
from tests.oauth.conftest import AuthServer, auth_server, start_gateway
from tests.support import Server, reserved_port

USER = "alice@example.test"
FORM_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')
FORM_PROMPT = re.compile(r'name="prompt" value="([a-z]+)"')


class MemoryStorage:
    """The client's token storage, in memory (the SDK's `TokenStorage` protocol)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


CALLBACK = "http://127.0.0.1:1/callback"
"""The hosts' redirect URI: Browser takes the code from the redirect, nothing connects there."""


class Browser:
    """What a person's browser does with the authorization URL: signs in on the development
    login form, consents, and is sent to the redirect URI with the code (captured here)."""

    def __init__(self, redirect_uri: str, user: str = USER) -> None:
        self.redirect_uri = redirect_uri
        self.user = user
        self.authorization_urls: list[str] = []
        self.landed: str | None = None

    async def open(self, url: str) -> None:
        self.authorization_urls.append(url)
        async with httpx.AsyncClient(timeout=30) as browser:
            answer = await browser.get(url)
            for _ in range(20):
                location = answer.headers.get("location")
                if location is not None:
                    target = urljoin(str(answer.url), location)
                    if target.startswith(self.redirect_uri):
                        self.landed = target
                        return
                    answer = await browser.get(target)
                    continue
                action, prompt = FORM_ACTION.search(answer.text), FORM_PROMPT.search(answer.text)
                assert action is not None, answer.text[:2000]
                assert prompt is not None, answer.text[:2000]
                form = {"prompt": prompt.group(1)}
                if form["prompt"] == "login":
                    form |= {"login": self.user, "password": "any"}
                answer = await browser.post(urljoin(str(answer.url), action.group(1)), data=form)
        raise AssertionError("the authorization server never sent the browser back")

    async def callback(self) -> AuthorizationCodeResult:
        assert self.landed is not None
        query = parse_qs(urlsplit(self.landed).query)
        return AuthorizationCodeResult(
            code=query["code"][0] if "code" in query else _refused(self.landed),
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )


@pytest.fixture(scope="module")
def stack(
    portal: PortalStub, idp_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, AuthServer, str]]:
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with auth_server(idp_root, [url], [], "k1") as (idp, _):
            log = tmp_path_factory.mktemp("oauth-flow") / "gateway.log"
            with start_gateway(portal, log, idp.issuer, port) as gateway:
                yield gateway, idp, url


def test_the_sdk_client_runs_the_whole_flow(stack: tuple[Server, AuthServer, str]) -> None:
    gateway, idp, url = stack
    redirect_uri = CALLBACK
    browser = Browser(redirect_uri)
    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="svc-mcp oauth test",
            redirect_uris=[AnyUrl(redirect_uri)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )

    async def session() -> tuple[list[str], bool, str]:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            tools = [tool.name for tool in (await mcp.list_tools()).tools]
            result = await mcp.call_tool("portal_catalog", {})
            return tools, result.is_error, storage.tokens.access_token if storage.tokens else ""

    tools, failed, token = anyio.run(session)
    assert "portal_catalog" in tools
    assert failed is False
    # Registered dynamically; asked for this gateway (RFC 8707) with PKCE, for the scope the
    # challenge named.
    assert storage.client is not None
    assert storage.client.client_id
    (authorization,) = browser.authorization_urls
    asked = parse_qs(urlsplit(authorization).query)
    assert authorization.startswith(idp.issuer + "/")
    assert asked["resource"] == [url]
    assert asked["code_challenge_method"] == ["S256"]
    # The scope of the challenge (the SDK adds offline_access, which this server offers).
    assert set(asked["scope"][0].split()) == {"svc:read", "offline_access"}
    log = gateway.log()
    # The subject is this user's e-mail address: the line shows a keyed hash of it, neither the
    # address nor its domain.
    client = storage.client.client_id
    shown = re.search(r'tool="portal_catalog" sub="(email:[0-9a-f]{12})" client_id="([^"]+)"', log)
    assert shown is not None, log
    assert shown.group(2) == client
    assert USER not in log
    assert "example.test" not in log
    assert token
    assert token not in log
    # That token may read, not write: 403 naming the scope to step up to.
    answer = httpx.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "submit_intel", "arguments": {"envelope": {}}},
        },
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert answer.status_code == 403
    assert 'error="insufficient_scope", scope="svc:intel"' in answer.headers["WWW-Authenticate"]


def test_a_stranger_cannot_register_a_client_of_the_client_credentials_grant(
    stack: tuple[Server, AuthServer, str],
) -> None:
    """Open dynamic registration is for people's hosts: a client-credentials client registered by
    anyone would get tokens (svc:intel included) with no person signing in."""
    _, idp, _ = stack
    registration = f"{idp.issuer}/reg"
    callback = ["http://127.0.0.1:9/callback"]
    grants = (
        ["authorization_code", "client_credentials"],
        ["authorization_code", "refresh_token", "client_credentials"],
    )
    for asked in grants:
        attempt = {"grant_types": asked, "redirect_uris": callback, "response_types": ["code"]}
        answer = httpx.post(registration, json=attempt)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid_client_metadata"
        refusal = answer.json()["error_description"]
        assert "authorization_code and refresh_token grants only" in refusal
    host = httpx.post(
        registration,
        json={
            "grant_types": ["authorization_code", "refresh_token"],
            "redirect_uris": callback,
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
    )
    assert host.status_code == 201, host.text


def _refused(landed: str) -> str:
    raise AssertionError(f"the authorization server sent the browser back without a code: {landed}")
