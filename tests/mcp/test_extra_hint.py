"""Where svc-mcp's otel extra is missing, the message says the command that installs it from where
it runs (issue 35): `uv run --extra otel` in a checkout, else the extra's packages by name into
this environment; never `pip install 'svc-mcp[otel]'`, which no index can answer yet."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from svc_serving import extras
from tests.support import ROOT

# Runs `setup` with OpenTelemetry's SDK made unimportable, as where the extra is not installed.
WITHOUT_SDK = textwrap.dedent(
    """
    import sys
    class NoSdk:
        def find_spec(self, name, path=None, target=None):
            if name.startswith(("opentelemetry.sdk", "opentelemetry.exporter")):
                raise ImportError(name)
    sys.meta_path.insert(0, NoSdk())
    from {module} import setup
    setup("x")
    """
)


@pytest.mark.parametrize(
    ("module", "prog"),
    [("svc_mcp.core.telemetry", "svc-mcp"), ("server_stub.telemetry", "svc-stub")],
)
@pytest.mark.e2e
def test_a_checkout_is_told_uv_run_with_the_extra(module: str, prog: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_SDK.format(module=module)],
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert f"run `uv run --extra otel {prog} ...`" in done.stderr, done.stderr
    assert str(ROOT) in done.stderr
    assert "svc-mcp[otel]" not in done.stderr


def test_elsewhere_the_extras_packages_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "checkout", lambda: None)
    hint = extras.install_hint("otel", "svc-mcp")
    assert "'opentelemetry-sdk>=1.30'" in hint
    assert "'opentelemetry-exporter-otlp-proto-http>=1.30'" in hint
    assert sys.executable in hint
    assert "svc-mcp[otel]" not in hint


def test_the_extras_packages_are_those_pyproject_lists() -> None:
    assert sorted(extras.extra_requirements("otel")) == [
        "opentelemetry-exporter-otlp-proto-http>=1.30",
        "opentelemetry-sdk>=1.30",
    ]
