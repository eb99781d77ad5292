"""What the MCP server writes stays byte for byte what it wrote before the server moved to the
SDK's low-level `Server`: `tools/list`, results and errors, in both protocol eras over stdio, as
raw lines and as the official client reads them.

The snapshot was recorded from the `MCPServer`-based server. After a deliberate change to what the
server says, record it again with `SVC_MCP_RECORD_SNAPSHOT=1` set for this file's
tests, and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from tests.mcp.conftest import PortalStub, over_stdio, raw_stdio_answers

SNAPSHOT = Path(__file__).parent / "snapshots" / "stdio-wire.json"
RECORD = os.environ.get("SVC_MCP_RECORD_SNAPSHOT") == "1"
REQUEST_ID = re.compile(r"\(request id [0-9a-f]+\)")
CALLER = "reader"
"""A session without the auditor role, so an audit tool answers `forbidden`."""
NOT_A_URL = {"SERVICE_API_BASE": "not-a-url"}
"""A data service address that is refused before anything is sent (`misconfigured`)."""

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("portal_catalog", {"limit": 2}),
    ("portal_page", {}),
    ("portal_catalog", {"limit": 0}),
    ("portal_catalog", {"limit": "two"}),
    ("portal_catalog", {"bogus": 1}),
    ("portal_catalog", {"limit": None}),
    ("portal_audit", {}),
    ("get_system", {}),
    ("no_such_tool", {}),
]
"""Results and the product's errors: invalid arguments, forbidden, no backend configured, and a
tool this server does not have."""

MODERN_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "snapshot-test", "version": "1"},
}
INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "snapshot-test", "version": "1"},
}


def modern(params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {**(params or {}), "_meta": MODERN_ENVELOPE}


def legacy_exchange() -> list[tuple[str, dict[str, Any] | None]]:
    return [
        ("initialize", INITIALIZE),
        ("notifications/initialized", None),
        ("tools/list", None),
        *[("tools/call", {"name": name, "arguments": args}) for name, args in CALLS],
        ("prompts/list", None),
        ("resources/list", None),
        ("ping", None),
    ]


def modern_exchange() -> list[tuple[str, dict[str, Any] | None]]:
    return [
        ("server/discover", modern()),
        ("tools/list", modern()),
        *[("tools/call", modern({"name": name, "arguments": args})) for name, args in CALLS],
        # State this server never minted (it never asks the client for input) is refused.
        ("tools/call", modern({"name": "portal_page", "arguments": {}, "requestState": "forged"})),
        ("resources/templates/list", modern()),
    ]


def raw_lines(portal: PortalStub, exchange: list[tuple[str, dict[str, Any] | None]]) -> list[str]:
    """The lines a real `svc-mcp` writes for `exchange`, one request at a time."""
    lines = raw_stdio_answers(portal.env(CALLER, **NOT_A_URL), exchange)
    return [_stable(line.rstrip("\n"), portal) for line in lines]


def _stable(text: str, portal: PortalStub) -> str:
    """`text` with what differs per run written as a placeholder: the stub's address and each
    failed request's id."""
    return REQUEST_ID.sub("(request id {ID})", text.replace(portal.base_url, "{PORTAL}"))


async def client_view(session: ClientSession) -> dict[str, Any]:
    """What the official client reads: the tool list and each call's result."""
    await session.initialize()
    tools = await session.list_tools()
    results = [await session.call_tool(name, args) for name, args in CALLS]
    return {
        "tools": tools.model_dump(mode="json", by_alias=True, exclude_none=True),
        "calls": [
            result.model_dump(mode="json", by_alias=True, exclude_none=True) for result in results
        ],
    }


@pytest.fixture(scope="module")
def observed(portal: PortalStub) -> dict[str, Any]:
    view = anyio.run(over_stdio, portal.env(CALLER, **NOT_A_URL), client_view)
    seen = {
        "legacy": raw_lines(portal, legacy_exchange()),
        "modern": raw_lines(portal, modern_exchange()),
        "client": json.loads(_stable(json.dumps(view), portal)),
    }
    if RECORD:
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(seen, indent=1, ensure_ascii=False) + "\n")
    return seen


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    snapshot: dict[str, Any] = json.loads(SNAPSHOT.read_text())
    return snapshot


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_raw_stdio_lines_are_unchanged(
    era: str, observed: dict[str, Any], recorded: dict[str, Any]
) -> None:
    for seen, before in zip(observed[era], recorded[era], strict=True):
        assert seen == before


def test_what_the_official_client_reads_is_unchanged(
    observed: dict[str, Any], recorded: dict[str, Any]
) -> None:
    assert observed["client"] == recorded["client"]


def test_the_snapshot_covers_results_and_errors(recorded: dict[str, Any]) -> None:
    calls = recorded["client"]["calls"]
    assert not calls[0].get("isError")
    kinds = {call.get("structuredContent", {}).get("kind") for call in calls}
    assert {"invalid_argument", "forbidden", "misconfigured"} <= kinds
    assert calls[-1]["structuredContent"]["kind"] == "not_found"
    assert "no_such_tool" not in calls[-1]["content"][0]["text"]
