"""Doctor's hosts check: every host file that holds our entry, each entry started as its host would
start it (its command with its env, or its URL with its headers), the MCP handshake completed and
the tools listed within the host's own start-up limit."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from svc_client.backends import token_variables
from svc_client.connection import redact
from svc_client.failures import FailureKind
from svc_client.settings import GATEWAY_TOKEN_VARIABLE, cleartext_host
from svc_mcp.findings import Finding, failure
from svc_mcp.hosts.cleartext import refusal
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.expansion import entry_env, entry_headers
from svc_mcp.hosts.plan import read_entry
from svc_mcp.hosts.runners import PACKAGE, check_on_index, index_url, runs_svc_mcp
from svc_mcp.hosts.table import HOSTS, Host, Platform, Scope


def host_findings(
    name: str,
    *,
    home: Path,
    cwd: Path,
    platform: Platform,
    environ: Mapping[str, str],
    trust_project: bool = False,
) -> list[Finding]:
    """Every host configuration (user and project) that holds an entry called `name`, each
    started as its host would start it (see `prepare_entry`); a project's entries only with
    `trust_project`."""
    found: list[tuple[Host, Scope, Path, dict[str, Any]]] = []
    seen: set[Path] = set()
    for host in HOSTS.values():
        for scope in host.scopes:
            path = host.config_path(scope, home=home, cwd=cwd, platform=platform, environ=environ)
            entry = None if path in seen else read_entry(host, path, name)
            seen.add(path)
            if entry is not None:
                found.append((host, scope, path, entry))
    if not found:
        message = (
            f"no MCP host has a server called {name!r} (looked in {len(seen)} files); "
            "run `svc-mcp install --client <client>`"
        )
        return [Finding("hosts", "warn", message)]

    prepared = [
        prepare_entry(*item, environ=environ, trusted=item[1] == "user" or trust_project)
        for item in found
    ]

    async def probe_all() -> list[Finding]:
        # One at a time, as a host starts its own: entries starting side by side would share the
        # machine and report times the host never sees.
        return [p if isinstance(p, Finding) else await start_entry(p) for p in prepared]

    return asyncio.run(probe_all())


@dataclass(frozen=True)
class Start:
    """An entry ready to start as its host would."""

    host: Host
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
    left_out: tuple[str, ...] = ()
    """References in the entry that were not passed: not svc-mcp's variables."""


def prepare_entry(
    host: Host,
    scope: Scope,
    path: Path,
    entry: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    trusted: bool,
) -> Start | Finding:
    """What starting the entry takes, or the finding that it is not started: a project's entry
    the person has not trusted, a command that is not svc-mcp, no command, one by bare name
    (advice), one that is not there, or a package its index does not have."""
    check = f"host.{host.name}.{scope}"
    where = f"{host.label} ({scope}, {path})"
    again = f"run `svc-mcp install --client {host.name} --scope {scope}` again"
    url = entry.get(host.url_key) if host.url_key else None
    data: dict[str, object] = {"path": str(path)}
    if isinstance(url, str):
        data["url"] = url
        headers = entry_headers(host, entry, environ)
        if not trusted:
            return _untrusted(check, where, f"connect to {url}", headers.left_out, data)
        reached = cleartext_host(url, environ) if headers.values else None
        if reached is not None:
            message = f"{where}: not contacted: {refusal('its token', 'the entry', reached)}"
            return failure(check, FailureKind.MISCONFIGURED, message, **data)

        def connect() -> Coroutine[Any, Any, int]:
            return _http_session(url, headers.values)

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
            headers.left_out,
        )  # fmt: skip
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        return failure(
            check, FailureKind.MISCONFIGURED, f"{where}: the entry has no command; {again}"
        )
    data["command"] = command
    args = _strings(entry.get("args"))
    what = " ".join([command, *args])
    env = entry_env(host, entry, environ)
    if not runs_svc_mcp(command, args):
        message = (
            f"{where}: foreign, not started: it runs `{what}`, which is not svc-mcp as install "
            f"writes it; if it should be svc-mcp, {again}"
        )
        return Finding(check, "warn", message, data=data | {"started": False, "foreign": True})
    if not trusted:
        return _untrusted(check, where, f"run `{what}`", env.left_out, data)
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

    def run() -> Coroutine[Any, Any, int]:
        return _stdio_session(command, args, env.values)

    names = ", ".join(env.values)
    limit = host.startup.of(entry, environ)
    fix = f"run it in a terminal to see why, or {again}"
    secrets = tuple(value for name, value in env.values.items() if name in token_variables())
    return Start(
        host, check, where, again, what, run, names, data, limit, fix, secrets, env.left_out
    )


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


def _left_out_note(left_out: tuple[str, ...]) -> str:
    if not left_out:
        return ""
    return f" (not passed, not svc-mcp's: {', '.join(dict.fromkeys(left_out))})"


async def start_entry(start: Start) -> Finding:
    """Starts the entry as the host would (its exact command with its env, or its URL with its
    headers), completes the MCP handshake and lists the tools within the host's own start-up
    limit. Anything that would fail in the host is a failure here, with the fix."""
    host = start.host
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
        return failure(check, FailureKind.MISCONFIGURED, message, **data)
    except Exception as exc:  # whatever stops it, the host would fail the same way
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and cause.exceptions:  # a task group's cause
            cause = cause.exceptions[0]
        said = redact(str(cause), start.secrets)
        reason = " ".join(said.split())[:200] or type(cause).__name__
        message = (
            f"{where}: {what} did not answer as an MCP server ({reason}); {start.fix}"
            f"{_left_out_note(start.left_out)}"
        )
        return failure(check, FailureKind.MISCONFIGURED, message, **data)
    seconds = time.monotonic() - began
    message = f"{where}: {what} listed {tools} tools in {seconds:.1f} s (limit {limit:g} s)"
    if start.show_env is not None:
        message += f"; env: {start.show_env or 'none'}"
    message += _left_out_note(start.left_out)
    return Finding(check, "ok", message, data=data | {"seconds": round(seconds, 2), "tools": tools})


def _check_index(command: str, args: list[str], environ: Mapping[str, str]) -> None:
    """For an entry that runs the release from a package index (`uvx [--default-index URL]
    svc-mcp[==VERSION]`): `InstallError` when the index cannot give it."""
    package, _, version = args[-1].partition("==") if args else ("", "", "")
    if Path(command).name != "uvx" or package != PACKAGE or "--from" in args:
        return
    given = args[args.index("--default-index") + 1] if "--default-index" in args else None
    check_on_index(index_url(given, environ), version=version or None)


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


async def _http_session(url: str, headers: Mapping[str, str]) -> int:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

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


def _strings(value: object) -> list[str]:
    """The items of a list, or the keys of a table, of an entry a person may have edited."""
    return [str(item) for item in value] if isinstance(value, list | dict) else []
