"""`svc-mcp demo`: the whole product in one command, on an embedded default.

It starts the portal and data service stubs as real processes with fresh demo data
(`svc_mcp.demo_stubs`), starts `svc-mcp` as a real stdio MCP server and drives it with the official
MCP client: lists the tools, calls each read tool, signs an intel envelope here (the signer holds
the key; svc-mcp never does) and submits it twice through `submit_intel`, then sends a wrong token
until the data service locks the address out and shows the `Retry-After` the agent was told.
`--keep-running` leaves the stubs up and prints what a shell and an MCP host need to use them.

Everything is stopped and the temporary directory removed on the way out, on success, failure or
Ctrl-C. Exit 0 on success (Ctrl-C is how `--keep-running` ends); 130 when Ctrl-C comes earlier;
otherwise one line on stderr with the exit code of its kind (`svc_client.exits`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import shlex
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent, Tool

from server_stub.intel.envelope import key_bytes, sign
from svc_client.exits import OneLineParser, fail
from svc_client.failures import FailureKind
from svc_mcp.demo_stubs import (
    DemoFailed,
    DemoStubs,
    clean_environment,
    first_exited,
    last_line,
    running_stubs,
    stop,
)
from svc_mcp.demo_view import View, open_view, summarize
from svc_mcp.hosts.entries import plain_entry
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.runners import launch_command, this_installation

if TYPE_CHECKING:
    from svc_mcp.demo_trace import Receiver

PROG = "svc-mcp demo"
MCP_COMMAND = (sys.executable, "-m", "svc_mcp")
"""How the demo runs svc-mcp, and the command of the host entry `--keep-running` prints."""
LOCKOUT_FAILURES = 8
"""The data service locks an address at its 8th counted failure (docs/api-service.md)."""
EXIT_INTERRUPTED = 130
MCP_LOG = "svc-mcp.log"
"""svc-mcp's stderr, in the temporary directory."""
TRACE_WAIT_SECONDS = 10
_REQUEST_ID = re.compile(r" \(request id [0-9a-f]+\)$")
_RETRY_AFTER = re.compile(r"retry after (\d+) seconds")


def main(args: Sequence[str]) -> None:
    options = _parser().parse_args(list(args))
    with _stop_signals_interrupt():
        code = run(keep_running=options.keep_running, trace=options.trace)
    raise SystemExit(code)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(  # one-line usage errors, like every svc-mcp command
        prog=PROG,
        description="Start the portal and data service stubs with demo data, drive svc-mcp over "
        "stdio with the official MCP client, and stop everything again.",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="leave the stubs up and print the environment and an MCP host config to use "
        "them, until Ctrl-C",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="run with OpenTelemetry on, into a receiver in this process, and print the trace "
        "of one call (needs svc-mcp's otel extra)",
    )
    return parser


def run(*, keep_running: bool, trace: bool = False) -> int:
    """The demo from start to clean-up; returns the exit code (failures exit from here)."""
    started = time.monotonic()
    try:
        with open_view() as view, _tracing(trace) as receiver:
            outcome = _demo(view, keep_running=keep_running, receiver=receiver)
            view.line(_closing(outcome, time.monotonic() - started))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted: stopped the stubs and removed their data", file=sys.stderr)
        return EXIT_INTERRUPTED
    except DemoFailed as error:
        fail(PROG, error.kind, str(error))
    return 0


@contextlib.contextmanager
def _tracing(on: bool) -> Iterator[Receiver | None]:
    """With `on`, a receiver on loopback, and the OTEL_* variables that make every process the
    demo starts export to it (restored afterwards)."""
    if not on:
        yield None
        return
    try:
        from svc_mcp.demo_trace import otel_env, receiving
    except ImportError:
        from svc_serving.extras import install_hint

        raise DemoFailed(
            f"--trace needs svc-mcp's otel extra: {install_hint('otel', 'svc-mcp demo --trace')}",
            FailureKind.MISCONFIGURED,
        ) from None
    with receiving() as receiver:
        variables = otel_env(receiver)
        saved = {name: os.environ.get(name) for name in variables}
        os.environ.update(variables)
        try:
            yield receiver
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _show_trace(view: View, receiver: Receiver) -> None:
    """The tree of the first get_system call, once its stub's spans have arrived too."""
    from svc_mcp.demo_trace import CLIENT_DURATION, tree

    def stub_spans_of_the_call(received: Receiver) -> str | None:
        for span in list(received.spans):
            if span.name == "tools/call get_system":
                names = {s.name for s in received.trace(span.trace_id)}
                if "sqlite.query" in names:  # the stub's child: its request span is done too
                    return span.trace_id
        return None

    deadline = time.monotonic() + TRACE_WAIT_SECONDS
    while (trace_id := stub_spans_of_the_call(receiver)) is None:
        if time.monotonic() > deadline:
            view.line(f"No trace of get_system arrived within {TRACE_WAIT_SECONDS} s.")
            return
        time.sleep(0.1)
    view.block(f"Trace {trace_id} of one call (get_system)", tree(receiver.trace(trace_id)))
    points = receiver.metrics.get(CLIENT_DURATION, [])
    if points:
        methods = ", ".join(sorted({point["mcp.method.name"] for point in points}))
        failures = ", ".join(sorted({p["error.type"] for p in points if "error.type" in p}))
        view.line(
            f"As the MCP client, the demo exported {CLIENT_DURATION}: {methods}"
            + (f"; error.type {failures}." if failures else ".")
        )
    view.line(
        "Each process exported its spans over OTLP/HTTP; set OTEL_EXPORTER_OTLP_ENDPOINT to "
        'send them to a collector instead (README "Observability").'
    )


def _demo(view: View, *, keep_running: bool, receiver: Receiver | None = None) -> Outcome:
    with contextlib.ExitStack() as stack:
        with view.step("Starting the portal and data service stubs", 1) as advance:
            stubs = stack.enter_context(running_stubs())
            advance()
        _show_stubs(view, stubs)
        try:
            with _client_durations(receiver) as duration:
                outcome = asyncio.run(_drive(stubs, view, duration))
        except (DemoFailed, KeyboardInterrupt):
            raise
        except BaseException as error:  # the SDK's task groups wrap what fails in groups
            raise _failure(error, stubs.root / MCP_LOG) from None
        stop([stubs.lockout])
        view.finish()
        if receiver is not None:
            _show_trace(view, receiver)
        if keep_running:
            _show_environment(view, stubs)
            _wait_for_ctrl_c(stubs)
    return outcome


@dataclass(frozen=True)
class Outcome:
    root: Path
    tools: int
    reads: int
    intel_id: str
    attempts: int
    retry_after: int


def _closing(outcome: Outcome, seconds: float) -> str:
    return (
        f"Done in {seconds:.1f} s: {outcome.tools} tools listed, {outcome.reads} read tools "
        f"called, intel {outcome.intel_id} stored then seen as a duplicate, locked out after "
        f"{outcome.attempts} wrong tokens (Retry-After {outcome.retry_after} s). "
        f"Stopped every process and removed {outcome.root}."
    )


# ------------------------------------------------------------------------------- the stubs


_STUB_ROLES = {
    "portal": "demo data; an auditor session for alice",
    "service": "auth on (generated token), intel intake on (generated key)",
    "lockout": "a second data service, for the wrong-token step",
}


def _show_stubs(view: View, stubs: DemoStubs) -> None:
    rows = [[stub.name, stub.base_url, str(stub.pid), _STUB_ROLES[stub.name]] for stub in stubs.all]
    view.table(f"Stubs (data in {stubs.root})", ["stub", "base URL", "pid", "set-up"], rows)


def _show_environment(view: View, stubs: DemoStubs) -> None:
    variables = stubs.mcp_variables()
    exports = [f"export {name}={shlex.quote(value)}" for name, value in variables.items()]
    view.block("Environment for svc-mcp and svc-portal", "\n".join(exports))
    svc_mcp, svc_portal, svc_stub = map(_program, ("svc-mcp", "svc-portal", "svc-stub"))
    view.line(f"Then try {svc_mcp} get_system or {svc_portal} identity whoami.")
    entry = plain_entry(_entry_command(), variables)
    view.block(
        "MCP host config", json.dumps({"mcpServers": {"svc": entry}}, indent=2), language="json"
    )
    view.line(
        "The entry svc-mcp install writes for this installation; svc-mcp install --client X puts "
        "one into a host's own file (install/README.md)."
    )
    view.block(
        "Signing intel (the key is for the signer, never for svc-mcp)",
        'echo \'{"source": "me", "kind": "note", "body": {}}\' | '
        f"SERVICE_INTEL_HMAC={shlex.quote(stubs.intel_key)} {svc_stub} intel sign --file - "
        f"> envelope.json\n{svc_mcp} submit_intel --file envelope.json",
    )
    view.line(
        f"Running: portal {stubs.portal.base_url}, data service {stubs.service.base_url}. "
        "Press Ctrl-C to stop them and remove the data."
    )


def _program(name: str) -> str:
    """This installation's command by its path, so a hint runs as printed (`uv` may be only
    `.venv/bin/uv`, and the venv not activated)."""
    return shlex.quote(str(Path(sys.executable).absolute().parent / name))


def _entry_command() -> list[str]:
    """The command `svc-mcp install` writes for this installation (`python -m svc_mcp` when it
    would refuse, e.g. run from uv's cache)."""
    try:
        return launch_command("here", this_installation(os.environ))
    except InstallError:
        return list(MCP_COMMAND)


def _wait_for_ctrl_c(stubs: DemoStubs) -> None:
    """Returns on Ctrl-C (the normal end of --keep-running); fails if a stub stops by itself."""
    try:
        while (exited := first_exited([stubs.portal, stubs.service])) is None:
            time.sleep(0.2)
    except KeyboardInterrupt:
        return
    raise DemoFailed(
        f"the {exited.name} stub stopped by itself (exit {exited.process.returncode}): "
        f"{exited.last_log_line() or 'no output'}"
    )


@contextlib.contextmanager
def _stop_signals_interrupt() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP (a closed terminal) end the demo with its clean-up.

    SIGINT gets Python's own handler even where it was ignored (a background job of a
    non-interactive shell), so Ctrl-C or `kill -INT` always stops the demo; the others raise it.
    """

    def interrupt(signum: int, frame: object) -> None:
        signal.raise_signal(signal.SIGINT)

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler)}
    hangup = getattr(signal, "SIGHUP", None)  # none on Windows
    for number in (signal.SIGTERM, *([hangup] if hangup else [])):
        previous[number] = signal.signal(number, interrupt)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


# --------------------------------------------------------------------------- the MCP client


def _client_durations(receiver: Receiver | None) -> contextlib.AbstractContextManager[Any]:
    if receiver is None:
        return contextlib.nullcontext()
    from svc_mcp.demo_trace import client_durations

    return client_durations(receiver)


async def _drive(stubs: DemoStubs, view: View, duration: Any = None) -> Outcome:
    """`duration`: the histogram each MCP request is recorded in, with --trace."""
    with (stubs.root / MCP_LOG).open("w") as errlog:
        async with _session(stubs.mcp_variables(), errlog, duration) as session:
            tools = await _list_tools(session, view)
            reads = await _call_reads(session, view, tools)
            intel_id = await _intel_round_trip(session, view, stubs.intel_key)
        wrong_token = "wrong-" + secrets.token_urlsafe(24)
        async with _session(stubs.lockout_variables(wrong_token), errlog, duration) as session:
            attempts, retry_after = await _lock_out(session, view)
    return Outcome(stubs.root, len(tools), reads, intel_id, attempts, retry_after)


@contextlib.asynccontextmanager
async def _session(
    variables: dict[str, str], errlog: TextIO, duration: Any = None
) -> AsyncIterator[ClientSession]:
    """svc-mcp over stdio with exactly these variables of ours (never the intel key)."""
    command, *args = MCP_COMMAND
    server = StdioServerParameters(
        command=command, args=args, env={**clean_environment(os.environ), **variables}
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
    from svc_mcp.demo_trace import MeasuredSession

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


def _failure(error: BaseException, log: Path) -> BaseException:
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
