"""Who sees which surfaces and cards, and each channel endpoint's own fields (spec 1, section 2)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.portal.conftest import PortalData

COMMON = {"id", "name", "version", "governanceState", "visibility"}
CHANNEL_FIELDS = {"mcp": {"endpoint", "transport"}, "web": {"href"}, "cli": {"package"}}


def catalog_file(portal_data: PortalData) -> list[dict[str, Any]]:
    surfaces: list[dict[str, Any]] = json.loads((portal_data.path / "catalog.json").read_text())
    return surfaces


def get_all(client: TestClient, path: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = client.get(path, params={"limit": 1000}, headers=headers)
    assert response.status_code == 200
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def ids(entries: list[dict[str, Any]]) -> set[str]:
    return {e["id"] for e in entries}


@pytest.mark.parametrize("channel", ["mcp", "web", "cli"])
def test_anonymous_sees_only_approved_public_surfaces_of_the_channel(
    client: TestClient, portal_data: PortalData, channel: str
) -> None:
    expected = {
        s["id"]
        for s in catalog_file(portal_data)
        if channel in s["channels"]
        and s["governanceState"] == "approved"
        and s["visibility"] == "public"
    }
    entries = get_all(client, f"/api/{channel}", {})
    assert ids(entries) == expected
    assert expected, "the demo data must have public surfaces on every channel"
    for entry in entries:
        assert set(entry) == COMMON | CHANNEL_FIELDS[channel]


@pytest.mark.parametrize("channel", ["mcp", "web", "cli"])
def test_each_channel_shows_only_its_own_fields_to_every_caller(
    client: TestClient, portal_data: PortalData, channel: str
) -> None:
    other_fields = set().union(*CHANNEL_FIELDS.values()) - CHANNEL_FIELDS[channel]
    for caller in ["anonymous", "reader", "maintainer", "human_auditor"]:
        for entry in get_all(client, f"/api/{channel}", portal_data.headers(caller)):
            assert not other_fields & set(entry)
            assert CHANNEL_FIELDS[channel] <= set(entry)


def test_cli_coordinates_are_jsr_or_npm(client: TestClient, portal_data: PortalData) -> None:
    packages = [
        e["package"] for e in get_all(client, "/api/cli", portal_data.headers("maintainer"))
    ]
    assert packages
    assert all(p.startswith(("jsr:@", "npm:")) for p in packages)


def test_catalog_visibility_by_role(client: TestClient, portal_data: PortalData) -> None:
    surfaces = catalog_file(portal_data)
    approved = {s["id"] for s in surfaces if s["governanceState"] == "approved"}
    public_approved = {
        s["id"]
        for s in surfaces
        if s["governanceState"] == "approved" and s["visibility"] == "public"
    }
    everything = {s["id"] for s in surfaces}
    assert public_approved < approved < everything

    assert ids(get_all(client, "/api/catalog", {})) == public_approved
    assert ids(get_all(client, "/api/catalog", portal_data.headers("reader"))) == approved
    for caller in ["maintainer", "human_auditor"]:
        assert ids(get_all(client, "/api/catalog", portal_data.headers(caller))) == everything


def test_catalog_entries_carry_exactly_the_spec_fields(
    client: TestClient, portal_data: PortalData
) -> None:
    for entry in get_all(client, "/api/catalog", portal_data.headers("maintainer")):
        assert set(entry) == COMMON | {"channels"}
        assert set(entry["channels"]) <= {"mcp", "web", "cli"}


def test_anonymous_page_hides_internal_cards_and_hidden_surfaces(
    client: TestClient, portal_data: PortalData
) -> None:
    anonymous = client.get("/api/page").json()["data"]
    signed_in = client.get("/api/page", headers=portal_data.headers("maintainer")).json()["data"]
    stored = json.loads((portal_data.path / "page.json").read_text())
    internal_cards = {c["id"] for c in stored["cards"] if c["visibility"] == "internal"}
    assert internal_cards
    assert not internal_cards & {c["id"] for c in anonymous["cards"]}
    assert internal_cards <= {c["id"] for c in signed_in["cards"]}

    public_ids = ids(get_all(client, "/api/catalog", {}))
    shown = {
        comp["surfaceId"]
        for card in anonymous["cards"]
        for comp in card["components"]
        if comp["type"] == "surface"
    }
    assert shown
    assert shown <= public_ids
