"""A project's file is committed and used by teammates: it holds no path of this machine (no venv,
no checkout, no uv by its absolute path, no CA bundle), whatever the source."""

from __future__ import annotations

import sys

import pytest

from svc_mcp.hosts.runners import own_version
from svc_mcp.hosts.table import HOSTS
from tests.install.conftest import HOST_NAMES, FakeIndex, Home, RunCli
from tests.support import ROOT

PROJECT_HOSTS = [client for client in HOST_NAMES if "project" in HOSTS[client].scopes]


@pytest.mark.parametrize("client", PROJECT_HOSTS)
def test_a_project_file_holds_no_path_of_this_machine(
    client: str, fake_home: Home, run_cli: RunCli, fake_index: FakeIndex
) -> None:
    env = {
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "SERVICE_API_TOKEN": "t" * 30,
        "UV_DEFAULT_INDEX": fake_index.with_package,
    }
    here = run_cli("install", "--client", client, "--scope", "project", env=env)
    assert here.returncode == 0, here.stderr
    assert f"runs svc-mcp {own_version()} from the package index {fake_index.with_package}" in (
        here.stderr
    )
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


@pytest.mark.parametrize("client", PROJECT_HOSTS)
def test_a_project_entry_never_names_a_release_the_index_lacks(
    client: str, fake_home: Home, run_cli: RunCli, fake_index: FakeIndex
) -> None:
    """Teammates' uvx would resolve `svc-mcp==<this version>` from the index: whoever registers
    an unpublished name there would run with every teammate's tokens. So the index is asked first,
    and nothing is written when it lacks the release."""
    result = run_cli(
        *("install", "--client", client, "--scope", "project"),
        env={"UV_DEFAULT_INDEX": fake_index.without_package},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert f"svc-mcp is not on the package index {fake_index.without_package}" in result.stderr
    assert "--scope user" in result.stderr
    assert "--index-url" in result.stderr
    path = HOSTS[client].config_path(
        "project", home=fake_home.home, cwd=fake_home.project, platform="linux", environ={}
    )
    assert not path.exists()
