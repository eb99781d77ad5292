"""The demo's MCP session (`svc-mcp demo`, svc_mcp.demo.run): svc-mcp over stdio driven by the
official MCP client, against the stubs; what it did, or why it failed."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent, Tool

from server_stub.intel.envelope import key_bytes, sign
from svc_mcp.core.failures import FailureKind
from svc_mcp.demo.stubs import DemoFailed, DemoStubs, clean_environment, last_line
from svc_mcp.demo.view import View, summarize

if TYPE_CHECKING:
    from svc_mcp.demo.trace import Receiver

LOCKOUT_FAILURES = 8
"""The data service locks an address at its 8th counted failure (docs/api-service.md)."""
MCP_LOG = "svc-mcp.log"
"""svc-mcp's stderr, in the temporary directory."""
_REQUEST_ID = re.compile(r" \(request id [0-9a-f]+\)$")
_RETRY_AFTER = re.compile(r"retry after (\d+) seconds")


@dataclass(frozen=True)
class Outcome:
    root: Path
    tools: int
    reads: int
    intel_id: str
    attempts: int
    retry_after: int


def client_durations(receiver: Receiver | None) -> contextlib.AbstractContextManager[Any]:
    if receiver is None:
        return contextlib.nullcontext()
    from svc_mcp.demo.trace import client_durations

    return client_durations(receiver)


async def drive(
    stubs: DemoStubs, view: View, command: Sequence[str], duration: Any = None
) -> Outcome:
    """The session against the stubs, svc-mcp run as `command`; `duration`: the histogram each
    MCP request is recorded in, with --trace."""
    with (stubs.root / MCP_LOG).open("w") as errlog:
        async with _session(command, stubs.mcp_variables(), errlog, duration) as session:
            tools = await _list_tools(session, view)
            reads = await _call_reads(session, view, tools)
            intel_id = await _intel_round_trip(session, view, stubs.intel_key)
        wrong_token = "wrong-" + secrets.token_urlsafe(24)
        async with _session(
            command, stubs.lockout_variables(wrong_token), errlog, duration
        ) as session:
            attempts, retry_after = await _lock_out(session, view)
    return Outcome(stubs.root, len(tools), reads, intel_id, attempts, retry_after)


@contextlib.asynccontextmanager
async def _session(
    command: Sequence[str], variables: dict[str, str], errlog: TextIO, duration: Any = None
) -> AsyncIterator[ClientSession]:
    """svc-mcp over stdio with exactly these variables of ours (never the intel key)."""
    program, *args = command
    server = StdioServerParameters(
        command=program, args=args, env={**clean_environment(os.environ), **variables}
    )
    async with (
        stdio_client(server, errlog=errlog) as (read, write),
        _client_session(read, write, duration) as session,
    ):
        await session.initialize()
        yield session


def _client_session(read: Any, write: Any, duration: Any) -> ClientSession:
    if duration is None:
        return ClientSession(read, write)
    from svc_mcp.demo.trace import MeasuredSession

    return MeasuredSession(read, write, duration=duration)


async def _list_tools(session: ClientSession, view: View) -> list[Tool]:
    with view.step("Listing the tools over stdio", 1) as advance:
        tools = (await session.list_tools()).tools
        advance()
    rows = [[tool.name, "read" if _reads(tool) else "write", tool.title or ""] for tool in tools]
    view.table(f"Tools svc-mcp serves ({len(tools)})", ["tool", "kind", "title"], rows)
    return tools


def _reads(tool: Tool) -> bool:
    return tool.annotations is not None and tool.annotations.read_only_hint is True


async def _call_reads(session: ClientSession, view: View, tools: Sequence[Tool]) -> int:
    reads = [tool for tool in tools if _reads(tool)]
    rows = []
    with view.step("Calling each read tool", len(reads)) as advance:
        for tool in reads:
            result = _succeeded(tool.name, await session.call_tool(tool.name, {}))
            rows.append([tool.name, summarize(result.structured_content)])
            advance()
    view.table("Read tools, one call each (as the auditor alice)", ["tool", "result"], rows)
    return len(reads)


async def _intel_round_trip(session: ClientSession, view: View, intel_key: str) -> str:
    with view.step("Signing intel and submitting it twice", 3) as advance:
        envelope = _signed_envelope(intel_key)
        first = _structured("submit_intel", await session.call_tool("submit_intel", _arg(envelope)))
        advance()
        listed = _structured("get_intel", await session.call_tool("get_intel", {}))
        advance()
        again = _structured("submit_intel", await session.call_tool("submit_intel", _arg(envelope)))
        advance()
    intel_id = str(envelope["id"])
    stored = next((item for item in listed.get("result", []) if item.get("id") == intel_id), None)
    if first.get("duplicate") is not False or stored is None or again.get("duplicate") is not True:
        raise DemoFailed(
            f"the intel round trip went wrong: first {first}, listed {stored}, again {again}"
        )
    rows = [
        ["sign (in this process)", f"{intel_id}, signed with the service's key"],
        ["submit_intel", f"stored: duplicate={first['duplicate']} at {first['received_at']}"],
        ["get_intel", f"{stored['kind']} from {stored['source']}: {json.dumps(stored['body'])}"],
        ["submit_intel again", f"duplicate={again['duplicate']}, nothing new stored"],
    ]
    view.table("Signed intel through submit_intel", ["step", "what happened"], rows)
    return intel_id


def _signed_envelope(intel_key: str) -> dict[str, Any]:
    now = datetime.now(UTC)
    draft = {
        "source": "svc-mcp-demo",
        "kind": "note",
        "expires_at": (now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "body": {"symbol": "AAPL", "view": "long", "note": "signed by the demo"},
    }
    return sign(draft, key_bytes(intel_key), now)


def _arg(envelope: dict[str, Any]) -> dict[str, Any]:
    return {"envelope": envelope}


async def _lock_out(session: ClientSession, view: View) -> tuple[int, int]:
    """get_system with a wrong token until the service answers locked_out; the attempts made and
    the Retry-After the agent was told."""
    answers: list[str] = []
    with view.step("Sending a wrong token until the lockout", LOCKOUT_FAILURES) as advance:
        while len(answers) < LOCKOUT_FAILURES + 2:
            result = await session.call_tool("get_system", {})
            answers.append(_text(result))
            advance()
            if answers[-1].startswith("locked_out:"):
                break
            if not (result.is_error and answers[-1].startswith("unauthorized:")):
                raise DemoFailed(f"a wrong token got {answers[-1][:200]!r}, not unauthorized")
    match = _RETRY_AFTER.search(answers[-1])
    if not answers[-1].startswith("locked_out:") or match is None:
        raise DemoFailed(f"no lockout with a Retry-After after {len(answers)} wrong tokens")
    retry_after = int(match.group(1))
    view.table(
        "Wrong token: get_system over a second svc-mcp session",
        ["try", "error", "told"],
        _attempt_rows(answers),
    )
    view.panel(
        "Locked out",
        [
            f"After {len(answers)} wrong tokens the data service locked this address out.",
            f"The agent was told: retry after {retry_after} seconds (the Retry-After header).",
            "svc-mcp never retries a 429 by itself, so a wrong token cannot walk deeper into it.",
            "The lockout hit a second service instance; the first one stays usable.",
        ],
    )
    return len(answers), retry_after


def _attempt_rows(answers: Sequence[str]) -> list[list[str]]:
    """One row per try: the error kind and what the agent was told (a repeat says so; each
    request's id differs, the rest of a repeat does not)."""
    rows = []
    untagged = [_REQUEST_ID.sub("", text) for text in answers]
    for attempt, text in enumerate(answers, start=1):
        kind, _, told = text.partition(": ")
        repeated = attempt > 1 and untagged[attempt - 1] == untagged[attempt - 2]
        rows.append([str(attempt), kind, "(the same)" if repeated else told])
    return rows


def failure(error: BaseException, log: Path) -> BaseException:
    """What to raise for an error out of the MCP sessions: the demo's own failure or Ctrl-C
    when the groups hold one, otherwise a DemoFailed naming the error and svc-mcp's last line."""
    leaves = list(_leaves(error))
    for leaf in leaves:
        if isinstance(leaf, DemoFailed | KeyboardInterrupt):
            return leaf
    said = last_line(log)
    return DemoFailed(
        f"the MCP session with svc-mcp failed ({type(leaves[0]).__name__}: {leaves[0]})"
        + (f"; svc-mcp said: {said}" if said else "")
    )


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def _text(result: CallToolResult) -> str:
    return " ".join(part.text for part in result.content if isinstance(part, TextContent))


def _succeeded(name: str, result: CallToolResult) -> CallToolResult:
    if result.is_error:
        text = _text(result)
        kind = text.split(":", 1)[0]
        raise DemoFailed(
            f"{name} failed: {text}",
            FailureKind.named(kind),
        )
    return result


def _structured(name: str, result: CallToolResult) -> dict[str, Any]:
    content: dict[str, Any] | None = _succeeded(name, result).structured_content
    if content is None:
        raise DemoFailed(f"{name} returned no structured result")
    return content
