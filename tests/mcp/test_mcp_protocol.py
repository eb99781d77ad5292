"""Both protocol eras on the wire, over stdio and over the `--http` gateway: `server/discover`,
cache hints, capabilities that claim only tools, -32601 for every method the server does not
serve, requests without `initialize`, the 2026-07-28 header rules, and Host/Origin refusals.

Raw JSON-RPC on purpose: the official client would never send most of these messages.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from mcp.shared.inbound import NAME_BEARING_METHODS

from svc_mcp.serve.server import TOOL_LIST_TTL_MS
from svc_mcp.tools.table import TOOLS
from tests.mcp.conftest import SVC_MCP, PortalStub, process_env
from tests.support import PORT, running_server

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "protocol-test", "version": "1"},
}
INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "protocol-test", "version": "1"},
}
ONLY_TOOLS = {"tools": {"listChanged": False}}
ALICE = {"id": "alice", "kind": "human", "role": "auditor"}
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

# Every method the SDK knows but this server does not serve, with valid parameters.
UNSERVED: dict[str, dict[str, Any]] = {
    "prompts/list": {},
    "prompts/get": {"name": "anything"},
    "resources/list": {},
    "resources/templates/list": {},
    "resources/read": {"uri": "file:///etc/hostname"},
    "resources/subscribe": {"uri": "file:///etc/hostname"},
    "subscriptions/listen": {"notifications": {"toolsListChanged": True}},
    "completion/complete": {
        "ref": {"type": "ref/prompt", "name": "anything"},
        "argument": {"name": "a", "value": "b"},
    },
    "logging/setLevel": {"level": "info"},
    "no/such-method": {},
}


def modern(params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`params` with the 2026-07-28 per-request envelope in `_meta`."""
    return {**(params or {}), "_meta": ENVELOPE}


class Stdio:
    """A real `svc-mcp` over stdio, spoken to one JSON-RPC line at a time."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.ids = itertools.count(1)

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self.ids), "method": method}
        if params is not None:
            message["params"] = params
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        assert answer["id"] == message["id"]
        return answer


@pytest.fixture
def stdio(portal: PortalStub) -> Iterator[Stdio]:
    with subprocess.Popen(
        [SVC_MCP],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=process_env(portal.env("auditor")),
    ) as process:
        yield Stdio(process)
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def url(portal: PortalStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(
        ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
        log_path=tmp_path_factory.mktemp("protocol") / "gateway.log",
        ready_path="/mcp",
        env=process_env(portal.env("auditor")),
    ) as server:
        yield server.base_url + "/mcp"


def post_modern(
    url: str, method: str, params: Mapping[str, Any] | None = None, **headers: str
) -> httpx.Response:
    """A 2026-07-28 request with the headers that era requires, overridden by `headers`."""
    routing = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    named = NAME_BEARING_METHODS.get(method)
    if params is not None and named in params:
        routing["Mcp-Name"] = str(params[named])
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": modern(params)}
    return httpx.post(url, json=body, headers={**ACCEPT, **routing, **headers})


def post_legacy(
    url: str, method: str, params: Mapping[str, Any] | None = None, **headers: str
) -> httpx.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    return httpx.post(url, json=body, headers={**ACCEPT, **headers})


def check_discover(result: Mapping[str, Any]) -> None:
    assert MODERN in result["supportedVersions"]
    assert result["capabilities"] == ONLY_TOOLS
    assert (result["ttlMs"], result["cacheScope"]) == (TOOL_LIST_TTL_MS, "public")
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "svc-mcp"
    assert "get_system" in result["instructions"]


def check_tool_list(result: Mapping[str, Any], *, hinted: bool) -> None:
    assert [tool["name"] for tool in result["tools"]] == [spec.name for spec in TOOLS]
    if hinted:
        assert (result["ttlMs"], result["cacheScope"]) == (TOOL_LIST_TTL_MS, "public")
    else:  # the initialize era has no cache hints
        assert "ttlMs" not in result
        assert "cacheScope" not in result


# --- stdio -----------------------------------------------------------------------------------


def test_2026_over_stdio_needs_no_initialize(stdio: Stdio) -> None:
    check_discover(stdio.request("server/discover", modern())["result"])
    check_tool_list(stdio.request("tools/list", modern())["result"], hinted=True)
    call = stdio.request("tools/call", modern({"name": "portal_whoami", "arguments": {}}))
    assert call["result"]["structuredContent"] == ALICE
    for method, params in UNSERVED.items():
        error = stdio.request(method, modern(params))["error"]
        assert error["code"] == -32601, (method, error)
    # Once a connection speaks 2026-07-28, a request without the envelope is refused.
    assert stdio.request("tools/list")["error"]["code"] == -32602


def test_initialize_era_over_stdio(stdio: Stdio) -> None:
    # Before initialize, a served method is refused.
    assert stdio.request("tools/list")["error"]["code"] == -32602
    initialized = stdio.request("initialize", INITIALIZE)["result"]
    assert initialized["capabilities"] == ONLY_TOOLS
    assert initialized["protocolVersion"] == "2025-11-25"
    check_tool_list(stdio.request("tools/list")["result"], hinted=False)
    for method, params in UNSERVED.items():
        error = stdio.request(method, params)["error"]
        assert error["code"] == -32601, (method, error)


# --- HTTP ------------------------------------------------------------------------------------


def test_2026_over_http_needs_no_initialize(url: str) -> None:
    discover = post_modern(url, "server/discover")
    assert discover.status_code == 200
    assert discover.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in discover.headers
    check_discover(discover.json()["result"])
    check_tool_list(post_modern(url, "tools/list").json()["result"], hinted=True)
    call = post_modern(url, "tools/call", {"name": "portal_whoami", "arguments": {}})
    assert call.json()["result"]["structuredContent"] == ALICE


@pytest.mark.parametrize("method", UNSERVED)
def test_unserved_methods_are_method_not_found_over_http(url: str, method: str) -> None:
    answer = post_modern(url, method, UNSERVED[method])
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, -32601)
    legacy = post_legacy(url, method, UNSERVED[method], **{"MCP-Protocol-Version": "2025-11-25"})
    assert legacy.json()["error"]["code"] == -32601


def test_initialize_era_over_http_is_stateless(url: str) -> None:
    initialized = post_legacy(url, "initialize", INITIALIZE)
    assert initialized.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in initialized.headers
    assert initialized.json()["result"]["capabilities"] == ONLY_TOOLS
    # No session: a request needs no earlier initialize, on this instance or any other.
    listed = post_legacy(url, "tools/list", **{"MCP-Protocol-Version": "2025-11-25"})
    check_tool_list(listed.json()["result"], hinted=False)
    # Without the version header a request is an initialize-era one (the spec's default).
    check_tool_list(post_legacy(url, "tools/list", modern()).json()["result"], hinted=False)


def test_no_stream_is_offered_on_get(url: str) -> None:
    for headers in ({}, {"MCP-Protocol-Version": MODERN}, {"Accept": "text/event-stream"}):
        answer = httpx.get(url, headers=headers)
        assert (answer.status_code, answer.headers["allow"]) == (405, "POST")


def test_a_notification_is_acknowledged(url: str) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    for version in (MODERN, "2025-11-25"):
        answer = httpx.post(url, json=body, headers={**ACCEPT, "MCP-Protocol-Version": version})
        assert answer.status_code == 202


@pytest.mark.parametrize(
    ("headers", "code"),
    [({"Mcp-Method": "tools/call"}, -32020), ({"Mcp-Method": ""}, -32020)],
    ids=["method header differs", "method header empty"],
)
def test_2026_method_header_must_match(url: str, headers: dict[str, str], code: int) -> None:
    answer = post_modern(url, "tools/list", **headers)
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, code)


def test_2026_version_header_must_match_the_envelope(url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": ENVELOPE}}
    future = {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}

    def send(version: str, params: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        answer = httpx.post(
            url,
            json={**body, "params": params},
            headers={**ACCEPT, "MCP-Protocol-Version": version, "Mcp-Method": "tools/list"},
        )
        return answer.status_code, answer.json()["error"]

    status, error = send("2099-01-01", {"_meta": future})  # both say a version we lack
    assert (status, error["code"]) == (400, -32022)
    assert error["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
    assert send(MODERN, {"_meta": future})[1]["code"] == -32020  # header and body disagree
    assert send("2099-01-01", {"_meta": ENVELOPE})[1]["code"] == -32020
    assert send(MODERN, {})[1]["code"] == -32602  # the header alone is not an envelope
    named = post_modern(url, "tools/call", {"name": "portal_whoami"}, **{"Mcp-Name": "portal_page"})
    assert (named.status_code, named.json()["error"]["code"]) == (400, -32020)
    twice = httpx.post(
        url,
        json=body,
        headers=[
            *ACCEPT.items(),
            ("MCP-Protocol-Version", MODERN),
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/list"),
        ],
    )
    assert (twice.status_code, twice.json()["error"]["code"]) == (400, -32020)


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_foreign_host_and_origin_are_refused_in_both_eras(url: str, era: str) -> None:
    def send(**headers: str) -> int:
        if era == MODERN:
            return post_modern(url, "tools/list", **headers).status_code
        return post_legacy(
            url, "tools/list", **{"MCP-Protocol-Version": era, **headers}
        ).status_code

    port = httpx.URL(url).port
    assert send(Host="evil.example") == 421
    assert send(Host=f"evil.example:{port}") == 421
    assert send(Origin="http://evil.example") == 403
    assert send(Origin=f"http://127.0.0.1.evil.example:{port}") == 403
    assert send(Host=f"localhost:{port}", Origin=f"http://localhost:{port}") == 200
