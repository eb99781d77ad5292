"""The limits on uvicorn's fast stack (httptools, uvloop), over real sockets: a request head is
bounded (httptools itself keeps any size), oversized headers and bodies get their envelopes, and
the portal's access line carries the route template, never the query string."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from svc_serving.bounded import MAX_HEAD_BYTES
from tests import support_stub_data as stub_data
from tests.e2e import e2e_fixture
from tests.mcp.conftest import process_env
from tests.support import PORT, Server, running_server


@e2e_fixture(scope="module")
def portal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("limits")
    data = root / "data"
    stub_data.portal_folder(data)
    with running_server(
        ["-m", "server_stub", "portal", "--data", str(data), "--port", PORT],
        log_path=root / "portal.log",
        ready_path="/api/page",
    ) as server:
        yield server


@e2e_fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(
        ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
        log_path=tmp_path_factory.mktemp("limits") / "gateway.log",
        ready_path="/mcp",
        env=process_env({}),
    ) as server:
        yield server


@e2e_fixture(scope="module")
def data_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`svc-stub service`, which builds its own uvicorn configuration."""
    root = tmp_path_factory.mktemp("limits")
    db = root / "service.db"
    stub_data.service_db(db)
    with running_server(
        ["-m", "server_stub", "service", "--db", str(db), "--port", PORT],
        log_path=root / "service.log",
        ready_path="/health/live",
    ) as server:
        yield server


def endless_head(server: Server, path: str) -> tuple[int, dict[str, object], bytes]:
    """Sends an unended head just over the bound, then waits: the answer must come anyway.

    The last 100 bytes cross the bound in one small write, so the server has read everything
    when it closes (closing with unread bytes would reset the connection and lose the answer).
    """
    port = int(server.base_url.rsplit(":", 1)[1])
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
    pad = b"X-Pad: " + b"p" * 8000 + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        sent = len(head)
        while sent + len(pad) < MAX_HEAD_BYTES - 100:
            sock.sendall(pad)
            sent += len(pad)
        sock.sendall(b"X-Last: " + b"l" * (MAX_HEAD_BYTES - sent - 20) + b"\r\n")
        sock.sendall(b"X-Over: " + b"o" * 90 + b"\r\n")
        answer = b""
        while chunk := sock.recv(65536):  # until the server closes the connection
            answer += chunk
    status_and_headers, _, body = answer.partition(b"\r\n\r\n")
    return int(status_and_headers.split()[1]), json.loads(body), status_and_headers.lower()


PATHS = {"portal": "/api/page", "data_service": "/api/v1/system", "gateway": "/mcp"}


@pytest.mark.e2e  # its server comes from getfixturevalue, which no mark can see
@pytest.mark.parametrize("which", list(PATHS))
def test_a_head_over_the_bound_is_refused_before_it_ends(
    which: str, request: pytest.FixtureRequest
) -> None:
    server: Server = request.getfixturevalue(which)
    status, body, head = endless_head(server, PATHS[which])
    assert status == 431
    assert b"connection: close" in head
    if which != "gateway":
        assert body["ok"] is False
        assert body["error"] == {
            "code": "headers_too_large",
            "message": "request headers exceed 8192 bytes",
        }
    else:
        assert body["error"] == "headers_too_large"
    assert "Traceback" not in server.log()


def test_the_portal_keeps_its_envelopes_on_the_fast_stack(portal: Server) -> None:
    tall = httpx.get(portal.base_url + "/api/page", headers={"X-Pad": "p" * 9000})
    assert tall.status_code == 431
    assert tall.json()["error"]["code"] == "headers_too_large"
    # The portal takes no bodies: a large one is refused as the method it comes with. (The data
    # service's 413 over its own uvicorn is in tests/service/test_e2e.py.)
    posted = httpx.post(portal.base_url + "/api/page", content=b"x" * 70_000)
    assert posted.status_code == 405
    assert posted.json()["error"]["code"] == "method_not_allowed"


def test_the_gateway_refuses_a_body_over_its_limit(gateway: Server) -> None:
    huge = httpx.post(
        gateway.base_url + "/mcp",
        content=b" " * (4 * 1024 * 1024 + 1),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    assert huge.status_code == 413


def test_the_portal_access_line_has_the_route_never_the_query(portal: Server) -> None:
    secret = "pst_this-looks-like-a-token-0123456789"
    assert httpx.get(portal.base_url + "/api/catalog", params={"cursor": secret}).status_code == 400
    assert httpx.get(portal.base_url + f"/api/{secret}").status_code == 404

    log = portal.settled_log()
    lines = [json.loads(line) for line in log.splitlines() if line.startswith('{"ts":')]
    assert {("/api/catalog", 400), ("-", 404)} <= {
        (line["route"], line["status"]) for line in lines
    }
    assert secret not in log


def test_whitespace_around_a_header_value_is_not_part_of_it(
    portal: Server, gateway: Server
) -> None:
    """RFC 9110 5.5, as h11 did it (httptools keeps the trailing whitespace)."""

    def raw(server: Server, request: bytes) -> bytes:
        port = int(server.base_url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(request)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        return answer

    # A Host with trailing whitespace is still the loopback name the gateway accepts.
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "portal_page",
                "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    ).encode()
    answer = raw(
        gateway,
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1  \r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nAccept: application/json\r\n"
        b"MCP-Protocol-Version: 2026-07-28 \t\r\nMcp-Method: tools/call\r\n"
        b"Mcp-Name:   portal_page   \r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body,
    )
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert b'"resultType":"complete"' in answer
    paged = raw(
        portal,
        b"GET /api/catalog?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close  \r\n\r\n",
    )
    assert paged.startswith(b"HTTP/1.1 200 "), paged[:300]
