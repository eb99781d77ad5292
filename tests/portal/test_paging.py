"""Lists page with `limit` and `cursor`; `/api/audit` merges every trail by time."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from tests.portal.conftest import PortalData


def walk(client: TestClient, path: str, headers: dict[str, str], limit: int) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
        body = client.get(path, params=params, headers=headers).json()
        assert body["ok"] is True
        assert len(body["data"]) <= limit
        items += body["data"]
        cursor = body.get("next_cursor")
        if cursor is None:
            return items


def test_pages_join_to_the_whole_list(client: TestClient, portal_data: PortalData) -> None:
    headers = portal_data.headers("human_auditor")
    whole = client.get("/api/gateway-audit", params={"limit": 1000}, headers=headers).json()
    assert "next_cursor" not in whole
    assert len(whole["data"]) > 100
    assert walk(client, "/api/gateway-audit", headers, limit=37) == whole["data"]


def test_default_page_is_100_with_a_cursor(client: TestClient, portal_data: PortalData) -> None:
    body = client.get("/api/audit", headers=portal_data.headers("human_auditor")).json()
    assert len(body["data"]) == 100
    assert isinstance(body["next_cursor"], str)


def test_audit_merges_every_trail_in_time_order(
    client: TestClient, portal_data: PortalData
) -> None:
    headers = portal_data.headers("human_auditor")
    timeline = walk(client, "/api/audit", headers, limit=1000)
    moments = [entry["at"] for entry in timeline]
    assert moments == sorted(moments)
    trails = {entry["trail"] for entry in timeline}
    assert trails == {
        "sessions",
        "credentials",
        "credential-revokes",
        "grants",
        "revokes",
        "gateway-access",
    }
    grants = walk(client, "/api/grants", headers, limit=1000)
    assert [e["record"] for e in timeline if e["trail"] == "grants"] == grants
    lines = sum(
        1
        for path in (portal_data.path / "audit").glob("*.jsonl")
        for line in path.read_text().splitlines()
        if line
    )
    assert len(timeline) == lines
