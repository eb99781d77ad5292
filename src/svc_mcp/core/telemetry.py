"""Traces and metrics of the client side (README "Observability"), by the standard `OTEL_*`
variables, exported over OTLP/HTTP.

Off and free unless an exporter variable is set: `setup()` then imports nothing, and each backend
request costs one check of a module global. On, `setup()` builds the SDK's providers, which read
their own settings (endpoint, headers, sampler, batch and export intervals, resource) from the
environment. Spans and metrics carry names, routes templates, statuses and failure kinds only:
never an argument, a result, a token, a cookie or a query string.
"""

from __future__ import annotations

import os
import random
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from svc_serving.otel_settings import (
    ENABLING_VARIABLES,
    configured,
    install_providers,
    sampler_named,
)

CAPTURE_ARGUMENTS_VARIABLE = "SVC_MCP_OTEL_CAPTURE_ARGUMENTS"
"""`true`: a tool span also records the argument names given and the values of arguments that
are not secrets (README "Observability"); off by default."""

PASSED_VARIABLES = (
    *ENABLING_VARIABLES,
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_TRACES_SAMPLER",
    "OTEL_TRACES_SAMPLER_ARG",
    "OTEL_SDK_DISABLED",
    CAPTURE_ARGUMENTS_VARIABLE,
)
"""What `install` copies into a host entry. Not OTEL_EXPORTER_OTLP_HEADERS: it often holds a
collector's API key, which must not land in a host's file in clear (README "Observability")."""

GATEWAY_ROOT_SAMPLE_RATIO = 0.01
"""Without OTEL_TRACES_SAMPLER, the gateway records 1 in 100 calls that carry no trace context;
one that does follows its caller's decision (README "Observability", docs/decisions.md)."""

sample_draw: Callable[[], float] = random.random
"""The root sampler's draw in [0, 1) (a test sets a deterministic one)."""

_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-([0-9a-f]{2})")


class InFlight:
    """The gateway's calls in flight: a plain count the metric reader observes when it collects,
    so a call pays two additions instead of two trips through the SDK's measurement path."""

    def __init__(self) -> None:
        self.calls = 0

    def add(self, change: int) -> None:
        self.calls += change

    def observe(self, _options: Any) -> list[Any]:
        from opentelemetry.metrics import Observation

        return [Observation(self.calls)]


@dataclass
class _Instruments:
    tracer: Any
    backend_duration: Any
    server_duration: Any
    in_flight: InFlight
    root_ratio: float | None = None
    """Set when this process samples its roots itself (the gateway, OTEL_TRACES_SAMPLER unset)."""


_on: _Instruments | None = None
_unrecorded_trace: ContextVar[str | None] = ContextVar("svc_unrecorded_trace", default=None)


@dataclass
class RequestNote:
    """One gateway request: the id its backend requests carry, which its access line prints (the
    trace id once the call has a trace; the gateway's own id otherwise)."""

    request_id: str = field(default_factory=lambda: os.urandom(16).hex())


CURRENT_REQUEST: ContextVar[RequestNote | None] = ContextVar("svc_current_request", default=None)
"""The trace id of the call being served without a span (the sampler left it out)."""


def capture_arguments() -> bool:
    return os.environ.get(CAPTURE_ARGUMENTS_VARIABLE, "").strip().lower() == "true"


def setup(service_name: str, *, root_ratio: float | None = None) -> None:
    """Turns telemetry on when `configured()`; a missing `svc-mcp[otel]` extra is one line on
    stderr, and the process runs on without it. With `root_ratio`, and OTEL_TRACES_SAMPLER
    unset, calls are sampled by `sampled()` (parent-based, roots at that ratio) before any span
    is made; otherwise by the SDK's sampler (every root by default)."""
    global _on
    if _on is not None or not configured():
        return
    try:
        from opentelemetry import metrics, trace
    except ImportError:  # pragma: no cover - mcp brings the API; kept for the CLI's sake
        print("svc-mcp: OTEL_* is set but OpenTelemetry is not installed", file=sys.stderr)
        return
    try:
        install_providers(service_name)
    except ImportError:
        from svc_serving.extras import install_hint

        print(
            f"svc-mcp: OTEL_* is set but the exporter is not installed (svc-mcp's otel extra): "
            f"{install_hint('otel', 'svc-mcp')}; running without telemetry",
            file=sys.stderr,
        )
        return
    meter = metrics.get_meter("svc-mcp")
    in_flight = InFlight()
    meter.create_observable_up_down_counter(
        "svc_mcp.gateway.calls_in_flight",
        callbacks=[in_flight.observe],
        description="Tool calls the gateway is serving",
    )
    _on = _Instruments(
        tracer=trace.get_tracer("svc-mcp"),
        backend_duration=meter.create_histogram(
            "http.client.request.duration",
            unit="s",
            description="Backend requests, by backend, route and status",
        ),
        server_duration=meter.create_histogram(
            "mcp.server.operation.duration", unit="s", description="MCP requests served"
        ),
        in_flight=in_flight,
        root_ratio=None if sampler_named() else root_ratio,
    )


def shutdown() -> None:
    """Flushes what is buffered (a CLI call exits right after its one request)."""
    if _on is None:
        return
    from opentelemetry import metrics, trace

    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        stop = getattr(provider, "shutdown", None)
        if stop is not None:
            stop()


@dataclass
class BackendRequest:
    """One request to a backend: the headers it adds (`traceparent`, `X-Request-Id`) and the id
    an operator finds in the stub's access log."""

    request_id: str
    headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None
    traced: bool = False

    def named_id(self) -> str | None:
        """The id a failure names: the trace id when traced; else the request id, once a
        backend answered (an unreachable one logged nothing an operator could find)."""
        return self.request_id if self.traced or self.status is not None else None


def sampled(meta: Mapping[str, Any] | None) -> bool:
    """The gateway's sampling decision for a call with `meta` (its `_meta`): the caller's when it
    sends a `traceparent`, else a draw against the root ratio."""
    ratio = 0.0 if _on is None or _on.root_ratio is None else _on.root_ratio
    match = _traceparent(meta)
    if match is None:
        return sample_draw() < ratio
    return bool(int(match.group(2), 16) & 1)


@contextmanager
def unrecorded(meta: Mapping[str, Any] | None) -> Iterator[None]:
    """Serves a call the sampler left out: its backend requests make no span, and tell the stub
    so (`traceparent` flagged not sampled) under the caller's trace id, or a new one."""
    match = _traceparent(meta)
    note = CURRENT_REQUEST.get()
    trace_id = match.group(1) if match else note.request_id if note else os.urandom(16).hex()
    if note is not None:
        note.request_id = trace_id
    token = _unrecorded_trace.set(trace_id)
    try:
        yield
    finally:
        _unrecorded_trace.reset(token)


def _traceparent(meta: Mapping[str, Any] | None) -> re.Match[str] | None:
    value = meta.get("traceparent") if meta else None
    return _TRACEPARENT.fullmatch(value) if isinstance(value, str) else None


@contextmanager
def backend_request(backend: str, method: str, route: str) -> Iterator[BackendRequest]:
    """A client span around one backend request (when on), named `{method} {route}` with the
    route template, never the filled-in target."""
    if _on is None:
        note = CURRENT_REQUEST.get()
        request_id = note.request_id if note is not None else os.urandom(8).hex()
        yield BackendRequest(request_id, {"X-Request-Id": request_id})
        return
    yield from _traced_request(_on, backend, method, route)


def _traced_request(
    on: _Instruments, backend: str, method: str, route: str
) -> Iterator[BackendRequest]:
    import time

    from svc_mcp.core.errors import CallError

    attributes: dict[str, Any] = {
        "http.request.method": method,
        "url.template": route,
        "svc.backend": backend,
    }
    started = time.perf_counter()
    with _request_span(on, f"{method} {route}", attributes) as (span, request):
        failure: str | None = None
        try:
            yield request
        except CallError as error:
            failure = str(error.kind)
            raise
        finally:
            if request.status is not None:
                attributes["http.response.status_code"] = request.status
            if failure is not None:
                attributes["error.type"] = failure
            if span is not None:
                _finish(span, request.status, failure)
            on.backend_duration.record(time.perf_counter() - started, attributes)


@contextmanager
def _request_span(
    on: _Instruments, name: str, attributes: dict[str, Any]
) -> Iterator[tuple[Any, BackendRequest]]:
    """The CLIENT span and the request carrying it; no span in a call left unrecorded."""
    trace_id = _unrecorded_trace.get()
    if trace_id is not None:
        parent = f"00-{trace_id}-{os.urandom(8).hex()}-00"
        yield None, BackendRequest(trace_id, {"X-Request-Id": trace_id, "traceparent": parent})
        return
    from opentelemetry.propagate import inject
    from opentelemetry.trace import SpanKind

    with on.tracer.start_as_current_span(
        name,
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        context = span.get_span_context()
        request_id = format(context.trace_id, "032x") if context.is_valid else os.urandom(8).hex()
        if (note := CURRENT_REQUEST.get()) is not None:
            note.request_id = request_id
        request = BackendRequest(request_id, {"X-Request-Id": request_id}, traced=True)
        inject(request.headers)
        yield span, request


def _finish(span: Any, status: int | None, failure: str | None) -> None:
    from opentelemetry.trace import StatusCode

    if status is not None:
        span.set_attribute("http.response.status_code", status)
    if failure is not None:
        span.set_attribute("error.type", failure)
        span.set_status(StatusCode.ERROR)


def instruments() -> _Instruments | None:
    """The tracer and instruments when telemetry is on (for the MCP face's server span)."""
    return _on
