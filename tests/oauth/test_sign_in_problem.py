"""doctor's reading of an authorization server's metadata: what makes a host's sign-in there
fail before any browser opens (the MCP SDKs' own checks) or end in `invalid_scope`."""

from __future__ import annotations

from typing import Any

import pytest

from svc_mcp.hosts.oauth_probe import sign_in_problem

READ = ("svc:read",)


def metadata(**changes: object) -> dict[str, Any]:
    """What the example authorization server (oidc-provider) says of itself, as far as it counts."""
    found: dict[str, Any] = {
        "issuer": "http://127.0.0.1:3000",
        "registration_endpoint": "http://127.0.0.1:3000/reg",
        "response_types_supported": ["code", "id_token", "code id_token", "none"],
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": ["openid", "offline_access", "svc:read", "svc:intel"],
    }
    found.update(changes)
    return {key: value for key, value in found.items() if value is not None}


def test_a_server_fit_for_hosts_has_no_problem() -> None:
    assert sign_in_problem(metadata(), READ, preregistered=False) is None
    # Fields a server may leave out (RFC 8414 makes only some required) are not held against it.
    bare = metadata(code_challenge_methods_supported=None, scopes_supported=None)
    assert sign_in_problem(bare, READ, preregistered=False) is None


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"response_types_supported": ["token"]}, "no response type `code`"),
        ({"code_challenge_methods_supported": ["plain"]}, "no PKCE method S256"),
    ],
)
def test_a_server_without_the_code_flow_with_s256_is_refused_by_hosts(
    changes: dict[str, object], said: str
) -> None:
    problem = sign_in_problem(metadata(**changes), READ, preregistered=True)
    assert problem is not None
    assert said in problem
    assert "Incompatible auth server" in problem


def test_a_scope_the_server_does_not_offer_ends_in_invalid_scope() -> None:
    problem = sign_in_problem(metadata(), ("svc:read", "svc:admin"), preregistered=False)
    assert problem is not None
    assert "offers no svc:admin" in problem
    assert "invalid_scope" in problem


def test_no_registration_needs_a_client_registered_by_hand() -> None:
    unregistered = metadata(registration_endpoint=None)
    problem = sign_in_problem(unregistered, READ, preregistered=False)
    assert problem is not None
    assert "no dynamic client registration" in problem
    assert sign_in_problem(unregistered, READ, preregistered=True) is None
