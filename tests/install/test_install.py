"""`svc-mcp install` and `uninstall` for every client, on real files in a fake home."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from svc_mcp.hosts.entries import ENV_KEYS, plain_secrets
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.files import strip_jsonc
from svc_mcp.hosts.plan import read_entry
from svc_mcp.hosts.runners import Runners, find_checkout, launch_command, own_version
from svc_mcp.hosts.table import HOSTS, Platform, Scope
from tests.install.conftest import (
    HOST_NAMES,
    LINUX_USER_FILES,
    REFERENCING_CLIENTS,
    FakeIndex,
    Home,
    RunCli,
    parse_config,
    servers_of,
)
from tests.support import ROOT

UVX = sys.executable  # any executable file stands in for uvx where nothing runs it
SRC = ("--source", "github", "--uvx", UVX)
VERSION = own_version()
GH_ARGS = ["--from", f"git+https://github.com/svc-mcp/svc-mcp@v{VERSION}", "svc-mcp"]
PORTAL = {"PORTAL_API_BASE": "https://portal.example:8081"}
SERVICE_SECRET = "svc-secret-token-value-0123456789abcdef"
PORTAL_SECRET = "portal-secret-session-value-abcdef012345"
TOKENS = {"SERVICE_API_TOKEN": SERVICE_SECRET, "PORTAL_SESSION_TOKEN": PORTAL_SECRET}
OTHER_SERVER = {"command": "/bin/other", "args": ["--x"], "env": {"K": "v"}}


def expected_entry(client: str, env: dict[str, str], args: list[str] | None = None) -> Any:
    entry = {"command": UVX, "args": args or GH_ARGS, "env": env}
    return {"type": "stdio", **entry} if client == "vscode" else entry


def original_text(client: str) -> str:
    """A host file with another server, unknown keys, non-ASCII text and (in TOML) comments."""
    if HOSTS[client].file_format == "toml":
        return (
            '# my settings\nmodel = "o3"  # the model\nnote = "ünïcode"\n\n'
            '[mcp_servers.other]\ncommand = "/bin/other"\nargs = ["--x"]\n\n'
            '[mcp_servers.other.env]\nK = "v"\n\n[profiles.fast]\nmodel = "o4-mini"\n'
        )
    document = {
        "theme": "dark",
        "note": "ünïcode",
        HOSTS[client].servers_key: {"other": OTHER_SERVER},
        "projects": {"/work": {"allowedTools": []}},
    }
    return json.dumps(document, indent=4, ensure_ascii=False) + "\n"


def fresh_file(client: str) -> str:
    """The whole file installing with PORTAL into nothing writes."""
    if HOSTS[client].file_format == "toml":
        return (
            f'[mcp_servers.svc]\ncommand = "{UVX}"\n'
            f'args = ["--from", "git+https://github.com/svc-mcp/svc-mcp@v{VERSION}", "svc-mcp"]\n\n'
            '[mcp_servers.svc.env]\nPORTAL_API_BASE = "https://portal.example:8081"\n'
        )
    servers = {"svc": expected_entry(client, PORTAL)}
    return json.dumps({HOSTS[client].servers_key: servers}, indent=2) + "\n"


def unknown_keys(client: str, path: Path) -> dict[str, Any]:
    document = parse_config(client, path)
    return {key: value for key, value in document.items() if key != HOSTS[client].servers_key}


@pytest.mark.parametrize("client", HOST_NAMES)
def test_install_into_an_empty_home(client: str, fake_home: Home, run_cli: RunCli) -> None:
    result = run_cli("install", "--client", client, *SRC, env=PORTAL)
    path = fake_home.user_file(client)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert f"installed 'svc' for {HOSTS[client].label} in {path}" in result.stderr
    assert servers_of(client, path) == {"svc": expected_entry(client, PORTAL)}
    assert sorted(os.listdir(path.parent)) == [path.name]  # no backup, no temporary file
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("client", HOST_NAMES)
def test_merge_twice_then_uninstall(client: str, fake_home: Home, run_cli: RunCli) -> None:
    path = fake_home.user_file(client)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(original_text(client), encoding="utf-8")
    path.chmod(0o640)
    before = unknown_keys(client, path)

    first = run_cli("install", "--client", client, *SRC, env=PORTAL)
    backup = path.with_name(path.name + ".bak")
    assert first.returncode == 0, first.stderr
    assert f"the previous file is kept as {backup}" in first.stderr
    assert backup.read_text(encoding="utf-8") == original_text(client)
    assert servers_of(client, path) == {
        "other": OTHER_SERVER,
        "svc": expected_entry(client, PORTAL),
    }
    assert unknown_keys(client, path) == before
    assert path.stat().st_mode & 0o777 == 0o640
    installed = path.read_bytes()

    second = run_cli("install", "--client", client, *SRC, env=PORTAL)
    assert second.returncode == 0, second.stderr
    assert f"{path} already has this 'svc' entry; nothing changed" in second.stderr
    assert path.read_bytes() == installed
    assert backup.read_text(encoding="utf-8") == original_text(client)

    removed = run_cli("uninstall", "--client", client)
    assert removed.returncode == 0, removed.stderr
    assert f"removed 'svc' from {path}" in removed.stderr
    assert servers_of(client, path) == {"other": OTHER_SERVER}
    assert unknown_keys(client, path) == before
    if HOSTS[client].file_format == "toml":
        assert "# my settings" in path.read_text(encoding="utf-8")
        assert "# the model" in path.read_text(encoding="utf-8")

    again = run_cli("uninstall", "--client", client)
    assert again.returncode == 0
    assert f"{path} has no server called 'svc'; nothing changed" in again.stderr


@pytest.mark.parametrize("client", HOST_NAMES)
def test_a_malformed_file_is_left_untouched(client: str, fake_home: Home, run_cli: RunCli) -> None:
    path = fake_home.user_file(client)
    path.parent.mkdir(parents=True, exist_ok=True)
    broken = (
        b'[mcp_servers.other\ncommand = "x"\n'
        if HOSTS[client].file_format == "toml"
        else b'{"mcpServers": {"other": \n'
    )
    path.write_bytes(broken)
    for args in (("install", *SRC), ("uninstall",), ("install", "--print", *SRC)):
        result = run_cli(*args, "--client", client, env=PORTAL)
        assert result.returncode == 2
        assert f"{path} is not valid {HOSTS[client].file_format.upper()}" in result.stderr
        assert "left untouched" in result.stderr
        assert result.stdout == ""
        assert path.read_bytes() == broken
        assert os.listdir(path.parent) == [path.name]


@pytest.mark.parametrize(
    ("client", "text", "says"),
    [
        ("cursor", "[1, 2]", "does not hold a JSON object"),
        ("vscode", '{"servers": ["svc"]}', "'servers' is not a table of servers"),
        ("codex", "mcp_servers = 3\n", "'mcp_servers' is not a table of servers"),
    ],
)
def test_a_file_of_another_shape_is_left_untouched(
    client: str, text: str, says: str, fake_home: Home, run_cli: RunCli
) -> None:
    path = fake_home.user_file(client)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    result = run_cli("install", "--client", client, *SRC)
    assert result.returncode == 2
    assert says in result.stderr
    assert path.read_text() == text
    assert os.listdir(path.parent) == [path.name]


@pytest.mark.parametrize("client", HOST_NAMES)
def test_print_writes_nothing(client: str, fake_home: Home, run_cli: RunCli) -> None:
    path = fake_home.user_file(client)
    fresh = run_cli("install", "--client", client, *SRC, "--print", env=PORTAL)
    assert fresh.returncode == 0, fresh.stderr
    assert f"would write {path} (--print: nothing was written)" in fresh.stderr
    assert fresh.stdout == fresh_file(client)
    assert os.listdir(fake_home.home) == []

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(original_text(client), encoding="utf-8")
    printed = run_cli("install", "--client", client, *SRC, "--print", env=PORTAL)
    assert printed.returncode == 0, printed.stderr
    assert path.read_text(encoding="utf-8") == original_text(client)
    assert os.listdir(path.parent) == [path.name]
    # What was printed is exactly what installing then writes.
    assert run_cli("install", "--client", client, *SRC, env=PORTAL).returncode == 0
    assert path.read_text(encoding="utf-8") == printed.stdout
    again = run_cli("install", "--client", client, *SRC, "--print", env=PORTAL)
    assert again.stdout == printed.stdout
    assert f"{path} already has this 'svc' entry; nothing changed" in again.stderr


# --------------------------------------------------------------------------------- where files go

HOME = Path("/home/ann")
PER_OS: dict[str, dict[Platform, str]] = {
    "claude-desktop": {
        "linux": ".config/Claude/claude_desktop_config.json",
        "darwin": "Library/Application Support/Claude/claude_desktop_config.json",
        "win32": "AppData/Roaming/Claude/claude_desktop_config.json",
    },
    "vscode": {
        "linux": ".config/Code/User/mcp.json",
        "darwin": "Library/Application Support/Code/User/mcp.json",
        "win32": "AppData/Roaming/Code/User/mcp.json",
    },
}
PROJECT_FILES: dict[str, str | None] = {
    "claude-desktop": None,
    "claude-code": ".mcp.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
    "windsurf": None,
    "gemini": ".gemini/settings.json",
    "antigravity": ".agents/mcp_config.json",
    "codex": ".codex/config.toml",
}


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
@pytest.mark.parametrize("client", HOST_NAMES)
def test_paths_follow_each_os(client: str, platform: Platform) -> None:
    project = Path("/work/app")

    def path(scope: Scope, environ: dict[str, str] | None = None) -> Path:
        return HOSTS[client].config_path(
            scope, home=HOME, cwd=project, platform=platform, environ=environ or {}
        )

    same_everywhere = LINUX_USER_FILES[client]
    assert path("user") == HOME / PER_OS.get(client, {}).get(platform, same_everywhere)
    project_file = PROJECT_FILES[client]
    if project_file is None:
        with pytest.raises(InstallError, match="has no project configuration; use --scope user"):
            path("project")
    else:
        assert path("project") == project / project_file
    if client == "codex":
        assert path("user", {"CODEX_HOME": "/srv/codex"}) == Path("/srv/codex/config.toml")
    if client in PER_OS and platform != "darwin":
        variable = "APPDATA" if platform == "win32" else "XDG_CONFIG_HOME"
        moved = path("user", {variable: "/cfg"})
        assert moved == Path("/cfg") / PER_OS[client]["linux"].removeprefix(".config/")


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_the_cli_writes_where_the_platform_says(
    platform: Platform, fake_home: Home, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("svc_mcp.hosts.targets.current_platform", lambda: platform)
    for client in ("claude-desktop", "vscode", "cursor"):
        assert run_cli("install", "--client", client, *SRC).returncode == 0
        relative = PER_OS.get(client, {}).get(platform, LINUX_USER_FILES[client])
        assert "svc" in servers_of(client, fake_home.home / relative)
    assert not (fake_home.home / ".config").exists()


@pytest.mark.parametrize("client", [c for c in HOST_NAMES if PROJECT_FILES[c]])
def test_project_scope_writes_into_the_current_directory(
    client: str, fake_home: Home, run_cli: RunCli
) -> None:
    result = run_cli("install", "--client", client, "--scope", "project", *SRC)
    assert result.returncode == 0, result.stderr
    project_file = PROJECT_FILES[client]
    assert project_file is not None
    assert "svc" in servers_of(client, fake_home.project / project_file)
    assert os.listdir(fake_home.home) == []


def test_scopes_a_client_lacks_are_refused(fake_home: Home, run_cli: RunCli) -> None:
    for client in ("claude-desktop", "windsurf"):
        result = run_cli("install", "--client", client, "--scope", "project", *SRC)
        assert result.returncode == 2
        assert f"{HOSTS[client].label} has no project configuration" in result.stderr
    assert os.listdir(fake_home.project) == []


def test_config_overrides_the_path_and_a_symlink_stays_a_link(
    fake_home: Home, run_cli: RunCli
) -> None:
    dotfiles = fake_home.home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "cursor.json").write_text('{"mcpServers": {}}\n')
    (fake_home.project / "linked.json").symlink_to(dotfiles / "cursor.json")
    result = run_cli("install", "--client", "cursor", "--config", "linked.json", *SRC)
    assert result.returncode == 0, result.stderr
    assert (fake_home.project / "linked.json").is_symlink()
    assert "svc" in servers_of("cursor", dotfiles / "cursor.json")
    assert (dotfiles / "cursor.json.bak").read_text() == '{"mcpServers": {}}\n'
    assert not fake_home.user_file("cursor").exists()


# ----------------------------------------------------------------------------- environment and tokens


def test_env_comes_from_the_environment_and_the_flags(fake_home: Home, run_cli: RunCli) -> None:
    environment = {
        "PORTAL_API_BASE": "https://from-env:1",
        "SERVICE_API_BASE": "https://service-from-env:2",
        "SERVICE_API_TOKEN": SERVICE_SECRET,
        "PORTAL_SESSION_TOKEN": "",  # empty counts as unset
        "SERVICE_INTEL_HMAC": "not-one-of-ours",
    }
    result = run_cli(
        "install",
        "--client",
        "cursor",
        "--uvx",
        UVX,
        "--env",
        "PORTAL_API_BASE=https://from-flag:3",
        "--env",
        "SERVICE_API_TOKEN=",
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    entry = servers_of("cursor", fake_home.user_file("cursor"))["svc"]
    entry["env"].pop("UV_SYSTEM_CERTS", None)  # set when the entry runs uv (a checkout)
    assert entry["env"] == {
        "SERVICE_API_BASE": "https://service-from-env:2",
        "PORTAL_API_BASE": "https://from-flag:3",
    }
    assert "warning" not in result.stderr


@pytest.mark.parametrize("pair", ["NOT_OURS=x", f"{SERVICE_SECRET}"])
def test_a_bad_env_pair_is_refused_without_echoing_it(
    pair: str, fake_home: Home, run_cli: RunCli
) -> None:
    result = run_cli("install", "--client", "cursor", *SRC, "--env", pair)
    assert result.returncode == 2
    assert "--env takes KEY=VALUE with KEY one of SERVICE_API_BASE" in result.stderr
    assert SERVICE_SECRET not in result.stderr
    assert not fake_home.user_file("cursor").exists()


@pytest.mark.parametrize(
    ("client", "scope"),
    [("claude-code", "user"), ("claude-desktop", "user"), ("vscode", "project")],
)
def test_a_token_in_a_plain_file_is_named_never_shown(
    client: str, scope: Scope, fake_home: Home, run_cli: RunCli
) -> None:
    plain = ("--no-env-refs",) if scope == "project" else ()  # a project defaults to refs
    result = run_cli("install", "--client", client, "--scope", scope, *SRC, *plain, env=TOKENS)
    assert result.returncode == 0, result.stderr
    path = (
        fake_home.user_file(client) if scope == "user" else fake_home.project / ".vscode/mcp.json"
    )
    assert (
        f"warning: SERVICE_API_TOKEN and PORTAL_SESSION_TOKEN are stored in plain text in {path}"
        in result.stderr
    )
    if HOSTS[client].takes_references:
        assert "add --env-refs" in result.stderr
    else:
        assert (
            "cannot read variables from its environment, so keep this file private" in result.stderr
        )
    assert ("never commit a token" in result.stderr) == (scope == "project")
    for secret in TOKENS.values():
        assert secret not in result.stderr + result.stdout
    assert servers_of(client, path)["svc"]["env"] == TOKENS


@pytest.mark.parametrize("client", REFERENCING_CLIENTS)
def test_env_refs_write_references(client: str, fake_home: Home, run_cli: RunCli) -> None:
    result = run_cli("install", "--client", client, *SRC, "--env-refs", env=PORTAL | TOKENS)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr
    path = fake_home.user_file(client)
    text = path.read_text()
    assert SERVICE_SECRET not in text
    assert PORTAL_SECRET not in text
    entry = servers_of(client, path)["svc"]
    if client == "codex":
        assert entry["env"] == PORTAL
        assert entry["env_vars"] == ["SERVICE_API_TOKEN", "PORTAL_SESSION_TOKEN"]
    else:
        spelling = "${%s}" if client in ("claude-code", "gemini", "antigravity") else "${env:%s}"
        assert entry["env"] == PORTAL | {name: spelling % name for name in TOKENS}


@pytest.mark.parametrize("client", [c for c in REFERENCING_CLIENTS if "project" in HOSTS[c].scopes])
def test_a_project_file_gets_references_by_default(
    client: str, fake_home: Home, run_cli: RunCli
) -> None:
    result = run_cli("install", "--client", client, "--scope", "project", *SRC, env=TOKENS)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr
    path = fake_home.project / PROJECT_FILES[client]  # type: ignore[operator]
    for secret in TOKENS.values():
        assert secret not in path.read_text()


def test_a_file_that_gets_a_token_becomes_private_and_its_backups_go(
    fake_home: Home, run_cli: RunCli
) -> None:
    path = fake_home.user_file("claude-code")
    path.write_text('{"theme": "dark"}\n')
    path.chmod(0o644)
    result = run_cli("install", "--client", "claude-code", *SRC, env=TOKENS)
    assert result.returncode == 0, result.stderr
    assert f"{path} was mode 0644; it is now 0600 (readable by you only)" in result.stderr
    assert path.stat().st_mode & 0o777 == 0o600
    backup = path.with_name(path.name + ".bak")
    assert backup.stat().st_mode & 0o777 == 0o600
    # Installing again (a new backup now holds the token) keeps both private.
    again = run_cli(
        "install",
        "--client",
        "claude-code",
        *SRC,
        "--env",
        "PORTAL_API_BASE=https://x:1",
        env=TOKENS,
    )
    assert again.returncode == 0, again.stderr
    assert SERVICE_SECRET in backup.read_text()
    assert backup.stat().st_mode & 0o777 == 0o600
    removed = run_cli("uninstall", "--client", "claude-code")
    assert removed.returncode == 0, removed.stderr
    assert (
        f"no backup kept: the previous file held its token in plain text; {backup} removed"
        in removed.stderr
    )
    assert not backup.exists()
    assert SERVICE_SECRET not in path.read_text()
    assert json.loads(path.read_text()) == {"theme": "dark", "mcpServers": {}}


def test_env_refs_are_refused_where_the_host_cannot_expand_them(
    fake_home: Home, run_cli: RunCli
) -> None:
    result = run_cli("install", "--client", "claude-desktop", *SRC, "--env-refs", env=TOKENS)
    assert result.returncode == 2
    assert "Claude Desktop does not expand environment variables" in result.stderr
    assert not fake_home.user_file("claude-desktop").parent.exists()


def test_keys_a_user_added_to_our_entry_survive(fake_home: Home, run_cli: RunCli) -> None:
    path = fake_home.user_file("codex")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "[mcp_servers.svc]\n"
        'command = "/old/uvx"  # keep this comment\n'
        'args = ["svc-mcp"]\n'
        "startup_timeout_sec = 30\n"
        'env_vars = ["HTTPS_PROXY", "PORTAL_SESSION_TOKEN"]\n\n'
        "[mcp_servers.svc.env]\n"
        'LOG_LEVEL = "debug"\n'
        'PORTAL_API_BASE = "http://old:1"\n'
    )
    result = run_cli("install", "--client", "codex", *SRC, env=PORTAL)
    assert result.returncode == 0, result.stderr
    assert servers_of("codex", path)["svc"] == {
        "command": UVX,
        "args": GH_ARGS,
        "startup_timeout_sec": 30,
        "env_vars": ["HTTPS_PROXY"],
        "env": {"LOG_LEVEL": "debug", **PORTAL},
    }
    assert "# keep this comment" in path.read_text()


# ---------------------------------------------------------------------------- sources, names, uvx


def test_sources_run_this_installation_pypi_github_or_this_checkout(
    fake_home: Home, run_cli: RunCli, fake_index: FakeIndex
) -> None:
    uv = sys.executable  # an executable stands in for uv
    run = ["run", "--project", str(ROOT), "svc-mcp"]
    expected = {
        # The tests run from the checkout: "here" is `uv run --project <checkout>`.
        "here": (uv, run),
        "local": (uv, run),
        "github": (UVX, GH_ARGS),
        "pypi": (UVX, ["--default-index", fake_index.with_package, f"svc-mcp=={VERSION}"]),
    }
    for source, (command, args) in expected.items():
        result = run_cli(
            "install",
            "--client",
            "gemini",
            "--uvx",
            UVX,
            "--uv",
            uv,
            "--source",
            source,
            env={"UV_INDEX_URL": fake_index.with_package},
        )
        assert result.returncode == 0, result.stderr
        entry = servers_of("gemini", fake_home.user_file("gemini"))["svc"]
        assert (entry["command"], entry["args"]) == (command, args), source


def test_pypi_is_refused_when_the_index_lacks_the_package(
    fake_home: Home, run_cli: RunCli, fake_index: FakeIndex
) -> None:
    for how in (
        {"args": ("--index-url", fake_index.without_package), "env": {}},
        {"args": (), "env": {"PIP_INDEX_URL": fake_index.without_package}},
    ):
        result = run_cli(
            "install",
            "--client",
            "cursor",
            "--source",
            "pypi",
            "--uvx",
            UVX,
            *how["args"],
            env=how["env"],
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1
        assert f"svc-mcp is not on the package index {fake_index.without_package}" in result.stderr
        assert "drop --source to run this installation" in result.stderr
    assert not fake_home.user_file("cursor").exists()
    default = run_cli(
        "install",
        "--client",
        "cursor",
        "--source",
        "pypi",
        "--uvx",
        UVX,
        "--index-url",
        "https://pypi.org/simple",
        "--print",
    )
    assert default.returncode == 0  # --print neither checks nor writes
    assert json.loads(default.stdout)["mcpServers"]["svc"]["args"] == [f"svc-mcp=={VERSION}"]


@pytest.mark.parametrize(
    "args",
    [
        ("--source", "github", "--uvx", "/nonexistent/uvx"),
        ("--source", "local", "--uv", "/nonexistent/uv"),
        ("--source", "github", "--uvx", str(ROOT / "README.md")),  # not executable
    ],
)
def test_a_command_that_does_not_exist_is_refused(
    args: tuple[str, ...], fake_home: Home, run_cli: RunCli
) -> None:
    result = run_cli("install", "--client", "cursor", *args)
    assert result.returncode == 2
    assert "is not an executable file; the host could not start it" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not fake_home.user_file("cursor").exists()


def test_the_checkout_is_found_above_a_start_or_refused(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    (ours / "src" / "deep").mkdir(parents=True)
    theirs.mkdir()
    (ours / "pyproject.toml").write_text('[project]\nname = "svc-mcp"\n')
    (theirs / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    assert find_checkout([theirs, ours / "src" / "deep"]) == ours
    with pytest.raises(InstallError, match="--source local needs a checkout of svc-mcp"):
        find_checkout([theirs])


def test_uvx_is_found_on_path_by_its_absolute_path(
    fake_home: Home, run_cli: RunCli, fake_uvx: Path
) -> None:
    result = run_cli(
        "install", "--client", "cursor", "--source", "github", env={"PATH": str(fake_uvx.parent)}
    )
    assert result.returncode == 0, result.stderr
    assert servers_of("cursor", fake_home.user_file("cursor"))["svc"]["command"] == str(fake_uvx)
    relative = run_cli("install", "--client", "cursor", "--source", "github", "--uvx", "bin/uvx")
    assert relative.returncode == 2
    assert "uvx must be given by its absolute path" in relative.stderr


def test_names_are_checked_and_entries_coexist(fake_home: Home, run_cli: RunCli) -> None:
    assert run_cli("install", "--client", "cursor", *SRC).returncode == 0
    assert run_cli("install", "--client", "cursor", *SRC, "--name", "svc-2").returncode == 0
    assert sorted(servers_of("cursor", fake_home.user_file("cursor"))) == ["svc", "svc-2"]
    bad = run_cli("install", "--client", "cursor", *SRC, "--name", "svc.prod")
    assert bad.returncode == 2
    assert "--name 'svc.prod'" in bad.stderr


def test_the_front_door_hands_over_and_refuses_options_before(run_cli: RunCli) -> None:
    misplaced = run_cli("--read-only", "install", "--client", "cursor")
    assert misplaced.returncode == 2
    assert "options of svc-mcp itself cannot come before install" in misplaced.stderr
    assert run_cli("install").returncode == 2  # --client is required
    assert run_cli("uninstall", "--client", "nowhere").returncode == 2


@pytest.mark.e2e
def test_install_and_doctor_never_import_mcp(fake_home: Home) -> None:
    code = (
        "import sys\n"
        "from svc_mcp.cli.main import main\n"
        "for args in (['install', '--client', 'cursor', '--uvx', '/u/uvx', '--print'],\n"
        "             ['doctor', '--toolsets', 'portal']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(name for name in sys.modules if name == 'mcp' or name.startswith('mcp.')))\n"
    )
    env = {**os.environ, "PORTAL_API_BASE": "http://127.0.0.1:9"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stderr


# ------------------------------------------------------------------------------- VS Code's JSONC

JSONC_WITH_COMMENTS = """{
  "servers": {
    // a server of mine
    "other": {"command": "/bin/other", "args": ["--x"], "env": {"K": "v"},},
    "svc": {"type": "stdio", "command": "/x/svc-mcp", "args": []}, /* ours */
  },
}
"""


def test_vscode_jsonc_is_read_and_a_file_with_comments_is_not_rewritten(
    fake_home: Home, run_cli: RunCli
) -> None:
    path = fake_home.user_file("vscode")
    path.parent.mkdir(parents=True)
    path.write_text(JSONC_WITH_COMMENTS)
    entry = read_entry(HOSTS["vscode"], path, "svc")  # what doctor reads
    assert entry == {"type": "stdio", "command": "/x/svc-mcp", "args": []}
    for args in (("install", *SRC), ("uninstall",)):
        result = run_cli(*args, "--client", "vscode", env=PORTAL)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1
        assert (
            f"{path} line 3 holds a comment, which rewriting the file would lose" in result.stderr
        )
        assert path.read_text() == JSONC_WITH_COMMENTS
    assert os.listdir(path.parent) == [path.name]


def test_vscode_trailing_commas_alone_are_read_and_written_as_json(
    fake_home: Home, run_cli: RunCli
) -> None:
    path = fake_home.user_file("vscode")
    path.parent.mkdir(parents=True)
    path.write_text('{"servers": {"other": {"command": "/bin/other", "args": ["--x",],},},}\n')
    result = run_cli("install", "--client", "vscode", *SRC, env=PORTAL)
    assert result.returncode == 0, result.stderr
    assert servers_of("vscode", path) == {
        "other": {"command": "/bin/other", "args": ["--x"]},
        "svc": expected_entry("vscode", PORTAL),
    }


def test_jsonc_stripping_leaves_strings_alone() -> None:
    text = '{"a": "http://x//y /* no */ ,}", // c\n "b": [1, 2,], /* d\n e */ "c": "\\"//"}'
    stripped, first = strip_jsonc(text)
    assert json.loads(stripped) == {"a": "http://x//y /* no */ ,}", "b": [1, 2], "c": '"//'}
    assert first == 1
    assert stripped.count("\n") == text.count("\n")


# ------------------------------------------------------------------------------ errors and help


@pytest.mark.parametrize(
    "args",
    [
        ("install",),
        ("install", "--client", "nowhere"),
        ("install", "--client", "cursor", "--bogus"),
        ("uninstall", "--client", "cursor", "--scope", "team"),
        ("install", "--client", "cursor", "--http", "ftp://x"),
    ],
)
def test_errors_are_one_line(args: tuple[str, ...], fake_home: Home, run_cli: RunCli) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert re.match(r"svc-mcp( install| uninstall)?: usage: ", result.stderr), result.stderr
    assert "╭" not in result.stderr


def test_help_points_at_what_the_user_has(run_cli: RunCli) -> None:
    front = run_cli("--help")
    assert front.returncode == 0
    assert "svc-mcp install --help" in front.stdout
    assert "svc-mcp doctor" in front.stdout
    assert "https://github.com/svc-mcp/svc-mcp#readme" in front.stdout
    install = run_cli("install", "--help")
    assert install.returncode == 0
    for option in ("--source", "--http", "--http-token", "--index-url", "--uv ", "--env-refs"):
        assert option in install.stdout
    # A wheel holds no install/README.md: the help names the published README first.
    assert "https://github.com/svc-mcp/svc-mcp#readme" in install.stdout


def test_env_takes_every_variable_the_server_reads(fake_home: Home, run_cli: RunCli) -> None:
    result = run_cli(
        "install",
        "--client",
        "gemini",
        *SRC,
        "--env",
        "SSL_CERT_FILE=/etc/ssl/corp.pem",
        "--env",
        "SVC_MCP_TIMEOUT_SECONDS=20",
        env=TOKENS,
    )
    assert result.returncode == 0, result.stderr
    env = servers_of("gemini", fake_home.user_file("gemini"))["svc"]["env"]
    # Gemini CLI passes a variable named like *TOKEN* or *CERT* only when the entry lists it.
    assert env == TOKENS | {"SSL_CERT_FILE": "/etc/ssl/corp.pem", "SVC_MCP_TIMEOUT_SECONDS": "20"}
    assert list(env) == [key for key in ENV_KEYS if key in env]


@pytest.mark.parametrize("client", ["codex", "cursor"])
def test_a_plain_gateway_token_is_asked_for_named_and_kept_private(
    client: str, fake_home: Home, run_cli: RunCli
) -> None:
    url = "http://127.0.0.1:8765/mcp"
    unset = run_cli("install", "--client", client, "--http", url, "--http-token", "plain")
    assert unset.returncode == 2
    assert "--http-token plain writes SVC_MCP_GATEWAY_TOKEN: set it, or start the" in unset.stderr
    token = "gateway-secret-0123456789abcdef0123456789"
    result = run_cli(
        "install",
        "--client",
        client,
        "--http",
        url,
        "--http-token",
        "plain",
        env={"SVC_MCP_GATEWAY_TOKEN": token},
    )
    assert result.returncode == 0, result.stderr
    assert token not in result.stderr + result.stdout
    assert "warning: SVC_MCP_GATEWAY_TOKEN is stored in plain text" in result.stderr
    assert "drop --http-token plain" in result.stderr
    path = fake_home.user_file(client)
    assert path.stat().st_mode & 0o777 == 0o600
    entry = servers_of(client, path)["svc"]
    headers = entry["http_headers"] if client == "codex" else entry["headers"]
    assert headers == {"Authorization": f"Bearer {token}"}
    bare = run_cli("install", "--client", client, "--http", url, "--http-token", "none")
    assert bare.returncode == 0, bare.stderr
    assert "headers" not in servers_of(client, path)["svc"]
    assert "http_headers" not in servers_of(client, path)["svc"]


def test_a_plain_gateway_token_comes_from_the_gateways_kept_file(
    fake_home: Home, run_cli: RunCli
) -> None:
    kept = fake_home.home / ".local" / "state" / "svc-mcp" / "gateway-token"
    kept.parent.mkdir(parents=True)
    token = "kept-gateway-token-0123456789abcdefghijklmnop"
    kept.write_text(token + "\n")
    kept.chmod(0o600)
    url = "http://127.0.0.1:8765/mcp"
    result = run_cli("install", "--client", "cursor", "--http", url, "--http-token", "plain")
    assert result.returncode == 0, result.stderr
    assert token not in result.stderr + result.stdout
    entry = servers_of("cursor", fake_home.user_file("cursor"))["svc"]
    assert entry["headers"] == {"Authorization": f"Bearer {token}"}
    kept.chmod(0o644)  # readable by others: not used, and the install says what to set
    refused = run_cli("install", "--client", "cursor", "--http", url, "--http-token", "plain")
    assert refused.returncode == 2
    assert token not in refused.stderr + refused.stdout


def test_gemini_installs_say_to_trust_the_folder(fake_home: Home, run_cli: RunCli) -> None:
    for scope in ("user", "project"):
        result = run_cli("install", "--client", "gemini", "--scope", scope, *SRC)
        assert result.returncode == 0, result.stderr
        assert "Gemini CLI connects MCP servers only in a trusted folder" in result.stderr
    other = run_cli("install", "--client", "cursor", *SRC)
    assert "trusted folder" not in other.stderr


def test_an_index_url_with_credentials_is_never_written_or_shown(
    fake_home: Home, run_cli: RunCli
) -> None:
    secret = "index-password-0123456789"
    index = f"https://ann:{secret}@pypi.example/simple"
    result = run_cli(
        "install",
        "--client",
        "cursor",
        "--source",
        "pypi",
        "--uvx",
        UVX,
        env={"UV_INDEX_URL": index},
    )
    assert result.returncode == 2
    assert "the package index URL carries credentials" in result.stderr
    assert secret not in result.stderr + result.stdout
    assert not fake_home.user_file("cursor").exists()


def test_http_refuses_the_options_of_a_local_entry(fake_home: Home, run_cli: RunCli) -> None:
    url = "http://127.0.0.1:8765/mcp"
    result = run_cli("install", "--client", "cursor", "--http", url, "--env", "PORTAL_API_BASE=x")
    assert result.returncode == 2
    assert (
        "--env shape a local entry; with --http the host connects to the gateway" in result.stderr
    )
    assert not fake_home.user_file("cursor").exists()


def test_here_from_uvx_cache_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "uv" / "archive-v0" / "Xk3" / "bin" / "svc-mcp"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    with pytest.raises(InstallError, match=r"runs from uv's cache \(uvx\), which uv may clear"):
        launch_command("here", Runners(script=str(script)))
    venv = tmp_path / "venv" / "bin" / "svc-mcp"
    venv.parent.mkdir(parents=True)
    venv.write_text("#!/bin/sh\n")
    venv.chmod(0o755)
    assert launch_command("here", Runners(script=str(venv))) == [str(venv)]
    with pytest.raises(InstallError, match="cannot find this installation's svc-mcp command"):
        launch_command("here", Runners())


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ("${SERVICE_API_TOKEN}", False),
        ("${env:SERVICE_API_TOKEN}", False),
        ("$SERVICE_API_TOKEN", False),
        ("$ecret-looking-token-${x}", True),
        ("abc${SERVICE_API_TOKEN}", True),
        ("tok", True),
    ],
)
def test_only_a_whole_reference_counts_as_no_secret(value: str, plain: bool) -> None:
    entry = {"env": {"SERVICE_API_TOKEN": value}, "headers": {"Authorization": f"Bearer {value}"}}
    expected = ["SERVICE_API_TOKEN", "SVC_MCP_GATEWAY_TOKEN"] if plain else []
    assert plain_secrets(entry) == expected
