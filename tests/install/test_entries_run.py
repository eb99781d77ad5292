"""What `svc-mcp install` writes runs in every host, from where users have svc-mcp: a venv made
from the wheel, and this checkout (`uv run --project`). Each stdio entry is read back from the
host's file and started with its exact command line and env (once for hosts whose entries start
the same); each `--http` entry is connected to a real `svc-mcp --http` gateway with its token as
the host resolves it; the tools are listed with the official MCP client. Doctor fails, with the
fix, on entries that cannot start.

The wheel's venv: `uv build --wheel`, a fresh venv, the wheel installed there with `--no-deps`,
and the project venv's site-packages added by a `.pth` file for the dependencies (installing them
offline from the index is not possible on a machine without network), built once per session.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from svc_mcp.hosts.runners import GITHUB_URL
from svc_mcp.hosts.table import HOSTS
from svc_mcp.tools.table import TOOLS
from tests.install.conftest import CLEARED, HOST_NAMES, FakeIndex, Home, RunCli, servers_of
from tests.mcp.conftest import PortalStub
from tests.support import PORT, ROOT, Server, closed_url, running_server

pytestmark = pytest.mark.e2e

GATEWAY_TOKEN = "svc-install-gateway-token-5d1c8e2b7a9f4e3c"
TOOL_NAMES = [spec.name for spec in TOOLS]
UV = os.environ.get("UV") or shutil.which("uv") or "uv"
UV_CACHE = os.environ.get("UV_CACHE_DIR") or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv"
)
"""uv's cache as the user has it, read before a test moves HOME. A `uv run` entry is started with
it and offline: the test's fake home would otherwise make uv fetch every package and the build
backend again, and tests reach nothing beyond loopback. (CI's own `uv run` filled the cache.)"""


@pytest.fixture(scope="session")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding svc-mcp installed from its wheel; returns its `svc-mcp`."""
    root = tmp_path_factory.mktemp("wheel")
    uv = [UV]
    subprocess.run([*uv, "build", "--wheel", "-q", "-o", str(root / "dist")], cwd=ROOT, check=True)
    (wheel,) = (root / "dist").glob("svc_mcp-*.whl")
    venv = root / "venv"
    subprocess.run([*uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [*uv, "pip", "install", "-q", "--no-deps", "--python", str(python), str(wheel)], check=True
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "_svc_mcp_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin" / "svc-mcp"


def host_env(fake_home: Home, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    return env | {"HOME": str(fake_home.home)} | extra


def expand(value: str, environ: dict[str, str]) -> str:
    """A host's `${NAME}` / `${env:NAME}` reference, or VS Code's password input, resolved."""
    value = re.sub(r"\$\{input:[^}]+\}", environ.get("SVC_MCP_GATEWAY_TOKEN", ""), value)
    return re.sub(r"\$\{(?:env:)?([A-Z_]+)\}", lambda m: environ[m.group(1)], value)


def stdio_launch(entry: dict[str, Any], environ: dict[str, str]) -> StdioServerParameters:
    """How the host starts a stdio entry: its command line and its env, references resolved."""
    env = {k: expand(str(v), environ) for k, v in entry.get("env", {}).items()}
    env |= {name: environ[name] for name in entry.get("env_vars", [])}
    env |= {"UV_CACHE_DIR": UV_CACHE, "UV_OFFLINE": "1"}
    return StdioServerParameters(command=entry["command"], args=entry["args"], env=env)


async def list_stdio(server: StdioServerParameters) -> list[str]:
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [tool.name for tool in (await session.list_tools()).tools]


async def list_http(client: str, entry: dict[str, Any], environ: dict[str, str]) -> list[str]:
    url = entry[HOSTS[client].url_key or "url"]
    if client == "codex":
        headers = {"Authorization": f"Bearer {environ[entry['bearer_token_env_var']]}"}
    else:
        headers = {k: expand(v, environ) for k, v in entry["headers"].items()}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return [tool.name for tool in (await session.list_tools()).tools]


@pytest.mark.parametrize("origin", ["wheel", "checkout"])
def test_every_stdio_entry_starts_from_the_wheel_and_the_checkout(
    origin: str, portal: PortalStub, fake_home: Home, run_cli: RunCli, wheel_venv: Path
) -> None:
    backend = {"PORTAL_API_BASE": portal.base_url, "PORTAL_SESSION_TOKEN": portal.tokens["auditor"]}
    entries = {}
    for client in HOST_NAMES:
        if origin == "wheel":  # the wheel's own svc-mcp, as its user runs it
            done = subprocess.run(
                [str(wheel_venv), "install", "--client", client],
                env=host_env(fake_home, backend),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
        else:
            result = run_cli("install", "--client", client, env=backend)
            assert result.returncode == 0, result.stderr
        entries[client] = servers_of(client, fake_home.user_file(client))["svc"]
    first = entries["cursor"]
    if origin == "wheel":
        assert [first["command"], *first["args"]] == [str(wheel_venv)]
    else:
        assert first["args"] == ["run", "--project", str(ROOT), "svc-mcp"]
        assert Path(first["command"]).is_absolute()

    # Hosts whose entries start the same command line with the same env share one start.
    launches = {client: stdio_launch(entries[client], backend) for client in HOST_NAMES}
    distinct = {launch.model_dump_json(): launch for launch in launches.values()}

    async def each_launch() -> list[list[str]]:
        return await asyncio.gather(*(list_stdio(launch) for launch in distinct.values()))

    listed = dict(zip(distinct, asyncio.run(each_launch()), strict=True))
    for client, launch in launches.items():
        assert listed[launch.model_dump_json()] == TOOL_NAMES, client
    if origin == "wheel":  # doctor starts each the same way, within each host's limit
        doctor = run_cli("doctor", "--toolsets", "portal", "--json", env=backend)
        findings = [json.loads(line) for line in doctor.stdout.splitlines()]
        hosts = [f for f in findings if f["check"].startswith("host.")]
        assert [f["check"] for f in hosts] == [f"host.{c}.user" for c in HOST_NAMES]
        for finding in hosts:
            assert (finding["status"], finding["tools"]) == ("ok", len(TOOL_NAMES)), finding
            # "ok" is doctor's own proof: it gives up at the host's limit (anyio.fail_after), as
            # the host would. `seconds` also counts stopping the server again, which no host
            # waits for, so on a loaded machine it may pass the limit where the host would not.
            limit = HOSTS[finding["check"].split(".")[1]].startup.seconds
            assert f"(limit {limit:g} s)" in finding["message"]
        assert portal.tokens["auditor"] not in doctor.stdout + doctor.stderr


@pytest.fixture(scope="module")
def gateway(portal: PortalStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"SVC_MCP_GATEWAY_TOKEN": GATEWAY_TOKEN, "PORTAL_API_BASE": portal.base_url}
    with running_server(
        ["-m", "svc_mcp", "--http", "--port", PORT],
        log_path=tmp_path_factory.mktemp("gateway") / "gateway.log",
        ready_path="/mcp",
        env=env,
    ) as server:
        yield server


def test_every_http_entry_reaches_the_gateway_with_its_token(
    gateway: Server, fake_home: Home, run_cli: RunCli
) -> None:
    url = f"{gateway.base_url}/mcp"
    environ = {"SVC_MCP_GATEWAY_TOKEN": GATEWAY_TOKEN}
    remote = [client for client in HOST_NAMES if HOSTS[client].url_key]
    assert remote == [
        "claude-code", "cursor", "vscode", "windsurf", "gemini", "antigravity", "codex"
    ]  # fmt: skip
    entries = {}
    for client in remote:
        result = run_cli("install", "--client", client, "--http", url, env=environ)
        assert result.returncode == 0, result.stderr
        assert "warning" not in result.stderr
        path = fake_home.user_file(client)
        assert GATEWAY_TOKEN not in path.read_text()  # a reference, never the value
        entries[client] = servers_of(client, path)["svc"]
    assert entries["vscode"]["headers"] == {
        "Authorization": "Bearer ${input:svc-mcp-gateway-token}"
    }
    inputs = json.loads(fake_home.user_file("vscode").read_text())["inputs"]
    assert inputs[0]["password"] is True
    assert entries["codex"] == {"url": url, "bearer_token_env_var": "SVC_MCP_GATEWAY_TOKEN"}
    assert entries["windsurf"]["serverUrl"] == url
    assert entries["gemini"]["httpUrl"] == url
    assert entries["antigravity"]["serverUrl"] == url

    async def all_hosts() -> list[list[str]]:
        return await asyncio.gather(*(list_http(c, entries[c], environ) for c in remote))

    for names in asyncio.run(all_hosts()):
        assert names == TOOL_NAMES

    # doctor connects to each the same way and says so
    doctor = run_cli("doctor", "--toolsets", "portal", "--json", env=environ)
    findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
    for client in remote:
        assert findings[f"host.{client}.user"]["status"] == "ok", findings
        assert findings[f"host.{client}.user"]["tools"] == len(TOOL_NAMES)
    assert GATEWAY_TOKEN not in doctor.stdout + doctor.stderr
    wrong = "wrong-gateway-token-00000000000000000000"
    refused = run_cli(
        "doctor", "--toolsets", "portal", "--json", env={"SVC_MCP_GATEWAY_TOKEN": wrong}
    )
    findings = {f["check"]: f for f in map(json.loads, refused.stdout.splitlines())}
    assert refused.returncode != 0
    for client in remote:
        finding = findings[f"host.{client}.user"]
        assert (finding["status"], finding["kind"]) == ("fail", "misconfigured")
        assert "(the gateway refused the token: HTTP 401)" in finding["message"]
        assert "check the URL and SVC_MCP_GATEWAY_TOKEN" in finding["message"]
    assert wrong not in refused.stdout + refused.stderr

    # A token with a CR (a CRLF .env file) is sent without its white space, like every token
    # svc-mcp reads; this one is still not the gateway's, and no spelling of it is shown.
    crlf = "crlf-gateway-token-1111111111111111111\r"
    broken = run_cli(
        "doctor", "--toolsets", "portal", "--json", env={"SVC_MCP_GATEWAY_TOKEN": crlf}
    )
    assert broken.returncode != 0
    assert "(the gateway refused the token: HTTP 401)" in broken.stdout
    for form in (crlf, crlf.strip(), repr(crlf)[1:-1]):
        assert form not in broken.stdout + broken.stderr

    refused = run_cli("install", "--client", "claude-desktop", "--http", url)
    assert refused.returncode == 2
    assert "Claude Desktop takes no remote server in its configuration file" in refused.stderr


def test_the_gateway_has_no_oauth_to_discover(gateway: Server) -> None:
    for path in ("oauth-protected-resource", "oauth-authorization-server"):
        assert httpx.get(f"{gateway.base_url}/.well-known/{path}").status_code == 404
        assert httpx.get(f"{gateway.base_url}/.well-known/{path}/mcp").status_code == 404
    assert httpx.post(f"{gateway.base_url}/mcp", json={}).status_code == 401


def test_doctor_fails_with_the_fix_on_entries_that_cannot_start(
    fake_home: Home, run_cli: RunCli, fake_index: FakeIndex
) -> None:
    uvx = fake_home.home / "bin" / "uvx"
    uvx.parent.mkdir()
    uvx.write_text("#!/bin/sh\nexit 3\n")
    uvx.chmod(0o755)
    with closed_url("/mcp") as nowhere:  # no gateway there
        entries = {
            "cursor": {"command": "/nonexistent/bin/svc-mcp", "args": []},
            "claude-code": {
                "command": str(uvx),
                "args": ["--default-index", fake_index.without_package, "svc-mcp"],
            },
            "windsurf": {"command": str(uvx), "args": ["--from", f"git+{GITHUB_URL}", "svc-mcp"]},
            "gemini": {"httpUrl": nowhere},
        }
        for client, entry in entries.items():
            path = fake_home.user_file(client)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"mcpServers": {"svc": entry}}))
        # Codex waits `startup_timeout_sec` for a server that starts but never answers.
        slow = fake_home.home / "slow" / "svc-mcp"
        slow.parent.mkdir()
        slow.write_text("#!/bin/sh\nexec sleep 30\n")
        slow.chmod(0o755)
        codex = fake_home.user_file("codex")
        codex.parent.mkdir(parents=True)
        codex.write_text(f'[mcp_servers.svc]\ncommand = "{slow}"\nstartup_timeout_sec = 0.5\n')
        doctor = run_cli(
            "doctor",
            "--toolsets",
            "portal",
            "--json",
            env={"PORTAL_API_BASE": "http://127.0.0.1:9"},
        )
        findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
        assert doctor.returncode != 0
        missing = findings["host.cursor.user"]
        assert (missing["status"], missing["kind"]) == ("fail", "misconfigured")
        assert "runs /nonexistent/bin/svc-mcp, which is not there" in missing["message"]
        assert "run `svc-mcp install --client cursor --scope user` again" in missing["message"]
        unpublished = findings["host.claude-code.user"]
        assert unpublished["status"] == "fail"
        assert (
            f"svc-mcp is not on the package index {fake_index.without_package}"
            in unpublished["message"]
        )
        assert (
            "run `svc-mcp install --client claude-code --scope user` again"
            in unpublished["message"]
        )
        down = findings["host.gemini.user"]
        assert down["status"] == "fail"
        assert "did not answer as an MCP server" in down["message"]
        assert (
            "start it (`svc-mcp --http`) and check the URL and SVC_MCP_GATEWAY_TOKEN"
            in down["message"]
        )
        timed_out = findings["host.codex.user"]
        assert timed_out["status"] == "fail"
        assert "did not list its tools within 0.5 s, Codex's limit" in timed_out["message"]
        exits = findings["host.windsurf.user"]
        assert exits["status"] == "fail"
        assert "did not answer as an MCP server (Connection closed)" in exits["message"]
        assert "run it in a terminal to see why" in exits["message"]
