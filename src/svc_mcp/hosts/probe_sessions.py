"""How doctor proves an entry once it is started: it lists the tools, then calls one cheap read
tool per backend through it, over a stdio or a streamable-HTTP session, as its host would."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from svc_mcp.core.backends import PORTAL, SERVICE, Backend
from svc_mcp.core.failures import FailureKind
from svc_mcp.serve.confinement import line_in

if TYPE_CHECKING:
    from mcp import ClientSession

PROBE_TOOLS: dict[Backend, str] = {SERVICE: "get_system", PORTAL: "portal_whoami"}
"""The cheap read doctor calls through an entry to prove each backend: the data service's one
uses the token (once, as doctor's own check does), the portal's says whose session it is."""
_TOKEN_KINDS = frozenset({"unauthorized", "forbidden", "locked_out"})


@dataclass(frozen=True)
class Proof:
    """What an entry did once started: the tools it listed, and per backend the read through it
    that failed (one line each, with the fix) or what it said."""

    tools: int
    failures: list[tuple[FailureKind, str]] = field(default_factory=list)
    """(kind, line) for each read that failed."""
    notes: list[str] = field(default_factory=list)
    confinement: str | None = None
    """The entry's own start-up line on its confinement (stdio entries; a gateway's is in the
    gateway's log)."""


async def prove(
    session: ClientSession, backends: tuple[Backend, ...], env: Mapping[str, str] | None
) -> Proof:
    """Lists the tools, then calls each backend's read tool the entry has; `env` is what the
    entry's server gets (None: a gateway's, which doctor cannot see)."""
    listed = {tool.name for tool in (await session.list_tools()).tools}
    proof = Proof(len(listed))
    for backend in backends:
        tool = PROBE_TOOLS[backend]
        if tool not in listed:
            continue
        result = await session.call_tool(tool, {})
        error = result.structured_content if result.is_error else None
        if error is None:
            proof.notes.append(f"{tool} answered")
            continue
        kind, said = FailureKind.named(error.get("kind")), str(error.get("message", ""))
        has_token = env is not None and backend.token_source(env) is not None
        if backend is PORTAL and kind in ("unauthorized", "forbidden") and not has_token:
            whose = "the entry sets" if env is not None else "the gateway was given"
            proof.notes.append(f"portal anonymous ({whose} no {backend.token_names})")
            continue
        variable = backend.token_names if kind in _TOKEN_KINDS else backend.base_url_variable
        where = "in the entry's env" if env is not None else "in the gateway's environment"
        proof.failures.append(
            (kind, f"{tool} through it failed ({kind}: {said}); fix {variable} {where}")
        )
    return proof


async def stdio_session(
    command: str,
    args: list[str],
    env: dict[str, str],
    backends: tuple[Backend, ...],
    *,
    cwd: Path | None = None,
) -> Proof:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    server = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            proof = await prove(session, backends, env)
        errlog.seek(0)
        return replace(proof, confinement=line_in(errlog.read(1 << 16)))


async def http_session(
    url: str, headers: Mapping[str, str], backends: tuple[Backend, ...]
) -> Proof:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    try:
        async with (
            httpx2.AsyncClient(headers=headers, event_hooks={"response": [record]}) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await prove(session, backends, None)
    except Exception:
        refused = {401: "the gateway refused the token: HTTP 401", 403: "HTTP 403"}
        status = next((code for code in statuses if code >= 400), None)
        if status is None:
            raise
        raise RuntimeError(refused.get(status, f"HTTP {status}")) from None
