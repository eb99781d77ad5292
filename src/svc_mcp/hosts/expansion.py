"""What doctor passes an entry it starts: the entry's values, with references expanded as its host
would, but only to svc-mcp's own variables (the backends' and the gateway token). A value that
refers to anything else (a cloud key, the intel signing key, another prompt) is left out whole and
named, so a file someone else wrote cannot make doctor hand it a secret."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from svc_mcp.core.backends import backend_variables
from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE
from svc_mcp.hosts.entries import PROMPT_ID
from svc_mcp.hosts.table import Host
from svc_mcp.serve.gateway_token import client_gateway_token

OWN_VARIABLES = frozenset(backend_variables()) | {GATEWAY_TOKEN_VARIABLE}
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


def _expand(
    host: Host, value: str, environ: Mapping[str, str], left_out: list[str], unset: list[str]
) -> str | None:
    """`value` with its references expanded (unset: empty, and named in `unset`); None when one is
    not ours."""
    foreign: list[str] = []

    def one(match: re.Match[str]) -> str:
        if match["bare"] is not None and not host.expands_bare_dollar:
            return match.group(0)
        if match["input"] is not None:
            if host.prompt_reference and match["input"] == PROMPT_ID:
                return _own(GATEWAY_TOKEN_VARIABLE, environ, unset)
        elif (name := match["braced"] or match["bare"]) in OWN_VARIABLES:
            return _own(name, environ, unset)
        foreign.append(match.group(0))
        return ""

    expanded = _REFERENCE.sub(one, value)
    left_out += foreign
    return None if foreign else expanded


def _own(name: str, environ: Mapping[str, str], unset: list[str]) -> str:
    """The value of one of svc-mcp's variables (the gateway token may come from the gateway's
    kept file); named in `unset` when there is none."""
    value = client_gateway_token(environ) if name == GATEWAY_TOKEN_VARIABLE else environ.get(name)
    if not value:
        unset.append(name)
    return value or ""


def entry_env(host: Host, entry: Mapping[str, Any], environ: Mapping[str, str]) -> Passed:
    """The environment the host would give the entry's command, narrowed to our variables."""
    values: dict[str, str] = {}
    left_out: list[str] = []
    unset: list[str] = []
    env = entry.get("env")
    for key, value in env.items() if isinstance(env, dict) else []:
        expanded = _expand(host, str(value), environ, left_out, unset)
        if expanded is not None:
            values[str(key)] = expanded
    passed = entry.get(host.env_vars_key) if host.env_vars_key else None
    for name in map(str, passed) if isinstance(passed, list) else []:
        if name not in OWN_VARIABLES:
            left_out.append(name)
        elif name in environ:
            values[name] = environ[name]
        else:
            unset.append(name)
    return Passed(values, tuple(left_out), tuple(dict.fromkeys(unset)))


def entry_headers(host: Host, entry: Mapping[str, Any], environ: Mapping[str, str]) -> Passed:
    """The headers the host would send to the entry's URL, narrowed to our variables."""
    values: dict[str, str] = {}
    left_out: list[str] = []
    unset: list[str] = []
    headers = entry.get(host.headers_key)
    for key, value in headers.items() if isinstance(headers, dict) else []:
        expanded = _expand(host, str(value), environ, left_out, unset)
        if expanded is not None:
            values[str(key)] = expanded
    bearer = entry.get(host.bearer_variable_key) if host.bearer_variable_key else None
    if isinstance(bearer, str) and bearer in OWN_VARIABLES:
        values["Authorization"] = f"Bearer {_own(bearer, environ, unset)}"
    elif isinstance(bearer, str):
        left_out.append(bearer)
    return Passed(values, tuple(left_out), tuple(dict.fromkeys(unset)))
