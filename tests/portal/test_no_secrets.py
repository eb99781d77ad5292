"""No token, token hash, credential hash or e-mail in any response, for any endpoint and caller."""

from __future__ import annotations

import json
import re

from starlette.testclient import TestClient

from tests.portal.conftest import CALLERS, ENDPOINTS, PortalData

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\.[A-Za-z]{2,}")


def stored_secrets(portal_data: PortalData) -> set[str]:
    text = "".join(p.read_text() for p in sorted(portal_data.path.rglob("*.json*")))
    hashes = set(re.findall(r'"(?:tokenHash|secretHash)":"([0-9a-f]{64})"', text))
    principals = json.loads((portal_data.path / "principals.json").read_text())
    emails = {p["email"] for p in principals if p.get("email")}
    assert hashes
    assert emails
    return hashes | emails | set(portal_data.tokens.values())


def test_no_response_carries_a_secret(client: TestClient, portal_data: PortalData) -> None:
    secrets = stored_secrets(portal_data)
    checked = 0
    for path in ENDPOINTS:
        for caller in CALLERS:
            cursor: str | None = None
            while True:
                params = {"limit": 1000} | ({"cursor": cursor} if cursor else {})
                response = client.get(path, params=params, headers=portal_data.headers(caller))
                body = response.text
                assert not any(secret in body for secret in secrets), (path, caller)
                assert not EMAIL.search(body), (path, caller)
                assert "Hash" not in body
                checked += 1
                cursor = response.json().get("next_cursor")
                if cursor is None:
                    break
    assert checked >= len(ENDPOINTS) * len(CALLERS)


def test_error_messages_never_echo_the_credential(client: TestClient) -> None:
    bogus = "pst_this-is-a-guessed-token-0123456789"
    response = client.get("/api/whoami", headers={"Authorization": f"Bearer {bogus}"})
    assert response.status_code == 401
    assert bogus not in response.text
