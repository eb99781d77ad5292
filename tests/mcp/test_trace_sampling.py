"""The default samplers (docs/observability.md): the data-service stub and the gateway record
1 in 100 requests that carry no trace context, always follow a sampled parent and never record a
call whose parent is not sampled; a call left out still counts in the metrics, and a user's
OTEL_TRACES_SAMPLER wins. Real processes exporting to a receiver on loopback; their random draw
is replaced, in the process, by a cycle through 0.00, 0.01, ... 0.99, so any 100 consecutive
roots hold exactly one that is recorded."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import anyio
import httpx
import pytest
from google.protobuf.message import DecodeError
from mcp import ClientSession
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from svc_mcp.demo.trace import ReceivedSpan, Receiver, otel_env, receiving
from tests import support_stub_data as stub_data
from tests.e2e import e2e_fixture
from tests.mcp.conftest import (
    INTEL_KEY,
    SERVICE_TOKEN,
    ServiceStub,
    over_http,
    process_env,
)
from tests.support import PORT, Server, running_server

CYCLING_DRAW = """
import itertools, runpy
import {module} as telemetry
draws = itertools.cycle([index / 100 for index in range(100)])
telemetry.sample_draw = lambda: next(draws)
runpy.run_module("{main}", run_name="__main__", alter_sys=True)
"""
"""`python -c` this, then the program's arguments: the program with a deterministic draw."""

STUB_SERVICE = "sampling-stub"
GATEWAY_SERVICE = "sampling-gateway"
AUTH = {"Authorization": f"Bearer {SERVICE_TOKEN}"}


def traceparent(trace_id: str, sampled: bool) -> str:
    return f"00-{trace_id}-{os.urandom(8).hex()}-{'01' if sampled else '00'}"


def new_trace_id() -> str:
    return os.urandom(16).hex()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with receiving() as received:
        yield received


@e2e_fixture(scope="module")
def stub(receiver: Receiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceStub]:
    """A data-service stub at its default sampler, drawing from the cycle."""
    root = tmp_path_factory.mktemp("sampling-stub")
    db = root / "service.db"
    stub_data.service_db(db)
    launcher = CYCLING_DRAW.format(module="server_stub.telemetry", main="server_stub")
    with running_server(
        ["-c", launcher, "service", "--db", str(db), "--port", PORT],
        log_path=root / "service.log",
        ready_path="/health/live",
        env={
            "SERVICE_API_TOKEN": SERVICE_TOKEN,
            "SERVICE_INTEL_HMAC": INTEL_KEY,
            **otel_env(receiver, STUB_SERVICE),
        },
    ) as server:
        yield ServiceStub(server.base_url, db, server.log_path, server.process.pid)


def gateway(
    stub: ServiceStub, receiver: Receiver, log: Path, **variables: str
) -> AbstractContextManager[Server]:
    launcher = CYCLING_DRAW.format(module="svc_mcp.core.telemetry", main="svc_mcp")
    return running_server(
        ["-c", launcher, "--http", "--no-auth", "--port", PORT],
        log_path=log,
        ready_path="/mcp",
        env=process_env(
            {**stub.env(), **otel_env(receiver, GATEWAY_SERVICE), **variables},
        ),
    )


def spans_of(receiver: Receiver, service: str, name: str) -> list[ReceivedSpan]:
    with receiver.lock:
        return [s for s in receiver.spans if s.service == service and s.name == name]


def wait_for_trace(receiver: Receiver, trace_id: str, service: str) -> None:
    """Until a span of `trace_id` from `service` has arrived: a process exports its spans in the
    order they end, so every span that ended before it has arrived too."""
    receiver.wait_for(lambda r: any(s.service == service for s in r.trace(trace_id)))


def test_the_stub_records_one_root_in_a_hundred(receiver: Receiver, stub: ServiceStub) -> None:
    with httpx.Client(base_url=stub.base_url, headers=AUTH) as client:
        before = {s.span_id for s in spans_of(receiver, STUB_SERVICE, "GET /api/v1/system")}
        for _ in range(300):
            assert client.get("/api/v1/system").status_code == 200
        marker = new_trace_id()
        client.get("/api/v1/system", headers={"traceparent": traceparent(marker, True)})
    wait_for_trace(receiver, marker, STUB_SERVICE)
    roots = [
        s
        for s in spans_of(receiver, STUB_SERVICE, "GET /api/v1/system")
        if s.span_id not in before and s.trace_id != marker
    ]
    assert len(roots) == 3
    assert all(s.parent_id == "" for s in roots)
    # Each recorded request has its child span, the others made none.
    children = {s.trace_id for s in spans_of(receiver, STUB_SERVICE, "sqlite.query")}
    assert {s.trace_id for s in roots} <= children


def test_the_stub_follows_its_callers_decision(receiver: Receiver, stub: ServiceStub) -> None:
    recorded = [new_trace_id() for _ in range(5)]
    left_out = [new_trace_id() for _ in range(5)]
    with httpx.Client(base_url=stub.base_url, headers=AUTH) as client:
        for sampled, trace_id in [(False, t) for t in left_out] + [(True, t) for t in recorded]:
            headers = {"traceparent": traceparent(trace_id, sampled), "X-Request-Id": trace_id}
            assert client.get("/api/v1/system", headers=headers).status_code == 200
    for trace_id in recorded:
        wait_for_trace(receiver, trace_id, STUB_SERVICE)
        assert {s.name for s in receiver.trace(trace_id)} == {"GET /api/v1/system", "sqlite.query"}
    assert not any(receiver.trace(trace_id) for trace_id in left_out)
    # A request left out still names its caller's id in the access line.
    log = stub.log_path.read_text()
    assert all(f'"request_id":"{trace_id}"' in log for trace_id in left_out)


def _call_get_system(url: str, metas: list[dict[str, str] | None]) -> None:
    async def use(session: ClientSession) -> None:
        await session.initialize()
        for meta in metas:
            result = await session.call_tool("get_system", {}, meta=meta)
            assert not result.is_error

    anyio.run(over_http, url, use)


def _calls_counted(receiver: Receiver, service: str) -> int:
    """The latest cumulative count of `mcp.server.operation.duration` for get_system calls."""
    latest = 0
    with receiver.lock:
        bodies = list(receiver.bodies)
    for body in bodies:
        try:
            request = ExportMetricsServiceRequest.FromString(body)
        except DecodeError:  # a trace export
            continue
        for resource in request.resource_metrics:
            names = {a.key: a.value.string_value for a in resource.resource.attributes}
            if names.get("service.name") != service:
                continue
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != "mcp.server.operation.duration":
                        continue
                    for point in metric.histogram.data_points:
                        tools = {a.key: a.value.string_value for a in point.attributes}
                        if tools.get("gen_ai.tool.name") == "get_system":
                            latest = max(latest, point.count)
    return latest


def test_the_gateway_records_one_root_in_a_hundred_and_counts_every_call(
    receiver: Receiver, stub: ServiceStub, tmp_path: Path
) -> None:
    start, end = new_trace_id(), new_trace_id()
    earlier = {s.span_id for s in spans_of(receiver, STUB_SERVICE, "GET /api/v1/system")}
    with gateway(stub, receiver, tmp_path / "gateway.log") as server:
        _call_get_system(
            server.base_url + "/mcp",
            [
                {"traceparent": traceparent(start, True)},
                *[None] * 200,
                {"traceparent": traceparent(end, True)},
            ],
        )
        wait_for_trace(receiver, end, STUB_SERVICE)
        wait_for_trace(receiver, end, GATEWAY_SERVICE)
        receiver.wait_for(lambda r: _calls_counted(r, GATEWAY_SERVICE) >= 202)
    calls = spans_of(receiver, GATEWAY_SERVICE, "tools/call get_system")
    roots = [s for s in calls if s.trace_id not in (start, end)]
    assert len(roots) == 2
    for root in roots:
        assert root.parent_id == ""
        names = {(s.service, s.kind, s.name) for s in receiver.trace(root.trace_id)}
        assert (GATEWAY_SERVICE, "client", "GET /api/v1/system") in names
        assert (STUB_SERVICE, "server", "GET /api/v1/system") in names
    # The calls left out made no span in the stub either, though it samples its own roots.
    traced = {s.trace_id for s in calls}
    stub_spans = spans_of(receiver, STUB_SERVICE, "GET /api/v1/system")
    assert {s.trace_id for s in stub_spans if s.span_id not in earlier} == traced
    assert _calls_counted(receiver, GATEWAY_SERVICE) == 202


def test_the_gateway_follows_the_hosts_decision(
    receiver: Receiver, stub: ServiceStub, tmp_path: Path
) -> None:
    recorded = [new_trace_id() for _ in range(3)]
    left_out = [new_trace_id() for _ in range(3)]
    metas = [{"traceparent": traceparent(t, False)} for t in left_out] + [
        {"traceparent": traceparent(t, True)} for t in recorded
    ]
    with gateway(stub, receiver, tmp_path / "gateway.log") as server:
        _call_get_system(server.base_url + "/mcp", metas)
        for trace_id in recorded:
            wait_for_trace(receiver, trace_id, STUB_SERVICE)
            wait_for_trace(receiver, trace_id, GATEWAY_SERVICE)
    assert not any(receiver.trace(trace_id) for trace_id in left_out)
    log = stub.log_path.read_text()
    assert all(f'"request_id":"{trace_id}"' in log for trace_id in left_out)


def test_a_users_sampler_wins_on_the_gateway(
    receiver: Receiver, stub: ServiceStub, tmp_path: Path
) -> None:
    end = new_trace_id()
    before = len(spans_of(receiver, GATEWAY_SERVICE, "tools/call get_system"))
    with gateway(
        stub, receiver, tmp_path / "gateway.log", OTEL_TRACES_SAMPLER="parentbased_always_on"
    ) as server:
        _call_get_system(
            server.base_url + "/mcp", [None] * 5 + [{"traceparent": traceparent(end, True)}]
        )
        wait_for_trace(receiver, end, GATEWAY_SERVICE)
    assert len(spans_of(receiver, GATEWAY_SERVICE, "tools/call get_system")) - before == 6
