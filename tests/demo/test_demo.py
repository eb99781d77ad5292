"""`svc-mcp demo` as a user runs it: a real process whose output is not a terminal (as in CI).

It must finish with exit 0, show each part of the product, and leave no process and no temporary
file behind; `--keep-running` must leave usable stubs up until Ctrl-C, then clean up the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from svc_mcp.core.toolspec import AGENT_PAGE
from svc_mcp.hosts.runners import launch_command, runner_env, this_installation
from svc_mcp.tools.table import TOOLS
from tests.demo.conftest import (
    Sandbox,
    demo_process,
    environ_of,
    is_running,
    new_sandbox,
    section,
    stub_pids,
)

pytestmark = pytest.mark.e2e

READ_TOOLS = [spec.name for spec in TOOLS if spec.hints.read_only]


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    sandbox: Sandbox


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    sandbox = new_sandbox(tmp_path_factory.mktemp("demo"))
    started = time.monotonic()
    with demo_process(sandbox) as demo:
        stdout = demo.rest()
        demo.process.wait(timeout=30)
        assert demo.process.stderr is not None
        stderr = demo.process.stderr.read()
    return Finished(demo.process.returncode, stdout, stderr, time.monotonic() - started, sandbox)


def test_it_exits_0_quickly_and_quietly(finished: Finished) -> None:
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stderr == ""
    assert finished.seconds < 60
    assert re.search(
        r"^Done in [\d.]+ s: 24 tools listed, 23 read tools called", finished.stdout, re.M
    )


def test_it_lists_the_tools_over_stdio(finished: Finished) -> None:
    rows = section(finished.stdout, "Tools svc-mcp serves (24)")
    listed = {row.split()[0]: row.split()[1] for row in rows[1:]}
    assert listed == {spec.name: "read" if spec.hints.read_only else "write" for spec in TOOLS}


def test_it_calls_each_read_tool_and_summarizes_the_result(finished: Finished) -> None:
    rows = section(finished.stdout, "Read tools, one call each")[1:]
    results = {row.split()[0]: row.split(maxsplit=1)[1] for row in rows}
    assert list(results) == READ_TOOLS
    assert results["portal_whoami"] == "id=alice role=auditor kind=human"
    assert results["get_health"] == "status=ready"
    assert results["get_auth_status"] == "auth_required=True authenticated=True"
    assert results["get_intel"] == "0 records"  # before the submission
    assert results["get_positions"].startswith("4 records; first: symbol=")
    # The demo drives svc-mcp as an agent would: a list comes in the agent's smaller page.
    assert results["portal_audit"].startswith(f"{AGENT_PAGE} records, more on the next page; ")


def test_it_submits_signed_intel_then_sees_the_duplicate(finished: Finished) -> None:
    rows = section(finished.stdout, "Signed intel through submit_intel")
    steps = {row[:24].strip(): row[24:].strip() for row in rows[1:]}
    intel_id = steps["sign (in this process)"].split(",")[0]
    assert re.fullmatch(r"intel-[0-9a-f]{32}", intel_id)
    assert steps["submit_intel"].startswith("stored: duplicate=False at ")
    assert steps["get_intel"].startswith("note from svc-mcp-demo: {")
    assert steps["submit_intel again"] == "duplicate=True, nothing new stored"
    assert f"intel {intel_id} stored then seen as a duplicate" in finished.stdout


def test_a_wrong_token_ends_in_a_lockout_with_retry_after(finished: Finished) -> None:
    rows = section(finished.stdout, "Wrong token: get_system")[1:]
    errors = [row.split()[1] for row in rows]
    assert errors == ["unauthorized"] * 7 + ["locked_out"]
    assert "set SERVICE_API_TOKEN" in rows[0]
    assert all(row.endswith("(the same)") for row in rows[1:7])
    told = re.search(r"retry after (\d+) seconds", rows[7])
    assert told is not None
    assert 890 <= int(told.group(1)) <= 901  # 15 minutes, in whole seconds
    panel = section(finished.stdout, "Locked out")
    assert f"The agent was told: retry after {told.group(1)} seconds" in " ".join(panel)


def test_it_leaves_no_process_and_no_temporary_file(finished: Finished) -> None:
    pids = stub_pids(finished.stdout)
    assert set(pids) == {"portal", "service", "lockout"}
    assert [name for name, pid in pids.items() if is_running(pid)] == []
    assert finished.sandbox.leftovers() == []
    assert list(finished.sandbox.tmpdir.iterdir()) == []


def test_ctrl_c_ends_keep_running_cleanly(sandbox: Sandbox) -> None:
    with demo_process(sandbox, "--keep-running") as demo:
        output = demo.wait_for("Press Ctrl-C to stop them")
        pids = stub_pids(output)
        assert not is_running(pids["lockout"])  # the locked-out instance is not kept
        env = dict(re.findall(r"^export (\w+)=(\S+)$", output, re.M))
        assert set(env) == {
            "SERVICE_API_BASE",
            "SERVICE_API_TOKEN",
            "PORTAL_API_BASE",
            "PORTAL_SESSION_TOKEN",
        }
        _assert_the_stubs_answer(env)
        _assert_only_the_service_holds_the_intel_key(pids)
        config, _ = json.JSONDecoder().raw_decode("\n".join(section(output, "MCP host config")))
        entry = config["mcpServers"]["svc"]
        installed = launch_command("here", this_installation(os.environ))
        assert [entry["command"], *entry["args"]] == installed  # the form install writes
        assert entry["env"] == env | runner_env(installed)  # and its env: UV_SYSTEM_CERTS for uv
        _assert_the_host_config_works(entry)
        _assert_the_hints_run_as_printed(output)

        demo.process.send_signal(signal.SIGINT)
        demo.process.wait(timeout=10)
        rest = demo.rest()
    assert demo.process.returncode == 0, rest
    assert "Stopped every process and removed" in rest
    assert [name for name, pid in pids.items() if is_running(pid)] == []
    assert sandbox.leftovers() == []
    assert list(sandbox.tmpdir.iterdir()) == []


def _assert_the_hints_run_as_printed(output: str) -> None:
    """The exports, then the commands the demo suggests, in a shell whose PATH has no venv."""
    lines = section(output, "Environment for svc-mcp and svc-portal")
    exports = "\n".join(line for line in lines if line.startswith("export "))
    tries = re.search(r"^Then try (\S+ get_system) or (\S+ identity whoami)\.$", output, re.M)
    assert tries is not None, output
    for command in tries.groups():
        done = subprocess.run(
            ["/bin/sh", "-c", f"{exports}\n{command}"],
            env={"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"]},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, (command, done.stderr)


def _assert_the_stubs_answer(env: dict[str, str]) -> None:
    service = httpx.get(
        env["SERVICE_API_BASE"] + "/api/v1/system",
        headers={"Authorization": f"Bearer {env['SERVICE_API_TOKEN']}"},
    )
    assert service.status_code == 200
    assert service.json()["data"]["mode"] == "running"
    portal = httpx.get(
        env["PORTAL_API_BASE"] + "/api/whoami",
        headers={"Authorization": f"Bearer {env['PORTAL_SESSION_TOKEN']}"},
    )
    assert portal.json()["data"] == {"id": "alice", "kind": "human", "role": "auditor"}


def _assert_only_the_service_holds_the_intel_key(pids: dict[str, int]) -> None:
    service, portal = environ_of(pids["service"]), environ_of(pids["portal"])
    assert len(service["SERVICE_INTEL_HMAC"]) >= 32
    assert len(service["SERVICE_API_TOKEN"]) >= 24
    assert not any(name.startswith("SERVICE_") for name in portal)


def _assert_the_host_config_works(entry: dict[str, Any]) -> None:
    """What an MCP host would do with the printed entry: start it and use it."""
    assert Path(entry["command"]).is_absolute()

    async def use() -> tuple[int, CallToolResult, CallToolResult]:
        server = StdioServerParameters(
            command=entry["command"], args=entry["args"], env=entry["env"]
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            system = await session.call_tool("get_system", {})
            whoami = await session.call_tool("portal_whoami", {})
            return len(tools.tools), system, whoami

    count, system, whoami = asyncio.run(use())
    assert count == len(TOOLS)
    assert not system.is_error, system.content
    assert whoami.structured_content == {"id": "alice", "kind": "human", "role": "auditor"}


def test_the_front_door_does_not_load_the_demo() -> None:
    """`svc-mcp tools` (and every other command) never imports the demo or mcp."""
    code = (
        "import sys\n"
        "from svc_mcp.cli.main import main\n"
        "try:\n"
        "    main(['tools', '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [n for n in sys.modules if n.startswith(('svc_mcp.demo.run', 'mcp.')) or n == 'mcp']\n"
        "print(loaded, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stderr.strip().splitlines()[-1] == "[]"


def test_demo_options_go_after_demo() -> None:
    misplaced = subprocess.run(
        [sys.executable, "-m", "svc_mcp", "--read-only", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert misplaced.returncode == 2
    assert "usage: options of svc-mcp itself cannot come before demo" in misplaced.stderr
    unknown = subprocess.run(
        [sys.executable, "-m", "svc_mcp", "demo", "--nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unknown.returncode == 2
    assert unknown.stderr == (
        "svc-mcp demo: usage: No such option: --nope (see svc-mcp demo --help)\n"
    )


def test_trace_prints_one_calls_tree_and_exports_the_clients_durations(tmp_path: Path) -> None:
    sandbox = new_sandbox(tmp_path)
    with demo_process(sandbox, "--trace") as demo:
        stdout = demo.rest()
        demo.process.wait(timeout=30)
    assert demo.process.returncode == 0, stdout
    tree = section(stdout, "Trace ")
    assert tree[0].startswith("tools/call get_system  [svc-mcp, server, "), tree
    assert "GET /api/v1/system  [svc-stub service, server, " in "\n".join(tree)
    assert re.search(
        r"^As the MCP client, the demo exported mcp\.client\.operation\.duration: "
        r"initialize, tools/call, tools/list; error\.type locked_out, unauthorized\.$",
        stdout,
        re.M,
    ), stdout
