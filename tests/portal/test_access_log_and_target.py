"""What the portal logs, how long a request target may be, and no redirect built from `Host`."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from tests.portal.conftest import PortalData
from tests.portal.test_bad_input import assert_envelope
from tests.support import PORT, running_server

PASTED = "tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def test_a_trailing_slash_is_a_404_envelope_not_a_redirect_to_the_host(
    client: TestClient,
) -> None:
    for path in ("/api/catalog/", "/api/whoami/", "/api/page/?limit=1"):
        response = client.get(path, headers={"Host": "localhost:8081"}, follow_redirects=False)
        assert response.status_code == 404, path
        assert "location" not in response.headers
        assert_envelope(response.json(), "not_found")


def test_a_request_target_over_8_kib_is_414(client: TestClient) -> None:
    assert client.get("/api/catalog?limit=1&x=" + "a" * 8000).status_code == 200
    for target in ("/api/catalog?limit=1&x=" + "a" * 8200, "/api/" + "a" * 8200):
        response = client.get(target)
        assert response.status_code == 414
        assert_envelope(response.json(), "uri_too_long")


@pytest.mark.e2e
def test_the_access_log_holds_no_query_string_or_unknown_path(
    portal_data: PortalData, tmp_path: Path
) -> None:
    with running_server(
        ["-m", "server_stub", "portal", "--data", str(portal_data.path), "--port", PORT],
        log_path=tmp_path / "portal.log",
        ready_path="/api/page",
    ) as server:
        with httpx.Client(base_url=server.base_url, timeout=10) as http:
            assert http.get(f"/api/page?token={PASTED}").status_code == 200
            assert http.get(f"/api/{PASTED}?token={PASTED}").status_code == 404
            assert http.get("/api/catalog?limit=2").status_code == 200
            huge = http.get(f"/api/catalog?token={PASTED}&x=" + "a" * 60_000)
            assert huge.status_code == 414
            assert_envelope(huge.json(), "uri_too_long")
        server.process.terminate()
        server.process.wait(timeout=10)
        log = server.log()
    assert PASTED not in log
    assert "?" not in log
    lines = [json.loads(line) for line in log.splitlines() if line.startswith('{"ts":')]
    assert [(line["route"], line["status"]) for line in lines][-4:] == [
        ("/api/page", 200),
        ("-", 404),
        ("/api/catalog", 200),
        ("-", 414),
    ]
