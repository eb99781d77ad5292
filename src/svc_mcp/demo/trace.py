"""`svc-mcp demo --trace`: a small OTLP/HTTP (protobuf) receiver on loopback, in this process,
and the tree of one call's spans as it arrived (README "Observability").

What a collector would get, decoded with opentelemetry-proto (the `svc-mcp[otel]` extra), plus
every raw body, which the tests search for secrets. The demo is the one place svc-mcp is an MCP
client that exports: `MeasuredSession` records `mcp.client.operation.duration` there."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mcp import ClientSession
from mcp.types import CallToolRequest, CallToolResult
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

CLIENT_DURATION = "mcp.client.operation.duration"
SPAN_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    error: bool
    start_ns: int = 0
    end_ns: int = 0


@dataclass
class Receiver:
    endpoint: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    metrics: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Metric name -> the attributes of each of its data points."""
    bodies: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, path: str, body: bytes) -> None:
        with self.lock:
            self.bodies.append(body)
            if path.endswith("/v1/traces"):
                self._spans(body)
            elif path.endswith("/v1/metrics"):
                self._metrics(body)

    def _spans(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            service = _attributes(resource_spans.resource.attributes).get("service.name", "")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        ReceivedSpan(
                            service=service,
                            name=span.name,
                            kind=SPAN_KINDS.get(span.kind, "unspecified"),
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            attributes=_attributes(span.attributes),
                            error=span.status.code == 2,
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                        )
                    )

    def _metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest.FromString(body)
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    data = getattr(metric, metric.WhichOneof("data"))
                    points = self.metrics.setdefault(metric.name, [])
                    points.extend(_attributes(point.attributes) for point in data.data_points)

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self.lock:
            return [span for span in self.spans if span.trace_id == trace_id]

    def wait_for(self, done: Callable[[Receiver], bool], timeout: float = 15.0) -> None:
        """Polls (bounded) until `done(self)`: the exporters send on their own schedule."""
        deadline = time.monotonic() + timeout
        while not done(self):
            if time.monotonic() > deadline:
                with self.lock:
                    names = sorted({(span.service, span.name) for span in self.spans})
                raise AssertionError(f"not received in {timeout} s; spans so far: {names}")
            time.sleep(0.05)

    def everything(self) -> bytes:
        with self.lock:
            return b"\n".join(self.bodies)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


@contextlib.contextmanager
def receiving() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            receiver.take(self.path, self.rfile.read(length))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def otel_env(receiver: Receiver, service_name: str | None = None) -> dict[str, str]:
    """The variables a process needs to export to `receiver` quickly."""
    named = {"OTEL_SERVICE_NAME": service_name} if service_name else {}
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRIC_EXPORT_INTERVAL": "300",
        **named,
    }


def tree(spans: list[ReceivedSpan]) -> str:
    """The spans of one trace as an indented tree, each with its process, kind and duration."""
    ids = {span.span_id for span in spans}
    children: dict[str, list[ReceivedSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_ns):
        children.setdefault(span.parent_id if span.parent_id in ids else "", []).append(span)
    lines: list[str] = []
    continued = {"": "", "└─ ": "   ", "├─ ": "│  "}

    def walk(span: ReceivedSpan, prefix: str, branch: str) -> None:
        took = (span.end_ns - span.start_ns) / 1e6
        failed = f" error.type={span.attributes['error.type']}" if span.error else ""
        lines.append(
            f"{prefix}{branch}{span.name}  [{span.service}, {span.kind}, {took:.1f} ms]{failed}"
        )
        below = children.get(span.span_id, [])
        for index, child in enumerate(below):
            last = index == len(below) - 1
            walk(child, prefix + continued[branch], "└─ " if last else "├─ ")

    for root in children.get("", []):
        walk(root, "", "")
    return "\n".join(lines)


class MeasuredSession(ClientSession):
    """An MCP client session over stdio that records each request's duration by the
    OpenTelemetry MCP conventions (`mcp.method.name`, `gen_ai.tool.name`, `network.transport`,
    `error.type`: the failure's kind, as the server's span names it)."""

    def __init__(self, *args: Any, duration: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.duration = duration

    async def send_request(
        self,
        request: Any,
        result_type: Any,
        request_read_timeout_seconds: float | None = None,
        metadata: Any = None,
        progress_callback: Any = None,
    ) -> Any:
        attributes: dict[str, str] = {
            "mcp.method.name": request.method,
            "network.transport": "pipe",
        }
        if isinstance(request, CallToolRequest):
            attributes["gen_ai.tool.name"] = request.params.name
        started = time.perf_counter()
        failure: str | None = None
        try:
            result = await super().send_request(
                request, result_type, request_read_timeout_seconds, metadata, progress_callback
            )
            failure = _failure_kind(result)
        except Exception as error:
            failure = type(error).__qualname__
            raise
        finally:
            if failure is not None:
                attributes["error.type"] = failure
            self.duration.record(time.perf_counter() - started, attributes)
        return result


def _failure_kind(result: object) -> str | None:
    """A failed tool call's kind (our `FailureKind`, which svc-mcp puts in its structured
    content), as the server's span names it; `tool_error` for any other failure."""
    if not isinstance(result, CallToolResult) or not result.is_error:
        return None
    content = result.structured_content
    kind = content.get("kind") if isinstance(content, dict) else None
    return kind if isinstance(kind, str) else "tool_error"


@contextlib.contextmanager
def client_durations(receiver: Receiver) -> Iterator[Any]:
    """The `mcp.client.operation.duration` histogram of this process, exported to `receiver`
    when the block ends."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    exporter = OTLPMetricExporter(endpoint=f"{receiver.endpoint}/v1/metrics")
    provider = MeterProvider(
        resource=Resource.create({SERVICE_NAME: "svc-mcp demo"}),
        metric_readers=[PeriodicExportingMetricReader(exporter)],
    )
    try:
        yield provider.get_meter("svc-mcp demo").create_histogram(
            CLIENT_DURATION, unit="s", description="MCP requests the demo sent, as the client"
        )
    finally:
        provider.shutdown()
