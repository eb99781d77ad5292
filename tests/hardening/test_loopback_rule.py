"""One loopback rule (svc_serving.loopback) decides for the gateway's bind checks, the client's
cleartext check and the stubs: literal loopback addresses and `localhost` in any case, nothing
else (a subdomain of localhost goes to DNS here)."""

from __future__ import annotations

import pytest

from svc_mcp.core.settings import cleartext_host
from svc_mcp.serve.gateway.app import GatewayOptions, GatewayRefused, required_token
from svc_serving.loopback import is_loopback

LOOPBACK = [
    "localhost",
    "LOCALHOST",
    "LocalHost.",
    "127.0.0.1",
    "127.8.9.10",
    "::1",
    "[::1]",
    "::ffff:127.0.0.1",
    "[::ffff:127.1.2.3]",
]
NOT_LOOPBACK = [
    "app.localhost",
    "evil.localhost.",
    "localhost.example.com",
    "0.0.0.0",
    "::",
    "10.0.0.1",
    "::ffff:10.0.0.1",
    "128.0.0.1",
    "example.com",
    "",
    "localhost..",
    "[]",
]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_names_and_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", NOT_LOOPBACK)
def test_everything_else_is_not_loopback(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize("host", [name for name in LOOPBACK + NOT_LOOPBACK if name.strip("[]")])
def test_the_gateway_and_the_client_agree(host: str) -> None:
    """`--no-auth` is allowed exactly where the client sends a token over plain http."""
    bare = host.strip("[]")
    url = f"http://[{bare}]:8080/" if ":" in bare else f"http://{bare}:8080/"
    sends_in_clear = cleartext_host(url, environ={}) is None
    try:
        required_token(GatewayOptions(host=host, no_auth=True), None)
        serves_open = True
    except GatewayRefused:
        serves_open = False
    assert serves_open == sends_in_clear == is_loopback(host)
