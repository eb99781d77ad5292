"""Writing svc-mcp into MCP hosts' configuration files: where each host keeps it, and how.

Every host wants a server entry under a key of its own in a file of its own: a local (stdio)
entry with `command`, `args` and `env`, or a remote one (`--http URL`) in the host's own form.
Installing merges that entry into what is there: other servers, unknown keys (also inside our own
entry) and environment variables we do not set survive, a backup of the old file is kept beside it
(mode 0600), and the new file replaces the old one atomically. A file that does not parse is left
untouched and reported. A file that holds a token ends up readable by its owner only.

The command an entry runs is checked before anything is written: it must exist, by its absolute
path, and be executable. The default source is the installation running the command (there may
be no release on PyPI at all); `--source pypi` first asks the package index whether it has one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

import tomlkit
import tomlkit.exceptions

from svc_client.backends import backend_variables, token_variables
from svc_client.failures import FailureKind
from svc_client.settings import (
    CA_FILE_VARIABLE,
    GATEWAY_TOKEN_VARIABLE,
    TIMEOUT_VARIABLE,
)

Client = Literal["claude", "claude-code", "cursor", "vscode", "windsurf", "gemini", "codex"]
Source = Literal["here", "pypi", "github", "local"]
TokenMode = Literal["ref", "plain", "none"]
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
DEFAULT_INDEX = "https://pypi.org/simple"
INDEX_VARIABLES = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL")
"""Where `--source pypi` looks when --index-url is not given, the first one set wins."""
VSCODE_INPUT_ID = "svc-mcp-gateway-token"
# Besides the backends' own variables, the server reads these two (the CA bundle httpx trusts,
# and the request timeout); an entry may set them, and Gemini CLI must be told to pass them.
EXTRA_ENV = (CA_FILE_VARIABLE, TIMEOUT_VARIABLE)
ENV_KEYS = backend_variables() + EXTRA_ENV
SECRET_KEYS = token_variables()
# The keys of our entry that installing sets; any other key a user added is kept.
_MANAGED_KEYS = frozenset(
    {
        "type",
        "command",
        "args",
        "env",
        "env_vars",
        "url",
        "httpUrl",
        "serverUrl",
        "headers",
        "http_headers",
        "bearer_token_env_var",
    }
)
_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class InstallError(Exception):
    """Refused; the message says what to fix. Nothing was written."""

    kind: ClassVar[FailureKind] = FailureKind.USAGE


class IndexUnreachable(InstallError):
    """The package index could not be asked."""

    kind: ClassVar[FailureKind] = FailureKind.UNREACHABLE


class UnreadableConfig(InstallError):
    """The existing file does not parse or has an unexpected shape; it is left untouched."""

    kind: ClassVar[FailureKind] = FailureKind.MISCONFIGURED


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
    url_key: str | None = "url"
    """The key of a remote (streamable HTTP) server's URL; None: the file takes none."""
    startup_seconds: float = 30.0
    """How long the host waits for a server to start and list its tools (doctor's limit)."""

    @property
    def takes_references(self) -> bool:
        return self.reference is not None or self.forwards_env_vars


HOSTS: dict[Client, Host] = {
    "claude": Host("claude", "Claude Desktop", "mcpServers", None, scopes=("user",), url_key=None),
    "claude-code": Host("claude-code", "Claude Code", "mcpServers", "${%s}"),
    "cursor": Host("cursor", "Cursor", "mcpServers", "${env:%s}"),
    "vscode": Host("vscode", "VS Code", "servers", "${env:%s}"),
    "windsurf": Host(
        "windsurf", "Windsurf", "mcpServers", "${env:%s}", scopes=("user",), url_key="serverUrl"
    ),
    "gemini": Host(
        "gemini", "Gemini CLI", "mcpServers", "${%s}", url_key="httpUrl", startup_seconds=5.0
    ),
    "codex": Host(
        "codex", "Codex", "mcp_servers", None, "toml", forwards_env_vars=True, startup_seconds=10.0
    ),
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


@dataclass(frozen=True)
class Runners:
    """The programs an entry may run, each by its absolute path (None: not found)."""

    uvx: str | None = None
    uv: str | None = None
    script: str | None = None
    """This installation's own `svc-mcp` (a venv's, pipx's or `uv tool`'s)."""
    checkout: Path | None = None
    """The checkout this installation runs from (an editable install), if it does."""


def launch_command(
    source: Source, runners: Runners, *, index_url: str | None = None, check: bool = True
) -> list[str]:
    """`command` followed by `args`. `here` is this installation; the others fetch svc-mcp.
    With `check` (not for --print), the command must be an executable file."""
    if source == "here":
        if runners.checkout is not None:
            return [need(runners.uv, "uv", "--uv", check=check), *_uv_run(runners.checkout)]
        if runners.script is None:
            raise InstallError(
                f"cannot find this installation's {PACKAGE} command beside {sys.executable}; "
                "pass --source pypi, github or local"
            )
        if any(part.startswith("archive-v") for part in Path(runners.script).parts):
            # `uvx svc-mcp install` runs from uv's cache, which uv may clear at any time.
            raise InstallError(
                f"this {PACKAGE} runs from uv's cache (uvx), which uv may clear, so a host could "
                f"not rely on it: install it first (`uv tool install {PACKAGE}` or a venv) and run "
                "install from there, or pass --source github"
            )
        return [need(runners.script, PACKAGE, None, check=check)]
    if source == "local":
        if runners.checkout is None:
            raise InstallError("--source local needs the checkout's path")
        return [need(runners.uv, "uv", "--uv", check=check), *_uv_run(runners.checkout)]
    uvx = need(runners.uvx, "uvx", "--uvx", check=check)
    if source == "github":
        return [uvx, "--from", f"git+{GITHUB_URL}", PACKAGE]
    index = [] if index_url in (None, DEFAULT_INDEX) else ["--default-index", str(index_url)]
    return [uvx, *index, PACKAGE]


def _uv_run(checkout: Path) -> list[str]:
    # `uv run --project` syncs the checkout's environment (an editable install) on each start, so
    # the entry runs the checkout as it is now, never a cached build of an older state.
    return ["run", "--project", str(checkout.resolve()), PACKAGE]


def need(path: str | None, name: str, option: str | None, *, check: bool = True) -> str:
    """`path` when it is an absolute path to an executable file; refused otherwise."""
    how = f" or pass {option} PATH" if option else ""
    if path is None:
        raise InstallError(f"{name} is not on PATH; install uv (https://docs.astral.sh/uv/){how}")
    if not Path(path).is_absolute():
        raise InstallError(f"{name} must be given by its absolute path, not {path!r}")
    if check and not (Path(path).is_file() and os.access(path, os.X_OK)):
        fix = f"install uv{how}" if option else "reinstall svc-mcp or pass --source"
        raise InstallError(
            f"{name} at {path} is not an executable file; the host could not start it: {fix}"
        )
    return path


def index_url(option: str | None, environ: Mapping[str, str]) -> str:
    """The package index `--source pypi` uses: --index-url, else uv's or pip's variable.

    An index URL that carries a user name or password is refused: it would be written into the
    host's file and shown in messages; uvx reads such an index from the host's environment."""
    index = option or next(
        (environ[name] for name in INDEX_VARIABLES if environ.get(name)), DEFAULT_INDEX
    )
    if "@" in index.partition("://")[2].partition("/")[0]:
        raise InstallError(
            "the package index URL carries credentials (user@host), which would be written into "
            "the host's file; give the host UV_INDEX_URL in its own environment and pass "
            "--index-url with the index's URL without them"
        )
    return index


def check_on_index(index: str, package: str = PACKAGE) -> None:
    """Refused unless the index (PEP 503 simple API) lists the package."""
    import httpx  # only `--source pypi` and doctor pay for it

    url = f"{index.rstrip('/')}/{package}/"
    try:
        response = httpx.get(url, timeout=10.0, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise IndexUnreachable(
            f"cannot reach the package index {index} to check that {package} is there "
            f"({type(exc).__name__}); check the network, or install from what you have: drop "
            "--source (this installation) or use --source local"
        ) from None
    if response.status_code == 404:
        raise InstallError(
            f"{package} is not on the package index {index} (no release is published there), so "
            f"the host could not start it: drop --source to run this installation, or use "
            "--source github or --source local"
        )
    if response.status_code >= 400:
        raise IndexUnreachable(
            f"the package index {index} answered {response.status_code} for {package}; "
            "try again, or drop --source to run this installation"
        )


def this_installation(environ: Mapping[str, str]) -> Runners:
    """Where the programs are for this installation, found without running anything."""
    here = Path(__file__).resolve().parent
    root = here.parent.parent
    checkout = (
        root if here.parent.name == "src" and _is_our_project(root / "pyproject.toml") else None
    )
    bin_dir = Path(sys.executable).absolute().parent
    script = bin_dir / (f"{PACKAGE}.exe" if sys.platform.startswith("win") else PACKAGE)
    return Runners(
        uvx=_which("uvx", bin_dir),
        uv=environ.get("UV") or _which("uv", bin_dir),
        script=str(script) if script.is_file() else None,
        checkout=checkout,
    )


def _which(name: str, beside: Path) -> str | None:
    """A program's absolute path: GUI hosts do not inherit the shell's PATH."""
    found = shutil.which(name)
    if found is not None:
        return str(Path(found).absolute())
    return str(beside / name) if (beside / name).is_file() else None


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


def http_entry(
    client: Client, url: str, mode: TokenMode, environ: Mapping[str, str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The host's remote (streamable HTTP) entry for the gateway at `url`, and the VS Code
    `inputs` it needs. The gateway token goes in by reference (`ref`, the default), as its value
    (`plain`), or not at all (`none`: a loopback gateway without a token)."""
    host = HOSTS[client]
    if host.url_key is None:
        raise InstallError(
            f"{host.label} takes no remote server in its configuration file (only local "
            "commands): install it without --http, or add the URL in its Settings > Connectors"
        )
    _check_url(url)
    entry: dict[str, Any] = {"type": "http"} if client in ("claude-code", "vscode") else {}
    entry[host.url_key] = url
    inputs: list[dict[str, Any]] = []
    if mode == "none":
        return entry, inputs
    value = None
    if mode == "plain":
        value = environ.get(GATEWAY_TOKEN_VARIABLE, "").strip()
        if not value:
            raise InstallError(f"--http-token plain writes {GATEWAY_TOKEN_VARIABLE}: set it first")
    if client == "codex":
        if value is None:
            entry["bearer_token_env_var"] = GATEWAY_TOKEN_VARIABLE
        else:
            entry["http_headers"] = {"Authorization": f"Bearer {value}"}
        return entry, inputs
    if value is None and client == "vscode":
        value = "${input:" + VSCODE_INPUT_ID + "}"
        inputs.append(
            {
                "type": "promptString",
                "id": VSCODE_INPUT_ID,
                "description": f"svc-mcp gateway token ({GATEWAY_TOKEN_VARIABLE})",
                "password": True,
            }
        )
    elif value is None:
        value = (host.reference or "%s") % GATEWAY_TOKEN_VARIABLE
    entry["headers"] = {"Authorization": f"Bearer {value}"}
    return entry, inputs


def _check_url(url: str) -> None:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InstallError(
            "--http takes the gateway's http:// or https:// URL, e.g. http://127.0.0.1:8765/mcp"
        )
    if parts.username or parts.password:
        raise InstallError(
            "--http must not carry a user name or password; the token goes in "
            f"{GATEWAY_TOKEN_VARIABLE}"
        )


# A whole value that names a variable (`${NAME}`, `${env:NAME}`, `${input:id}`, Gemini's `$NAME`),
# possibly after "Bearer ": anything else holds a value, which may be a token.
_REFERENCE = re.compile(r"(?:Bearer )?(?:\$\{[^}\s]+\}|\$[A-Za-z_][A-Za-z0-9_]*)")


def plain_secrets(client: Client, entry: Mapping[str, Any]) -> list[str]:
    """The names of the tokens the entry holds as plain text (for the warning)."""
    env = entry.get("env", {})
    names = [
        key
        for key in ENV_KEYS
        if key in SECRET_KEYS
        and isinstance(env, Mapping)
        and isinstance(env.get(key), str)
        and not _REFERENCE.fullmatch(env[key])
    ]
    for table in ("headers", "http_headers"):
        headers = entry.get(table)
        if isinstance(headers, Mapping) and any(
            isinstance(v, str) and not _REFERENCE.fullmatch(v) for v in headers.values()
        ):
            names.append(GATEWAY_TOKEN_VARIABLE)
    return names


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


def _parse(path: Path, text: str, file_format: str, *, jsonc: bool = False) -> Any:
    if not text.strip():
        return tomlkit.document() if file_format == "toml" else {}
    comment_line = None
    if jsonc:
        text, comment_line = strip_jsonc(text)
    try:
        document: Any = tomlkit.parse(text) if file_format == "toml" else json.loads(text)
    except (json.JSONDecodeError, tomlkit.exceptions.ParseError) as exc:
        hint = " (comments are not valid JSON)" if file_format == "json" and not jsonc else ""
        raise UnreadableConfig(
            f"{path} is not valid {file_format.upper()} ({exc}); it was left untouched: fix it"
            f"{hint} or pass --config to use another file"
        ) from None
    if file_format == "json" and not isinstance(document, dict):
        raise UnreadableConfig(f"{path} does not hold a JSON object; it was left untouched")
    if comment_line is not None and isinstance(document, dict):
        document[_COMMENT_MARK] = comment_line
    return document


_COMMENT_MARK = "\0comment-line"
"""Put on a parsed JSONC document that had comments: the line of the first one."""


def strip_jsonc(text: str) -> tuple[str, int | None]:
    """JSON from VS Code's JSONC: comments blanked (lines kept, so JSON errors name the right
    line) and trailing commas dropped; with the line of the first comment, if any."""
    out: list[str] = []
    first: int | None = None
    i, n, in_string = 0, len(text), False
    while i < n:
        char = text[i]
        if in_string:
            step = 2 if char == "\\" else 1
            out.append(text[i : i + step])
            in_string = char != '"'
            i += step
        elif text.startswith("//", i) or text.startswith("/*", i):
            block = text[i + 1] == "*"
            end = text.find("*/", i + 2) + 2 if block else text.find("\n", i)
            end = n if end < (2 if block else 0) else end
            first = first or text.count("\n", 0, i) + 1
            out.append("".join("\n" if c == "\n" else " " for c in text[i:end]))
            i = end
        else:
            in_string = char == '"'
            out.append(char)
            i += 1
    return _drop_trailing_commas("".join(out)), first


def _drop_trailing_commas(text: str) -> str:
    out = list(text)
    in_string, escaped, comma = False, False, None
    for index, char in enumerate(text):
        if in_string:
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            in_string, comma = True, None
        elif char == ",":
            comma = index
        elif char in "}]" and comma is not None:
            out[comma] = " "
            comma = None
        elif not char.isspace():
            comma = None
    return "".join(out)


def _refuse_comments(document: Any, path: Path) -> None:
    line = document.pop(_COMMENT_MARK, None) if isinstance(document, dict) else None
    if line is not None:
        raise UnreadableConfig(
            f"{path} line {line} holds a comment, which rewriting the file would lose; it was "
            "left untouched: remove the comments, or add the entry by hand "
            "(`svc-mcp install --print --config /dev/null` shows it)"
        )


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


def _write_atomically(path: Path, text: str, *, private: bool) -> tuple[Path | None, int | None]:
    """Replaces `path` with `text`, keeping the old file as `<name>.bak` (mode 0600: it may hold
    a token); returns the backup and, when `private` narrowed it to 0600, the file's old mode.

    A symbolic link is followed, so a config kept in a dotfiles repository stays linked.
    """
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600  # a new file may hold a token
    old_mode = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        backup.unlink(missing_ok=True)
        with backup.open("xb") as handle:
            os.chmod(backup, 0o600)
            handle.write(path.read_bytes())
        mode = path.stat().st_mode & 0o777
        if private and mode & 0o077:
            old_mode, mode = mode, 0o600
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
    return backup, old_mode


@dataclass(frozen=True)
class Change:
    path: Path
    text: str
    """The whole new file."""
    changed: bool
    backup: Path | None = None
    private: bool = False
    """The file holds a token: it is written readable by its owner only."""
    old_mode: int | None = None
    """The mode the file had before writing narrowed it to 0600."""
    removed: Mapping[str, Any] | None = None
    """Uninstalling: the entry that was removed."""


def plan_install(
    client: Client,
    path: Path,
    name: str,
    entry: Mapping[str, Any],
    inputs: Sequence[Mapping[str, Any]] = (),
) -> Change:
    """The file as it would be with the entry (and VS Code `inputs`) merged in; nothing is
    written."""
    host = HOSTS[client]
    old_text = _read(path)
    document = _parse(path, old_text, host.file_format, jsonc=client == "vscode")
    _refuse_comments(document, path)
    servers = _servers(document, host, path, create=True)
    old_entry = _plain(servers.get(name))
    merged = _merged(old_entry, entry)
    private = bool(plain_secrets(client, merged))
    new_inputs = _merged_inputs(document, inputs, path)
    if merged == old_entry and new_inputs is None:
        return Change(path=path, text=old_text, changed=False, private=private)
    _store(servers, name, merged)
    if new_inputs is not None:
        document["inputs"] = new_inputs
    text = _render(document, host.file_format)
    text = text if old_text.strip() else text.lstrip("\n")
    return Change(path=path, text=text, changed=True, private=private)


def _merged_inputs(
    document: Any, inputs: Sequence[Mapping[str, Any]], path: Path
) -> list[Any] | None:
    """VS Code's `inputs` with ours put in by id; None when nothing changes."""
    if not inputs:
        return None
    old = document.get("inputs", [])
    if not isinstance(old, list):
        raise UnreadableConfig(f"{path}: 'inputs' is not a list; it was left untouched")
    ids = {item["id"] for item in inputs}
    kept = [item for item in old if not (isinstance(item, dict) and item.get("id") in ids)]
    new = kept + [dict(item) for item in inputs]
    return None if new == old else new


def plan_uninstall(client: Client, path: Path, name: str) -> Change:
    """The file as it would be without the entry; unchanged when there is none."""
    host = HOSTS[client]
    old_text = _read(path)
    document = _parse(path, old_text, host.file_format, jsonc=client == "vscode")
    _refuse_comments(document, path)
    servers = _servers(document, host, path, create=False)
    if servers is None or name not in servers:
        return Change(path=path, text=old_text, changed=False)
    removed = _plain(servers.pop(name))
    inputs = document.get("inputs")
    if isinstance(inputs, list) and VSCODE_INPUT_ID not in json.dumps(servers):
        kept = [i for i in inputs if not (isinstance(i, dict) and i.get("id") == VSCODE_INPUT_ID)]
        if kept != inputs:
            document["inputs"] = kept
    # A removed TOML table leaves the blank line that separated it behind.
    text = _render(document, host.file_format).rstrip("\n") + "\n"
    others = _servers(document, host, path, create=False) or {}
    private = any(plain_secrets(client, _plain(e)) for e in others.values() if isinstance(e, dict))
    return Change(
        path=path,
        text=text,
        changed=True,
        private=private,
        removed=removed if isinstance(removed, dict) else None,
    )


def apply(change: Change) -> Change:
    """Writes a planned change (atomically, with a 0600 backup); an unchanged plan writes
    nothing, except narrowing the mode of a file that holds a token."""
    try:
        if not change.changed:
            return replace(change, old_mode=_narrow(change.path) if change.private else None)
        backup, old_mode = _write_atomically(change.path, change.text, private=change.private)
    except OSError as exc:
        raise UnreadableConfig(f"cannot write {change.path} ({exc})") from None
    return replace(change, backup=backup, old_mode=old_mode)


def _narrow(path: Path) -> int | None:
    """Makes an existing file 0600; its old mode when that changed it."""
    if not path.exists():
        return None
    mode = path.stat().st_mode & 0o777
    if not mode & 0o077:
        return None
    os.chmod(path.resolve(), 0o600)
    return mode


def remove_backup(change: Change) -> Path | None:
    """Deletes the backup uninstalling made, when the removed entry held a token in plain text
    (the backup would keep it); returns the deleted path."""
    if change.backup is None or change.removed is None:
        return None
    holds = any(plain_secrets(c, change.removed) for c in CLIENTS)
    if not holds:
        return None
    change.backup.unlink(missing_ok=True)
    return change.backup


def read_entry(client: Client, path: Path, name: str) -> dict[str, Any] | None:
    """The installed entry as plain data, or None (also when the file is missing or unreadable)."""
    host = HOSTS[client]
    try:
        document = _parse(path, _read(path), host.file_format, jsonc=client == "vscode")
        servers = _servers(document, host, path, create=False)
    except InstallError:
        return None
    entry = _plain(servers.get(name)) if servers is not None else None
    return dict(entry) if isinstance(entry, dict) else None


def current_platform() -> Platform:
    if sys.platform.startswith("win"):
        return "win32"
    return "darwin" if sys.platform == "darwin" else "linux"
