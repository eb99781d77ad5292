"""Fixtures for the MCP package: a real `svc-stub portal` process with demo data and sessions.

The stub starts once per test session; the MCP servers and gateways start once per module.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from svc_mcp.core.client import new_http_client
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.serve.server import build_server
from svc_mcp.tools.table import TOOLS
from tests import support_stub_data as stub_data
from tests.e2e import e2e_fixture
from tests.support import CONFINED, PORT, running_server

T = TypeVar("T")
BIN = Path(sys.executable).parent
SVC_MCP = str(BIN / "svc-mcp")
SVC_PORTAL = str(BIN / "svc-portal")
SVC_STUB = str(BIN / "svc-stub")

SESSIONS = {"auditor": "alice", "reader": "carol", "service_auditor": "audit-bot"}
"""Callers with a session -> the demo principal it is issued for (alice is a human auditor)."""

_OUR_VARIABLES = (
    "PORTAL_API_BASE",
    "PORTAL_SESSION_TOKEN",
    "SVC_MCP_GATEWAY_TOKEN",
    "SERVICE_API_BASE",
    "SERVICE_API_TOKEN",
    "DASHBOARD_API_TOKEN",
    "SERVICE_INTEL_HMAC",
    "SVC_MCP_OAUTH_ISSUER",
    "SVC_MCP_PUBLIC_URL",
)


@dataclass(frozen=True)
class PortalStub:
    base_url: str
    tokens: Mapping[str, str]

    def headers(self, caller: str) -> dict[str, str]:
        token = self.tokens.get(caller)
        return {"Authorization": f"Bearer {token}"} if token else {}

    def env(self, caller: str = "anonymous", **extra: str) -> dict[str, str]:
        """The variables a client process needs to call the stub as `caller`."""
        variables = {"PORTAL_API_BASE": self.base_url, **extra}
        if caller in self.tokens:
            variables["PORTAL_SESSION_TOKEN"] = self.tokens[caller]
        return variables


def process_env(variables: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without our variables, plus `variables`; servers started
    with it must confine themselves."""
    inherited = {k: v for k, v in os.environ.items() if k not in _OUR_VARIABLES}
    return {**CONFINED, **inherited, **variables}


StdioMessage = tuple[str, dict[str, Any] | None]
"""A JSON-RPC method and its params (None: none)."""


def raw_stdio_answers(
    variables: Mapping[str, str], messages: Sequence[StdioMessage], *args: str
) -> list[str]:
    """The lines a real `svc-mcp` (stdio) writes in answer to `messages`, sent one at a time
    (a notification gets none), exactly as read."""
    with subprocess.Popen(
        [SVC_MCP, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=process_env(variables),
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        lines = []
        for number, (method, params) in enumerate(messages, start=1):
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
            if not method.startswith("notifications/"):
                message["id"] = number
            if params is not None:
                message["params"] = params
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
            if "id" in message:
                lines.append(process.stdout.readline())
        process.stdin.close()
        process.wait(timeout=10)
    return lines


def run_command(
    args: Sequence[str], variables: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), env=process_env(variables), capture_output=True, text=True, timeout=60
    )


def run_commands(
    commands: Sequence[tuple[Sequence[str], Mapping[str, str]]],
) -> list[subprocess.CompletedProcess[str]]:
    """Runs independent commands a few at a time (each mostly waits on imports)."""
    with ThreadPoolExecutor(max_workers=6) as pool:
        return list(pool.map(lambda command: run_command(*command), commands))


@dataclass(frozen=True)
class CliRun:
    """What a CLI did when run in this process: exit code and output."""

    returncode: int
    stdout: str
    stderr: str


def run_in_process(
    main: Callable[[Sequence[str]], None], args: Sequence[str], variables: Mapping[str, str]
) -> CliRun:
    """Runs a CLI's `main(args)` here, with `variables` as our part of the environment.

    Much faster than a process per call; `test_mcp_cli` covers the real console scripts.
    """
    stdout, stderr = io.StringIO(), io.StringIO()
    returncode = 0
    with (
        mock.patch.dict(os.environ),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        for name in _OUR_VARIABLES:
            os.environ.pop(name, None)
        os.environ.update(variables)
        try:
            main(args)
        except SystemExit as exit_:
            returncode = exit_.code if isinstance(exit_.code, int) else 1
    return CliRun(returncode, stdout.getvalue(), stderr.getvalue())


SessionUse = Callable[[ClientSession], Awaitable[T]]


async def over_stdio(variables: Mapping[str, str], use: SessionUse[T], *args: str) -> T:
    """`use` on a session with a real `svc-mcp ARGS` stdio process run with `variables`."""
    server = StdioServerParameters(command=SVC_MCP, args=list(args), env=process_env(variables))
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        return await use(session)


ClientUse = Callable[[Client], Awaitable[T]]


async def in_memory(use: ClientUse[T]) -> T:
    """`use` on the official client connected in process to the server `svc-mcp` serves, over
    the SDK's in-memory transport: for protocol tests where no process is the point."""
    async with new_http_client() as http, Client(build_server(TOOLS, http)) as client:
        return await use(client)


async def over_http(url: str, use: SessionUse[T]) -> T:
    """`use` on a session with a real `svc-mcp --http` gateway at `url`."""
    async with (
        httpx2.AsyncClient() as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        return await use(session)


@e2e_fixture(scope="session")
def portal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PortalStub]:
    root = tmp_path_factory.mktemp("mcp-portal")
    data = root / "data"
    stub_data.portal_folder(data)
    tokens = {
        caller: stub_data.portal_session(data, subject, ttl="1h")
        for caller, subject in SESSIONS.items()
    }
    with running_server(
        ["-m", "server_stub", "portal", "--data", str(data), "--port", PORT],
        log_path=root / "portal.log",
        ready_path="/api/page",
    ) as server:
        yield PortalStub(base_url=server.base_url, tokens=tokens)


SERVICE_TOKEN = "svc-mcp-test-token-" + "t" * 24
INTEL_KEY = "svc-mcp-test-intel-key-" + "k" * 24


@dataclass(frozen=True)
class ServiceStub:
    base_url: str
    db: Path
    log_path: Path
    pid: int

    def env(self, token: str | None = SERVICE_TOKEN) -> dict[str, str]:
        """The variables a client process needs to call the data service."""
        variables = {"SERVICE_API_BASE": self.base_url}
        if token is not None:
            variables["SERVICE_API_TOKEN"] = token
        return variables

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {SERVICE_TOKEN}"}


@contextlib.contextmanager
def service_stub(root: Path, *server_args: str, **extra_env: str) -> Iterator[ServiceStub]:
    """A real `svc-stub service` with demo data, auth on and an intel key; `server_args` are
    added to its command line (e.g. `--no-access-log`)."""
    db = root / "service.db"
    stub_data.service_db(db)
    env = {"SERVICE_API_TOKEN": SERVICE_TOKEN, "SERVICE_INTEL_HMAC": INTEL_KEY, **extra_env}
    with running_server(
        ["-m", "server_stub", "service", "--db", str(db), "--port", PORT, *server_args],
        log_path=root / "service.log",
        ready_path="/health/live",
        env=env,
    ) as server:
        yield ServiceStub(
            base_url=server.base_url, db=db, log_path=server.log_path, pid=server.process.pid
        )


@e2e_fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceStub]:
    with service_stub(tmp_path_factory.mktemp("mcp-service")) as stub:
        yield stub


REST_DEFAULT_PAGE = 100


def rest_default_page(spec: ToolSpec) -> dict[str, object]:
    """The arguments that ask MCP for the page REST and the CLI give by default (an MCP call
    without `limit` gets a smaller page, for an agent's context)."""
    return {"limit": REST_DEFAULT_PAGE} if spec.many else {}
