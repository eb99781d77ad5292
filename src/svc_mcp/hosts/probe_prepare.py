"""What starting one host entry takes, as its host would start it (its command with its env, or
its URL with its headers), or the finding that doctor does not start it."""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from svc_mcp.core.backends import BACKENDS, Backend, token_variables
from svc_mcp.core.failures import FailureKind
from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE, INSECURE_HOSTS_VARIABLE, cleartext_host
from svc_mcp.hosts.cleartext import refusal
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.expansion import Passed, entry_env, entry_headers
from svc_mcp.hosts.findings import Finding, failure
from svc_mcp.hosts.oauth_probe import (
    OAuthGateway,
    issuer_metadata,
    oauth_gateway,
    sign_in_problem,
)
from svc_mcp.hosts.ours import not_ours
from svc_mcp.hosts.probe_sessions import Proof, http_session, stdio_session
from svc_mcp.hosts.runners import PACKAGE, check_on_index, index_url
from svc_mcp.hosts.table import Host, Scope
from svc_mcp.serve.confinement import SETTING as CONFINEMENT_SETTING

DEFAULT_NAME = "svc"
"""The name install gives an entry; doctor also looks at it when it runs something else."""


@dataclass(frozen=True)
class Start:
    """An entry ready to start as its host would."""

    host: Host
    check: str
    where: str
    again: str
    what: str
    """How the message names what is started: the command line, or the gateway's URL."""
    start: Callable[[], Coroutine[Any, Any, Proof]]
    """Starts it, completes the handshake, lists its tools and proves each backend through it."""
    show_env: str | None
    data: dict[str, object]
    limit: float
    """The host's start-up limit for this entry, in seconds."""
    fix: str
    """What to do when it does not start."""
    secrets: tuple[str, ...] = ()
    """Token values the start may echo in an error (a header httpx refuses, say); redacted."""
    left_out: tuple[str, ...] = ()
    """References in the entry that were not passed: not svc-mcp's variables."""
    unset: tuple[str, ...] = ()
    """svc-mcp's variables the entry refers to that are not set here (passed empty)."""

    @property
    def notes(self) -> str:
        """What the entry was not given, for the end of a message."""
        note = _left_out_note(self.left_out)
        if self.unset:
            note += f" (not set here, so passed empty: {', '.join(self.unset)})"
        return note


def prepare_entry(
    host: Host,
    scope: Scope,
    path: Path,
    entry_name: str,
    entry: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    trusted: bool,
    project: Path,
    home: Path,
    backends: tuple[Backend, ...] = BACKENDS,
) -> Start | Finding:
    """What starting the entry takes, or the finding that it is not started: a project's entry
    the person has not trusted, a command that is not svc-mcp, no command, one by bare name
    (advice), one that is not there, or a package its index does not have."""
    named = "" if entry_name == DEFAULT_NAME else f" --name {entry_name}"
    check = f"host.{host.name}.{scope}" + (f".{entry_name}" if named else "")
    where = f"{host.label} {entry_name!r} ({scope}, {path})"
    again = f"run `svc-mcp install --client {host.name} --scope {scope}{named}` again"
    url = entry.get(host.url_key) if host.url_key else None
    data: dict[str, object] = {"path": str(path), "name": entry_name}
    if isinstance(url, str):
        data["url"] = url
        headers = entry_headers(host, entry, environ)
        if not trusted:
            would = f"connect to {url}{_sends_to_url(headers)}"
            return _untrusted(check, where, would, headers.left_out, data)
        if headers.withheld is not None:
            message = f"{where}: not contacted: {headers.withheld}"
            return failure(check, FailureKind.MISCONFIGURED, message, **data)
        reached = cleartext_host(url, environ) if headers.values else None
        if reached is not None:
            message = f"{where}: not contacted: {refusal('its token', 'the entry', reached)}"
            return failure(check, FailureKind.MISCONFIGURED, message, **data)
        if not headers.values and (oauth := oauth_gateway(url)) is not None:
            return oauth_finding(check, where, host, oauth, data, entry)
        if any(value.strip() == "Bearer" for value in headers.values.values()):
            message = (
                f"{where}: not contacted: its token is {GATEWAY_TOKEN_VARIABLE}, which is not set "
                f"here; export it where {host.label} runs (its own environment), then restart it"
            )
            return failure(check, FailureKind.MISCONFIGURED, message, **data)

        def connect() -> Coroutine[Any, Any, Proof]:
            return http_session(url, headers.values, backends)

        fix = (
            f"start it (`svc-mcp --http`) and check the URL and {GATEWAY_TOKEN_VARIABLE} in the "
            f"host's environment, or {again}"
        )
        # The gateway token, and whatever a header carries after its scheme.
        secrets = tuple(value.rpartition(" ")[2] for value in headers.values.values())
        what = f"the gateway at {url}"
        limit = host.startup.of(entry, environ)
        return Start(
            host, check, where, again, what, connect, None, data, limit, fix, secrets,
            headers.left_out, headers.unset,
        )  # fmt: skip
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        return failure(
            check, FailureKind.MISCONFIGURED, f"{where}: the entry has no command; {again}"
        )
    data["command"] = command
    args = entry_strings(entry.get("args"))
    what = " ".join([command, *args])
    env = entry_env(host, entry, environ)
    why = not_ours(command, args, scope=scope, project=project, environ=environ)
    if why is not None:
        message = (
            f"{where}: foreign, not started: it runs `{what}`, {why}; if it should be svc-mcp, "
            f"{again}"
        )
        return Finding(check, "warn", message, data=data | {"started": False, "foreign": True})
    if not trusted:
        would = f"run `{what}`{_sends_from_env(env)}{_weakens(env)}"
        return _untrusted(check, where, would, env.left_out, data)
    if not Path(command).is_absolute():
        message = f"{where} runs {command!r} by name, which a GUI host may not find; {again}"
        return Finding(check, "warn", message, data=data)
    if not (Path(command).is_file() and os.access(command, os.X_OK)):
        message = f"{where} runs {command}, which is not there (is uv installed?); {again}"
        return failure(check, FailureKind.MISCONFIGURED, message, **data)
    try:
        _check_index(command, args, environ)
    except InstallError as error:
        return failure(check, FailureKind.MISCONFIGURED, f"{where}: {error}; {again}", **data)

    def run() -> Coroutine[Any, Any, Proof]:
        # Started in the home, not the project: a uv.toml or .python-version the project holds
        # would otherwise steer the uv or uvx it runs.
        return stdio_session(
            command, args, env.values, backends, cwd=home if home.is_dir() else Path("/")
        )

    names = ", ".join(env.values)
    limit = host.startup.of(entry, environ)
    fix = f"run it in a terminal to see why, or {again}"
    secrets = tuple(value for name, value in env.values.items() if name in token_variables())
    return Start(
        host, check, where, again, what, run, names, data, limit, fix, secrets, env.left_out,
        env.unset,
    )  # fmt: skip


def _untrusted(
    check: str, where: str, would: str, left_out: tuple[str, ...], data: dict[str, object]
) -> Finding:
    """A project's entry, not started: the project's author wrote it, and every host asks the
    person before it starts one."""
    message = (
        f"{where}: not started: a project's file is its author's, and it would {would}"
        f"{_left_out_note(left_out)}; read it, then run `svc-mcp doctor --trust-project` to "
        "start it"
    )
    return Finding(check, "warn", message, data=data | {"started": False})


def _sends_from_env(env: Passed) -> str:
    """Which of this shell's values the entry's command would get, and where each token goes."""
    if not env.from_here:
        return ""
    said = f", given {', '.join(env.from_here)} from this shell"
    for backend in BACKENDS:
        tokens = [name for name in backend.credential_variables if env.values.get(name)]
        if tokens:
            base = env.values.get(backend.base_url_variable) or backend.default_base_url
            said += f"; svc-mcp would send {tokens[0]} to {base}"
    return said


def _weakens(env: Passed) -> str:
    """What the entry's env switches off in svc-mcp's defences, said before anyone trusts it."""
    said = ""
    if env.values.get(CONFINEMENT_SETTING, "").strip().lower() == "off":
        said += f"; its env switches svc-mcp's confinement off ({CONFINEMENT_SETTING}=off)"
    if hosts := env.values.get(INSECURE_HOSTS_VARIABLE, "").strip():
        said += (
            f"; its env lets svc-mcp send tokens over plain http to {hosts} "
            f"({INSECURE_HOSTS_VARIABLE})"
        )
    return said


def _sends_to_url(headers: Passed) -> str:
    """Which tokens of this shell (or the gateway's kept one) would go to `url`."""
    if headers.withheld is not None:
        return f" with no token ({headers.withheld})"
    if not headers.from_here:
        return " with no token of yours"
    kept = f" (the gateway's kept token, {headers.kept})" if headers.kept else " (this shell's)"
    return f" and send {', '.join(headers.from_here)}{kept} to it"


def _left_out_note(left_out: tuple[str, ...]) -> str:
    if not left_out:
        return ""
    return f" (not passed, not svc-mcp's: {', '.join(dict.fromkeys(left_out))})"


def _check_index(command: str, args: list[str], environ: Mapping[str, str]) -> None:
    """For an entry that runs the release from a package index (`uvx [--default-index URL]
    svc-mcp[==VERSION]`): `InstallError` when the index cannot give it."""
    package, _, version = args[-1].partition("==") if args else ("", "", "")
    if Path(command).name != "uvx" or package != PACKAGE or "--from" in args:
        return
    given = args[args.index("--default-index") + 1] if "--default-index" in args else None
    check_on_index(index_url(given, environ), version=version or None)


def entry_strings(value: object) -> list[str]:
    """The items of a list, or the keys of a table, of an entry a person may have edited."""
    return [str(item) for item in value] if isinstance(value, list | dict) else []


def oauth_finding(
    check: str,
    where: str,
    host: Host,
    oauth: OAuthGateway,
    data: dict[str, object],
    entry: Mapping[str, Any],
) -> Finding:
    """An entry of a gateway with OAuth: the host signs in itself, so doctor checks what the
    host's sign-in starts from, the gateway's metadata and the issuer's discovery, and whether
    the issuer can let this entry sign in at all."""
    label = host.label
    data = data | {"mode": "oauth", "issuer": oauth.issuer, "scopes": list(oauth.scopes)}
    metadata = issuer_metadata(oauth.issuer)
    if isinstance(metadata, str):
        message = (
            f"{where}: the gateway does OAuth, but its authorization server {oauth.issuer} "
            f"does not answer discovery ({metadata}); hosts cannot sign in"
        )
        return failure(check, FailureKind.UNREACHABLE, message, **data)
    asks_for, preregistered = host.oauth_request(entry, oauth.scopes)
    if (problem := sign_in_problem(metadata, asks_for, preregistered)) is not None:
        message = f"{where}: {label} cannot sign in at {oauth.issuer}: {problem}"
        return failure(check, FailureKind.MISCONFIGURED, message, **data)
    message = (
        f"{where}: the gateway does OAuth with {oauth.issuer} (scopes "
        f"{', '.join(oauth.scopes)}); its metadata and the issuer's discovery answer; "
        f"{label} signs in itself"
    )
    if host.oauth_sign_in:
        message += f" (`{host.oauth_sign_in % data['name']}`)"
    beyond = [scope for scope in oauth.scopes if scope not in asks_for]
    if host.oauth_key and beyond:
        message += (
            f"; it asks for {' '.join(asks_for)} only, and {label} never steps up past the "
            f"scopes its entry pins: a person who may hold {' '.join(beyond)} adds it to the "
            f"entry's `{host.oauth_key}.scopes`"
        )
    return Finding(check, "ok", message, data=data | {"asks_for": list(asks_for)})
