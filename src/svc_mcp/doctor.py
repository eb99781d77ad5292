"""`svc-mcp doctor`: checks a user's set-up and says what to fix, one finding per line.

The backends of the selected toolsets (portal -> the portal, service -> the data service) are
*needed*: their settings must be valid, they must answer, and a token that is set (or that the
service requires) must be accepted. Each MCP host entry found is started as its host would start
it (its command with its env, or its URL with its headers), must answer the MCP handshake and list
its tools within the host's own start-up limit, and its time is reported; an entry that would fail
in the host is a failure, with the fix. Anything else (no session token, no host installed) is
advice.

Each backend gets at most one request carrying its token, never repeated, so a wrong token cannot
walk into the data service's lockout; the probes before it go without a token. Tokens are shown
only as set or not set.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
from rich.console import Console
from rich.text import Text

from svc_client.backends import (
    BACKENDS,
    PORTAL,
    SERVICE,
    Backend,
    Toolset,
    token_variables,
)
from svc_client.client import fetch
from svc_client.connection import Connection, redact
from svc_client.errors import CallError, Misconfigured
from svc_client.exits import EXIT_CODES
from svc_client.settings import GATEWAY_TOKEN_VARIABLE
from svc_mcp.install import (
    CLIENTS,
    HOSTS,
    PACKAGE,
    Client,
    InstallError,
    Platform,
    Scope,
    check_on_index,
    config_path,
    current_platform,
    index_url,
    read_entry,
)

Status = Literal["ok", "info", "warn", "fail"]
CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 5.0
# The one request with the service token: the `get_system` tool's route.
SERVICE_PROBE = "/api/v1/system"


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    message: str
    kind: str | None = None
    """For a failure: its kind in `svc_client.exits`, which sets the exit code."""
    data: Mapping[str, object] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        kind = {"kind": self.kind} if self.kind else {}
        return {
            "check": self.check,
            "status": self.status,
            "message": self.message,
            **kind,
            **self.data,
        }


def _fail(check: str, kind: str, message: str, **data: object) -> Finding:
    return Finding(check, "fail", message, kind, data)


def _failed(check: str, error: CallError) -> Finding:
    if error.retry_after is not None:
        return _fail(check, error.kind, str(error), retry_after=error.retry_after)
    return _fail(check, error.kind, str(error))


def exit_code(findings: Sequence[Finding]) -> int:
    """0 when nothing failed, else the exit code of the first failure's kind."""
    return next((EXIT_CODES[f.kind] for f in findings if f.kind), 0)


# ------------------------------------------------------------------------------------- settings


def _setting_findings(
    backend: Backend, connection: Connection, environ: Mapping[str, str]
) -> list[Finding]:
    base_from = backend.base_url_variable if environ.get(backend.base_url_variable) else None
    token_from = backend.token_source(environ)
    return [
        Finding(
            f"{backend.name}.base_url",
            "info",
            f"{connection.base_url} ({f'from {base_from}' if base_from else 'default'})",
            data={"value": connection.base_url, "source": base_from or "default"},
        ),
        Finding(
            f"{backend.name}.token",
            "info",
            f"set (from {token_from})"
            if token_from
            else f"not set ({' or '.join(backend.token_variables)})",
            data={"set": token_from is not None, "source": token_from},
        ),
    ]


# ------------------------------------------------------------------------------------- backends


async def _portal(http: httpx.AsyncClient, portal: Connection) -> list[Finding]:
    try:
        await fetch(
            http, replace(portal, token=None), "GET", PORTAL.health_path, query={}, needs="nobody"
        )
    except CallError as error:
        return [_failed("portal.answers", error)]
    findings = [Finding("portal.answers", "ok", f"the portal answers at {portal.base_url}")]
    if portal.token is None:
        note = f"anonymous: only approved public surfaces; set {PORTAL.token_names} to sign in"
        return [*findings, Finding("portal.identity", "info", note)]
    try:
        payload = await fetch(
            http, portal, "GET", "/api/whoami", query={}, needs="a signed-in session"
        )
    except CallError as error:
        return [*findings, _failed("portal.identity", error)]
    identity = payload.data if isinstance(payload.data, dict) else {}
    who = {key: str(identity.get(key)) for key in ("id", "kind", "role")}
    message = f"signed in as {who['id']} ({who['kind']}, role {who['role']})"
    return [*findings, Finding("portal.identity", "ok", message, data=who)]


async def _service(http: httpx.AsyncClient, service: Connection) -> list[Finding]:
    anonymous = replace(service, token=None)
    try:
        await fetch(http, anonymous, "GET", SERVICE.health_path, query={}, needs="nobody")
        status = await fetch(
            http, anonymous, "GET", "/api/v1/auth/status", query={}, needs="no token"
        )
    except CallError as error:
        return [_failed("service.answers", error)]
    findings = [Finding("service.answers", "ok", f"the data service answers at {service.base_url}")]
    required = status.data.get("auth_required") if isinstance(status.data, dict) else None
    if not isinstance(required, bool):
        message = "GET /api/v1/auth/status did not say whether auth is required (auth_required)"
        return [*findings, _fail("service.auth", "server_error", message)]
    if not required:
        message = "the data service requires no token" + (
            " (the one set is not needed, so it was not sent)" if service.token else ""
        )
        return [*findings, Finding("service.auth", "ok", message, data={"auth_required": False})]
    if service.token is None:
        message = f"the data service requires a token and none is set: set {SERVICE.token_names}"
        return [*findings, _fail("service.auth", "unauthorized", message, auth_required=True)]
    try:  # The only request with the token; never repeated (see the module docstring).
        await fetch(http, service, "GET", SERVICE_PROBE, query={}, needs="a valid token")
    except CallError as error:
        return [*findings, _failed("service.auth", error)]
    message = f"the data service requires a token and accepts the one set (GET {SERVICE_PROBE})"
    return [*findings, Finding("service.auth", "ok", message, data={"auth_required": True})]


BackendCheck = Callable[[httpx.AsyncClient, Connection], Coroutine[Any, Any, list[Finding]]]
_CHECKS: dict[Backend, BackendCheck] = {PORTAL: _portal, SERVICE: _service}


async def _check_backends(
    checks: Sequence[tuple[BackendCheck, Connection]],
) -> list[list[Finding]]:
    timeout = httpx.Timeout(READ_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS)
    async with httpx.AsyncClient(timeout=timeout, trust_env=False) as http:
        return await asyncio.gather(*(check(http, connection) for check, connection in checks))


def _read(backend: Backend) -> Connection | Finding:
    try:
        return backend.connect()
    except Misconfigured as error:
        return _failed(f"{backend.name}.settings", error)


# ---------------------------------------------------------------------------------------- hosts


def host_findings(
    name: str, *, home: Path, cwd: Path, platform: Platform, environ: Mapping[str, str]
) -> list[Finding]:
    """Every host configuration (user and project) that holds an entry called `name`, each
    started as its host would start it (see `probe_entry`)."""
    found: list[tuple[Client, Scope, Path, dict[str, Any]]] = []
    seen: set[Path] = set()
    for client in CLIENTS:
        for scope in HOSTS[client].scopes:
            path = config_path(
                client, scope, home=home, cwd=cwd, platform=platform, environ=environ
            )
            entry = None if path in seen else read_entry(client, path, name)
            seen.add(path)
            if entry is not None:
                found.append((client, scope, path, entry))
    if not found:
        message = (
            f"no MCP host has a server called {name!r} (looked in {len(seen)} files); "
            "run `svc-mcp install --client <client>`"
        )
        return [Finding("hosts", "warn", message)]

    prepared = [prepare_entry(*item, environ=environ) for item in found]

    async def probe_all() -> list[Finding]:
        # One at a time, as a host starts its own: entries starting side by side would share the
        # machine and report times the host never sees.
        return [p if isinstance(p, Finding) else await start_entry(p) for p in prepared]

    return asyncio.run(probe_all())


@dataclass(frozen=True)
class Start:
    """An entry ready to start as its host would."""

    client: Client
    check: str
    where: str
    again: str
    what: str
    """How the message names what is started: the command line, or the gateway's URL."""
    start: Callable[[], Coroutine[Any, Any, int]]
    """Starts it, completes the handshake and returns how many tools it lists."""
    show_env: str | None
    data: dict[str, object]
    limit: float
    """The host's start-up limit for this entry, in seconds."""
    fix: str
    """What to do when it does not start."""
    secrets: tuple[str, ...] = ()
    """Token values the start may echo in an error (a header httpx refuses, say); redacted."""


def startup_limit(client: Client, entry: Mapping[str, Any], environ: Mapping[str, str]) -> float:
    """How long the host waits for the entry: Codex's `startup_timeout_sec` in the entry, Claude
    Code's `MCP_TIMEOUT` (milliseconds) in its environment, else the host's default."""
    value: object = None
    if client == "codex":
        value = entry.get("startup_timeout_sec")
    elif client == "claude-code" and environ.get("MCP_TIMEOUT", "").strip().isdigit():
        value = int(environ["MCP_TIMEOUT"]) / 1000
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return HOSTS[client].startup_seconds


def prepare_entry(
    client: Client,
    scope: Scope,
    path: Path,
    entry: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
) -> Start | Finding:
    """What starting the entry takes, or the finding that it cannot start: no command, a command
    by bare name (advice), one that is not there, or a package its index does not have."""
    host = HOSTS[client]
    check = f"host.{client}.{scope}"
    where = f"{host.label} ({scope}, {path})"
    again = f"run `svc-mcp install --client {client} --scope {scope}` again"
    url = entry.get(host.url_key) if host.url_key else None
    data: dict[str, object] = {"path": str(path)}
    if isinstance(url, str):
        data["url"] = url

        def connect() -> Coroutine[Any, Any, int]:
            return _http_session(client, url, entry, environ)

        what = f"the gateway at {url}"
        limit = startup_limit(client, entry, environ)
        fix = (
            f"start it (`svc-mcp --http`) and check the URL and {GATEWAY_TOKEN_VARIABLE} in the "
            f"host's environment, or {again}"
        )
        # The gateway token, and whatever a header written in plain text carries after its scheme.
        headers = [
            str(v) for _, v in _items(entry.get("headers")) + _items(entry.get("http_headers"))
        ]
        secrets = (
            environ.get(GATEWAY_TOKEN_VARIABLE, ""),
            *(value.rpartition(" ")[2] for value in headers if "${" not in value),
        )
        return Start(client, check, where, again, what, connect, None, data, limit, fix, secrets)
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        return _fail(check, "misconfigured", f"{where}: the entry has no command; {again}")
    data["command"] = command
    args = _strings(entry.get("args"))
    if not Path(command).is_absolute():
        message = f"{where} runs {command!r} by name, which a GUI host may not find; {again}"
        return Finding(check, "warn", message, data=data)
    if not (Path(command).is_file() and os.access(command, os.X_OK)):
        message = f"{where} runs {command}, which is not there (is uv installed?); {again}"
        return _fail(check, "misconfigured", message, **data)
    try:
        _check_index(command, args, environ)
    except InstallError as error:
        return _fail(check, "misconfigured", f"{where}: {error}; {again}", **data)
    env = _host_env(client, entry, environ)

    def run() -> Coroutine[Any, Any, int]:
        return _stdio_session(command, args, env)

    names = ", ".join(_strings(entry.get("env")) + _strings(entry.get("env_vars")))
    what = " ".join([command, *args])
    limit = startup_limit(client, entry, environ)
    fix = f"run it in a terminal to see why, or {again}"
    secrets = tuple(value for name, value in env.items() if name in token_variables())
    return Start(client, check, where, again, what, run, names, data, limit, fix, secrets)


async def start_entry(start: Start) -> Finding:
    """Starts the entry as the host would (its exact command with its env, or its URL with its
    headers), completes the MCP handshake and lists the tools within the host's own start-up
    limit. Anything that would fail in the host is a failure here, with the fix."""
    host = HOSTS[start.client]
    check, where, what, data = start.check, start.where, start.what, start.data
    limit = start.limit
    began = time.monotonic()
    try:
        with anyio.fail_after(limit):
            tools = await start.start()
    except TimeoutError:
        message = (
            f"{where}: {what} did not list its tools within {limit:g} s, {host.label}'s limit; "
            f"{start.fix} (the default source starts fastest)"
        )
        return _fail(check, "misconfigured", message, **data)
    except Exception as exc:  # whatever stops it, the host would fail the same way
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and cause.exceptions:  # a task group's cause
            cause = cause.exceptions[0]
        said = redact(str(cause), start.secrets)
        reason = " ".join(said.split())[:200] or type(cause).__name__
        message = f"{where}: {what} did not answer as an MCP server ({reason}); {start.fix}"
        return _fail(check, "misconfigured", message, **data)
    seconds = time.monotonic() - began
    message = f"{where}: {what} listed {tools} tools in {seconds:.1f} s (limit {limit:g} s)"
    if start.show_env is not None:
        message += f"; env: {start.show_env or 'none'}"
    return Finding(check, "ok", message, data=data | {"seconds": round(seconds, 2), "tools": tools})


def _check_index(command: str, args: list[str], environ: Mapping[str, str]) -> None:
    """For an entry that runs the release from a package index (`uvx [--default-index URL]
    svc-mcp`): `InstallError` when the index cannot give it."""
    if Path(command).name != "uvx" or not args or args[-1] != PACKAGE or "--from" in args:
        return
    given = args[args.index("--default-index") + 1] if "--default-index" in args else None
    check_on_index(index_url(given, environ))


_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _expand(value: str, environ: Mapping[str, str], *, dollar: bool) -> str:
    """A host's reference to an environment variable replaced by its value (empty if unset)."""

    def one(match: re.Match[str]) -> str:
        if match.group(2) is not None and not dollar:
            return match.group(0)
        return environ.get(match.group(1) or match.group(2), "")

    return _REFERENCE.sub(one, value)


def _host_env(
    client: Client, entry: Mapping[str, Any], environ: Mapping[str, str]
) -> dict[str, str]:
    dollar = client == "gemini"  # Gemini also expands $NAME
    env = entry.get("env")
    result = {
        str(key): _expand(str(value), environ, dollar=dollar)
        for key, value in (env.items() if isinstance(env, dict) else [])
    }
    for name in _strings(entry.get("env_vars")):  # Codex passes these from its environment
        if name in environ:
            result[name] = environ[name]
    return result


async def _stdio_session(command: str, args: list[str], env: dict[str, str]) -> int:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    server = StdioServerParameters(command=command, args=args, env=env)
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - opening /dev/null does not block
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return len((await session.list_tools()).tools)


async def _http_session(
    client: Client, url: str, entry: Mapping[str, Any], environ: Mapping[str, str]
) -> int:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {
        str(key): _expand(str(value), environ, dollar=client == "gemini")
        for key, value in _items(entry.get("headers")) + _items(entry.get("http_headers"))
    }
    token = environ.get(GATEWAY_TOKEN_VARIABLE, "")
    for key, value in headers.items():
        # VS Code prompts for its password input; doctor takes it from the environment.
        headers[key] = re.sub(r"\$\{input:[^}]*\}", lambda _: token, value)
    bearer = entry.get("bearer_token_env_var")
    if isinstance(bearer, str):
        headers["Authorization"] = f"Bearer {environ.get(bearer, '')}"
    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    try:
        async with (
            httpx2.AsyncClient(headers=headers, event_hooks={"response": [record]}) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return len((await session.list_tools()).tools)
    except Exception:
        refused = {401: "the gateway refused the token: HTTP 401", 403: "HTTP 403"}
        status = next((code for code in statuses if code >= 400), None)
        if status is None:
            raise
        raise RuntimeError(refused.get(status, f"HTTP {status}")) from None


def _items(value: object) -> list[tuple[object, object]]:
    return list(value.items()) if isinstance(value, dict) else []


def _strings(value: object) -> list[str]:
    """The items of a list, or the keys of a table, of an entry a person may have edited."""
    return [str(item) for item in value] if isinstance(value, list | dict) else []


# ------------------------------------------------------------------------------------ running


def diagnose(toolsets: Collection[Toolset], name: str) -> list[Finding]:
    """All findings in a stable order: per backend its settings and checks, then the hosts."""
    environ = os.environ
    reads = [(backend, _read(backend)) for backend in BACKENDS if backend.toolset in toolsets]
    checks = [(_CHECKS[b], read) for b, read in reads if isinstance(read, Connection)]
    results = iter(asyncio.run(_check_backends(checks)))
    findings: list[Finding] = []
    for backend, read in reads:
        if isinstance(read, Finding):
            findings.append(read)
        else:
            findings += _setting_findings(backend, read, environ)
            findings += next(results)
    return findings + host_findings(
        name, home=Path.home(), cwd=Path.cwd(), platform=current_platform(), environ=environ
    )


_MARKS: dict[Status, tuple[str, str]] = {
    "ok": ("✓", "green"),
    "info": ("·", "cyan"),
    "warn": ("!", "yellow"),
    "fail": ("✗", "bold red"),
}


def print_findings(findings: Sequence[Finding], *, as_json: bool) -> None:
    """JSON lines (one object per finding) unless on a terminal; there, one rich line each."""
    if as_json or not sys.stdout.isatty():
        for finding in findings:
            print(json.dumps(finding.as_json(), ensure_ascii=False))
        return
    render(findings, Console(highlight=False))


def render(findings: Sequence[Finding], console: Console) -> None:
    for finding in findings:
        mark, style = _MARKS[finding.status]
        line = Text.assemble((f"{mark} ", style), (finding.check, "bold"), "  ", finding.message)
        console.print(line, soft_wrap=True)
    failures = sum(1 for finding in findings if finding.kind)
    verdict = (
        Text("everything needed works", "green")
        if not failures
        else Text(f"{failures} needed check(s) failed: fix the lines marked ✗", "bold red")
    )
    console.print(verdict)
