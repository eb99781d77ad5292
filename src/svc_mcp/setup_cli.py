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
from typing import Annotated, Any

import typer

from svc_client.exits import fail
from svc_client.failures import FailureKind
from svc_client.settings import GATEWAY_TOKEN_VARIABLE
from svc_mcp.install import (
    ENV_KEYS,
    HOSTS,
    Change,
    Client,
    InstallError,
    Runners,
    Scope,
    Source,
    TokenMode,
    apply,
    check_on_index,
    check_server_name,
    config_path,
    current_platform,
    find_checkout,
    http_entry,
    index_url,
    install_env,
    launch_command,
    plain_secrets,
    plan_install,
    plan_uninstall,
    remove_backup,
    server_entry,
    this_installation,
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
    Client,
    typer.Option(
        "--client",
        help="The MCP host: claude (Claude Desktop), claude-code, cursor, vscode, windsurf, "
        "gemini (Gemini CLI), codex.",
    ),
]
ScopeOption = Annotated[
    Scope, typer.Option("--scope", help="Your user configuration, or this project's.")
]
NameOption = Annotated[str, typer.Option("--name", help="The server's name in the host.")]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="Use this file instead of the host's usual one."),
]


MORE = (
    "Which source to pick, every host's form, and what doctor checks: "
    "https://github.com/svc-mcp/svc-mcp#readme (install/README.md in a checkout)."
)


@app.command(epilog=MORE)
def install(
    client: ClientOption,
    source: Annotated[
        Source,
        typer.Option(
            help="What the entry runs. here (default): this installation (its svc-mcp, or "
            "`uv run --project` for a checkout); pypi: the release on the package index (checked "
            "first); github: the main branch; local: the checkout you run this from."
        ),
    ] = "here",
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="URL",
            help="Connect to a running `svc-mcp --http` gateway at URL instead of starting a "
            "server (not for Claude Desktop).",
        ),
    ] = None,
    http_token: Annotated[
        TokenMode,
        typer.Option(
            help=f"With --http: {GATEWAY_TOKEN_VARIABLE} as a reference the host resolves (ref; a "
            "password prompt in VS Code), its value (plain), or no token (none).",
        ),
    ] = "ref",  # noqa: S107 (a mode, not a token)
    scope: ScopeOption = "user",
    name: NameOption = "svc",
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            metavar="KEY=VALUE",
            help=f"Set one of {', '.join(ENV_KEYS)} (default: their values in this "
            "environment); KEY= leaves it out. Repeatable.",
        ),
    ] = None,
    env_refs: Annotated[
        bool | None,
        typer.Option(
            "--env-refs/--no-env-refs",
            help="Write the tokens as references the host expands from its own environment, "
            "not as plain text (default: on for --scope project; not for Claude Desktop).",
            show_default=False,
        ),
    ] = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the file that would be written; write nothing.")
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
    index_url: Annotated[
        str | None,
        typer.Option(
            "--index-url",
            metavar="URL",
            help="The package index --source pypi checks and runs from (default: "
            "UV_DEFAULT_INDEX, UV_INDEX_URL or PIP_INDEX_URL, else PyPI).",
        ),
    ] = None,
) -> None:
    """Add svc-mcp to an MCP host's configuration (merged: nothing else in the file changes)."""
    try:
        path = _path(client, scope, config)
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
            }
            if given := [option for option, value in local.items() if value]:
                raise InstallError(
                    f"{', '.join(given)} shape a local entry; with --http the host connects to "
                    "the gateway, which reads its own environment: drop them"
                )
            entry, inputs = http_entry(client, http, http_token, os.environ)
        else:
            entry = _stdio_entry(
                client, source, scope, env or [], env_refs, uvx, uv, index_url, check=not print_only
            )
        change = plan_install(client, path, name, entry, inputs)
        if print_only:
            sys.stdout.write(change.text)
        else:
            change = apply(change)
    except InstallError as error:
        fail(PROG, error.kind, str(error))
    _report_install(client, scope, name, change, plain_secrets(client, entry), print_only)


def _stdio_entry(
    client: Client,
    source: Source,
    scope: Scope,
    pairs: list[str],
    env_refs: bool | None,
    uvx: str | None,
    uv: str | None,
    index_option: str | None,
    *,
    check: bool,
) -> dict[str, Any]:
    """The local entry; with `check` (not for --print, which writes nothing) its command must
    exist and, for pypi, the index must have the package."""
    found = this_installation(os.environ)
    runners = Runners(
        uvx=uvx or found.uvx,
        uv=uv or found.uv,
        script=found.script,
        checkout=(
            find_checkout([Path(__file__).resolve().parent, Path.cwd()])
            if source == "local"
            else found.checkout
        ),
    )
    index = index_url(index_option, os.environ) if source == "pypi" else None
    command = launch_command(source, runners, index_url=index, check=check)
    if index is not None and check:
        check_on_index(index)
    if env_refs is None:
        env_refs = scope == "project" and HOSTS[client].takes_references
    return server_entry(client, command, install_env(pairs, os.environ), env_refs=env_refs)


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
    if not change.changed:
        _say(f"{change.path} has no server called {name!r}; nothing changed")
        return
    removed = remove_backup(change)
    note = (
        f" (no backup kept: the previous file held its token in plain text; {removed} removed)"
        if removed
        else _backup_note(change)
    )
    _say(f"removed {name!r} from {change.path}{note}")
    _mode_note(change)


@app.command(epilog=MORE)
def doctor(
    toolsets: Annotated[
        str,
        typer.Option(
            metavar="portal,service",
            help="Check the backends of these toolsets (default: both).",
        ),
    ] = "portal,service",
    name: NameOption = "svc",
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines even on a terminal.")] = False,
) -> None:
    """Check settings, backends, tokens and MCP hosts; exit 0 only when everything needed works."""
    from svc_mcp.doctor import diagnose, exit_code, print_findings
    from svc_mcp.table import parse_toolsets

    try:
        selected = parse_toolsets(toolsets)
    except ValueError as error:
        fail(PROG, FailureKind.USAGE, f"--toolsets: {error}")
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
        if client == "gemini":
            _say(
                "Gemini CLI connects MCP servers only in a trusted folder: start `gemini` in your "
                "project folder and trust it when asked (or /permissions)"
            )
    _mode_note(change)
    if not secrets:
        return
    one = len(secrets) == 1
    stored = "would be stored" if printed else "is stored" if one else "are stored"
    them = "it" if one else "them"
    advice = (
        f"{host.label} can take it from its own environment instead: drop --http-token plain"
        if GATEWAY_TOKEN_VARIABLE in secrets
        else f"{host.label} can take {them} from its own environment instead: add --env-refs to "
        "write a reference, not the value"
        if host.takes_references
        else f"{host.label} cannot read variables from its environment, so keep this file private"
    )
    if scope == "project":
        advice += "; a project file is often committed: never commit a token"
    _say(
        f"warning: {' and '.join(secrets)} {stored} in plain text in {change.path}; anyone who "
        f"can read that file can use {them}. {advice}."
    )


def _mode_note(change: Change) -> None:
    if change.old_mode is not None:
        _say(
            f"{change.path} was mode {change.old_mode:04o}; it is now 0600 (readable by you only) "
            "because it holds a token"
        )


def _backup_note(change: Change) -> str:
    return f" (the previous file is kept as {change.backup})" if change.backup else ""


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


def main(args: Sequence[str], prog_name: str = PROG) -> None:
    """Runs the app; a usage error is one line on stderr, like every other failure."""
    # typer 0.29 carries its own copy of click; its exceptions are what the app raises.
    from typer._click import exceptions as click

    try:
        # Without standalone mode, click returns the code of an Exit instead of raising it.
        code = app(args=list(args), prog_name=prog_name, standalone_mode=False)
    except click.NoArgsIsHelpError as shown:
        # click 8.2: the help was shown (no arguments); exit as it used to.
        raise SystemExit(2) from shown
    except click.UsageError as error:
        command = error.ctx.command_path if error.ctx else prog_name
        fail(
            PROG,
            FailureKind.USAGE,
            f"{' '.join(error.format_message().split())} (see {command} --help)",
        )
    if isinstance(code, int) and code:
        raise SystemExit(code)
