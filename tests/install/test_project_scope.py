"""A project's file is committed and used by teammates: it holds no path of this machine (no venv,
no checkout, no uv by its absolute path, no CA bundle), whatever the source."""

from __future__ import annotations

import sys

import pytest

from svc_mcp.hosts.runners import own_version
from svc_mcp.hosts.table import HOSTS
from tests.install.conftest import HOST_NAMES, Home, RunCli
from tests.support import ROOT

PROJECT_HOSTS = [client for client in HOST_NAMES if "project" in HOSTS[client].scopes]


@pytest.mark.parametrize("client", PROJECT_HOSTS)
def test_a_project_file_holds_no_path_of_this_machine(
    client: str, fake_home: Home, run_cli: RunCli
) -> None:
    env = {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "SERVICE_API_TOKEN": "t" * 30}
    here = run_cli("install", "--client", client, "--scope", "project", env=env)
    assert here.returncode == 0, here.stderr
    assert f"runs svc-mcp {own_version()} from the package index by `uvx`" in here.stderr
    assert "SSL_CERT_FILE left out" in here.stderr
    github = run_cli(
        *("install", "--client", client, "--scope", "project", "--name", "from-github"),
        *("--source", "github", "--uvx", sys.executable),  # any absolute executable
        env=env,
    )
    assert github.returncode == 0, github.stderr
    text = (
        HOSTS[client]
        .config_path(
            "project", home=fake_home.home, cwd=fake_home.project, platform="linux", environ={}
        )
        .read_text()
    )
    for path in (str(ROOT), sys.prefix, sys.executable, "/etc/ssl", str(fake_home.home)):
        assert path not in text, (path, text)
    assert f"svc-mcp=={own_version()}" in text
    assert "t" * 30 not in text
