"""A restart of the gateway with its listening socket kept (systemd socket activation, issue 33,
finding 13): this test plays systemd, holding the socket and handing it to one gateway process,
then after a SIGTERM to the next. A client calling all along sees no failure: its calls in the gap
wait in the socket's backlog instead of being refused."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.hardening.fake_backend import fake_backend
from tests.mcp.conftest import SERVICE_TOKEN, SVC_MCP, process_env

pytestmark = pytest.mark.e2e

FD = 3


def start(listener: socket.socket, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`svc-mcp --http` with `listener` as descriptor 3 and LISTEN_PID/LISTEN_FDS set, as
    systemd starts it."""
    wrapper = f'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@" {FD}<&{listener.fileno()}'
    with log.open("ab") as out:
        return subprocess.Popen(
            ["bash", "-c", wrapper, SVC_MCP, "--http", "--no-auth"],
            pass_fds=(listener.fileno(),),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_serving(log: Path, times: int) -> None:
    deadline = time.monotonic() + 30
    while log.read_text().count("serving MCP at the sockets systemd passed") < times:
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


async def until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, "the calls stopped"
        await asyncio.sleep(0.02)


def test_a_restart_with_the_socket_kept_fails_no_call(tmp_path: Path) -> None:
    log = tmp_path / "gateway.log"
    log.write_text("")
    with fake_backend() as base, socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        env = process_env(
            {
                "SERVICE_API_BASE": f"{base}/fast",
                "SERVICE_API_TOKEN": SERVICE_TOKEN,
                "PORTAL_API_BASE": base,
            }
        )
        started: list[subprocess.Popen[bytes]] = []
        first = start(listener, env, log)
        started.append(first)
        wait_serving(log, 1)
        errors: list[str] = []
        gap: list[float] = []
        done: list[float] = []
        """When each call ended."""

        async def client(stop: asyncio.Event) -> int:
            calls = 0
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                while not stop.is_set():
                    result = await session.call_tool("get_system", {})
                    if result.is_error:
                        errors.append(str(result.content))
                    calls += 1
                    done.append(time.monotonic())
            return calls

        async def run() -> int:
            stop = asyncio.Event()
            calling = asyncio.create_task(client(stop))
            await until(lambda: len(done) >= 3)  # calls before the restart
            first.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(first.wait, 20) == 0
            gap.append(time.monotonic())
            second = start(listener, env, log)
            started.append(second)
            await asyncio.to_thread(wait_serving, log, 2)
            gap.append(time.monotonic())
            await until(lambda: sum(t > gap[1] for t in done) >= 3)  # calls after it
            stop.set()
            calls = await calling
            second.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(second.wait, 20) == 0
            return calls

        try:
            calls = asyncio.run(run())
        finally:
            for process in started:  # a failed run leaves no gateway behind
                if process.poll() is None:
                    process.kill()
                    process.wait()
    assert errors == []
    assert calls == len(done)
    assert "Traceback" not in log.read_text()
