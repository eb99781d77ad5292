"""The entry install writes, in the host's form (from its row): a local (stdio) entry with
`command`, `args` and `env`, or a remote one (`--http URL`) with the gateway token by reference
or by value."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from svc_mcp.core.backends import BACKENDS, Backend, backend_variables, token_variables
from svc_mcp.core.settings import (
    CA_FILE_VARIABLE,
    GATEWAY_TOKEN_VARIABLE,
    INSECURE_HOSTS_VARIABLE,
    TIMEOUT_VARIABLE,
    cleartext_host,
    insecure_hosts,
)
from svc_mcp.core.telemetry import PASSED_VARIABLES
from svc_mcp.hosts.cleartext import refusal
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.runners import runner_env
from svc_mcp.hosts.table import HOSTS, Host
from svc_mcp.serve.gateway.token import client_gateway_token
from svc_mcp.serve.oauth.settings import SCOPE_READ

TokenMode = Literal["ref", "plain", "none", "oauth"]

# Besides the backends' own variables, the server reads these two (the CA bundle httpx trusts,
# and the request timeout); an entry may set them, and a host that passes only listed variables
# must be told to pass them.
EXTRA_ENV = (CA_FILE_VARIABLE, TIMEOUT_VARIABLE)
MACHINE_KEYS = (CA_FILE_VARIABLE, *(backend.token_file_variable for backend in BACKENDS))
"""Variables whose value is a path on this machine: never written into a project's file."""
ENV_KEYS = backend_variables() + EXTRA_ENV
ENTRY_KEYS = ENV_KEYS + PASSED_VARIABLES
"""What an entry may set: `ENV_KEYS` (which server.json and the bundle declare) and the
telemetry settings (svc_mcp.core.telemetry), copied like them when set."""
SECRET_KEYS = token_variables()
PROMPT_ID = "svc-mcp-gateway-token"
"""The id of the password prompt a host with `prompt_reference` asks the gateway token with."""
_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def check_server_name(name: str) -> str:
    if not _SERVER_NAME.fullmatch(name):
        raise InstallError(
            f"--name {name!r}: use letters, digits, '-' and '_' (starting with a letter or digit)"
        )
    return name


def install_env(pairs: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the entry sets: those of `ENV_KEYS` set (non-empty) in `environ`, then the
    `KEY=VALUE` pairs given; `KEY=` leaves KEY out."""
    env = {key: environ[key] for key in ENTRY_KEYS if environ.get(key)}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or key not in ENTRY_KEYS:
            # The text is not echoed: it may be a token pasted in the wrong place.
            raise InstallError(f"--env takes KEY=VALUE with KEY one of {', '.join(ENTRY_KEYS)}")
        if value:
            env[key] = value
        else:
            env.pop(key, None)
    return _checked(env, environ)


def _checked(env: dict[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """`env`, refused when a value holds a control character, a base URL does not parse, or a
    token would go over plain http to a host that is not loopback and not named in the opt-in
    (which then goes into the entry too, so the server allows what install did)."""
    for key, value in env.items():
        if any(ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F for char in value):
            raise InstallError(
                f"{key} holds a control character (a line end copied from a file?); set it "
                "again without it"
            )
    for backend in BACKENDS:
        _check_token_file(backend, env)
        base = env.get(backend.base_url_variable)
        if base is None:
            continue
        check_url(base, backend.base_url_variable, secret_in=None)
        tokens = [name for name in backend.credential_variables if env.get(name)]
        host = cleartext_host(base, environ)
        if tokens and host is not None:
            raise InstallError(refusal(tokens[0], backend.base_url_variable, host))
        if tokens and urlsplit(base).scheme == "http" and insecure_hosts(environ):
            env[INSECURE_HOSTS_VARIABLE] = environ[INSECURE_HOSTS_VARIABLE]
    return env


def _check_token_file(backend: Backend, env: Mapping[str, str]) -> None:
    """A token file must be named by an absolute path (a host starts the server in a folder of
    its own choosing), and not beside the token variable it stands for."""
    path = env.get(backend.token_file_variable)
    if path is None:
        return
    if not os.path.isabs(path):
        raise InstallError(
            f"{backend.token_file_variable} must be an absolute path: a host starts svc-mcp in a "
            "folder of its own choosing"
        )
    if given := [name for name in backend.token_variables if env.get(name)]:
        raise InstallError(
            f"{given[0]} and {backend.token_file_variable} are both set: keep one (`--env "
            f"{given[0]}=` leaves the variable out)"
        )


def plain_entry(command: list[str], env: Mapping[str, str]) -> dict[str, Any]:
    """The local entry in the form most hosts take, with the values written out."""
    return {"command": command[0], "args": command[1:], "env": dict(env)}


def server_entry(
    host: Host, command: list[str], env: Mapping[str, str], *, env_refs: bool = False
) -> dict[str, Any]:
    """The host's entry. With `env_refs`, tokens are written as references the host expands."""
    if env_refs and not host.takes_references:
        raise InstallError(
            f"{host.label} does not expand environment variables in its config, so --env-refs "
            "cannot be used with it"
        )
    entry: dict[str, Any] = {**host.stdio_fields, "command": command[0], "args": command[1:]}
    ordered = {key: env[key] for key in (*ENTRY_KEYS, INSECURE_HOSTS_VARIABLE) if key in env}
    ordered |= runner_env(command)
    referenced = [key for key in ordered if env_refs and key in SECRET_KEYS]
    if host.env_vars_key is not None:
        entry["env"] = {key: value for key, value in ordered.items() if key not in referenced}
        if referenced:
            entry[host.env_vars_key] = referenced
    else:
        pattern = host.reference or "%s"  # a reference only where the host has one (above)
        entry["env"] = {
            key: pattern % key if key in referenced else value for key, value in ordered.items()
        }
    return entry


def http_entry(
    host: Host, url: str, mode: TokenMode, environ: Mapping[str, str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The host's remote (streamable HTTP) entry for the gateway at `url`, and the `inputs` it
    needs (a password prompt). The gateway token goes in by reference (`ref`, the default), as its
    value (`plain`), or not at all (`none`: a loopback gateway without a token; `oauth`: a
    gateway with OAuth, to which the host signs in itself)."""
    if host.url_key is None:
        raise InstallError(
            f"{host.label} takes no remote server in its configuration file (only local "
            "commands): install it without --http, or add the URL in its Settings > Connectors"
        )
    check_url(url, "--http", secret_in=GATEWAY_TOKEN_VARIABLE)
    entry: dict[str, Any] = {**host.http_fields, host.url_key: url}
    inputs: list[dict[str, Any]] = []
    if mode == "oauth" and host.oauth_key is not None:
        # The least scope first: a person who may forward intel steps up when they call it.
        entry[host.oauth_key] = {"scopes": SCOPE_READ}
    if mode in ("none", "oauth"):
        return entry, inputs
    if (reached := cleartext_host(url, environ)) is not None:
        raise InstallError(refusal(GATEWAY_TOKEN_VARIABLE, "--http", reached))
    value = None
    if mode == "plain":
        value = client_gateway_token(environ)
        if not value:
            raise InstallError(
                f"--http-token plain writes {GATEWAY_TOKEN_VARIABLE}: set it, or start the "
                "gateway once so that it keeps a token for you"
            )
    if value is None and host.bearer_variable_key is not None:
        entry[host.bearer_variable_key] = GATEWAY_TOKEN_VARIABLE
        return entry, inputs
    if value is None and host.prompt_reference is not None:
        value = host.prompt_reference % PROMPT_ID
        inputs.append(
            {
                "type": "promptString",
                "id": PROMPT_ID,
                "description": f"svc-mcp gateway token ({GATEWAY_TOKEN_VARIABLE})",
                "password": True,
            }
        )
    elif value is None:
        value = (host.reference or "%s") % GATEWAY_TOKEN_VARIABLE
    entry[host.headers_key] = {"Authorization": f"Bearer {value}"}
    return entry, inputs


def check_url(url: str, option: str, *, secret_in: str | None) -> None:
    """Refused unless `url` is an http(s) URL with a host, a valid port and no credentials (the
    URL is not echoed: it may carry them)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        example = "http://127.0.0.1:8765/mcp" if secret_in else "https://host:port"
        raise InstallError(f"{option} takes an http:// or https:// URL with a host, e.g. {example}")
    if parts.username or parts.password:
        where = f"; the token goes in {secret_in}" if secret_in else ""
        raise InstallError(f"{option} must not carry a user name or password{where}")


# A whole value that names a variable (`${NAME}`, `${env:NAME}`, `${input:id}`, `$NAME`),
# possibly after "Bearer ": anything else holds a value, which may be a token.
_REFERENCE = re.compile(r"(?:Bearer )?(?:\$\{[^}\s]+\}|\$[A-Za-z_][A-Za-z0-9_]*)")


def plain_secrets(entry: Mapping[str, Any]) -> list[str]:
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
    for table in sorted({host.headers_key for host in HOSTS.values()}):
        headers = entry.get(table)
        if isinstance(headers, Mapping) and any(
            isinstance(v, str) and not _REFERENCE.fullmatch(v) for v in headers.values()
        ):
            names.append(GATEWAY_TOKEN_VARIABLE)
    return names
