"""The host table: one row per MCP host, everything svc-mcp knows about it, and nothing about a
host anywhere else. Install, uninstall, doctor, `--print`, the help texts and the `install/`
examples all read these rows; adding a host is adding a row (and its tests).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from svc_mcp.hosts.errors import InstallError

Scope = Literal["user", "project"]
Platform = Literal["linux", "darwin", "win32"]


@dataclass(frozen=True)
class UserFile:
    """Where the host keeps its user configuration."""

    under: Literal["home", "app_data"]
    """The home, or the platform's application-data folder (XDG_CONFIG_HOME, APPDATA, ...)."""
    parts: tuple[str, ...]
    folder_variable: str | None = None
    """A variable that, when set, names the folder the file is in (all of `parts` but the last)."""

    def path(self, home: Path, platform: Platform, environ: Mapping[str, str]) -> Path:
        *folder, name = self.parts
        if self.folder_variable and (given := _absolute(environ, self.folder_variable)):
            return given / name
        return _base(self.under, home, platform, environ).joinpath(*folder, name)


def _absolute(environ: Mapping[str, str], variable: str) -> Path | None:
    """The folder `variable` names; None when unset or relative, which the XDG spec says to
    ignore: a relative one would make a file in the current (perhaps cloned) folder the user's."""
    value = environ.get(variable, "")
    return Path(value) if value and os.path.isabs(value) else None


def _base(
    under: Literal["home", "app_data"], home: Path, platform: Platform, environ: Mapping[str, str]
) -> Path:
    if under == "home":
        return home
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return _absolute(environ, "APPDATA") or home / "AppData" / "Roaming"
    return _absolute(environ, "XDG_CONFIG_HOME") or home / ".config"


@dataclass(frozen=True)
class StartupLimit:
    """How long the host waits for a server to start and list its tools (doctor's limit)."""

    seconds: float = 30.0
    variable: str | None = None
    """A variable of the host's environment that changes it, read as `variable_unit` seconds."""
    variable_unit: float = 1.0
    entry_key: str | None = None
    """A key of the entry that changes it, in seconds."""

    def of(self, entry: Mapping[str, Any], environ: Mapping[str, str]) -> float:
        value: object = entry.get(self.entry_key) if self.entry_key else None
        raw = environ.get(self.variable, "").strip() if self.variable else ""
        if value is None and raw.isdigit():
            value = int(raw) * self.variable_unit
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
        return self.seconds


@dataclass(frozen=True)
class Host:
    """One MCP host: its files, their format, its entry forms, and how it treats variables."""

    name: str
    """What `--client` takes."""
    label: str
    """The product's name, as messages show it."""
    docs: str
    """The host's own page on configuring MCP servers."""
    user_file: UserFile
    project_file: str | None
    """The project file, relative to the project folder; None: the host has no project scope."""
    servers_key: str
    reference: str | None
    """How the host spells a reference to an environment variable in `env` and headers (a
    %-pattern), if it expands any."""
    file_format: Literal["json", "toml"] = "json"
    jsonc: bool = False
    """The JSON file may hold comments and trailing commas (VS Code's JSONC)."""
    stdio_fields: Mapping[str, str] = field(default_factory=dict)
    """Keys a local entry starts with (VS Code's `"type": "stdio"`)."""
    http_fields: Mapping[str, str] = field(default_factory=dict)
    """Keys a remote entry starts with (`"type": "http"`)."""
    url_key: str | None = "url"
    """The key of a remote (streamable HTTP) server's URL; None: the file takes none."""
    headers_key: str = "headers"
    env_vars_key: str | None = None
    """Codex: `env_vars = [NAME, ...]` passes variables from the host's own environment."""
    bearer_variable_key: str | None = None
    """Codex: the key naming the variable whose value the host sends as the bearer token."""
    prompt_reference: str | None = None
    """VS Code: the %-pattern of a reference to an `inputs` entry (a password prompt)."""
    expands_bare_dollar: bool = False
    """The host also expands `$NAME` (not only `${NAME}`) when it starts a server."""
    startup: StartupLimit = StartupLimit()
    first_steps: str | None = None
    """What the person does once, after installing, before the host connects the server."""
    program: str | None = None
    """The host's own command on PATH, which says it is installed here (`--client claude`)."""
    present_by_file: bool = False
    """The user file itself (not only its folder) says the host is installed here."""
    replaced_by: tuple[str, str] | None = None
    """The row that replaced this host for most of its users, and why: `--client` for this one
    says so when that one is installed here."""
    oauth_key: str | None = None
    """Claude Code: the entry's table of OAuth settings (`scopes`, `clientId`). A host with one
    asks at sign-in for every scope the gateway lists unless its `scopes` pin fewer, so install
    pins the least (`svc:read`); hosts without one ask for the scope of the first challenge.
    Pinned scopes are all it ever asks for: after a 403 `insufficient_scope` its next sign-in
    asks for them again, never for the scope the gateway named (Claude Code 2.1.197)."""
    oauth_sign_in: str | None = None
    """The command that starts the host's sign-in to an entry (`%s`: the entry's name)."""

    def oauth_request(
        self, entry: Mapping[str, object], listed: tuple[str, ...]
    ) -> tuple[tuple[str, ...], bool]:
        """The scopes this entry's sign-in asks for (as far as the entry says; `listed`: the
        gateway's `scopes_supported`), and whether it names a client registered by hand."""
        settings = entry.get(self.oauth_key) if self.oauth_key else None
        if not isinstance(settings, Mapping):
            return (listed if self.oauth_key else listed[:1]), False
        scopes = settings.get("scopes")
        pinned = tuple(scopes.split()) if isinstance(scopes, str) and scopes.strip() else listed
        return pinned, isinstance(settings.get("clientId"), str)

    def is_present(
        self,
        *,
        home: Path,
        platform: Platform,
        environ: Mapping[str, str],
        which: Callable[[str], str | None] = shutil.which,
    ) -> bool:
        """Whether the host looks installed here: its command on PATH, or its user file (or, for
        a host whose folder is its own, that folder)."""
        user_file = self.user_file.path(home, platform, environ)
        if self.program and which(self.program):
            return True
        return user_file.is_file() if self.present_by_file else user_file.parent.is_dir()

    @property
    def scopes(self) -> tuple[Scope, ...]:
        return ("user", "project") if self.project_file else ("user",)

    @property
    def takes_references(self) -> bool:
        return self.reference is not None or self.env_vars_key is not None

    @property
    def suffix(self) -> str:
        return self.file_format

    def config_path(
        self, scope: Scope, *, home: Path, cwd: Path, platform: Platform, environ: Mapping[str, str]
    ) -> Path:
        """The file the host reads its MCP servers from, by the host's own conventions."""
        if scope not in self.scopes:
            raise InstallError(f"{self.label} has no {scope} configuration; use --scope user")
        if scope == "project" and self.project_file:
            return cwd / self.project_file
        return self.user_file.path(home, platform, environ)


HOSTS: dict[str, Host] = {
    host.name: host
    for host in (
        Host(
            "claude-desktop",
            "Claude Desktop",
            "https://modelcontextprotocol.io/quickstart/user",
            UserFile("app_data", ("Claude", "claude_desktop_config.json")),
            None,
            "mcpServers",
            None,
            url_key=None,
        ),
        Host(
            "claude-code",
            "Claude Code",
            "https://docs.anthropic.com/en/docs/claude-code/mcp",
            UserFile("home", (".claude.json",)),
            ".mcp.json",
            "mcpServers",
            "${%s}",
            http_fields={"type": "http"},
            startup=StartupLimit(variable="MCP_TIMEOUT", variable_unit=0.001),
            program="claude",
            present_by_file=True,
            oauth_key="oauth",
            oauth_sign_in="claude mcp login %s",
        ),
        Host(
            "cursor",
            "Cursor",
            "https://docs.cursor.com/context/model-context-protocol",
            UserFile("home", (".cursor", "mcp.json")),
            ".cursor/mcp.json",
            "mcpServers",
            "${env:%s}",
        ),
        Host(
            "vscode",
            "VS Code",
            "https://code.visualstudio.com/docs/copilot/chat/mcp-servers",
            UserFile("app_data", ("Code", "User", "mcp.json")),
            ".vscode/mcp.json",
            "servers",
            "${env:%s}",
            jsonc=True,
            stdio_fields={"type": "stdio"},
            http_fields={"type": "http"},
            prompt_reference="${input:%s}",
        ),
        Host(
            "windsurf",
            "Windsurf",
            "https://docs.windsurf.com/windsurf/cascade/mcp",
            UserFile("home", (".codeium", "windsurf", "mcp_config.json")),
            None,
            "mcpServers",
            "${env:%s}",
            url_key="serverUrl",
        ),
        Host(
            "gemini",
            "Gemini CLI",
            "https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md",
            UserFile("home", (".gemini", "settings.json")),
            ".gemini/settings.json",
            "mcpServers",
            "${%s}",
            url_key="httpUrl",
            expands_bare_dollar=True,
            startup=StartupLimit(seconds=5.0),
            first_steps="Gemini CLI connects MCP servers only in a trusted folder: start `gemini` "
            "in your project folder and trust it when asked (or /permissions)",
            replaced_by=(
                "antigravity",
                "Gemini CLI no longer serves individual Google accounts (since 2026-06-18); its "
                "successor reads its own files",
            ),
        ),
        Host(
            "antigravity",
            "Antigravity CLI",
            "https://antigravity.google/docs/cli/gcli-migration",
            UserFile("home", (".gemini", "antigravity-cli", "mcp_config.json")),
            ".agents/mcp_config.json",
            "mcpServers",
            "${%s}",
            url_key="serverUrl",
            program="agy",
        ),
        Host(
            "codex",
            "Codex",
            "https://github.com/openai/codex/blob/main/docs/config.md#mcp_servers",
            UserFile("home", (".codex", "config.toml"), folder_variable="CODEX_HOME"),
            ".codex/config.toml",
            "mcp_servers",
            None,
            file_format="toml",
            headers_key="http_headers",
            env_vars_key="env_vars",
            bearer_variable_key="bearer_token_env_var",
            startup=StartupLimit(seconds=10.0, entry_key="startup_timeout_sec"),
        ),
    )
}


SHORTHANDS: dict[str, tuple[str, ...]] = {"claude": ("claude-code", "claude-desktop")}
"""A word users type for several hosts: it means those of them installed here."""


def find_host(name: str) -> Host:
    """The row called `name`; refused (with the names there are) otherwise."""
    if name not in HOSTS:
        raise InstallError(f"--client {name!r}: use one of {', '.join([*SHORTHANDS, *HOSTS])}")
    return HOSTS[name]


def find_hosts(
    name: str,
    *,
    home: Path,
    platform: Platform,
    environ: Mapping[str, str],
    which: Callable[[str], str | None] = shutil.which,
) -> tuple[list[Host], str | None]:
    """The rows `--client name` means, and for a shorthand the sentence saying which it chose:
    those of its hosts installed here; refused, in one line, when none is."""
    if name not in SHORTHANDS:
        host = find_host(name)
        return [host], _replaced(host, home=home, platform=platform, environ=environ, which=which)
    rows = [HOSTS[member] for member in SHORTHANDS[name]]
    present = [
        h for h in rows if h.is_present(home=home, platform=platform, environ=environ, which=which)
    ]
    if not present:
        signs = "; ".join(_signs(h, home, platform, environ) for h in rows)
        options = " or ".join(f"--client {h.name}" for h in rows)
        raise InstallError(
            f"--client {name}: none of {', '.join(h.label for h in rows)} is installed here "
            f"({signs}); install one, or name it: {options}"
        )
    chosen = " and ".join(f"{h.label} (--client {h.name})" for h in present)
    return present, f"--client {name} means {chosen}: found here"


def _replaced(
    host: Host,
    *,
    home: Path,
    platform: Platform,
    environ: Mapping[str, str],
    which: Callable[[str], str | None],
) -> str | None:
    """For a host replaced by another that is installed here: which one the person probably
    wants."""
    if host.replaced_by is None:
        return None
    successor, why = HOSTS[host.replaced_by[0]], host.replaced_by[1]
    if not successor.is_present(home=home, platform=platform, environ=environ, which=which):
        return None
    return (
        f"--client {host.name} writes {host.label}'s file; {why}, and {successor.label} is "
        f"installed here: for it, use --client {successor.name}"
    )


def _signs(host: Host, home: Path, platform: Platform, environ: Mapping[str, str]) -> str:
    user_file = host.user_file.path(home, platform, environ)
    where = user_file if host.present_by_file else user_file.parent
    on_path = f"no `{host.program}` on PATH, " if host.program else ""
    return f"{on_path}no {where}"


def hosts_help() -> str:
    """The hosts as `--client` help lists them: the shorthands, then each name, with its product
    name if different."""
    words = [
        f"{word} (whichever of {' and '.join(members)} is installed here)"
        for word, members in SHORTHANDS.items()
    ]
    rows = [
        h.name if _plain(h.label) == _plain(h.name) else f"{h.name} ({h.label})"
        for h in HOSTS.values()
    ]
    return ", ".join(words + rows)


def _plain(name: str) -> str:
    return "".join(char for char in name.lower() if char.isalnum())


def current_platform() -> Platform:
    if sys.platform.startswith("win"):
        return "win32"
    return "darwin" if sys.platform == "darwin" else "linux"
