"""`svc-mcp install`, `svc-mcp uninstall` and `svc-mcp doctor`: setting svc-mcp up in MCP hosts.

A typer app of its own, loaded by `svc_mcp.cli.main` only when one of these commands runs, so
typer's start-up cost never reaches `svc-mcp tools` or serving. Reports go to stderr; stdout carries
only what `install --print` would write, or doctor's findings.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from svc_mcp.core.exits import fail
from svc_mcp.core.failures import FailureKind
from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE
from svc_mcp.hosts.entries import ENV_KEYS, TokenMode, check_server_name, http_entry, plain_secrets
from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.local_entry import stdio_entry, tag_note
from svc_mcp.hosts.oauth_probe import oauth_gateway
from svc_mcp.hosts.options import (
    FLAG,
    MORE,
    ClientOption,
    ConfigOption,
    NameOption,
    ScopeOption,
    labels,
)
from svc_mcp.hosts.plan import apply, plan_install, plan_uninstall
from svc_mcp.hosts.report import PROG, backup_note, mode_note, report_install, say
from svc_mcp.hosts.runners import Runners, Source
from svc_mcp.hosts.setup_selection import tool_selection, with_selection_headers
from svc_mcp.hosts.targets import chosen_hosts, config_path, project_folder
from svc_serving.help_style import click_usage_message, typer_style

app = typer.Typer(
    help="Set svc-mcp up in MCP hosts, and check the set-up.",
    no_args_is_help=True,
    add_completion=False,
    **typer_style(),
)


@app.command(epilog=MORE)
def install(
    client: ClientOption,
    source: Annotated[
        Source,
        typer.Option(
            help="What the entry runs. here (default): this installation (its svc-mcp, or "
            "`uv run --project` for a checkout); pypi: this version's release on the package "
            "index (checked first); github: this version's release tag; local: the checkout you "
            "run this from."
        ),
    ] = "here",
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="URL",
            help="Connect to a running `svc-mcp --http` gateway at URL instead of starting a "
            f"server (not for {labels(lambda h: h.url_key is None)}).",
        ),
    ] = None,
    http_token: Annotated[
        TokenMode,
        typer.Option(
            help="With --http: SVC_MCP_GATEWAY_TOKEN as a reference the host resolves (ref; a "
            f"password prompt in {labels(lambda h: h.prompt_reference is not None)}), its value "
            "(plain), or no token (none; oauth: the host signs in itself, chosen for ref when "
            "the gateway serves OAuth metadata).",
        ),
    ] = "ref",  # noqa: S107 (a mode, not a token)
    scope: ScopeOption = "user",
    name: NameOption = "svc",
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            metavar="KEY=VALUE",
            help=f"Set one of {', '.join(ENV_KEYS)} or a telemetry setting (OTEL_*; README "
            "Observability) (default: their values in this environment); KEY= leaves it out. "
            "Repeatable.",
        ),
    ] = None,
    env_refs: Annotated[
        bool | None,
        typer.Option(
            "--env-refs/--no-env-refs",
            metavar=FLAG,
            help="Write the tokens as references the host expands from its own environment, "
            "not as plain text (default: on for --scope project; not for "
            f"{labels(lambda h: not h.takes_references)}).",
            show_default=False,
        ),
    ] = None,
    print_only: Annotated[
        bool,
        typer.Option(
            "--print", metavar=FLAG, help="Print the file that would be written; write nothing."
        ),
    ] = False,
    config: ConfigOption = None,
    uvx: Annotated[
        str | None,
        typer.Option("--uvx", help="uvx's absolute path, for pypi and github (default: on PATH)."),
    ] = None,
    uv: Annotated[
        str | None,
        typer.Option("--uv", help="uv's absolute path, for a checkout (default: on PATH)."),
    ] = None,
    unpinned: Annotated[
        bool,
        typer.Option(
            "--unpinned",
            metavar=FLAG,
            help="With --source pypi or github: run whatever is newest at each host start, not "
            "this installation's version (the default pins it).",
        ),
    ] = False,
    index_url: Annotated[
        str | None,
        typer.Option(
            "--index-url",
            metavar="URL",
            help="The package index --source pypi checks and runs from (default: "
            "UV_DEFAULT_INDEX, UV_INDEX_URL or PIP_INDEX_URL, else PyPI).",
        ),
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            metavar="NAME,...",
            help="The entry serves only these tools (with --http: the X-MCP-Tools header).",
        ),
    ] = None,
    exclude_tools: Annotated[
        str | None,
        typer.Option("--exclude-tools", metavar="NAME,...", help="The entry serves all but these."),
    ] = None,
) -> None:
    """Add svc-mcp to an MCP host's configuration (merged: nothing else in the file changes)."""
    try:
        hosts = chosen_hosts(client, config, remote=http is not None)
        selection = tool_selection(tools, exclude_tools)
    except InstallError as error:
        fail(PROG, error.kind, str(error))
    for host in hosts:
        try:
            path = config_path(host, scope, config)
            name = check_server_name(name)
            inputs: list[dict[str, Any]] = []
            if http is not None:
                local = {
                    "--env": bool(env),
                    "--env-refs": env_refs is not None,
                    "--source": source != "here",
                    "--uvx": uvx is not None,
                    "--uv": uv is not None,
                    "--index-url": index_url is not None,
                    "--unpinned": unpinned,
                }
                if given := [option for option, value in local.items() if value]:
                    raise InstallError(
                        f"{', '.join(given)} shape a local entry; with --http the host connects "
                        "to the gateway, which reads its own environment: drop them"
                    )
                if http_token == "ref" and (oauth := oauth_gateway(http)) is not None:  # noqa: S105
                    http_token = "oauth"  # noqa: S105 (a mode)
                    say(f"{http} does OAuth: {host.label} signs in to {oauth.issuer} itself")
                entry, inputs = http_entry(host, http, http_token, os.environ)
                entry = with_selection_headers(host, entry, selection)
            else:
                entry = stdio_entry(
                    host,
                    source,
                    scope,
                    env or [],
                    env_refs,
                    Runners(uvx=uvx, uv=uv),
                    index_url,
                    check=not print_only,
                    unpinned=unpinned,
                    selection=selection,
                )
            change = plan_install(host, path, name, entry, inputs, project_folder(scope))
            if print_only:
                sys.stdout.write(change.text)
            else:
                change = apply(change, project=project_folder(scope))
        except InstallError as error:
            fail(PROG, error.kind, str(error))
        report_install(host, scope, name, change, plain_secrets(entry), print_only)
        if http is None:
            tag_note(source, unpinned)
        if http is not None and http_token == "ref" and host.prompt_reference is None:  # noqa: S105
            unset = "" if os.environ.get(GATEWAY_TOKEN_VARIABLE) else " (it is not set here)"
            say(
                f"{host.label} sends {GATEWAY_TOKEN_VARIABLE} from its own environment: export it "
                f"where {host.label} runs, then start it{unset}"
            )


@app.command()
def uninstall(
    client: ClientOption,
    scope: ScopeOption = "user",
    name: NameOption = "svc",
    config: ConfigOption = None,
) -> None:
    """Remove svc-mcp's entry from an MCP host's configuration (other servers are kept)."""
    try:
        hosts = chosen_hosts(client, config, remote=False)
    except InstallError as error:
        fail(PROG, error.kind, str(error))
    for host in hosts:
        try:
            change = apply(
                plan_uninstall(host, config_path(host, scope, config), name, project_folder(scope)),
                project=project_folder(scope),
            )
        except InstallError as error:
            fail(PROG, error.kind, str(error))
        if not change.changed:
            say(f"{change.path} has no server called {name!r}; nothing changed")
            continue
        say(f"removed {name!r} from {change.path}{backup_note(change)}")
        mode_note(change)


@app.command(epilog=MORE)
def doctor(
    toolsets: Annotated[
        str,
        typer.Option(
            metavar="portal,service",
            help="Check the backends of these toolsets (default: both).",
        ),
    ] = "portal,service",
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="Check only the entry with this name (default: every entry that runs svc-mcp "
            "or connects to its gateway, whatever its name).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", metavar=FLAG, help="JSON lines even on a terminal.")
    ] = False,
    trust_project: Annotated[
        bool,
        typer.Option(
            "--trust-project",
            metavar=FLAG,
            help="Also start the entries in this folder's project files (read them first: "
            "their author chose the command). Without it they are only listed.",
        ),
    ] = False,
) -> None:
    """Check settings, backends, tokens and MCP hosts; exit 0 only when everything needed works."""
    from svc_mcp.hosts.doctor import diagnose
    from svc_mcp.hosts.findings import exit_code, print_findings
    from svc_mcp.tools.table import parse_toolsets

    try:
        selected = parse_toolsets(toolsets)
    except ValueError as error:
        fail(PROG, FailureKind.USAGE, f"--toolsets: {error}")
    findings = diagnose(selected, name, trust_project=trust_project)
    print_findings(findings, as_json=as_json)
    raise typer.Exit(exit_code(findings))


def main(args: Sequence[str], prog_name: str = PROG) -> None:
    """Runs the app; a usage error is one line on stderr, like every other failure."""
    if not args:  # the help, and the exit code of a command line that did nothing
        app(args=["--help"], prog_name=prog_name, standalone_mode=False)
        raise SystemExit(2)
    try:
        # Without standalone mode, click returns the code of an Exit instead of raising it.
        code = app(args=list(args), prog_name=prog_name, standalone_mode=False)
    except Exception as error:
        message = click_usage_message(error)
        if message is None:
            raise
        context = getattr(error, "ctx", None)
        command = getattr(context, "command_path", None) or prog_name
        fail(command, FailureKind.USAGE, f"{message} (see {command} --help)")
    if isinstance(code, int) and code:
        raise SystemExit(code)
