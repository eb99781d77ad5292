"""A stop never cuts a call (issue 33, findings 3 and 10): SIGTERM of the `--http` gateway, and
SIGTERM or stdin EOF of the stdio server, while calls wait on a slow fake backend. Real processes,
the official MCP client; every call in flight gets its answer or a typed, retryable tool error,
and the process exits 0 without a traceback."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from svc_mcp.core.failures import FailureKind
from tests.hardening.fake_backend import ARRIVALS, LATE_SECONDS, fake_backend
from tests.mcp.conftest import SERVICE_TOKEN, SVC_MCP, process_env
from tests.support import PORT, running_server

pytestmark = pytest.mark.e2e

CALLS = 20
SLOTS = 16


def backend_env(base: str, mode: str, timeout: str) -> dict[str, str]:
    return process_env(
        {
            "SERVICE_API_BASE": f"{base}/{mode}",
            "SERVICE_API_TOKEN": SERVICE_TOKEN,
            "PORTAL_API_BASE": base,
            "SVC_MCP_TIMEOUT_SECONDS": timeout,
        }
    )


def outcome(structured: dict[str, Any] | None, is_error: bool) -> str:
    """ "ok", or the kind of a typed error that says retrying is safe; anything else as it is."""
    if not is_error:
        return "ok"
    structured = structured or {}
    kind = FailureKind.named(structured.get("kind"))
    if kind.retryable and "retrying is safe" in str(structured.get("message")):
        return kind
    return f"untyped: {structured}"


async def wait_arrivals(mode: str, count: int) -> None:
    deadline = time.monotonic() + 20
    while ARRIVALS[mode] < count:
        assert time.monotonic() < deadline, "the calls never reached the backend"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize(
    ("mode", "timeout", "expected"),
    [("late", "10", {"ok"}), ("hang", "6", {FailureKind.UNREACHABLE, FailureKind.UNAVAILABLE})],
)
def test_sigterm_of_the_gateway_answers_every_call_in_flight(
    tmp_path: Path, mode: str, timeout: str, expected: set[str]
) -> None:
    with (
        fake_backend() as base,
        running_server(
            ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
            log_path=tmp_path / "gateway.log",
            ready_path="/mcp",
            env=backend_env(base, mode, timeout),
        ) as gateway,
    ):
        url = f"{gateway.base_url}/mcp"

        async def one(ready: asyncio.Event, go: asyncio.Event, opened: list[int]) -> str:
            answered: list[str] = []
            try:
                async with (
                    streamable_http_client(url) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    # As hosts do; the client checks the result against the listed schema.
                    await session.list_tools()
                    opened.append(1)
                    if len(opened) == CALLS:
                        ready.set()
                    await go.wait()
                    result = await session.call_tool("get_system", {})
                    answered.append(outcome(result.structured_content, result.is_error))
            except Exception as exc:
                # Closing the session once the gateway is gone may fail; a call cut is what
                # the old gateway did.
                if not answered:
                    return f"untyped: {type(exc).__name__}: {exc!r}"
            return answered[0]

        async def run() -> list[str]:
            ready, go, opened = asyncio.Event(), asyncio.Event(), []
            arrived = ARRIVALS[mode]
            calls = [asyncio.create_task(one(ready, go, opened)) for _ in range(CALLS)]
            await ready.wait()
            go.set()
            await wait_arrivals(mode, arrived + SLOTS)
            gateway.process.send_signal(signal.SIGTERM)
            return await asyncio.gather(*calls)

        outcomes = asyncio.run(run())
        code = gateway.process.wait(timeout=float(timeout) + 5)
        log = gateway.log()
    assert set(outcomes) <= expected, outcomes
    assert code == 0, log
    assert "Traceback" not in log, log


def message(payload: dict[str, object]) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", **payload}) + "\n").encode()


INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "hardening", "version": "0"},
}


@pytest.mark.parametrize("stop", ["SIGTERM", "stdin EOF"])
def test_the_stdio_server_answers_calls_in_flight_before_it_stops(stop: str) -> None:
    """Three calls wait on a backend that answers after LATE_SECONDS; the host stops the server:
    each call is answered with its result, then the server exits 0."""
    with fake_backend() as base:
        process = subprocess.Popen(
            [SVC_MCP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=backend_env(base, "late", "10"),
        )
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            process.stdin.write(message({"id": 1, "method": "initialize", "params": INIT}))
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 1
            arrived = ARRIVALS["late"]
            process.stdin.write(message({"method": "notifications/initialized"}))
            call = {"name": "get_system", "arguments": {}}
            for call_id in (2, 3, 4):
                process.stdin.write(
                    message({"id": call_id, "method": "tools/call", "params": call})
                )
            process.stdin.flush()
            asyncio.run(wait_arrivals("late", arrived + 3))
            started = time.monotonic()
            if stop == "SIGTERM":
                process.send_signal(signal.SIGTERM)
            else:
                process.stdin.close()
            process.wait(timeout=LATE_SECONDS + 10)
            out = process.stdout.read()
            err = process.stderr.read() if process.stderr else b""
        finally:
            process.kill()
    took = time.monotonic() - started
    answers = {answer["id"]: answer for answer in map(json.loads, out.decode().splitlines())}
    assert set(answers) == {2, 3, 4}, out
    for answer in answers.values():
        assert answer["result"]["isError"] is False, answer
        assert answer["result"]["structuredContent"]["account"] == "fake"
    assert process.returncode == 0, err
    assert took < LATE_SECONDS + 5
    assert "Traceback" not in err.decode(), err
