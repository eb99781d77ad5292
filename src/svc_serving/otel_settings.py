"""The one reader of the standard `OTEL_*` settings, for the client side and the stubs alike:
whether telemetry is on, the endpoints its exporters reach and their ports (for the Landlock
policies and the resolver's sockets), whether the process samples its roots itself, and the SDK's
providers built from the environment.

Reading settings costs no OpenTelemetry import; `install_providers` imports the SDK and the
OTLP/HTTP exporters (the `svc-mcp[otel]` extra) and raises ImportError without them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

ENABLING_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
)
"""Any of these set (and OTEL_SDK_DISABLED not true) turns telemetry on."""

_OTLP_DEFAULT_PORT = 4318


def configured(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(env.get(name, "").strip() for name in ENABLING_VARIABLES) and not all(
        env.get(name, "").strip().lower() == "none"
        for name in ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER")
    )


def otlp_endpoints(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The URLs the exporters will send to when telemetry is configured (a signal's own endpoint,
    else the general one, else the SDK's default); none when it is off."""
    env = os.environ if environ is None else environ
    if not configured(env):
        return ()
    general = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return tuple(
        sorted(
            {
                env.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT", "").strip() or general
                for signal in ("TRACES", "METRICS")
            }
        )
    )


def otlp_ports(environ: Mapping[str, str] | None = None) -> tuple[int, ...]:
    """The TCP ports the exporters will connect to when telemetry is configured (for the
    Landlock policies); none when it is off."""
    ports = set()
    for url in otlp_endpoints(environ):
        try:
            parts = urlsplit(url)
            ports.add(parts.port or {"https": 443}.get(parts.scheme, _OTLP_DEFAULT_PORT))
        except ValueError:
            continue
    return tuple(sorted(ports))


def sampler_named(environ: Mapping[str, str] | None = None) -> bool:
    """OTEL_TRACES_SAMPLER is set: the SDK's sampler decides, the process does not sample its
    roots itself."""
    return bool((os.environ if environ is None else environ).get("OTEL_TRACES_SAMPLER", "").strip())


def install_providers(service_name: str) -> None:
    """The SDK's tracer and meter providers, each unless its exporter is `none`; they read
    endpoint, headers, sampler, intervals and resource from the environment, and
    OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES win over `service_name`."""
    from opentelemetry import metrics, trace
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: service_name}
    resource = Resource.create(named)
    if os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() != "none":
        tracer_provider = TracerProvider(resource=resource)  # sampler from OTEL_TRACES_SAMPLER
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(tracer_provider)
    if os.environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() != "none":
        reader = PeriodicExportingMetricReader(OTLPMetricExporter())
        metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))
