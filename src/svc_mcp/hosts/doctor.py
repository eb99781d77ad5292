"""`svc-mcp doctor`: checks a user's set-up and says what to fix, one finding per line.

The backends of the selected toolsets (portal -> the portal, service -> the data service) are
*needed*: their settings must be valid, they must answer, and a token that is set (or that the
service requires) must be accepted. Each MCP host entry found is started as its host would start
it (its command with its env, or its URL with its headers), must answer the MCP handshake and list
its tools within the host's own start-up limit, and its time is reported; an entry that would fail
in the host is a failure, with the fix. Anything else (no session token, no host installed) is
advice.

The backends are proven through the tool rows, on the core's call path (the rows' paths, checks
and records): `portal_page` and `get_health`, `get_auth_status` without a token, then
`portal_whoami` and `get_system` with it. Each backend gets at most one request carrying its
token, never repeated, so a wrong token cannot walk into the data service's lockout. Tokens are
shown only as set or not set.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from svc_mcp.core.backends import BACKENDS, PORTAL, SERVICE, Backend, Toolset
from svc_mcp.core.calls import call_tool, payload_type
from svc_mcp.core.client import new_http_client
from svc_mcp.core.connection import Connection
from svc_mcp.core.errors import CallError, Misconfigured
from svc_mcp.core.failures import FailureKind
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.hosts.findings import Finding, failed, failure
from svc_mcp.hosts.probe import host_findings
from svc_mcp.hosts.table import current_platform
from svc_mcp.tools.table import TOOLS

AUTH_STATUS = "get_auth_status"
SERVICE_PROBE = "get_system"
"""The row of the one request that carries the service token."""
THIS_SHELL = "this shell"
"""How the backend lines are labelled: they use this shell's variables, not a host entry's."""


# ------------------------------------------------------------------------------------- settings


def _setting_findings(
    backend: Backend, connection: Connection, environ: Mapping[str, str]
) -> list[Finding]:
    base_from = backend.base_url_variable if environ.get(backend.base_url_variable) else None
    token_from = backend.token_source(environ)
    return [
        Finding(
            f"{backend.name}.base_url",
            "info",
            f"{connection.base_url} ({f'from {base_from}' if base_from else 'default'})",
            data={"value": connection.base_url, "source": base_from or "default"},
        ),
        Finding(
            f"{backend.name}.token",
            "info",
            f"set (from {token_from})"
            if token_from
            else f"not set ({' or '.join(backend.credential_variables)})",
            data={"set": token_from is not None, "source": token_from},
        ),
    ]


# ------------------------------------------------------------------------------------- backends


def _row(name: str) -> ToolSpec:
    return next(spec for spec in TOOLS if spec.name == name)


async def _portal(http: httpx.AsyncClient, portal: Connection) -> list[Finding]:
    try:
        await call_tool(_row("portal_page"), {}, http, anonymous=True)
    except CallError as error:
        return [failed("portal.answers", error)]
    findings = [Finding("portal.answers", "ok", f"the portal answers at {portal.base_url}")]
    if portal.token is None:
        note = f"anonymous: only approved public surfaces; set {PORTAL.token_names} to sign in"
        return [*findings, Finding("portal.identity", "info", note)]
    try:
        identity = (await call_tool(_row("portal_whoami"), {}, http)).data
    except CallError as error:
        return [*findings, failed("portal.identity", error)]
    who = {key: str(identity.get(key)) for key in ("id", "kind", "role")}
    message = f"signed in as {who['id']} ({who['kind']}, role {who['role']})"
    return [*findings, Finding("portal.identity", "ok", message, data=who)]


async def _service(http: httpx.AsyncClient, service: Connection) -> list[Finding]:
    try:
        await call_tool(_row("get_health"), {}, http, anonymous=True)
        status = await call_tool(_row(AUTH_STATUS), {}, http, anonymous=True)
    except CallError as error:
        return [failed("service.answers", error)]
    findings = [Finding("service.answers", "ok", f"the data service answers at {service.base_url}")]
    # The record as the row's model reads it (a checked payload is passed on as sent).
    if not payload_type(_row(AUTH_STATUS)).validate_python(status.data).auth_required:
        message = "the data service requires no token" + (
            " (the one set is not needed, so it was not sent)" if service.token else ""
        )
        return [*findings, Finding("service.auth", "ok", message, data={"auth_required": False})]
    if service.token is None:
        message = f"the data service requires a token and none is set: set {SERVICE.token_names}"
        return [
            *findings,
            failure("service.auth", FailureKind.UNAUTHORIZED, message, auth_required=True),
        ]
    probe = _row(SERVICE_PROBE)
    try:  # The only request with the token; never repeated (see the module docstring).
        await call_tool(probe, {}, http)
    except CallError as error:
        return [*findings, failed("service.auth", error)]
    message = (
        f"the data service requires a token and accepts the one set ({probe.method} {probe.path})"
    )
    return [*findings, Finding("service.auth", "ok", message, data={"auth_required": True})]


BackendCheck = Callable[[httpx.AsyncClient, Connection], Coroutine[Any, Any, list[Finding]]]
_CHECKS: dict[Backend, BackendCheck] = {PORTAL: _portal, SERVICE: _service}


async def _check_backends(
    checks: Sequence[tuple[BackendCheck, Connection]],
) -> list[list[Finding]]:
    async with new_http_client() as http:
        return await asyncio.gather(*(check(http, connection) for check, connection in checks))


def _read(backend: Backend) -> Connection | Finding:
    try:
        connection = backend.connect()
    except Misconfigured as error:
        return failed(f"{backend.name}.settings", error)
    return connection


# ------------------------------------------------------------------------------------ running


def diagnose(
    toolsets: Collection[Toolset], name: str | None, *, trust_project: bool = False
) -> list[Finding]:
    """All findings in a stable order: per backend this shell's settings and checks, then the
    hosts' entries, each proven with its own settings.

    The shell's lines say what `svc-mcp` run here would reach. Once a host's entry has been
    checked with its own settings, the hosts do not depend on them: their failures are then
    warnings, and the entries' own decide."""
    environ = os.environ
    reads = [(backend, _read(backend)) for backend in BACKENDS if backend.toolset in toolsets]
    checks = [(_CHECKS[b], read) for b, read in reads if isinstance(read, Connection)]
    results = iter(asyncio.run(_check_backends(checks)))
    shell: list[Finding] = []
    for backend, read in reads:
        if isinstance(read, Finding):
            shell.append(read)
        else:
            shell += _setting_findings(backend, read, environ)
            shell += next(results)
    hosts = host_findings(
        name,
        home=Path.home(),
        cwd=Path.cwd(),
        platform=current_platform(),
        environ=environ,
        trust_project=trust_project,
        toolsets=toolsets,
    )
    checked = any(f.check.startswith("host.") and f.status in ("ok", "fail") for f in hosts)
    return [_this_shells(finding, advisory=checked) for finding in shell] + hosts


def _this_shells(finding: Finding, *, advisory: bool) -> Finding:
    """The finding labelled as this shell's (`environment`); a warning once an entry is proven."""
    labelled = replace(finding, data={**finding.data, "environment": THIS_SHELL})
    if advisory and finding.status == "fail":
        note = " (only svc-mcp run here needs this: the host entries carry their own settings)"
        return replace(labelled, status="warn", kind=None, message=finding.message + note)
    return labelled
