"""Started from anywhere (an MCP host starts servers in `/` or HOME), a confined process of an
editable install reads its packages in the checkout, not the checkout (issue 44, finding 15): the
install puts the checkout on the import path, and a file beside the packages (`.env`,
`svc.db.private/`, `.git`, here `pyproject.toml`) was readable. The stdio server still answers
every tool through the official client, run as a host runs it with `/` as its working folder and
no PYTHONPATH: it finds `tests.confinement.canary_server` only through the install's path entry
for the checkout, the one the confinement must not open whole."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.confinement.test_sockets import SETTINGS, arguments
from tests.confinement.test_write_forms import probe
from tests.mcp.conftest import PortalStub, ServiceStub, portal, process_env, service  # noqa: F401
from tests.mcp.test_mcp_confined import SERVER, assert_every_tool_answered
from tests.mcp.test_mcp_confined import arguments as tool_arguments
from tests.support import ROOT

pytestmark = pytest.mark.e2e

BESIDE_THE_PACKAGES = ROOT / "pyproject.toml"
"""A file in the checkout's root, the folder the editable install puts on the import path."""


@pytest.mark.parametrize("policy", sorted(SETTINGS))
def test_no_confined_process_started_elsewhere_reads_the_checkout(
    tmp_path: Path, policy: str
) -> None:
    results = probe(
        tmp_path,
        policy,
        SETTINGS[policy],
        *arguments(policy, tmp_path, 9),
        cwd=Path("/"),
        SVC_TEST_CANARY=str(BESIDE_THE_PACKAGES),
    )
    assert results["read canary"] == "EACCES", results


async def call_every_tool_from_root(env: dict[str, str], errlog: Path) -> dict[str, Any]:
    server = StdioServerParameters(command=sys.executable, args=SERVER, env=env, cwd="/")
    with errlog.open("w") as log:
        async with (
            stdio_client(server, errlog=log) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            return {
                tool.name: await session.call_tool(tool.name, tool_arguments(tool.name))
                for tool in listed.tools
            }


def test_a_stdio_server_started_in_the_root_folder_works_and_cannot_read_the_checkout(
    portal: PortalStub,  # noqa: F811
    service: ServiceStub,  # noqa: F811
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    variables = {**portal.env("auditor"), **service.env(), "HOME": str(home)}
    env = process_env({**variables, "SVC_TEST_CANARY": str(BESIDE_THE_PACKAGES)})
    env.pop("PYTHONPATH", None)  # as a host starts it: the install alone finds the packages
    errlog = tmp_path / "stderr.log"
    results = asyncio.run(call_every_tool_from_root(env, errlog))
    assert_every_tool_answered(results)
    log = errlog.read_text()
    assert "svc-mcp: confined (Landlock ABI" in log
    assert "canary: EACCES" in log
