"""Writing svc-mcp into MCP hosts' configuration files: where each host keeps it, and how.

Every host wants the same thing, a server entry with `command`, `args` and `env`, under a key of
its own in a file of its own. Installing merges that entry into what is there: other servers,
unknown keys (also inside our own entry) and environment variables we do not set survive, a backup
of the old file is kept beside it, and the new file replaces the old one atomically. A file that
does not parse is left untouched and reported.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import tomlkit
import tomlkit.exceptions

from portal_tools.backends import backend_variables, token_variables

Client = Literal["claude", "claude-code", "cursor", "vscode", "windsurf", "gemini", "codex"]
Source = Literal["pypi", "github", "local"]
Scope = Literal["user", "project"]
Platform = Literal["linux", "darwin", "win32"]

CLIENTS: tuple[Client, ...] = (
    "claude",
    "claude-code",
    "cursor",
    "vscode",
    "windsurf",
    "gemini",
    "codex",
)
PACKAGE = "svc-mcp"
GITHUB_URL = "https://github.com/svc-mcp/svc-mcp"
ENV_KEYS = backend_variables()
SECRET_KEYS = token_variables()
# The keys of our entry that installing sets; any other key a user added is kept.
_MANAGED_KEYS = frozenset({"type", "command", "args", "env", "env_vars"})
_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class InstallError(Exception):
    """Refused; the message says what to fix. Nothing was written."""

    kind: ClassVar[str] = "usage"


class UnreadableConfig(InstallError):
    """The existing file does not parse or has an unexpected shape; it is left untouched."""

    kind: ClassVar[str] = "misconfigured"


@dataclass(frozen=True)
class Host:
    client: Client
    label: str
    servers_key: str
    reference: str | None
    """How the host spells a reference to an environment variable (a %-pattern), if it expands
    any in `env`."""
    file_format: Literal["json", "toml"] = "json"
    scopes: tuple[Scope, ...] = ("user", "project")
    forwards_env_vars: bool = False
    """Codex: `env_vars = [NAME, ...]` passes variables from the host's own environment."""

    @property
    def takes_references(self) -> bool:
        return self.reference is not None or self.forwards_env_vars


HOSTS: dict[Client, Host] = {
    "claude": Host("claude", "Claude Desktop", "mcpServers", None, scopes=("user",)),
    "claude-code": Host("claude-code", "Claude Code", "mcpServers", "${%s}"),
    "cursor": Host("cursor", "Cursor", "mcpServers", "${env:%s}"),
    "vscode": Host("vscode", "VS Code", "servers", "${env:%s}"),
    "windsurf": Host("windsurf", "Windsurf", "mcpServers", "${env:%s}", scopes=("user",)),
    "gemini": Host("gemini", "Gemini CLI", "mcpServers", "${%s}"),
    "codex": Host("codex", "Codex", "mcp_servers", None, "toml", forwards_env_vars=True),
}

_PROJECT_FILES: dict[Client, str] = {
    "claude-code": ".mcp.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
    "gemini": ".gemini/settings.json",
    "codex": ".codex/config.toml",
}


def _app_data(home: Path, platform: Platform, environ: Mapping[str, str]) -> Path:
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(environ.get("XDG_CONFIG_HOME") or home / ".config")


def config_path(
    client: Client,
    scope: Scope,
    *,
    home: Path,
    cwd: Path,
    platform: Platform,
    environ: Mapping[str, str],
) -> Path:
    """The file the host reads its MCP servers from, by the host's own conventions."""
    if scope not in HOSTS[client].scopes:
        raise InstallError(f"{HOSTS[client].label} has no {scope} configuration; use --scope user")
    if scope == "project":
        return cwd / _PROJECT_FILES[client]
    match client:
        case "claude":
            return _app_data(home, platform, environ) / "Claude" / "claude_desktop_config.json"
        case "claude-code":
            return home / ".claude.json"
        case "cursor":
            return home / ".cursor" / "mcp.json"
        case "vscode":
            return _app_data(home, platform, environ) / "Code" / "User" / "mcp.json"
        case "windsurf":
            return home / ".codeium" / "windsurf" / "mcp_config.json"
        case "gemini":
            return home / ".gemini" / "settings.json"
        case "codex":
            return Path(environ.get("CODEX_HOME") or home / ".codex") / "config.toml"


def launch_command(source: Source, uvx: str, checkout: Path | None = None) -> list[str]:
    """`command` followed by `args`: the package run by uvx's absolute path."""
    if not Path(uvx).is_absolute():
        raise InstallError(f"uvx must be given by its absolute path, not {uvx!r}")
    if source == "pypi":
        return [uvx, PACKAGE]
    if source == "github":
        return [uvx, "--from", f"git+{GITHUB_URL}", PACKAGE]
    if checkout is None:
        raise InstallError("--source local needs the checkout's path")
    return [uvx, "--from", str(checkout.resolve()), PACKAGE]


def find_checkout(starts: Iterable[Path]) -> Path:
    """The nearest directory at or above one of `starts` whose pyproject.toml is svc-mcp's."""
    looked = []
    for start in starts:
        looked.append(str(start))
        for directory in (start, *start.parents):
            if _is_our_project(directory / "pyproject.toml"):
                return directory
    raise InstallError(
        f"--source local needs a checkout of {PACKAGE} (a pyproject.toml naming it) at or above "
        f"{' or '.join(looked)}; run it from inside the checkout"
    )


def _is_our_project(pyproject: Path) -> bool:
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(project, dict) and project.get("name") == PACKAGE


def check_server_name(name: str) -> str:
    if not _SERVER_NAME.fullmatch(name):
        raise InstallError(
            f"--name {name!r}: use letters, digits, '-' and '_' (starting with a letter or digit)"
        )
    return name


def install_env(pairs: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the entry sets: those of `ENV_KEYS` set (non-empty) in `environ`, then the
    `KEY=VALUE` pairs given; `KEY=` leaves KEY out."""
    env = {key: environ[key] for key in ENV_KEYS if environ.get(key)}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or key not in ENV_KEYS:
            # The text is not echoed: it may be a token pasted in the wrong place.
            raise InstallError(f"--env takes KEY=VALUE with KEY one of {', '.join(ENV_KEYS)}")
        if value:
            env[key] = value
        else:
            env.pop(key, None)
    return env


def server_entry(
    client: Client, command: list[str], env: Mapping[str, str], *, env_refs: bool = False
) -> dict[str, Any]:
    """The host's entry. With `env_refs`, tokens are written as references the host expands."""
    host = HOSTS[client]
    if env_refs and not host.takes_references:
        raise InstallError(
            f"{host.label} does not expand environment variables in its config, so --env-refs "
            "cannot be used with it"
        )
    entry: dict[str, Any] = {"command": command[0], "args": command[1:]}
    if client == "vscode":
        entry = {"type": "stdio", **entry}
    ordered = {key: env[key] for key in ENV_KEYS if key in env}
    referenced = [key for key in ordered if env_refs and key in SECRET_KEYS]
    if host.forwards_env_vars:
        entry["env"] = {key: value for key, value in ordered.items() if key not in referenced}
        if referenced:
            entry["env_vars"] = referenced
    else:
        pattern = host.reference or "%s"  # a reference only where the host has one (above)
        entry["env"] = {
            key: pattern % key if key in referenced else value for key, value in ordered.items()
        }
    return entry


def plain_secrets(client: Client, entry: Mapping[str, Any]) -> list[str]:
    """The names of the tokens the entry holds as plain text (for the warning)."""
    reference = HOSTS[client].reference
    env = entry.get("env", {})
    return [
        key
        for key in ENV_KEYS
        if key in SECRET_KEYS and key in env and (reference is None or env[key] != reference % key)
    ]


# ---------------------------------------------------------------------------- reading and writing


def _read(path: Path) -> str:
    """The file's text, or "" when there is none; line endings as they are."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise UnreadableConfig(f"cannot read {path} ({exc}); left untouched") from None


def _parse(path: Path, text: str, file_format: str) -> Any:
    if not text.strip():
        return tomlkit.document() if file_format == "toml" else {}
    try:
        document: Any = tomlkit.parse(text) if file_format == "toml" else json.loads(text)
    except (json.JSONDecodeError, tomlkit.exceptions.ParseError) as exc:
        hint = " (comments are not valid JSON)" if file_format == "json" else ""
        raise UnreadableConfig(
            f"{path} is not valid {file_format.upper()} ({exc}); it was left untouched: fix it"
            f"{hint} or pass --config to use another file"
        ) from None
    if file_format == "json" and not isinstance(document, dict):
        raise UnreadableConfig(f"{path} does not hold a JSON object; it was left untouched")
    return document


def _render(document: Any, file_format: str) -> str:
    if file_format == "toml":
        return tomlkit.dumps(document)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _servers(document: Any, host: Host, path: Path, *, create: bool) -> Any:
    servers = document.get(host.servers_key)
    if servers is None and create:
        servers = tomlkit.table(is_super_table=True) if host.file_format == "toml" else {}
        document[host.servers_key] = servers
    if servers is not None and not isinstance(servers, dict):
        raise UnreadableConfig(
            f"{path}: {host.servers_key!r} is not a table of servers; it was left untouched"
        )
    return servers


def _plain(value: Any) -> Any:
    """A tomlkit item as plain Python data (JSON values are plain already)."""
    return value.unwrap() if hasattr(value, "unwrap") else value


def _merged(old: Any, new: Mapping[str, Any]) -> dict[str, Any]:
    """`new` over the old entry: keys we do not manage, and env names we do not set, survive."""
    if not isinstance(old, dict):
        return dict(new)
    fresh = dict(new)
    old_env, old_vars = old.get("env"), old.get("env_vars")
    kept_env = {}
    if isinstance(old_env, dict):
        kept_env = {key: value for key, value in old_env.items() if key not in ENV_KEYS}
    kept_vars = [n for n in old_vars if n not in ENV_KEYS] if isinstance(old_vars, list) else []
    if kept_env:
        fresh["env"] = kept_env | fresh.get("env", {})
    if kept_vars:
        fresh["env_vars"] = kept_vars + fresh.get("env_vars", [])
    return {k: v for k, v in old.items() if k not in _MANAGED_KEYS or k in fresh} | fresh


def _store(servers: Any, name: str, entry: dict[str, Any]) -> None:
    """Puts the entry in place; an existing TOML table is updated key by key (comments kept)."""
    existing = servers.get(name)
    if not (isinstance(existing, dict) and hasattr(existing, "unwrap")):
        servers[name] = entry
        return
    for key in [key for key in existing if key not in entry]:
        del existing[key]
    for key, value in entry.items():
        if _plain(existing.get(key)) != value:
            existing[key] = value


def _write_atomically(path: Path, text: str) -> Path | None:
    """Replaces `path` with `text`, keeping the old file as `<name>.bak`; returns the backup.

    A symbolic link is followed, so a config kept in a dotfiles repository stays linked.
    """
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600  # a new file may hold a token
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
        mode = path.stat().st_mode & 0o777
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return backup


@dataclass(frozen=True)
class Change:
    path: Path
    text: str
    """The whole new file."""
    changed: bool
    backup: Path | None = None


def plan_install(client: Client, path: Path, name: str, entry: Mapping[str, Any]) -> Change:
    """The file as it would be with the entry merged in; nothing is written."""
    host = HOSTS[client]
    old_text = _read(path)
    document = _parse(path, old_text, host.file_format)
    servers = _servers(document, host, path, create=True)
    old_entry = _plain(servers.get(name))
    merged = _merged(old_entry, entry)
    if merged == old_entry:
        return Change(path=path, text=old_text, changed=False)
    _store(servers, name, merged)
    text = _render(document, host.file_format)
    return Change(path=path, text=text if old_text.strip() else text.lstrip("\n"), changed=True)


def plan_uninstall(client: Client, path: Path, name: str) -> Change:
    """The file as it would be without the entry; unchanged when there is none."""
    host = HOSTS[client]
    old_text = _read(path)
    document = _parse(path, old_text, host.file_format)
    servers = _servers(document, host, path, create=False)
    if servers is None or name not in servers:
        return Change(path=path, text=old_text, changed=False)
    del servers[name]
    # A removed TOML table leaves the blank line that separated it behind.
    text = _render(document, host.file_format).rstrip("\n") + "\n"
    return Change(path=path, text=text, changed=True)


def apply(change: Change) -> Change:
    """Writes a planned change (atomically, with a backup); an unchanged plan writes nothing."""
    if not change.changed:
        return change
    try:
        backup = _write_atomically(change.path, change.text)
    except OSError as exc:
        raise UnreadableConfig(f"cannot write {change.path} ({exc})") from None
    return Change(path=change.path, text=change.text, changed=True, backup=backup)


def read_entry(client: Client, path: Path, name: str) -> dict[str, Any] | None:
    """The installed entry as plain data, or None (also when the file is missing or unreadable)."""
    host = HOSTS[client]
    try:
        document = _parse(path, _read(path), host.file_format)
        servers = _servers(document, host, path, create=False)
    except InstallError:
        return None
    entry = _plain(servers.get(name)) if servers is not None else None
    return dict(entry) if isinstance(entry, dict) else None


def current_platform() -> Platform:
    if sys.platform.startswith("win"):
        return "win32"
    return "darwin" if sys.platform == "darwin" else "linux"


def find_uvx() -> str:
    """uvx's absolute path: GUI hosts do not inherit the shell's PATH."""
    found = shutil.which("uvx")
    if found is None:
        beside = Path(sys.executable).with_name("uvx")
        if beside.exists():
            return str(beside)
        raise InstallError(
            "uvx is not on PATH; install uv first (https://docs.astral.sh/uv/) or pass --uvx PATH"
        )
    return str(Path(found).absolute())
