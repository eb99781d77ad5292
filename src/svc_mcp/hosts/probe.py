"""Doctor's hosts check: every entry in every host file that runs svc-mcp or connects to an
svc-mcp gateway, whatever its name, started as its host would start it (its command with its env,
or its URL with its headers), the MCP handshake completed and the tools listed within the host's
own start-up limit; then one cheap read tool per backend called through it, so a wrong URL or
token in the entry fails here, naming the entry and the variable, as it would fail in the host."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from svc_mcp.core.backends import BACKENDS, Toolset
from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE
from svc_mcp.hosts.entries import PROMPT_ID
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.findings import Finding
from svc_mcp.hosts.plan import entries_of
from svc_mcp.hosts.probe_prepare import DEFAULT_NAME, entry_strings, prepare_entry
from svc_mcp.hosts.probe_start import start_entry
from svc_mcp.hosts.runners import PACKAGE, runs_svc_mcp
from svc_mcp.hosts.table import HOSTS, Host, Platform, Scope


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
    unreadable: list[Finding] = []
    seen: set[Path] = set()
    for host in HOSTS.values():
        for scope in host.scopes:
            path = host.config_path(scope, home=home, cwd=cwd, platform=platform, environ=environ)
            try:
                entries = {} if path in seen else entries_of(host, path)
            except InstallError as error:
                entries = {}
                check, data = f"host.{host.name}.{scope}", {"path": str(path)}
                unreadable.append(Finding(check, "warn", f"not read: {error}", data=data))
            seen.add(path)
            found += [
                (host, scope, path, entry_name, entry)
                for entry_name, entry in entries.items()
                if _ours(host, entry_name, entry, name)
            ]
    if not found and unreadable:
        return unreadable
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
            project=cwd,
            home=home,
            backends=backends,
        )
        for item in found
    ]

    async def probe_all() -> list[Finding]:
        # One at a time, as a host starts its own: entries starting side by side would share the
        # machine and report times the host never sees.
        return [p if isinstance(p, Finding) else await start_entry(p) for p in prepared]

    return unreadable + asyncio.run(probe_all())


def _ours(host: Host, entry_name: str, entry: Mapping[str, Any], name: str | None) -> bool:
    """Whether doctor checks the entry: the one called `name` when given; else every entry that
    runs svc-mcp as install writes it, connects to a gateway with its token, or is called svc."""
    if name is not None:
        return entry_name == name
    if entry_name == DEFAULT_NAME:
        return True
    command = entry.get("command")
    if isinstance(command, str):
        return runs_svc_mcp(command, entry_strings(entry.get("args")))
    url = entry.get(host.url_key) if host.url_key else None
    said = json.dumps(entry)
    return isinstance(url, str) and (GATEWAY_TOKEN_VARIABLE in said or PROMPT_ID in said)
