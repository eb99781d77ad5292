"""`svc-portal`: the portal's read-only API as commands, generated from the tool table.

The same app is mounted as `svc-mcp portal ...`. Each command prints the REST `data` as JSON;
see `svc_client.terminal` for cursors, errors and exit codes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, cast

import typer

from portal_tools.tools import PORTAL_TOOLS
from svc_client.exits import INTERRUPTED_EXIT, fail, run_command
from svc_client.failures import FailureKind
from svc_client.terminal import run_tool
from svc_client.toolspec import ToolSpec
from svc_serving.help_style import typer_style

PROG = "svc-portal"
# click's UsageError and ClickException, by way of the one of them typer names (typer bundles its
# own copy of click in recent versions, so `import click` would catch the wrong class).
# (Typed as BadParameter, whose attributes both have: `format_message`, and `ctx` or None.)
_USAGE_ERROR, _CLICK_ERROR = (
    cast("type[typer.BadParameter]", base) for base in inspect.getmro(typer.BadParameter)[1:3]
)

_GROUP_HELP = {
    ("catalog",): "The service catalog.",
    ("mcp",): "Surfaces with an MCP channel.",
    ("web",): "Surfaces with a web channel.",
    ("cli",): "Surfaces with a CLI package.",
    ("page",): "The portal's page layout.",
    ("audit",): "The merged audit timeline (auditor only).",
    ("gateway",): "The gateway's access decisions (auditor only).",
    ("identity",): "Who you are, and the identity audit trails (auditor only).",
    ("identity", "credential"): "Credential audit trails (auditor only).",
}


def build_app(specs: Sequence[ToolSpec]) -> typer.Typer:
    """One command per row, at the row's CLI path; groups are created as paths need them."""
    # Not named here: the same app runs as `svc-portal` and as `svc-mcp portal`.
    root = _new_group("Read the portal's API: <group> <command> [--options].")
    groups: dict[tuple[str, ...], typer.Typer] = {(): root}
    for spec in specs:
        group = _group(groups, spec.cli[:-1])
        group.command(spec.cli[-1], help=spec.description, short_help=spec.title)(_command(spec))
    return root


def _new_group(help_text: str | None) -> typer.Typer:
    # pretty_exceptions off: a rich traceback would show local variables, such as a token.
    return typer.Typer(
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        **typer_style(),
    )


def _group(groups: dict[tuple[str, ...], typer.Typer], path: tuple[str, ...]) -> typer.Typer:
    if path not in groups:
        groups[path] = _new_group(_GROUP_HELP.get(path))
        _group(groups, path[:-1]).add_typer(groups[path], name=path[-1])
    return groups[path]


def _command(spec: ToolSpec) -> Callable[..., None]:
    """A typer command whose options are the row's parameters."""

    def command(ctx: typer.Context, json_output: bool, **arguments: str | None) -> None:
        params = {param.name: param for param in spec.params}
        parsed = {
            name: None if text is None else params[name].parse(text)
            for name, text in arguments.items()
        }
        run_tool(ctx.find_root().info_name or PROG, spec, parsed)

    # Accepted as everywhere else in the CLI; the output is JSON either way.
    json_option = typer.Option("--json", metavar="", help="Print JSON (always: results are JSON).")
    parameters = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        inspect.Parameter(
            "json_output",
            inspect.Parameter.KEYWORD_ONLY,
            default=False,
            annotation=Annotated[bool, json_option],
        ),
    ]
    for param in spec.params:
        # Values stay text here: the row's Param checks them when the call runs, so a bad one
        # fails as `invalid_argument`, the same kind as over MCP.
        option = typer.Option(param.option, help=param.help, metavar=param.metavar)
        parameters.append(
            inspect.Parameter(
                param.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[str | None, option],
            )
        )
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    return command


app = build_app(PORTAL_TOOLS)


def main(args: Sequence[str] | None = None, prog_name: str = PROG) -> None:
    run_command(prog_name, lambda: _run(args, prog_name))


def _run(args: Sequence[str] | None, prog_name: str) -> None:
    """The app, its usage errors in svc-mcp's one-line form (click's own form is a box of four
    lines, and Ctrl-C a silent 130)."""
    try:
        code = app(args=args, prog_name=prog_name, standalone_mode=False)
    except _USAGE_ERROR as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # no arguments: the help, as asked
            error.show()
            raise SystemExit(error.exit_code) from None
        where = error.ctx.command_path if error.ctx else prog_name
        fail(prog_name, FailureKind.USAGE, f"{error.format_message()} (see {where} --help)")
    except _CLICK_ERROR as error:
        fail(prog_name, FailureKind.USAGE, error.format_message())
    except typer.Abort:  # end of input at a prompt
        raise KeyboardInterrupt from None
    if code == INTERRUPTED_EXIT:  # typer's answer to Ctrl-C
        raise KeyboardInterrupt
    if isinstance(code, int) and code:
        raise SystemExit(code)
