"""One trace per tool call across every process (docs/observability.md): the official MCP
client sends a `traceparent` in `_meta` to a real `svc-mcp` (stdio) or `svc-mcp --http`, in
both protocol eras; the server, its backend request and the real data-service stub export over
OTLP/HTTP to a receiver on loopback run here. Nothing secret, and no argument, reaches a span,
a metric or a log line."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from svc_mcp.demo.trace import ReceivedSpan, Receiver, otel_env, receiving
from svc_mcp.serve.spans import REDACTED, captured
from tests.e2e import e2e_fixture
from tests.mcp.conftest import (
    SERVICE_TOKEN,
    SVC_MCP,
    PortalStub,
    ServiceStub,
    over_http,
    process_env,
    run_command,
    service_stub,
)
from tests.mcp.test_service_tools import signed_envelope
from tests.support import PORT, closed_url, running_server

ERAS = ["initialize", "discover"]
SECRET_SENTINEL = "sentinel-secret-7f3a9c" + "s" * 20
ARGUMENT_SENTINEL = "SENTINELARG7F3A"


@dataclass(frozen=True)
class Parent:
    trace_id: str
    span_id: str

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-01"


def new_parent() -> Parent:
    return Parent(os.urandom(16).hex(), os.urandom(8).hex())


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with receiving() as received:
        yield received


@e2e_fixture(scope="module")
def traced_service(
    receiver: Receiver, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceStub]:
    root = tmp_path_factory.mktemp("traced-service")
    with service_stub(root, **otel_env(receiver, "test-stub")) as stub:
        yield stub


@e2e_fixture(scope="module")
def gateway(
    traced_service: ServiceStub, receiver: Receiver, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    log = tmp_path_factory.mktemp("traced-gateway") / "gateway.log"
    with running_server(
        ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
        log_path=log,
        ready_path="/mcp",
        env=process_env({**traced_service.env(), **otel_env(receiver, "test-gateway")}),
    ) as server:
        yield server.base_url + "/mcp", log


async def _calls(
    session: ClientSession, era: str, calls: list[tuple[str, dict[str, Any], Parent]]
) -> list[CallToolResult]:
    if era == "initialize":
        await session.initialize()
    else:
        await session.discover()
    return [
        await session.call_tool(name, arguments, meta={"traceparent": parent.traceparent})
        for name, arguments, parent in calls
    ]


def over_stdio(
    variables: Mapping[str, str],
    era: str,
    calls: list[tuple[str, dict[str, Any], Parent]],
    errlog: Path,
) -> list[CallToolResult]:
    server = StdioServerParameters(command=SVC_MCP, args=[], env=process_env(variables))

    async def run() -> list[CallToolResult]:
        with errlog.open("a") as log:
            async with (
                stdio_client(server, errlog=log) as (read, write),
                ClientSession(read, write) as session,
            ):
                return await _calls(session, era, calls)

    return anyio.run(run)


def through_gateway(
    url: str, era: str, calls: list[tuple[str, dict[str, Any], Parent]]
) -> list[CallToolResult]:
    async def use(session: ClientSession) -> list[CallToolResult]:
        return await _calls(session, era, calls)

    return anyio.run(over_http, url, use)


def one(spans: list[ReceivedSpan], **wanted: str) -> ReceivedSpan:
    found = [span for span in spans if all(getattr(span, k) == v for k, v in wanted.items())]
    assert len(found) == 1, (wanted, [(s.service, s.name, s.kind) for s in spans])
    return found[0]


def has(receiver: Receiver, trace_id: str, *names: str) -> bool:
    present = {span.name for span in receiver.trace(trace_id)}
    return all(name in present for name in names)


def check_trace(receiver: Receiver, parent: Parent, mcp_service: str, transport: str) -> None:
    names = ("tools/call get_system", "GET /api/v1/system", "sqlite.query")
    receiver.wait_for(
        lambda r: (
            has(r, parent.trace_id, *names)
            and len([s for s in r.trace(parent.trace_id) if s.name == "GET /api/v1/system"]) == 2
        )
    )
    spans = receiver.trace(parent.trace_id)
    server = one(spans, name="tools/call get_system", kind="server")
    assert server.service == mcp_service
    assert server.parent_id == parent.span_id
    assert server.attributes["mcp.method.name"] == "tools/call"
    assert server.attributes["gen_ai.tool.name"] == "get_system"
    assert server.attributes["gen_ai.operation.name"] == "execute_tool"
    assert server.attributes["network.transport"] == transport
    assert server.attributes["mcp.protocol.version"]
    assert server.attributes["jsonrpc.request.id"]
    assert not server.error
    backend = one(spans, name="GET /api/v1/system", kind="client")
    assert (backend.service, backend.parent_id) == (mcp_service, server.span_id)
    assert backend.attributes["http.response.status_code"] == 200
    assert backend.attributes["svc.backend"] == "service"
    stub = one(spans, name="GET /api/v1/system", kind="server")
    assert (stub.service, stub.parent_id) == ("test-stub", backend.span_id)
    assert stub.attributes["http.route"] == "/api/v1/system"
    assert stub.attributes["http.response.status_code"] == 200
    query = one(spans, name="sqlite.query")
    assert (query.service, query.parent_id) == ("test-stub", stub.span_id)
    assert query.attributes["db.system.name"] == "sqlite"


@pytest.mark.parametrize("era", ERAS)
def test_one_trace_over_stdio(
    era: str, receiver: Receiver, traced_service: ServiceStub, tmp_path: Path
) -> None:
    parent = new_parent()
    variables = {**traced_service.env(), **otel_env(receiver, "test-stdio")}
    [result] = over_stdio(variables, era, [("get_system", {}, parent)], tmp_path / "stderr")
    assert not result.is_error
    check_trace(receiver, parent, "test-stdio", "pipe")
    metrics = ("mcp.server.operation.duration", "http.client.request.duration")
    receiver.wait_for(lambda r: all(name in r.metrics for name in metrics))
    calls = [p for p in receiver.metrics[metrics[0]] if p.get("mcp.method.name") == "tools/call"]
    assert calls[0]["gen_ai.tool.name"] == "get_system"
    assert any(p.get("svc.backend") == "service" for p in receiver.metrics[metrics[1]])


@pytest.mark.parametrize("era", ERAS)
def test_one_trace_through_the_gateway(
    era: str, receiver: Receiver, gateway: tuple[str, Path]
) -> None:
    parent = new_parent()
    [result] = through_gateway(gateway[0], era, [("get_system", {}, parent)])
    assert not result.is_error
    check_trace(receiver, parent, "test-gateway", "tcp")
    receiver.wait_for(lambda r: "svc_mcp.gateway.calls_in_flight" in r.metrics)


def _server_span(receiver: Receiver, parent: Parent) -> ReceivedSpan:
    receiver.wait_for(
        lambda r: any(
            s.kind == "server" and s.name.startswith("tools/call") for s in r.trace(parent.trace_id)
        )
    )
    return one(receiver.trace(parent.trace_id), kind="server", service="test-failing")


def test_failures_carry_their_kind_and_request_id(
    receiver: Receiver, portal: PortalStub, tmp_path: Path
) -> None:
    """401 and the 429 of the lockout (a stub of their own, so the lockout spoils no other test),
    403 (the portal's audit for a reader) and an unreachable backend."""
    with service_stub(tmp_path / "stub", **otel_env(receiver, "test-stub")) as locking:
        variables = {
            **locking.env(token=SECRET_SENTINEL),
            **portal.env("reader"),
            **otel_env(receiver, "test-failing"),
        }
        parents = [new_parent() for _ in range(8)]
        results = over_stdio(
            variables,
            "initialize",
            [("get_system", {}, parent) for parent in parents],
            tmp_path / "stderr",
        )
        kinds = [_server_span(receiver, parent).attributes["error.type"] for parent in parents]
        assert kinds == ["unauthorized"] * 7 + ["locked_out"]
        for result, parent in zip(results, parents, strict=True):
            assert result.is_error
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.endswith(f"(request id {parent.trace_id})")
        # The stub's access line carries the same id, and its span the status.
        receiver.wait_for(
            lambda r: has(r, parents[-1].trace_id, "GET /api/v1/system", "guard.record_failure")
        )
        stub = one(receiver.trace(parents[-1].trace_id), kind="server", service="test-stub")
        assert stub.attributes["http.response.status_code"] == 429
        assert f'"request_id":"{parents[0].trace_id}"' in locking.log_path.read_text()
        receiver.wait_for(lambda r: len(r.metrics.get("svc_stub.guard.lockouts", [])) > 0)

    with closed_url() as closed:
        forbidden, unreachable = new_parent(), new_parent()
        over_stdio(
            {**variables, "SERVICE_API_BASE": closed},
            "discover",
            [("portal_audit", {}, forbidden), ("get_system", {}, unreachable)],
            tmp_path / "stderr",
        )
        assert _server_span(receiver, forbidden).attributes["error.type"] == "forbidden"
        assert _server_span(receiver, unreachable).attributes["error.type"] == "unreachable"
        backend = one(receiver.trace(unreachable.trace_id), kind="client")
        assert backend.attributes["error.type"] == "unreachable"


def test_no_secret_or_argument_reaches_spans_metrics_or_logs(
    receiver: Receiver, traced_service: ServiceStub, gateway: tuple[str, Path], tmp_path: Path
) -> None:
    envelope = signed_envelope(source=ARGUMENT_SENTINEL)
    parent = new_parent()
    calls: list[tuple[str, dict[str, Any], Parent]] = [
        ("get_positions", {"symbol": ARGUMENT_SENTINEL}, parent),
        ("submit_intel", {"envelope": envelope}, new_parent()),
        ("get_positions", {"symbol": SECRET_SENTINEL}, new_parent()),
    ]
    through_gateway(gateway[0], "discover", calls)
    over_stdio(
        {**traced_service.env(token=SECRET_SENTINEL), **otel_env(receiver, "test-stdio")},
        "initialize",
        calls,
        tmp_path / "stderr",
    )
    # Logins, traced: a wrong token, then the right one (whose answer sets a session cookie).
    login = traced_service.base_url + "/api/v1/auth/login"
    traced = {"traceparent": new_parent().traceparent}
    wrong = httpx.post(login, json={"token": SECRET_SENTINEL}, headers=traced)
    assert wrong.status_code == 401
    answer = httpx.post(login, json={"token": SERVICE_TOKEN}, headers=traced)
    cookie = answer.cookies.get("svc_session") or next(iter(answer.cookies.values()))
    receiver.wait_for(lambda r: has(r, parent.trace_id, "GET /api/v1/positions", "sqlite.query"))
    receiver.wait_for(lambda r: "svc_stub.guard.failures" in r.metrics)
    receiver.wait_for(lambda r: any(s.name == "POST /api/v1/auth/login" for s in r.spans))
    exported = receiver.everything()
    logs = "\n".join(
        path.read_text(errors="replace")
        for path in (traced_service.log_path, gateway[1], tmp_path / "stderr")
    )
    for sentinel in (SECRET_SENTINEL, SERVICE_TOKEN, ARGUMENT_SENTINEL, envelope["sig"], cookie):
        assert sentinel.encode() not in exported, sentinel
        assert sentinel not in logs, sentinel
    assert any(s.name == "POST /api/v1/intel" and s.kind == "server" for s in receiver.spans)


def test_argument_capture_is_opt_in_and_never_records_a_secret() -> None:
    arguments = {"symbol": "ABC", "token": "t0k", "envelope": {"source": "desk", "sig": "s1g"}}
    text = captured(arguments)
    assert '"symbol": "ABC"' in text
    assert '"source": "desk"' in text
    assert "t0k" not in text
    assert "s1g" not in text
    assert text.count(REDACTED) == 2


def _imported(report: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip()
        for line in report.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_off_and_free_without_otel_variables(service: ServiceStub, tmp_path: Path) -> None:
    """No OTEL_*: the CLI call and the stub import nothing of OpenTelemetry, the stdio server
    nothing beyond the API the MCP SDK itself imports."""
    profiled = {"PYTHONPROFILEIMPORTTIME": "1"}
    call = run_command([SVC_MCP, "get_system"], {**service.env(), **profiled})
    assert call.returncode == 0, call.stderr[-2000:]
    assert "argparse" in _imported(call.stderr), "the import report was read"
    assert not {m for m in _imported(call.stderr) if m.startswith("opentelemetry")}
    with service_stub(tmp_path / "stub", **profiled) as stub:
        assert httpx.get(stub.base_url + "/api/v1/system", headers=stub.headers()).is_success
        report = stub.log_path.read_text()
    assert "uvicorn" in _imported(report), "the import report was read"
    assert not {m for m in _imported(report) if m.startswith("opentelemetry")}
    over_stdio({**service.env(), **profiled}, "initialize", [], tmp_path / "stderr")
    server_modules = _imported((tmp_path / "stderr").read_text())
    assert "mcp" in server_modules, "the import report was read"
    assert not {
        m for m in server_modules if m.startswith(("opentelemetry.sdk", "opentelemetry.exporter"))
    }


def test_a_cli_call_makes_the_same_client_span(
    receiver: Receiver, traced_service: ServiceStub
) -> None:
    call = run_command(
        [SVC_MCP, "get_system"], {**traced_service.env(), **otel_env(receiver, "test-cli")}
    )
    assert call.returncode == 0, call.stderr[-2000:]
    receiver.wait_for(lambda r: any(s.service == "test-cli" for s in r.spans))
    backend = one([s for s in receiver.spans if s.service == "test-cli"], kind="client")
    assert backend.name == "GET /api/v1/system"
    receiver.wait_for(lambda r: has(r, backend.trace_id, "GET /api/v1/system", "sqlite.query"))
    stub = one(receiver.trace(backend.trace_id), kind="server")
    assert stub.parent_id == backend.span_id


def test_without_tracing_an_error_names_the_id_the_access_line_carries(
    service: ServiceStub,
) -> None:
    # A cursor the stub never issued: a 400 (a wrong token would count against the guard).
    call = run_command([SVC_MCP, "get_positions", "--cursor", "zz"], service.env())
    assert call.returncode == 9, call.stderr
    named = re.search(r"\(request id ([0-9a-f]{16})\)$", call.stderr.strip())
    assert named is not None, call.stderr
    assert f'"request_id":"{named[1]}"' in service.log_path.read_text()
