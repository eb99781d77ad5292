"""install's refusals and backups: tokens never left in a project as backups, a project file that
leads out of the project, control characters and unparsable base URLs, tokens over plain http to
another machine, and pinned sources."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from svc_mcp.hosts.runners import own_version
from tests.install.conftest import Home, RunCli, servers_of

UVX = sys.executable  # an executable stands in for uvx
SRC = ("--source", "github", "--uvx", UVX, "--print")
FIRST = "first-service-token-5b1d7e3a9c2f4860"
SECOND = "second-service-token-0c8e2a6f4b7d1935"


def project_files(project: Path) -> list[str]:
    return sorted(str(p.relative_to(project)) for p in project.rglob("*"))


def test_a_backup_with_a_token_never_stays_in_the_project(
    fake_home: Home, run_cli: RunCli, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    base = {"SERVICE_API_BASE": "http://127.0.0.1:8080", "XDG_STATE_HOME": str(state)}
    install = ("install", "--client", "claude-code", "--scope", "project", *SRC[:-1])
    plain = run_cli(*install, "--no-env-refs", env=base | {"SERVICE_API_TOKEN": FIRST})
    assert plain.returncode == 0, plain.stderr
    path = fake_home.project / ".mcp.json"
    assert FIRST in path.read_text()

    # Following install's advice: references instead. The old file held the token: no backup.
    refs = run_cli(*install, "--env-refs", env=base | {"SERVICE_API_TOKEN": FIRST})
    assert refs.returncode == 0, refs.stderr
    assert "no backup kept: the previous file held a token in plain text" in refs.stderr
    assert project_files(fake_home.project) == [".mcp.json"]
    assert FIRST not in path.read_text()

    # Plain text again, then rotated: the backup holding the first token goes outside the project.
    assert (
        run_cli(*install, "--no-env-refs", env=base | {"SERVICE_API_TOKEN": FIRST}).returncode == 0
    )
    rotated = run_cli(*install, "--no-env-refs", env=base | {"SERVICE_API_TOKEN": SECOND})
    assert rotated.returncode == 0, rotated.stderr
    assert project_files(fake_home.project) == [".mcp.json"]
    (backup,) = (state / "svc-mcp" / "backups").iterdir()
    assert FIRST in backup.read_text()
    assert backup.stat().st_mode & 0o777 == 0o600
    assert f"held a token in plain text; it is kept as {backup}, readable by you only" in (
        rotated.stderr
    )


def test_a_user_backup_with_a_token_stays_beside_private_and_named(
    fake_home: Home, run_cli: RunCli
) -> None:
    install = ("install", "--client", "cursor", *SRC[:-1])
    env = {"SERVICE_API_BASE": "http://127.0.0.1:8080"}
    assert run_cli(*install, env=env | {"SERVICE_API_TOKEN": FIRST}).returncode == 0
    rotated = run_cli(*install, env=env | {"SERVICE_API_TOKEN": SECOND})
    backup = fake_home.user_file("cursor").with_name("mcp.json.bak")
    assert FIRST in backup.read_text()
    assert backup.stat().st_mode & 0o777 == 0o600
    assert f"held a token in plain text; it is kept as {backup}" in rotated.stderr


@pytest.mark.parametrize("link", [".mcp.json", ".cursor"])
def test_a_project_file_that_leads_out_of_the_project_is_refused(
    link: str, fake_home: Home, run_cli: RunCli, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (fake_home.project / link).symlink_to(outside / "target" if link == ".mcp.json" else outside)
    client = "claude-code" if link == ".mcp.json" else "cursor"
    result = run_cli("install", "--client", client, "--scope", "project", *SRC[:-1])
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert f"leads to {outside}" in result.stderr
    assert "outside the project" in result.stderr
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("pair", "says"),
    [
        ("SERVICE_API_TOKEN=abc\rdef-0000000000000000000000", "SERVICE_API_TOKEN holds a control"),
        (
            "PORTAL_SESSION_TOKEN=tok\x1b]0;title\x07-0000000000",
            "PORTAL_SESSION_TOKEN holds a control",
        ),
        ("SERVICE_API_BASE=not a url", "SERVICE_API_BASE takes an http:// or https:// URL"),
        ("PORTAL_API_BASE=ftp://host/", "PORTAL_API_BASE takes an http:// or https:// URL"),
    ],
)
def test_bad_values_are_refused_without_echo(
    pair: str, says: str, fake_home: Home, run_cli: RunCli
) -> None:
    result = run_cli("install", "--client", "cursor", *SRC, "--env", pair)
    assert result.returncode == 2
    assert says in result.stderr
    assert pair.partition("=")[2] not in result.stderr
    assert result.stdout == ""


def test_a_token_over_plain_http_to_another_machine_needs_the_opt_in(
    fake_home: Home, run_cli: RunCli
) -> None:
    env = {"PORTAL_API_BASE": "http://portal.example:8081", "PORTAL_SESSION_TOKEN": FIRST}
    refused = run_cli("install", "--client", "cursor", *SRC[:-1], env=env)
    assert refused.returncode == 2
    assert "clear text over http:// to portal.example (PORTAL_API_BASE)" in refused.stderr
    assert "SVC_MCP_INSECURE_HOSTS" in refused.stderr
    assert not fake_home.user_file("cursor").exists()
    allowed = run_cli(
        "install",
        "--client",
        "cursor",
        *SRC[:-1],
        env=env | {"SVC_MCP_INSECURE_HOSTS": "portal.example"},
    )
    assert allowed.returncode == 0, allowed.stderr
    entry = servers_of("cursor", fake_home.user_file("cursor"))["svc"]
    assert entry["env"]["SVC_MCP_INSECURE_HOSTS"] == "portal.example"
    # Loopback and https need nothing.
    for base in ("http://127.0.0.1:8081", "http://localhost:8081", "https://portal.example"):
        ok = run_cli("install", "--client", "cursor", *SRC, env=env | {"PORTAL_API_BASE": base})
        assert ok.returncode == 0, ok.stderr

    gateway = ("install", "--client", "cursor", "--http", "http://gw.example:8765/mcp", "--print")
    assert "clear text over http:// to gw.example" in run_cli(*gateway).stderr
    assert run_cli(*gateway, "--http-token", "none").returncode == 0


def test_doctor_sends_no_token_over_plain_http_to_another_machine(
    fake_home: Home, run_cli: RunCli
) -> None:
    env = {"PORTAL_API_BASE": "http://portal.example:8081", "PORTAL_SESSION_TOKEN": FIRST}
    result = run_cli("doctor", "--toolsets", "portal", "--json", env=env)
    findings = {f["check"]: f for f in map(json.loads, result.stdout.splitlines())}
    settings = findings["portal.settings"]
    assert (settings["status"], settings["kind"]) == ("fail", "misconfigured")
    assert "plain http:// to portal.example" in settings["message"]
    assert "SVC_MCP_INSECURE_HOSTS" in settings["message"]
    assert "portal.answers" not in findings
    assert FIRST not in result.stdout + result.stderr


def test_fetched_sources_are_pinned_unless_asked(fake_home: Home, run_cli: RunCli) -> None:
    version = own_version()

    def args(*extra: str) -> list[str]:
        result = run_cli("install", "--client", "cursor", *extra, "--uvx", UVX, "--print")
        assert result.returncode == 0, result.stderr
        return list(json.loads(result.stdout)["mcpServers"]["svc"]["args"])

    github = "git+https://github.com/svc-mcp/svc-mcp"
    assert args("--source", "github") == ["--from", f"{github}@v{version}", "svc-mcp"]
    assert args("--source", "github", "--unpinned") == ["--from", github, "svc-mcp"]
    assert args("--source", "pypi") == [f"svc-mcp=={version}"]
    assert args("--source", "pypi", "--unpinned") == ["svc-mcp"]
    refused = run_cli("install", "--client", "cursor", "--unpinned", "--print")
    assert refused.returncode == 2
    assert "--unpinned is for --source pypi or github" in refused.stderr


def test_a_token_backup_leaves_a_dotfiles_repository(
    fake_home: Home, run_cli: RunCli, tmp_path: Path
) -> None:
    """A user file linked into a git work tree: its token-bearing backup goes to the state folder."""
    dotfiles = fake_home.home / "dotfiles"
    (dotfiles / ".git").mkdir(parents=True)
    (dotfiles / "cursor.json").write_text("{}\n")
    fake_home.user_file("cursor").parent.mkdir(parents=True)
    fake_home.user_file("cursor").symlink_to(dotfiles / "cursor.json")
    env = {"SERVICE_API_BASE": "http://127.0.0.1:8080", "XDG_STATE_HOME": str(tmp_path / "s")}
    install = ("install", "--client", "cursor", *SRC[:-1])
    assert run_cli(*install, env=env | {"SERVICE_API_TOKEN": FIRST}).returncode == 0
    rotated = run_cli(*install, env=env | {"SERVICE_API_TOKEN": SECOND})
    assert rotated.returncode == 0, rotated.stderr
    assert sorted(p.name for p in dotfiles.iterdir()) == [".git", "cursor.json"]
    (backup,) = (tmp_path / "s" / "svc-mcp" / "backups").iterdir()
    assert FIRST in backup.read_text()


def test_github_pins_the_commit_this_installation_was_built_from(
    fake_home: Home, run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installation from git says its commit (PEP 610 direct_url.json): the entry pins it, not
    the release tag, which whoever controls the repository could move."""
    version, commit = own_version(), "0123456789abcdef0123456789abcdef01234567"
    tagged = run_cli("install", "--client", "cursor", "--source", "github", "--uvx", UVX, "--print")
    assert "the entry runs the tag v" in tagged.stderr
    info = tmp_path / "site" / f"svc_mcp-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: svc-mcp\nVersion: {version}\n")
    origin = {
        "url": "https://github.com/svc-mcp/svc-mcp.git",
        "vcs_info": {"vcs": "git", "commit_id": commit, "requested_revision": f"v{version}"},
    }
    (info / "direct_url.json").write_text(json.dumps(origin))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    pinned = run_cli("install", "--client", "cursor", "--source", "github", "--uvx", UVX, "--print")
    assert pinned.returncode == 0, pinned.stderr
    args = json.loads(pinned.stdout)["mcpServers"]["svc"]["args"]
    assert args == ["--from", f"git+https://github.com/svc-mcp/svc-mcp@{commit}", "svc-mcp"]
    assert "the entry runs the tag" not in pinned.stderr
