"""The confined processes may connect to the OTLP endpoint's port, and only when telemetry is
configured (the end-to-end telemetry tests run them confined and exporting)."""

from __future__ import annotations

from pathlib import Path

import pytest

from server_stub.confinement import portal_policy, service_policy
from svc_mcp.serve.confinement import gateway_policy, stdio_policy


def test_the_otlp_port_is_allowed_only_when_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SERVICE_API_BASE", "http://127.0.0.1:8080")
    monkeypatch.setenv("PORTAL_API_BASE", "http://127.0.0.1:8081")
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    policies = (
        stdio_policy,
        gateway_policy,
        lambda: portal_policy(tmp_path, 8081),
        lambda: service_policy(tmp_path / "db", 8080),
    )
    assert all(4999 not in policy().connect_ports for policy in policies)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4999")
    assert all(4999 in policy().connect_ports for policy in policies)
    assert service_policy(tmp_path / "db", 8080).connect_ports == (4999,)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert all(4999 not in policy().connect_ports for policy in policies)
