"""The confinement of the stdio MCP server and the `--http` gateway: no file writes, reads only
the installation, the runtime, the trust store, the resolver's files and the folders of the
backends' token files, TCP connect only to the
backends' ports and the OTLP endpoint's, new sockets TCP only (UDP too when a backend is named by a
host name, for the resolver) (README "Security notes").
`SVC_MCP_CONFINEMENT` = auto | require | off."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from svc_mcp.core.backends import BACKENDS
from svc_mcp.core.errors import Misconfigured
from svc_mcp.serve.views import load_assets
from svc_serving.confine import Policy, confine, status
from svc_serving.confine_line import CONFINED, outcome_of
from svc_serving.otel_settings import otlp_endpoints, otlp_ports
from svc_serving.socket_filter import resolver_needed

if TYPE_CHECKING:
    from svc_mcp.serve.oauth.settings import OAuthSettings

SETTING = "SVC_MCP_CONFINEMENT"
_DEFAULT_PORTS = {"http": 80, "https": 443}
STDIO, GATEWAY = "svc-mcp", "svc-mcp --http"
PROCESSES = (STDIO, GATEWAY)
"""How the two confine themselves by name, on their start-up line."""


def backend_urls() -> list[str]:
    """The configured backends' base URLs (a misconfigured one has none: its calls fail before
    they connect)."""
    urls = []
    for backend in BACKENDS:
        try:
            urls.append(backend.address())
        except Misconfigured:
            continue
    return urls


def backend_ports() -> tuple[int, ...]:
    """The TCP ports of the configured backends' base URLs."""
    ports = set()
    for url in backend_urls():
        parts = urlsplit(url)
        ports.add(parts.port or _DEFAULT_PORTS[parts.scheme])
    return tuple(sorted(ports))


def token_file_folders() -> tuple[Path, ...]:
    """The folders of the token files set: read at each call, and replaced by a rename, so the
    folder and not the file is what stays readable."""
    paths = (os.environ.get(backend.token_file_variable, "").strip() for backend in BACKENDS)
    return tuple(sorted({Path(os.path.abspath(path)).parent for path in paths if path}))


def connect_ports() -> tuple[int, ...]:
    """The backends' ports and, when telemetry is configured, the OTLP endpoint's."""
    return tuple(sorted({*backend_ports(), *otlp_ports()}))


def resolver_is_needed() -> bool:
    """A backend, or an OTLP endpoint when tracing is on, named by a host name: DNS (UDP) must
    stay possible. Resolving before confining would pin an address a name may change."""
    return resolver_needed([*backend_urls(), *otlp_endpoints()])


def stdio_policy() -> Policy:
    return Policy(
        process=STDIO,
        reads=token_file_folders(),
        connect_ports=connect_ports(),
        datagrams=resolver_is_needed(),
    )


def gateway_policy(oauth: OAuthSettings | None = None) -> Policy:
    """The gateway confines itself after its listening sockets (TCP or `--uds`) are bound, so it
    binds nothing and opens no Unix socket; it keeps accepting on them. With OAuth it also
    reaches the issuer's port (discovery and its key set), by name when the issuer has one."""
    ports = connect_ports() if oauth is None else (*connect_ports(), oauth.issuer_port)
    issuer = [] if oauth is None else [oauth.issuer]
    return Policy(
        process=GATEWAY,
        reads=token_file_folders(),
        connect_ports=tuple(sorted(set(ports))),
        datagrams=resolver_is_needed() or resolver_needed(issuer),
        socket_owners=True,  # admission counts a loopback peer under the user owning its socket
    )


def confine_stdio_server() -> None:
    load_assets()  # what serving reads from the installation, read while it still may
    confine(stdio_policy(), SETTING)


def confine_gateway(oauth: OAuthSettings | None = None) -> None:
    load_assets()
    confine(gateway_policy(oauth), SETTING)


def status_line() -> str:
    """The confinement an stdio server started with this environment applies, as its start-up
    line states it (for doctor)."""
    return status(stdio_policy(), SETTING)


def line_in(stderr: str) -> str | None:
    """The confinement line a started svc-mcp wrote to `stderr` (for doctor's report of an
    entry it starts), or None when it wrote none (an older svc-mcp)."""
    return next((line for line in stderr.splitlines() if outcome_of(line, PROCESSES)), None)


def says_confined(line: str) -> bool:
    """Whether a confinement line of svc-mcp says it runs confined."""
    return outcome_of(line, PROCESSES) == CONFINED
