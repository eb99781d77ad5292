"""`install` copies the telemetry settings into a host entry like the backends' variables, and
never a collector's headers (docs/observability.md)."""

from __future__ import annotations

import sys

import pytest

from tests.install.conftest import Home, RunCli, servers_of

UVX = sys.executable  # any executable file stands in for uvx where nothing runs it
COLLECTOR = "http://127.0.0.1:4318"


@pytest.mark.parametrize("client", ["gemini", "cursor"])
def test_otel_settings_reach_the_entry_but_headers_do_not(
    client: str, fake_home: Home, run_cli: RunCli
) -> None:
    environment = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": COLLECTOR,
        "OTEL_EXPORTER_OTLP_HEADERS": "api-key=collector-secret-0123456789",
        "OTEL_SERVICE_NAME": "svc-mcp-desk",
    }
    result = run_cli(
        "install",
        "--client",
        client,
        "--source",
        "github",
        "--uvx",
        UVX,
        "--env",
        "OTEL_TRACES_SAMPLER=parentbased_traceidratio",
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    env = servers_of(client, fake_home.user_file(client))["svc"]["env"]
    assert env == {
        "OTEL_EXPORTER_OTLP_ENDPOINT": COLLECTOR,
        "OTEL_SERVICE_NAME": "svc-mcp-desk",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
    }
    assert "collector-secret" not in fake_home.user_file(client).read_text()
