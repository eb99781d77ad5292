"""A project's file is committed and used by teammates: it holds no path of this machine (no venv,
no checkout, no uv by its absolute path, no CA bundle), whatever the source, and no package name
the index it resolves from does not have in that version (issue 31, finding 8)."""

from __future__ import annotations

import sys

import pytest

from svc_mcp.hosts.runners import own_version
from svc_mcp.hosts.table import HOSTS
from tests.install.conftest import HOST_NAMES, FakeIndex, Home, RunCli, servers_of
from tests.support import ROOT

PROJECT_HOSTS = [client for client in HOST_NAMES if "project" in HOSTS[client].scopes]


@pytest.mark.parametrize("client", PROJECT_HOSTS)
def test_a_project_file_holds_no_path_of_this_machine(
    client: str, fake_home: Home, run_cli: RunCli, fake_index: FakeIndex
) -> None:
    env = {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "SERVICE_API_TOKEN": "t" * 30}
    here = run_cli(
        *("install", "--client", client, "--scope", "project"),
        *("--index-url", fake_index.with_package),
        env=env,
    )
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


@pytest.mark.parametrize("source", ["here", "local"])
def test_a_project_entry_needs_the_release_on_its_index(
    source: str, fake_home: Home, run_cli: RunCli, fake_index: FakeIndex
) -> None:
    path = HOSTS["cursor"].config_path(
        "project", home=fake_home.home, cwd=fake_home.project, platform="linux", environ={}
    )
    install = ("install", "--client", "cursor", "--scope", "project", "--source", source)
    refused = run_cli(*install, "--index-url", fake_index.without_package)
    assert refused.returncode == 2, refused.stderr
    assert (
        f"the package index {fake_index.without_package} has no svc-mcp {own_version()}, and a "
        "project's file is shared"
    ) in refused.stderr
    assert "--source github (pinned to the release tag)" in refused.stderr
    assert not path.exists()
    # The index in force is also uv's variable: it is asked, and written into the entry.
    written = run_cli(*install, env={"UV_INDEX_URL": fake_index.with_package})
    assert written.returncode == 0, written.stderr
    entry = servers_of("cursor", path)["svc"]
    assert entry["args"] == [
        "--default-index",
        fake_index.with_package,
        f"svc-mcp=={own_version()}",
    ]
