"""The confinement of the stdio MCP server and the `--http` gateway: no file writes, reads only
the installation, the runtime, the trust store and the resolver's files, TCP connect only to the
backends' ports and the OTLP endpoint's (README "Security notes").
`SVC_MCP_CONFINEMENT` = auto | require | off."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from svc_mcp.core.backends import BACKENDS
from svc_mcp.core.errors import Misconfigured
from svc_mcp.serve.views import load_assets
from svc_serving.confine import Policy, confine, status
from svc_serving.otel_settings import otlp_ports

SETTING = "SVC_MCP_CONFINEMENT"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LINE = re.compile(r"^svc-mcp(?: --http)?: (?:confined|unconfined|refusing to start)\b")


def backend_ports() -> tuple[int, ...]:
    """The TCP ports of the configured backends' base URLs (a misconfigured one has none: its
    calls fail before they connect)."""
    ports = set()
    for backend in BACKENDS:
        try:
            parts = urlsplit(backend.connect().base_url)
        except Misconfigured:
            continue
        ports.add(parts.port or _DEFAULT_PORTS[parts.scheme])
    return tuple(sorted(ports))


def connect_ports() -> tuple[int, ...]:
    """The backends' ports and, when telemetry is configured, the OTLP endpoint's."""
    return tuple(sorted({*backend_ports(), *otlp_ports()}))


def stdio_policy() -> Policy:
    return Policy(process="svc-mcp", connect_ports=connect_ports())


def gateway_policy() -> Policy:
    """The gateway confines itself after its listening socket is bound, so it binds nothing."""
    return Policy(process="svc-mcp --http", connect_ports=connect_ports())


def confine_stdio_server() -> None:
    load_assets()  # what serving reads from the installation, read while it still may
    confine(stdio_policy(), SETTING)


def confine_gateway() -> None:
    load_assets()
    confine(gateway_policy(), SETTING)


def status_line() -> str:
    """The confinement an stdio server started with this environment applies, as its start-up
    line states it (for doctor)."""
    return status(stdio_policy(), SETTING)


def line_in(stderr: str) -> str | None:
    """The confinement line a started svc-mcp wrote to `stderr` (for doctor's report of an
    entry it starts), or None when it wrote none (an older svc-mcp)."""
    return next((line for line in stderr.splitlines() if _LINE.match(line)), None)
