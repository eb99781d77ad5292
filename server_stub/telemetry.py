"""The stubs' traces and metrics (README "Observability"), by the standard `OTEL_*` variables,
exported over OTLP/HTTP.

Off unless an exporter variable is set; then nothing of OpenTelemetry is imported, and each
request, child span or counter costs one check of a module global. On, each request the sampler
lets in (`records`, asked by the request gate in server_stub.stack) gets a SERVER span continuing
the caller's `traceparent`, named by its route template (never the raw target), with children
where time goes (the guard's decision, the SQLite query, the intel verification). The settings
are read by `svc_serving.otel_settings`, as on the client side.
"""

from __future__ import annotations

import os
import random
import re
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar
from types import SimpleNamespace
from typing import Any

from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc_serving.contracts import REQUEST_ID_PATTERN
from svc_serving.otel_settings import configured, install_providers, sampler_named

TRACE_ID_KEY = "svc.trace_id"
"""Where the request span's trace id waits in the ASGI scope for the access line."""

_REQUEST_ID = re.compile(REQUEST_ID_PATTERN.encode())
_TRACEPARENT = re.compile(rb"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-([0-9a-f]{2})")
_NOTHING: AbstractContextManager[None] = nullcontext()
_tracer: Any = None
_counters: dict[str, Any] = {}
_sdk: Any = None
"""What a recorded request needs of OpenTelemetry (imported by `setup`, not per request)."""
ROOT_SAMPLE_RATIO = 0.01
"""Without OTEL_TRACES_SAMPLER, a request that carries no trace context is traced once in a
hundred; one that does follows its caller's decision (README "Observability")."""

_root_ratio: float | None = None
"""Set when the stub samples itself (OTEL_TRACES_SAMPLER unset): a request left out then costs
no span at all, cheaper than the SDK's sampler deciding on a span it makes anyway."""
sample_draw: Callable[[], float] = random.random
"""The root sampler's draw in [0, 1) (a test sets a deterministic one)."""
_recording: ContextVar[bool] = ContextVar("svc_stub_recording", default=False)
"""Whether this request's span records: `child()` asks this, not OpenTelemetry's context."""
NEW_IDS_PER_DRAW = 512
_new_ids: list[str] = []
"""Request ids drawn from the kernel's random source but not handed out yet (`new_request_id`)."""
os.register_at_fork(after_in_child=_new_ids.clear)


def setup(service_name: str) -> None:
    """Turns telemetry on when `configured()`: the SDK's providers read the endpoint, headers,
    sampler, intervals and resource from the environment."""
    global _tracer, _sdk, _root_ratio
    if _tracer is not None or not configured():
        return
    try:
        from opentelemetry import metrics, trace
        from opentelemetry.propagate import extract

        install_providers(service_name)
    except ImportError:
        from svc_serving.extras import install_hint

        print(
            f"svc-stub: OTEL_* is set but OpenTelemetry is not installed (svc-mcp's otel extra): "
            f"{install_hint('otel', 'svc-stub')}; running without telemetry",
            file=sys.stderr,
        )
        return
    meter = metrics.get_meter("svc-stub")
    for name, description in (
        ("svc_stub.guard.failures", "Failed credentials the guard counted"),
        ("svc_stub.guard.lockouts", "Addresses the guard locked out"),
        ("svc_stub.guard.refused", "Requests refused by a lockout or the login flood limit"),
        ("svc_stub.storage.failures", "Failed database reads and writes, by fault class"),
    ):
        _counters[name] = meter.create_counter(name, description=description)
    _sdk = SimpleNamespace(
        extract=extract, server=trace.SpanKind.SERVER, error=trace.StatusCode.ERROR
    )
    _tracer = trace.get_tracer("svc-stub")
    if not sampler_named():
        _root_ratio = ROOT_SAMPLE_RATIO


def child(name: str, **attributes: str) -> AbstractContextManager[Any]:
    """A child span of the current request's (a shared no-op when telemetry is off)."""
    if not _recording.get():
        return _NOTHING
    return _tracer.start_as_current_span(name, attributes=attributes)  # type: ignore[no-any-return]


def count(name: str, **attributes: str) -> None:
    if _tracer is not None:
        _counters[name].add(1, attributes)


def request_id(scope: Scope) -> str:
    """The id an access line carries: the trace id when traced, else the caller's `X-Request-Id`
    (16 to 32 lower-case hex digits, so a line never carries anything else), else a new one."""
    traced_id = scope.get(TRACE_ID_KEY)
    if traced_id is not None:
        return str(traced_id)
    for key, value in scope["headers"]:
        if key == b"x-request-id" and _REQUEST_ID.fullmatch(value):
            return bytes(value).decode()
    return new_request_id()


def new_request_id() -> str:
    """16 random hex digits from `os.urandom`, drawn for `NEW_IDS_PER_DRAW` ids at once: one system
    call per draw where one per request cost as much as the rest of the access line. A forked
    child draws its own."""
    if not _new_ids:
        digits = os.urandom(8 * NEW_IDS_PER_DRAW).hex()
        _new_ids.extend(digits[start : start + 16] for start in range(0, len(digits), 16))
    return _new_ids.pop()


def records(traceparent: bytes | None) -> bool:
    """Whether a request with this `traceparent` header (None: none) gets a span: telemetry on,
    and the stub's own sampler (parent-based, roots `_root_ratio`) lets it in, or the SDK's
    sampler will decide (OTEL_TRACES_SAMPLER set). False costs no OpenTelemetry call."""
    return _tracer is not None and (_root_ratio is None or _sampled(traceparent))


async def request_span(
    app: ASGIApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    traceparent: bytes | None,
    tracestate: bytes | None,
) -> None:
    """`app` answering the request inside a SERVER span that continues the caller's trace, named
    by the matched route's template once routing has found it."""
    carrier = {} if traceparent is None else {"traceparent": traceparent.decode("latin-1")}
    if traceparent is not None and tracestate is not None:
        carrier["tracestate"] = tracestate.decode("latin-1")
    method = scope["method"]
    status = 500

    async def observed(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        await send(message)

    with _tracer.start_as_current_span(
        method,
        context=_sdk.extract(carrier) if carrier else None,
        kind=_sdk.server,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        scope[TRACE_ID_KEY] = format(span.get_span_context().trace_id, "032x")
        recording = _recording.set(span.is_recording())
        try:
            await app(scope, receive, observed)
        finally:
            _recording.reset(recording)
            if span.is_recording():
                route = scope.get("route")
                if isinstance(route, Route):
                    span.update_name(f"{method} {route.path}")
                    span.set_attribute("http.route", route.path)
                span.set_attributes(
                    {
                        "http.request.method": method,
                        "http.response.status_code": status,
                        "url.scheme": scope.get("scheme", "http"),
                    }
                )
                if status >= 500:
                    span.set_attribute("error.type", str(status))
                    span.set_status(_sdk.error)


def _sampled(traceparent: bytes | None) -> bool:
    """The stub's own sampler: parent-based, roots `_root_ratio`. A `traceparent` not of the W3C
    form counts as none."""
    match = None if traceparent is None else _TRACEPARENT.fullmatch(traceparent)
    if match is None:
        return sample_draw() < (_root_ratio or 0.0)
    return bool(int(match.group(1), 16) & 1)
