"""The host table is the one place a host is described: no host is named anywhere else in `src/`,
and a host that is only a row (a fake eighth one) installs, prints, uninstalls and is doctored."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from svc_mcp.hosts.table import HOSTS, Host, StartupLimit, UserFile, hosts_help
from tests.install.conftest import Home, RunCli
from tests.mcp.conftest import PortalStub
from tests.support import ROOT

SRC = ROOT / "src"
TABLE = SRC / "svc_mcp" / "hosts" / "table.py"


def host_words(host: Host) -> set[str]:
    """What names the host in text: its `--client` name, its product name and that name's first
    word ("Claude", "Gemini")."""
    return {host.name, host.label, host.label.split()[0]}


PAGING = "cursor"
"""Also the paging cursor everywhere in the tools; that host is found by its product name."""


def mentions(path: Path, words: set[str]) -> list[str]:
    """The words found in the file's text (comments and docstrings included), case-sensitive and
    whole."""
    text = path.read_text(encoding="utf-8")
    return [
        word
        for word in sorted(words - {PAGING})
        if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text)
    ]


def test_no_host_is_named_outside_the_table() -> None:
    words = set().union(*(host_words(host) for host in HOSTS.values()))
    naming = {
        str(path.relative_to(ROOT)): found
        for path in sorted(SRC.rglob("*.py"))
        if path != TABLE and (found := mentions(path, words))
    }
    assert naming == {}


def test_the_check_would_find_a_host_named_elsewhere(tmp_path: Path) -> None:
    stray = tmp_path / "stray.py"
    stray.write_text('if host == "windsurf":  # Windsurf wants it\n    pass\n', encoding="utf-8")
    assert mentions(stray, host_words(HOSTS["windsurf"])) == ["Windsurf", "windsurf"]


FAKE = Host(
    "acme",
    "Acme Agent",
    "https://acme.invalid/docs/mcp",
    UserFile("home", (".acme", "agent.json")),
    ".acme/agent.json",
    "tools",
    "${env:%s}",
    stdio_fields={"transport": "stdio"},
    http_fields={"transport": "http"},
    url_key="endpoint",
    startup=StartupLimit(seconds=20.0),
    first_steps="Acme Agent asks once before it starts a server: answer yes",
)


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> Host:
    monkeypatch.setitem(HOSTS, FAKE.name, FAKE)
    return FAKE


def test_a_host_that_is_only_a_row_installs_prints_and_uninstalls(
    acme: Host, fake_home: Home, run_cli: RunCli
) -> None:
    printed = run_cli("install", "--client", "acme", "--print", env={"SERVICE_API_TOKEN": "t" * 30})
    assert printed.returncode == 0, printed.stderr
    entry = json.loads(printed.stdout)["tools"]["svc"]
    assert entry["transport"] == "stdio"
    assert entry["env"] == {"SERVICE_API_TOKEN": "t" * 30}
    path = fake_home.home / ".acme" / "agent.json"
    assert not path.exists()

    project = run_cli("install", "--client", "acme", "--scope", "project", "--print")
    assert project.returncode == 0, project.stderr
    assert f"would write {fake_home.project / '.acme' / 'agent.json'}" in project.stderr

    installed = run_cli("install", "--client", "acme")
    assert installed.returncode == 0, installed.stderr
    assert f"installed 'svc' for Acme Agent in {path}" in installed.stderr
    assert "Acme Agent asks once before it starts a server" in installed.stderr
    assert "its guide: https://acme.invalid/docs/mcp" in installed.stderr
    assert json.loads(path.read_text())["tools"]["svc"]["transport"] == "stdio"

    remote = run_cli(
        "install", "--client", "acme", "--http", "http://127.0.0.1:8765/mcp", "--print"
    )
    assert json.loads(remote.stdout)["tools"]["svc"] == {
        "transport": "http",
        "endpoint": "http://127.0.0.1:8765/mcp",
        "headers": {"Authorization": "Bearer ${env:SVC_MCP_GATEWAY_TOKEN}"},
    }

    removed = run_cli("uninstall", "--client", "acme")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(path.read_text())["tools"] == {}


def test_a_host_that_is_only_a_row_is_in_the_help_and_is_doctored(
    acme: Host, portal: PortalStub, fake_home: Home, run_cli: RunCli
) -> None:
    assert "acme (Acme Agent)" in hosts_help()
    env = {"PORTAL_API_BASE": portal.base_url}
    assert run_cli("install", "--client", "acme", env=env).returncode == 0
    doctor = run_cli("doctor", "--toolsets", "portal", "--json")
    findings = [json.loads(line) for line in doctor.stdout.splitlines()]
    (acme_finding,) = [f for f in findings if f["check"] == "host.acme.user"]
    assert acme_finding["status"] == "ok", acme_finding
    assert "Acme Agent 'svc' (user, " in acme_finding["message"]
    assert "(limit 20 s)" in acme_finding["message"]


def test_the_help_lists_the_rows(fake_home: Home, run_cli: RunCli) -> None:
    shown = " ".join(run_cli("install", "--help").stdout.replace("│", " ").split())
    assert hosts_help() in shown


def test_an_unknown_client_is_one_line_naming_the_hosts(fake_home: Home, run_cli: RunCli) -> None:
    result = run_cli("install", "--client", "acme")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert all(name in result.stderr for name in HOSTS)


def test_setup_uses_no_private_module_of_a_library() -> None:
    private = re.compile(r"^\s*(?:from|import)\s+(?:typer|click|mcp|uvicorn)\S*\._", re.M)
    for path in sorted((SRC / "svc_mcp").rglob("*.py")):
        assert not private.search(path.read_text(encoding="utf-8")), path
