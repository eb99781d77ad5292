"""What doctor passes an entry it starts: the entry's values, with references expanded as its host
would, but only to svc-mcp's own variables (the backends' and the gateway token). A value that
refers to anything else (a cloud key, the intel signing key, another prompt) is left out whole and
named, so a file someone else wrote cannot make doctor hand it a secret; so is a variable of the
entry's env that svc-mcp does not read (PYTHONPATH, LD_PRELOAD, UV_INDEX_URL would run or fetch
other code inside svc-mcp). The gateway's kept token goes only to a gateway this user runs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svc_mcp.core.backends import backend_variables
from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE, INSECURE_HOSTS_VARIABLE
from svc_mcp.hosts.entries import ENTRY_KEYS, PROMPT_ID
from svc_mcp.hosts.gateway_owner import runs_here
from svc_mcp.hosts.runners import UV_TRUST
from svc_mcp.hosts.table import Host
from svc_mcp.serve.gateway.token import (
    GatewayTokenFileError,
    gateway_token_path,
    read_gateway_token,
)

OWN_VARIABLES = frozenset(backend_variables()) | {GATEWAY_TOKEN_VARIABLE}
"""The variables an entry's value may refer to."""
ENV_NAMES = frozenset(ENTRY_KEYS) | {INSECURE_HOSTS_VARIABLE}
OWN_PREFIXES = ("SVC_MCP_", "OTEL_")
"""The variables an entry's env may set: `ENV_NAMES` and these prefixes, which svc-mcp reads."""
NEVER_PASSED = ("LD_", "DYLD_", "PYTHON", "UV_", "PIP_", "OTEL_PYTHON_")
"""Prefixes of variables that load or fetch other code: never passed, whatever the lists say."""
_REFERENCE = re.compile(
    r"\$\{input:(?P<input>[^}]*)\}"
    r"|\$\{(?:env:)?(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)


@dataclass(frozen=True)
class Passed:
    values: dict[str, str]
    left_out: tuple[str, ...]
    """The references (and variable names) not passed, as the file spells them."""
    unset: tuple[str, ...] = ()
    """svc-mcp's variables the entry refers to that are not set here: the host passes them empty."""
    from_here: tuple[str, ...] = ()
    """svc-mcp's variables whose value this shell (or the gateway's kept token file) gives."""
    withheld: str | None = None
    """Why the gateway's kept token was not put in (it goes only to a gateway this user runs)."""
    kept: Path | None = None
    """The file the gateway token put in came from, when not from this shell."""


class _Expansion:
    """What expanding one entry's values found: the names left out, unset, and given here."""

    def __init__(self, environ: Mapping[str, str], url: str | None = None) -> None:
        self.environ, self.url = environ, url
        self.left_out: list[str] = []
        self.unset: list[str] = []
        self.from_here: list[str] = []
        self.withheld: str | None = None
        self.kept: Path | None = None

    def passed(self, values: dict[str, str]) -> Passed:
        return Passed(
            values,
            tuple(self.left_out),
            tuple(dict.fromkeys(self.unset)),
            tuple(dict.fromkeys(self.from_here)),
            self.withheld,
            self.kept,
        )

    def own(self, name: str) -> str:
        """The value of one of svc-mcp's variables; named in `unset` when there is none. The
        gateway token, unset here, is the gateway's kept one only for a gateway this user runs."""
        if name == GATEWAY_TOKEN_VARIABLE:
            value = self.environ.get(name, "").strip() or self._kept()
        else:
            value = self.environ.get(name)
        if value:
            self.from_here.append(name)
        else:
            self.unset.append(name)
        return value or ""

    def _kept(self) -> str | None:
        path = gateway_token_path(self.environ)
        try:
            token = read_gateway_token(path)
        except GatewayTokenFileError:
            return None
        if token is None:
            return None
        if self.url is not None and runs_here(self.url):
            self.kept = path
            return token
        where = f"no gateway of yours listens at {self.url}" if self.url else "not to a command"
        self.withheld = (
            f"{GATEWAY_TOKEN_VARIABLE} is not set here, and the gateway's kept token ({path}) goes "
            f"only to a gateway you run ({where}); set {GATEWAY_TOKEN_VARIABLE} if you mean it"
        )
        return None


def _expand(host: Host, value: str, found: _Expansion) -> str | None:
    """`value` with its references expanded (unset: empty, and named in `unset`); None when one is
    not ours."""
    foreign: list[str] = []

    def one(match: re.Match[str]) -> str:
        if match["bare"] is not None and not host.expands_bare_dollar:
            return match.group(0)
        if match["input"] is not None:
            if host.prompt_reference and match["input"] == PROMPT_ID:
                return found.own(GATEWAY_TOKEN_VARIABLE)
        elif (name := match["braced"] or match["bare"]) in OWN_VARIABLES:
            return found.own(name)
        foreign.append(match.group(0))
        return ""

    expanded = _REFERENCE.sub(one, value)
    found.left_out += foreign
    return None if foreign else expanded


def passes(name: str) -> bool:
    """Whether doctor passes a variable of this name to an entry's command."""
    ours = name in ENV_NAMES or name.startswith(OWN_PREFIXES)
    return ours and not name.upper().startswith(NEVER_PASSED)


def entry_env(host: Host, entry: Mapping[str, Any], environ: Mapping[str, str]) -> Passed:
    """The environment the host would give the entry's command, narrowed to our variables."""
    values: dict[str, str] = {}
    found = _Expansion(environ)
    env = entry.get("env")
    for key, value in env.items() if isinstance(env, dict) else []:
        if UV_TRUST.get(str(key)) == value:  # install's own: uv trusts the system's certificates
            values[str(key)] = str(value)
            continue
        if not passes(str(key)):
            found.left_out.append(str(key))
            continue
        expanded = _expand(host, str(value), found)
        if expanded is not None:
            values[str(key)] = expanded
    passed = entry.get(host.env_vars_key) if host.env_vars_key else None
    for name in map(str, passed) if isinstance(passed, list) else []:
        if name not in OWN_VARIABLES or not passes(name):
            found.left_out.append(name)
        elif name in environ:
            values[name] = environ[name]
            found.from_here.append(name)
        else:
            found.unset.append(name)
    return found.passed(values)


def entry_headers(host: Host, entry: Mapping[str, Any], environ: Mapping[str, str]) -> Passed:
    """The headers the host would send to the entry's URL, narrowed to our variables."""
    values: dict[str, str] = {}
    url = entry.get(host.url_key) if host.url_key else None
    found = _Expansion(environ, url if isinstance(url, str) else None)
    headers = entry.get(host.headers_key)
    for key, value in headers.items() if isinstance(headers, dict) else []:
        expanded = _expand(host, str(value), found)
        if expanded is not None:
            values[str(key)] = expanded
    bearer = entry.get(host.bearer_variable_key) if host.bearer_variable_key else None
    if isinstance(bearer, str) and bearer in OWN_VARIABLES:
        values["Authorization"] = f"Bearer {found.own(bearer)}"
    elif isinstance(bearer, str):
        found.left_out.append(bearer)
    return found.passed(values)
