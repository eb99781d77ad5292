"""The client against a hostile backend: a real HTTP server in this process, on loopback, whose
answers carry terminal escapes, bidi controls, a gzip bomb, or a dropped connection; and the
refusal to send a token over plain http to a host that is not loopback."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.client
import json
import threading
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import respx
from mcp.types import TextContent

from portal_tools.tools import PORTAL_TOOLS
from svc_mcp.core.calls import call_tool, call_tool_once, retry_delay
from svc_mcp.core.client import new_http_client
from svc_mcp.core.errors import Misconfigured, ServerError, Unreachable
from svc_mcp.core.safe_text import safe_json, visible
from svc_mcp.core.settings import INSECURE_HOSTS_VARIABLE
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.tools.service import INTEL_MAX_BYTES, SERVICE_TOOLS
from tests.mcp.conftest import SVC_MCP, in_memory, run_command

TOKEN = "hostile-test-token-0123456789abcdef"
HOSTILE_TEXT = "\x1b]0;pwned\x07\x1b[2J\x9b1Aall good\u202eevil\r\nforged: ok"
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\r")
EVENT = {
    "id": 1,
    "ts": "2026-01-02T03:04:05Z",
    "level": "info",
    "kind": "note",
    "source": "daemon",
    "symbol": None,
    "message": "C1 \x9b2J and bidi \u202eevil kept",
}
HOSTILE_CURSOR = "c1\x1b[2Jx\u202e"
NON_FINITE = (
    b'{"ok":true,"data":{"mode":"running","trading_enabled":true,"mode_reason":null,'
    b'"account":"A1","base_currency":"USD","equity":1e999,"cash":-1e999,"gross_exposure":NaN,'
    b'"net_exposure":1.5,"unrealized_pnl":0,"open_positions":1,"open_orders":0,'
    b'"daemon_version":"1","started_at":"2026-01-02T03:04:05Z",'
    b'"last_heartbeat_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}}'
)
"""What Python's own JSON reader takes and no JSON reader must: infinities and NaN."""
BOMB_BYTES = 256 * 1024 * 1024
"""Inflated size of the gzip bomb; about 256 KiB on the wire."""


def tool(name: str) -> ToolSpec:
    return next(spec for spec in (*SERVICE_TOOLS, *PORTAL_TOOLS) if spec.name == name)


class HostileBackend:
    """Answers by the first path segment: `/<mode>/api/...`. Records each request's headers."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.bomb = gzip.compress(bytes(BOMB_BYTES), compresslevel=9)
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                mode = self.path.split("/")[1]
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                backend.requests.append((mode, {k.lower(): v for k, v in self.headers.items()}))
                if mode == "drop":
                    self.close_connection = True
                    return
                status, body, headers = backend.answer(mode)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            do_POST = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, mode: str) -> tuple[int, bytes, dict[str, str]]:
        if mode == "escape":
            error = {"code": "internal", "message": HOSTILE_TEXT}
            return 500, json.dumps({"ok": False, "error": error}).encode(), {}
        if mode == "events":
            envelope = {"ok": True, "data": [EVENT], "next_cursor": HOSTILE_CURSOR}
            return 200, json.dumps(envelope).encode(), {}
        if mode == "bomb":
            return 200, self.bomb, {"Content-Encoding": "gzip"}
        if mode == "nonfinite":
            return 200, NON_FINITE, {}
        data = {"auth_required": True, "authenticated": True}
        return 200, json.dumps({"ok": True, "data": data}).encode(), {}

    def arrivals(self, mode: str) -> int:
        return sum(1 for seen, _ in self.requests if seen == mode)


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileBackend]:
    backend = HostileBackend()
    thread = threading.Thread(target=backend.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield backend
    finally:
        backend.server.shutdown()
        backend.server.server_close()


def service_env(hostile: HostileBackend, mode: str) -> dict[str, str]:
    return {"SERVICE_API_BASE": f"{hostile.base}/{mode}", "SERVICE_API_TOKEN": TOKEN}


@pytest.fixture
def service_at(hostile: HostileBackend, monkeypatch: pytest.MonkeyPatch) -> Any:
    def point(mode: str) -> None:
        for name, value in service_env(hostile, mode).items():
            monkeypatch.setenv(name, value)

    return point


def pooled(spec: ToolSpec, arguments: dict[str, object]) -> Any:
    async def go() -> Any:
        async with new_http_client() as http:
            return await call_tool(spec, arguments, http)

    return asyncio.run(go())


# --- backend text is shown escaped


def test_visible_escapes_controls_and_keeps_the_rest() -> None:
    assert visible("a\x1b[2Jb\x9bc\u202ed\u2066e\tf\ng") == (
        "a\\x1b[2Jb\\x9bc\\u202ed\\u2066e\\x09f\\x0ag"
    )
    assert visible("line\tone\nline two\x07", keep_layout=True) == "line\tone\nline two\\x07"
    assert visible("plain Grüße, 日本") == "plain Grüße, 日本"
    value = {"s": "\x9b\u202e\x1b\x7f ü"}
    assert json.loads(safe_json(value)) == value
    assert not set(safe_json(value)) & {"\x9b", "\u202e", "\x1b", "\x7f"}


@pytest.mark.e2e
def test_backend_error_text_reaches_stderr_escaped(hostile: HostileBackend) -> None:
    done = run_command([SVC_MCP, "get_system"], service_env(hostile, "escape"))
    assert done.returncode == 10, done.stderr
    assert not [c for c in CONTROLS if c in done.stderr], repr(done.stderr)
    assert done.stderr.count("\n") == 1, "one line"
    assert "\\x1b]0;pwned\\x07" in done.stderr
    assert "\\u202eevil" in done.stderr


@pytest.mark.e2e
def test_stdout_json_and_the_cursor_are_escaped_and_the_data_kept(
    hostile: HostileBackend,
) -> None:
    done = run_command([SVC_MCP, "get_events"], service_env(hostile, "events"))
    assert done.returncode == 0, done.stderr
    assert not [c for c in CONTROLS if c in done.stdout + done.stderr]
    assert json.loads(done.stdout) == [EVENT]
    assert "next_cursor: c1\\x1b[2Jx\\u202e" in done.stderr


def test_mcp_error_text_is_escaped(service_at: Any) -> None:
    service_at("escape")
    result = asyncio.run(in_memory(lambda client: client.call_tool("get_system", {})))
    assert result.is_error
    content = result.content[0]
    assert isinstance(content, TextContent)
    assert not [c for c in CONTROLS if c in content.text], repr(content.text)
    assert "\\x1b]0;pwned" in content.text


# --- one transport rule


def test_both_transports_send_the_same_headers(hostile: HostileBackend, service_at: Any) -> None:
    service_at("echo")
    spec = tool("get_auth_status")
    before = len(hostile.requests)
    pooled(spec, {})
    call_tool_once(spec, {})
    (_, first), (_, second) = hostile.requests[before:]
    # Each request has its own id (docs/observability.md).
    assert first["x-request-id"] != second["x-request-id"]
    transport_own = {"host", "user-agent", "connection", "x-request-id"}
    assert {k: v for k, v in first.items() if k not in transport_own} == {
        k: v for k, v in second.items() if k not in transport_own
    }
    assert first["accept"] == "application/json"
    assert first["accept-encoding"] == "identity"


def test_a_gzip_bomb_is_refused_in_bounded_memory(hostile: HostileBackend, service_at: Any) -> None:
    service_at("bomb")
    spec = tool("get_auth_status")
    tracemalloc.start()
    try:
        with pytest.raises(ServerError, match="more than 16 MiB"):
            pooled(spec, {})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 1024 * 1024, f"{peak / 2**20:.0f} MiB held"
    with pytest.raises(ServerError, match="more than 16 MiB"):
        call_tool_once(spec, {})


SIGNED = {"schema": "svc.intel.v1", "id": "x", "sig": "not-checked-here"}


def test_a_write_that_may_have_arrived_is_sent_once(
    hostile: HostileBackend, service_at: Any
) -> None:
    service_at("drop")
    spec = tool("submit_intel")
    with pytest.raises(Unreachable):
        pooled(spec, {"envelope": SIGNED})
    assert hostile.arrivals("drop") == 1
    with pytest.raises(Unreachable):
        call_tool_once(spec, {"envelope": SIGNED})
    assert hostile.arrivals("drop") == 2


def test_the_retry_rule() -> None:
    write = tool("submit_intel")
    read = tool("get_system")
    never_left = Unreachable("refused", "http://127.0.0.1:1", sent=False)
    may_have_arrived = Unreachable("timed out", "http://127.0.0.1:1")
    assert retry_delay(write, 1, never_left) == pytest.approx(0.2)
    assert retry_delay(write, 2, never_left) == pytest.approx(0.4)
    assert retry_delay(write, 3, never_left) is None, "two retries at most"
    assert retry_delay(write, 1, may_have_arrived) is None
    assert retry_delay(write, 1, ServerError("503")) is None
    assert retry_delay(read, 1, never_left) is None, "a row without transport_retries"


def test_submit_intel_over_mcp_is_bounded_before_sending(
    hostile: HostileBackend, service_at: Any
) -> None:
    too_big = {**SIGNED, "body": {"text": "x" * INTEL_MAX_BYTES}}
    service_at("intake")
    result = asyncio.run(
        in_memory(lambda client: client.call_tool("submit_intel", {"envelope": too_big}))
    )
    assert result.is_error
    assert result.structured_content["kind"] == "invalid_argument"
    assert "64 KiB" in result.structured_content["message"]
    assert hostile.arrivals("intake") == 0


# --- a token over plain http only to loopback or a named host


@pytest.fixture
def remote_portal(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """PORTAL_API_BASE on a host that is not loopback; records any connection the one-shot
    transport would open instead of opening it."""
    connects: list[str] = []

    def record(self: http.client.HTTPConnection) -> None:
        connects.append(self.host)
        raise ConnectionRefusedError("not in tests")

    monkeypatch.setattr(http.client.HTTPConnection, "connect", record)
    monkeypatch.setenv("PORTAL_API_BASE", "http://portal.example:8081")
    monkeypatch.setenv("PORTAL_SESSION_TOKEN", TOKEN)
    monkeypatch.delenv(INSECURE_HOSTS_VARIABLE, raising=False)
    return connects


def test_a_token_is_not_sent_in_clear_text_to_a_remote_host(remote_portal: list[str]) -> None:
    whoami = tool("portal_whoami")
    with respx.mock(assert_all_called=False) as mock:
        route = mock.get("http://portal.example:8081/api/whoami").respond(json={"ok": True})
        with pytest.raises(Misconfigured) as refused:
            pooled(whoami, {})
        assert not route.called
    with pytest.raises(Misconfigured):
        call_tool_once(whoami, {})
    assert remote_portal == []
    message = str(refused.value)
    assert "PORTAL_API_BASE" in message
    assert INSECURE_HOSTS_VARIABLE in message
    assert TOKEN not in message


def test_a_named_host_or_no_token_may_use_plain_http(
    remote_portal: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    whoami = tool("portal_whoami")
    alice = {"id": "alice", "kind": "human", "role": "auditor"}
    monkeypatch.setenv(INSECURE_HOSTS_VARIABLE, "other.example, PORTAL.example")
    with respx.mock:
        route = respx.get("http://portal.example:8081/api/whoami").respond(
            json={"ok": True, "data": alice}
        )
        assert pooled(whoami, {}).data == alice
        assert route.calls.last.request.headers["Authorization"] == f"Bearer {TOKEN}"
    monkeypatch.delenv(INSECURE_HOSTS_VARIABLE)
    monkeypatch.delenv("PORTAL_SESSION_TOKEN")
    with pytest.raises(Unreachable):
        call_tool_once(whoami, {})
    assert remote_portal == ["portal.example"], "no token: nothing to protect"


def _strict(constant: str) -> None:
    raise ValueError(f"not JSON: {constant}")


@pytest.mark.e2e
def test_non_finite_numbers_come_out_as_valid_json(hostile: HostileBackend) -> None:
    """A backend's 1e999 and NaN: the CLI prints null (decisions.md), which any JSON reader
    takes."""
    done = run_command([SVC_MCP, "get_system"], service_env(hostile, "nonfinite"))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout, parse_constant=_strict)
    assert (data["equity"], data["cash"], data["gross_exposure"]) == (None, None, None)
    assert data["net_exposure"] == 1.5
