"""`install/` holds, per client, exactly what `svc-mcp install --print` produces for fixed inputs
(install/README.md shows the command)."""

from __future__ import annotations

import pytest

from svc_mcp.install import CLIENTS, HOSTS, Client
from tests.install.conftest import RunCli
from tests.support import ROOT

INSTALL = ROOT / "install"
FIXED_INPUTS = (
    "--print",
    "--source",
    "pypi",
    "--uvx",
    "/usr/local/bin/uvx",
    "--env",
    "SERVICE_API_BASE=http://127.0.0.1:8080",
    "--env",
    "SERVICE_API_TOKEN=<your service token>",
    "--env",
    "PORTAL_API_BASE=http://127.0.0.1:8081",
    "--env",
    "PORTAL_SESSION_TOKEN=<your portal session token>",
)


def file_name(client: Client) -> str:
    return f"{client}.{HOSTS[client].file_format}"


@pytest.mark.parametrize("client", CLIENTS)
def test_each_file_is_what_print_produces(client: Client, run_cli: RunCli) -> None:
    result = run_cli("install", "--client", client, *FIXED_INPUTS)
    assert result.returncode == 0, result.stderr
    assert (INSTALL / file_name(client)).read_text(encoding="utf-8") == result.stdout


def test_the_folder_holds_one_file_per_client_and_the_readme() -> None:
    names = {path.name for path in INSTALL.iterdir()}
    assert names == {file_name(client) for client in CLIENTS} | {"README.md"}
    readme = (INSTALL / "README.md").read_text(encoding="utf-8")
    for client in CLIENTS:
        assert f"`{file_name(client)}`" in readme
    for argument in FIXED_INPUTS:
        assert argument in readme
