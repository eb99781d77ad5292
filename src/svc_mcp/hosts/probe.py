"""Doctor's hosts check: every entry in every host file that runs svc-mcp or connects to an
svc-mcp gateway, whatever its name, started as its host would start it (its command with its env,
or its URL with its headers), the MCP handshake completed and the tools listed within the host's
own start-up limit; then one cheap read tool per backend called through it, so a wrong URL or
token in the entry fails here, naming the entry and the variable, as it would fail in the host."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Collection, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from svc_client.backends import (
    BACKENDS,
    PORTAL,
    SERVICE,
    Backend,
    Toolset,
    token_variables,
)
from svc_client.connection import redact
from svc_client.failures import FailureKind
from svc_client.settings import GATEWAY_TOKEN_VARIABLE, cleartext_host
from svc_mcp.findings import Finding, failure
from svc_mcp.hosts.cleartext import refusal
from svc_mcp.hosts.entries import PROMPT_ID
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.expansion import entry_env, entry_headers
from svc_mcp.hosts.plan import read_entries
from svc_mcp.hosts.runners import PACKAGE, check_on_index, index_url, runs_svc_mcp
from svc_mcp.hosts.table import HOSTS, Host, Platform, Scope

if TYPE_CHECKING:
    from mcp import ClientSession

DEFAULT_NAME = "svc"
"""The name install gives an entry; doctor also looks at it when it runs something else."""
PROBE_TOOLS: dict[Backend, str] = {SERVICE: "get_system", PORTAL: "portal_whoami"}
"""The cheap read doctor calls through an entry to prove each backend: the data service's one
uses the token (once, as doctor's own check does), the portal's says whose session it is."""
_TOKEN_KINDS = frozenset({"unauthorized", "forbidden", "locked_out"})


def host_findings(
    name: str | None,
    *,
    home: Path,
    cwd: Path,
    platform: Platform,
    environ: Mapping[str, str],
    trust_project: bool = False,
    toolsets: Collection[Toolset] = tuple(Toolset),
) -> list[Finding]:
    """Every entry (user and project files) that runs svc-mcp or connects to its gateway, or only
    the one called `name`, each started as its host would start it (see `prepare_entry`) and
    proven with one read per backend of `toolsets`; a project's entries only with
    `trust_project`."""
    found: list[tuple[Host, Scope, Path, str, dict[str, Any]]] = []
    seen: set[Path] = set()
    for host in HOSTS.values():
        for scope in host.scopes:
            path = host.config_path(scope, home=home, cwd=cwd, platform=platform, environ=environ)
            entries = {} if path in seen else read_entries(host, path)
            seen.add(path)
            found += [
                (host, scope, path, entry_name, entry)
                for entry_name, entry in entries.items()
                if _ours(host, entry_name, entry, name)
            ]
    if not found:
        which = f"a server called {name!r}" if name else f"an entry that runs {PACKAGE}"
        message = (
            f"no MCP host has {which} (looked in {len(seen)} files); "
            "run `svc-mcp install --client <client>`"
        )
        return [Finding("hosts", "warn", message)]

    backends = tuple(backend for backend in BACKENDS if backend.toolset in toolsets)
    prepared = [
        prepare_entry(
            *item,
            environ=environ,
            trusted=item[1] == "user" or trust_project,
            backends=backends,
        )
        for item in found
    ]

    async def probe_all() -> list[Finding]:
        # One at a time, as a host starts its own: entries starting side by side would share the
        # machine and report times the host never sees.
        return [p if isinstance(p, Finding) else await start_entry(p) for p in prepared]

    return asyncio.run(probe_all())


def _ours(host: Host, entry_name: str, entry: Mapping[str, Any], name: str | None) -> bool:
    """Whether doctor checks the entry: the one called `name` when given; else every entry that
    runs svc-mcp as install writes it, connects to a gateway with its token, or is called svc."""
    if name is not None:
        return entry_name == name
    if entry_name == DEFAULT_NAME:
        return True
    command = entry.get("command")
    if isinstance(command, str):
        return runs_svc_mcp(command, _strings(entry.get("args")))
    url = entry.get(host.url_key) if host.url_key else None
    said = json.dumps(entry)
    return isinstance(url, str) and (GATEWAY_TOKEN_VARIABLE in said or PROMPT_ID in said)


@dataclass(frozen=True)
class Proof:
    """What an entry did once started: the tools it listed, and per backend the read through it
    that failed (one line each, with the fix) or what it said."""

    tools: int
    failures: list[tuple[FailureKind, str]] = field(default_factory=list)
    """(kind, line) for each read that failed."""
    notes: list[str] = field(default_factory=list)


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
            return _untrusted(check, where, f"connect to {url}", headers.left_out, data)
        reached = cleartext_host(url, environ) if headers.values else None
        if reached is not None:
            message = f"{where}: not contacted: {refusal('its token', 'the entry', reached)}"
            return failure(check, FailureKind.MISCONFIGURED, message, **data)
        if any(value.strip() == "Bearer" for value in headers.values.values()):
            message = (
                f"{where}: not contacted: its token is {GATEWAY_TOKEN_VARIABLE}, which is not set "
                f"here; export it where {host.label} runs (its own environment), then restart it"
            )
            return failure(check, FailureKind.MISCONFIGURED, message, **data)

        def connect() -> Coroutine[Any, Any, Proof]:
            return _http_session(url, headers.values, backends)

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

    def run() -> Coroutine[Any, Any, Proof]:
        return _stdio_session(command, args, env.values, backends)

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


def _left_out_note(left_out: tuple[str, ...]) -> str:
    if not left_out:
        return ""
    return f" (not passed, not svc-mcp's: {', '.join(dict.fromkeys(left_out))})"


async def start_entry(start: Start) -> Finding:
    """Starts the entry as the host would (its exact command with its env, or its URL with its
    headers), completes the MCP handshake, lists the tools within the host's own start-up limit
    and calls one read per backend through it. Anything that would fail in the host is a failure
    here, with the fix."""
    host = start.host
    check, where, what, data = start.check, start.where, start.what, start.data
    limit = start.limit
    began = time.monotonic()
    try:
        with anyio.fail_after(limit):
            proof = await start.start()
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
            f"{where}: {what} did not answer as an MCP server ({reason}); {start.fix}{start.notes}"
        )
        return failure(check, FailureKind.MISCONFIGURED, message, **data)
    seconds = time.monotonic() - began
    data = data | {"seconds": round(seconds, 2), "tools": proof.tools}
    if proof.failures:
        lines = "; ".join(redact(line, start.secrets) for _, line in proof.failures)
        message = f"{where}: {what} started, but {lines}{start.notes}"
        return failure(check, proof.failures[0][0], message, **data)
    message = f"{where}: {what} listed {proof.tools} tools in {seconds:.1f} s (limit {limit:g} s)"
    if proof.notes:
        message += "; " + "; ".join(redact(note, start.secrets) for note in proof.notes)
    if start.show_env is not None:
        message += f"; env: {start.show_env or 'none'}"
    message += start.notes
    return Finding(check, "ok", message, data=data)


async def _prove(
    session: ClientSession, backends: tuple[Backend, ...], env: Mapping[str, str] | None
) -> Proof:
    """Lists the tools, then calls each backend's read tool the entry has; `env` is what the
    entry's server gets (None: a gateway's, which doctor cannot see)."""
    listed = {tool.name for tool in (await session.list_tools()).tools}
    proof = Proof(len(listed))
    for backend in backends:
        tool = PROBE_TOOLS[backend]
        if tool not in listed:
            continue
        result = await session.call_tool(tool, {})
        error = result.structured_content if result.is_error else None
        if error is None:
            proof.notes.append(f"{tool} answered")
            continue
        kind, said = FailureKind.named(error.get("kind")), str(error.get("message", ""))
        has_token = env is not None and backend.token_source(env) is not None
        if backend is PORTAL and kind in ("unauthorized", "forbidden") and not has_token:
            whose = "the entry sets" if env is not None else "the gateway was given"
            proof.notes.append(f"portal anonymous ({whose} no {backend.token_names})")
            continue
        variable = backend.token_names if kind in _TOKEN_KINDS else backend.base_url_variable
        where = "in the entry's env" if env is not None else "in the gateway's environment"
        proof.failures.append(
            (kind, f"{tool} through it failed ({kind}: {said}); fix {variable} {where}")
        )
    return proof


def _check_index(command: str, args: list[str], environ: Mapping[str, str]) -> None:
    """For an entry that runs the release from a package index (`uvx [--default-index URL]
    svc-mcp[==VERSION]`): `InstallError` when the index cannot give it."""
    package, _, version = args[-1].partition("==") if args else ("", "", "")
    if Path(command).name != "uvx" or package != PACKAGE or "--from" in args:
        return
    given = args[args.index("--default-index") + 1] if "--default-index" in args else None
    check_on_index(index_url(given, environ), version=version or None)


async def _stdio_session(
    command: str, args: list[str], env: dict[str, str], backends: tuple[Backend, ...]
) -> Proof:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    server = StdioServerParameters(command=command, args=args, env=env)
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - opening /dev/null does not block
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await _prove(session, backends, env)


async def _http_session(
    url: str, headers: Mapping[str, str], backends: tuple[Backend, ...]
) -> Proof:
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
            return await _prove(session, backends, None)
    except Exception:
        refused = {401: "the gateway refused the token: HTTP 401", 403: "HTTP 403"}
        status = next((code for code in statuses if code >= 400), None)
        if status is None:
            raise
        raise RuntimeError(refused.get(status, f"HTTP {status}")) from None


def _strings(value: object) -> list[str]:
    """The items of a list, or the keys of a table, of an entry a person may have edited."""
    return [str(item) for item in value] if isinstance(value, list | dict) else []
