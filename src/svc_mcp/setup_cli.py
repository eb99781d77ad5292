"""`svc-mcp install`, `svc-mcp uninstall` and `svc-mcp doctor`: setting svc-mcp up in MCP hosts.

A typer app of its own, loaded by `svc_mcp.cli` only when one of these commands runs, so typer's
start-up cost never reaches `svc-mcp tools` or serving. Reports go to stderr; stdout carries only
what `install --print` would write, or doctor's findings.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from portal_tools.exits import fail
from svc_mcp.install import (
    ENV_KEYS,
    HOSTS,
    Change,
    Client,
    InstallError,
    Scope,
    Source,
    apply,
    check_server_name,
    config_path,
    current_platform,
    find_checkout,
    find_uvx,
    install_env,
    launch_command,
    plain_secrets,
    plan_install,
    plan_uninstall,
    server_entry,
)

PROG = "svc-mcp"

app = typer.Typer(
    help="Set svc-mcp up in MCP hosts, and check the set-up.",
    no_args_is_help=True,
    add_completion=False,
    # A rich traceback would show local variables, such as a token.
    pretty_exceptions_enable=False,
)

ClientOption = Annotated[
    Client, typer.Option("--client", help="The MCP host (see install/README.md).")
]
ScopeOption = Annotated[
    Scope, typer.Option("--scope", help="Your user configuration, or this project's.")
]
NameOption = Annotated[str, typer.Option("--name", help="The server's name in the host.")]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="Use this file instead of the host's usual one."),
]


@app.command()
def install(
    client: ClientOption,
    source: Annotated[
        Source,
        typer.Option(help="Run the release from PyPI, the GitHub main branch, or this checkout."),
    ] = "pypi",
    scope: ScopeOption = "user",
    name: NameOption = "svc",
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            metavar="KEY=VALUE",
            help=f"Set one of {', '.join(ENV_KEYS)} (default: their values in this "
            "environment); KEY= leaves it "
            "out. Repeatable.",
        ),
    ] = None,
    env_refs: Annotated[
        bool,
        typer.Option(
            "--env-refs",
            help="Write the tokens as references the host expands from its own environment, "
            "not as plain text (not for Claude Desktop).",
        ),
    ] = False,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the file that would be written; write nothing.")
    ] = False,
    config: ConfigOption = None,
    uvx: Annotated[
        str | None,
        typer.Option("--uvx", help="uvx's absolute path (default: the uvx on PATH)."),
    ] = None,
) -> None:
    """Add svc-mcp to an MCP host's configuration (merged: nothing else in the file changes)."""
    try:
        checkout = (
            find_checkout([Path(__file__).resolve().parent, Path.cwd()])
            if source == "local"
            else None
        )
        command = launch_command(source, uvx or find_uvx(), checkout)
        entry = server_entry(client, command, install_env(env or [], os.environ), env_refs=env_refs)
        change = plan_install(client, _path(client, scope, config), check_server_name(name), entry)
        if print_only:
            sys.stdout.write(change.text)
        else:
            change = apply(change)
    except InstallError as error:
        fail(PROG, error.kind, str(error))
    _report_install(client, scope, name, change, plain_secrets(client, entry), print_only)


@app.command()
def uninstall(
    client: ClientOption,
    scope: ScopeOption = "user",
    name: NameOption = "svc",
    config: ConfigOption = None,
) -> None:
    """Remove svc-mcp's entry from an MCP host's configuration (other servers are kept)."""
    try:
        change = apply(plan_uninstall(client, _path(client, scope, config), name))
    except InstallError as error:
        fail(PROG, error.kind, str(error))
    if change.changed:
        _say(f"removed {name!r} from {change.path}{_backup_note(change)}")
    else:
        _say(f"{change.path} has no server called {name!r}; nothing changed")


@app.command()
def doctor(
    toolsets: Annotated[
        str,
        typer.Option(
            metavar="portal,analytics",
            help="Check the backends of these toolsets (default: both).",
        ),
    ] = "portal,analytics",
    name: NameOption = "svc",
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines even on a terminal.")] = False,
) -> None:
    """Check settings, backends, tokens and MCP hosts; exit 0 only when everything needed works."""
    from svc_mcp.doctor import diagnose, exit_code, print_findings
    from svc_mcp.table import parse_toolsets

    try:
        selected = parse_toolsets(toolsets)
    except ValueError as error:
        fail(PROG, "usage", f"--toolsets: {error}")
    findings = diagnose(selected, name)
    print_findings(findings, as_json=as_json)
    raise typer.Exit(exit_code(findings))


def _path(client: Client, scope: Scope, config: Path | None) -> Path:
    if config is not None:
        return config.absolute()
    return config_path(
        client,
        scope,
        home=Path.home(),
        cwd=Path.cwd(),
        platform=current_platform(),
        environ=os.environ,
    )


def _report_install(
    client: Client, scope: Scope, name: str, change: Change, secrets: list[str], printed: bool
) -> None:
    host = HOSTS[client]
    if not change.changed:
        _say(f"{change.path} already has this {name!r} entry; nothing changed")
    elif printed:
        _say(f"would write {change.path} (--print: nothing was written)")
    else:
        _say(f"installed {name!r} for {host.label} in {change.path}{_backup_note(change)}")
        _say(f"restart {host.label} (or reload its MCP servers) to start it")
    if not secrets:
        return
    one = len(secrets) == 1
    stored = "would be stored" if printed else "is stored" if one else "are stored"
    them = "it" if one else "them"
    advice = (
        f"{host.label} can take {them} from its own environment instead: add --env-refs to write "
        "a reference, not the value"
        if host.takes_references
        else f"{host.label} cannot read variables from its environment, so keep this file private"
    )
    if scope == "project":
        advice += "; a project file is often committed: never commit a token"
    _say(
        f"warning: {' and '.join(secrets)} {stored} in plain text in {change.path}; anyone who "
        f"can read that file can use {them}. {advice}."
    )


def _backup_note(change: Change) -> str:
    return f" (the previous file is kept as {change.backup})" if change.backup else ""


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


def main(args: Sequence[str], prog_name: str = PROG) -> None:
    app(args=list(args), prog_name=prog_name)
