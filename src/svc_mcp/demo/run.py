"""`svc-mcp demo`: the whole product in one command, on an embedded default.

It starts the portal and data service stubs as real processes with fresh demo data
(`svc_mcp.demo.stubs`), starts `svc-mcp` as a real stdio MCP server and drives it with the official
MCP client: lists the tools, calls each read tool, signs an intel envelope here (the signer holds
the key; svc-mcp never does) and submits it twice through `submit_intel`, then sends a wrong token
until the data service locks the address out and shows the `Retry-After` the agent was told.
`--keep-running` leaves the stubs up and prints what a shell and an MCP host need to use them.

Everything is stopped and the temporary directory removed on the way out, on success, failure or
Ctrl-C. Exit 0 on success (Ctrl-C is how `--keep-running` ends); 130 when Ctrl-C comes earlier;
otherwise one line on stderr with the exit code of its kind (`svc_mcp.core.exits`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from svc_mcp.core.exits import OneLineParser, fail
from svc_mcp.core.failures import FailureKind
from svc_mcp.demo.session import MCP_LOG, Outcome, client_durations, drive, failure
from svc_mcp.demo.stubs import (
    DemoFailed,
    DemoStubs,
    first_exited,
    running_stubs,
    stop,
)
from svc_mcp.demo.view import View, open_view
from svc_mcp.hosts.entries import plain_entry
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.runners import launch_command, runner_env, this_installation
from svc_serving.help_style import argparse_formatter

if TYPE_CHECKING:
    from svc_mcp.demo.trace import Receiver

PROG = "svc-mcp demo"
MCP_COMMAND = (sys.executable, "-m", "svc_mcp")
"""How the demo runs svc-mcp, and the command of the host entry `--keep-running` prints."""
EXIT_INTERRUPTED = 130
TRACE_WAIT_SECONDS = 10


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
        formatter_class=argparse_formatter,
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
        from svc_mcp.demo.trace import otel_env, receiving
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
    from svc_mcp.demo.trace import CLIENT_DURATION, tree

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
            with client_durations(receiver) as duration:
                outcome = asyncio.run(drive(stubs, view, MCP_COMMAND, duration))
        except (DemoFailed, KeyboardInterrupt):
            raise
        except BaseException as error:  # the SDK's task groups wrap what fails in groups
            raise failure(error, stubs.root / MCP_LOG) from None
        stop([stubs.lockout])
        view.finish()
        if receiver is not None:
            _show_trace(view, receiver)
        if keep_running:
            _show_environment(view, stubs)
            _wait_for_ctrl_c(stubs)
    return outcome


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
    command = _entry_command()
    entry = plain_entry(command, {**variables, **runner_env(command)})
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
