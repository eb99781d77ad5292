"""Starting one prepared entry as its host would, within the host's start-up limit, and the
finding that says what it did."""

from __future__ import annotations

import time

import anyio

from svc_mcp.core.connection import redact
from svc_mcp.core.failures import FailureKind
from svc_mcp.hosts.findings import Finding, failure
from svc_mcp.hosts.probe_prepare import Start
from svc_mcp.serve.confinement import says_confined


async def start_entry(start: Start) -> Finding:
    """Starts the entry as the host would (its exact command with its env, or its URL with its
    headers), completes the MCP handshake, lists the tools within the host's own start-up limit
    and calls one read per backend through it. Anything that would fail in the host is a failure
    here, with the fix."""
    host = start.host
    check, where, what, data = start.check, start.where, start.what, start.data
    limit = start.limit
    began = time.monotonic()
    try:
        with anyio.fail_after(limit):
            proof = await start.start()
    except TimeoutError:
        message = (
            f"{where}: {what} did not list its tools within {limit:g} s, {host.label}'s limit; "
            f"{start.fix} (the default source starts fastest)"
        )
        return failure(check, FailureKind.MISCONFIGURED, message, **data)
    except Exception as exc:  # whatever stops it, the host would fail the same way
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and cause.exceptions:  # a task group's cause
            cause = cause.exceptions[0]
        said = redact(str(cause), start.secrets)
        reason = " ".join(said.split())[:200] or type(cause).__name__
        message = (
            f"{where}: {what} did not answer as an MCP server ({reason}); {start.fix}{start.notes}"
        )
        return failure(check, FailureKind.MISCONFIGURED, message, **data)
    seconds = time.monotonic() - began
    data = data | {"seconds": round(seconds, 2), "tools": proof.tools}
    if proof.failures:
        lines = "; ".join(redact(line, start.secrets) for _, line in proof.failures)
        message = f"{where}: {what} started, but {lines}{start.notes}"
        return failure(check, proof.failures[0][0], message, **data)
    message = f"{where}: {what} listed {proof.tools} tools in {seconds:.1f} s (limit {limit:g} s)"
    if proof.notes:
        message += "; " + "; ".join(redact(note, start.secrets) for note in proof.notes)
    if start.show_env is not None:
        message += f"; env: {start.show_env or 'none'}"
    message += start.notes
    if proof.confinement is None:
        return Finding(check, "ok", message, data=data)
    # Its own line says how it confined itself; unconfined is a warning (README "Security").
    message += f"; {proof.confinement}"
    return Finding(check, "ok" if says_confined(proof.confinement) else "warn", message, data=data)
