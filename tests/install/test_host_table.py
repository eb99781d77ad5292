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
    entry["env"].pop("UV_SYSTEM_CERTS", None)  # set when the entry runs uv (a checkout)
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


# ---------------------------------------------------------------- Antigravity CLI, Gemini's successor


def test_antigravity_writes_its_own_files_in_its_own_form(fake_home: Home, run_cli: RunCli) -> None:
    """The forms of Google's migration guide (antigravity.google/docs/cli/gcli-migration):
    `~/.gemini/antigravity-cli/mcp_config.json` (user) and `.agents/mcp_config.json` (project),
    `mcpServers`, a remote server as `serverUrl`."""
    backend = {"SERVICE_API_BASE": "http://127.0.0.1:8080", "SERVICE_API_TOKEN": "t" * 30}
    done = run_cli("install", "--client", "antigravity", env=backend)
    assert done.returncode == 0, done.stderr
    user_file = fake_home.home / ".gemini" / "antigravity-cli" / "mcp_config.json"
    user = json.loads(user_file.read_text())
    assert user["mcpServers"]["svc"]["env"]["SERVICE_API_TOKEN"] == "t" * 30
    assert not (fake_home.home / ".gemini" / "settings.json").exists()  # Gemini CLI's, untouched
    remote = run_cli(
        "install", "--client", "antigravity", "--scope", "project", "--http",
        "http://127.0.0.1:8765/mcp", env=backend,
    )  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    project = json.loads((fake_home.project / ".agents" / "mcp_config.json").read_text())
    assert project["mcpServers"]["svc"] == {
        "serverUrl": "http://127.0.0.1:8765/mcp",
        "headers": {"Authorization": "Bearer ${SVC_MCP_GATEWAY_TOKEN}"},
    }


def test_gemini_says_antigravity_when_agy_is_here(fake_home: Home, run_cli: RunCli) -> None:
    plain = run_cli("install", "--client", "gemini", "--print")
    assert "--client antigravity" not in plain.stderr
    (fake_home.home / ".gemini" / "antigravity-cli").mkdir(parents=True)  # agy's own folder
    told = run_cli("install", "--client", "gemini", "--print")
    assert told.returncode == 0, told.stderr
    (line,) = [line for line in told.stderr.splitlines() if "--client antigravity" in line]
    assert "Gemini CLI no longer serves individual Google accounts" in line
    assert "Antigravity CLI is installed here" in line


def test_gemini_says_antigravity_when_agy_is_on_path(
    fake_home: Home, run_cli: RunCli, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    agy = bin_dir / "agy"
    agy.write_text("#!/bin/sh\n")
    agy.chmod(0o755)
    told = run_cli("install", "--client", "gemini", "--print", env={"PATH": str(bin_dir)})
    assert "use --client antigravity" in told.stderr


def test_doctor_starts_an_antigravity_entry(
    fake_home: Home, run_cli: RunCli, portal: PortalStub
) -> None:
    backend = {"PORTAL_API_BASE": portal.base_url}
    assert run_cli("install", "--client", "antigravity", env=backend).returncode == 0
    doctor = run_cli("doctor", "--toolsets", "portal", "--json", env=backend)
    findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
    assert findings["host.antigravity.user"]["status"] == "ok", findings
