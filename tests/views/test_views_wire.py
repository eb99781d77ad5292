"""What a client sees with and without MCP Apps declared, over real `svc-mcp` processes: the
same tools and byte-identical results, plus for a declaring client the `_meta.ui` links, the
resources and the extension in the capabilities; `--toolsets` and `--read-only` apply to views."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.extension import ClientExtension
from mcp.client.streamable_http import streamable_http_client

from svc_mcp.demo.stubs import DemoStubs
from tests.mcp.conftest import raw_stdio_answers
from tests.views.conftest import APPS, GATEWAY_TOKEN, VIEW_TOOLS, without_ui

CLIENT_INFO = {"name": "views-test", "version": "1"}
CALLS = [("get_pnl", {"limit": 3}), ("portal_catalog", {"limit": 2}), ("get_system", {})]


def exchange(
    variables: Mapping[str, str], messages: Sequence[tuple[str, dict[str, Any] | None]], *args: str
) -> list[dict[str, Any]]:
    """The answers a real `svc-mcp` (stdio) writes to `messages`, one request at a time, each as
    raw text and parsed."""
    return [
        {"raw": line, **json.loads(line)} for line in raw_stdio_answers(variables, messages, *args)
    ]


def legacy(extensions: dict[str, Any] | None) -> list[tuple[str, dict[str, Any] | None]]:
    capabilities = {} if extensions is None else {"extensions": extensions}
    initialize = {"protocolVersion": "2025-11-25", "capabilities": capabilities}
    return [
        ("initialize", {**initialize, "clientInfo": CLIENT_INFO}),
        ("notifications/initialized", None),
        ("tools/list", None),
        *[("tools/call", {"name": name, "arguments": args}) for name, args in CALLS],
        ("resources/list", None),
        ("resources/read", {"uri": "ui://svc-mcp/get_pnl"}),
    ]


def modern(extensions: dict[str, Any] | None) -> list[tuple[str, dict[str, Any] | None]]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": (
            {} if extensions is None else {"extensions": extensions}
        ),
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }
    return [
        ("server/discover", {"_meta": meta}),
        ("tools/list", {"_meta": meta}),
        *[("tools/call", {"name": n, "arguments": a, "_meta": meta}) for n, a in CALLS],
        ("resources/list", {"_meta": meta}),
        ("resources/read", {"uri": "ui://svc-mcp/get_pnl", "_meta": meta}),
    ]


def tools_of(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = next(a for a in answers if "tools" in a.get("result", {}))[
        "result"
    ]["tools"]
    return listed


@pytest.mark.parametrize("era", [legacy, modern], ids=["2025-11-25", "2026-07-28"])
def test_a_client_without_apps_sees_what_it_saw_and_one_with_apps_sees_the_views(
    era: Any, stubs: DemoStubs
) -> None:
    plain = exchange(stubs.mcp_variables(), era(None))
    apps = exchange(stubs.mcp_variables(), era(APPS))

    # Without the extension: no resources, no extension, no link; the views are not there.
    capabilities = plain[0]["result"]["capabilities"]
    assert capabilities == {"tools": {"listChanged": False}}
    assert all("_meta" not in tool for tool in tools_of(plain))
    assert [a["error"]["code"] for a in plain[-2:]] == [-32601, -32601]

    # The same tools, each view tool linked to its own view.
    linked = {t["name"]: t["_meta"]["ui"]["resourceUri"] for t in tools_of(apps) if "_meta" in t}
    assert linked == {name: f"ui://svc-mcp/{name}" for name in VIEW_TOOLS}
    assert [without_ui(tool) for tool in tools_of(apps)] == tools_of(plain)

    # Results are the same bytes whoever asks (only the request id is in the line).
    results = slice(2, 2 + len(CALLS))
    assert [a["raw"] for a in apps[results]] == [a["raw"] for a in plain[results]]
    assert not any(a["result"].get("isError") for a in apps[results])

    # The capabilities say what a declaring client is then served.
    # (`extensions` is a 2026-07-28 field: the SDK leaves it out of a 2025-11-25 answer.)
    declared = apps[0]["result"]["capabilities"]
    assert declared["resources"] == {"subscribe": False, "listChanged": False}
    if era is modern:
        assert declared["extensions"] == {"io.modelcontextprotocol/ui": {}}
    listed = apps[-2]["result"]
    assert {r["uri"] for r in listed["resources"]} == set(linked.values())
    assert all(r["mimeType"] == "text/html;profile=mcp-app" for r in listed["resources"])
    read = apps[-1]["result"]
    (content,) = read["contents"]
    assert content["mimeType"] == "text/html;profile=mcp-app"
    assert content["_meta"]["ui"]["csp"] == {"connectDomains": [], "resourceDomains": []}
    assert content["text"].startswith("<!doctype html>")
    assert len(content["text"].encode()) < 60_000


def test_the_extension_without_the_app_mime_type_is_not_enough(stubs: DemoStubs) -> None:
    answers = exchange(stubs.mcp_variables(), legacy({"io.modelcontextprotocol/ui": {}}))
    assert answers[0]["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert all("_meta" not in tool for tool in tools_of(answers))


def test_cache_hints_of_the_views(stubs: DemoStubs) -> None:
    answers = exchange(stubs.mcp_variables(), modern(APPS))
    # What depends on the declared extension is private; the documents themselves are not.
    assert answers[0]["result"]["cacheScope"] == "private"
    assert answers[1]["result"]["cacheScope"] == "private"
    for read in answers[-2:]:
        assert read["result"]["cacheScope"] == "public"
        assert read["result"]["ttlMs"] == 600_000


def test_an_unknown_view_is_a_clear_invalid_params(stubs: DemoStubs) -> None:
    messages = legacy(APPS)
    messages[-1] = ("resources/read", {"uri": "ui://svc-mcp/get_orders"})
    error = exchange(stubs.mcp_variables(), messages)[-1]["error"]
    assert error["code"] == -32602
    assert error["message"] == "No view at ui://svc-mcp/get_orders"


@pytest.mark.parametrize(
    ("args", "expected"),
    [(("--toolsets", "service", "--read-only"), VIEW_TOOLS), (("--toolsets", "portal"), set())],
)
def test_toolsets_choose_the_views(
    args: tuple[str, ...], expected: set[str], stubs: DemoStubs
) -> None:
    answers = exchange(stubs.mcp_variables(), legacy(APPS), *args)
    linked = {t["name"] for t in tools_of(answers) if "_meta" in t}
    assert linked == expected
    if expected:
        assert {r["name"] for r in answers[-2]["result"]["resources"]} == expected
    else:
        # No view is served: even a client that renders views is told of no resources.
        assert answers[0]["result"]["capabilities"] == {"tools": {"listChanged": False}}
        assert answers[-2]["error"]["code"] == -32601


class DeclaresApps(ClientExtension):
    """What a client that renders MCP Apps declares, in the official client's own terms."""

    identifier = "io.modelcontextprotocol/ui"

    def settings(self) -> dict[str, Any]:
        return dict(APPS[self.identifier])


@pytest.mark.parametrize(("mode", "linked"), [("2026-07-28", VIEW_TOOLS), ("legacy", frozenset())])
def test_the_official_client_through_the_gateway(
    mode: str, linked: frozenset[str], gateway_url: str
) -> None:
    """The 2026-07-28 era carries the client's capabilities in every request, so the stateless
    gateway links the views for a client that declares them. The initialize era's capabilities
    live in a session the stateless gateway does not keep: such a client gets no links (and keeps
    working as before)."""

    async def read() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {GATEWAY_TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(
                streamable_http_client(gateway_url, http_client=http),
                mode=mode,
                extensions=[DeclaresApps()],
            ) as client,
        ):
            views = {}
            for tool in (await client.list_tools()).tools:
                ui = (tool.meta or {}).get("ui")
                if ui:
                    resource = await client.read_resource(ui["resourceUri"])
                    views[tool.name] = resource.contents[0].meta
            return views

    views = anyio.run(read)
    assert set(views) == linked
    for meta in views.values():
        assert meta is not None
        assert meta["ui"]["csp"] == {"connectDomains": [], "resourceDomains": []}
