"""`svc-portal`: the portal's read-only API as commands, generated from the tool table.

The same commands run as `svc-mcp portal ...`. Each row is a command at its CLI path, built by the
one generator of tool commands (`svc_mcp.cli.commands`, which `svc-mcp <tool>` uses too); each
prints the REST `data` as JSON; see `svc_mcp.cli.terminal` for cursors, errors and exit codes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from portal_tools.tools import PORTAL_TOOLS
from svc_mcp.cli.commands import SPEC, Commands, add_tool_command, arguments
from svc_mcp.cli.suggestions import near_commands, near_options
from svc_mcp.core.exits import OneLineParser, run_command
from svc_mcp.core.toolspec import ToolSpec
from svc_serving.help_style import argparse_formatter

PROG = "svc-portal"
ROOT_HELP = "Read the portal's API: <group> <command> [--options]."

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


def build_parser(specs: Sequence[ToolSpec], prog: str) -> argparse.ArgumentParser:
    """One command per row, at the row's CLI path; groups are created as paths need them."""
    root = _SuggestingParser(prog=prog, description=ROOT_HELP, formatter_class=argparse_formatter)
    groups: dict[tuple[str, ...], tuple[argparse.ArgumentParser, Commands]] = {
        (): (root, _commands(root))
    }
    for spec in specs:
        _, commands = _group(groups, spec.cli[:-1])
        add_tool_command(commands, spec.cli[-1], spec)
    return root


class _SuggestingParser(OneLineParser):
    """A mistyped command or option gets the nearest one (argparse says only that it is
    unknown, or every choice)."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            message = near_options(message, self)
        super().error(near_commands(message, self))


def _commands(parser: argparse.ArgumentParser) -> Commands:
    # A group without its command shows its help (as `svc-portal identity` does).
    parser.set_defaults(**{SPEC: None, "group_parser": parser})
    return parser.add_subparsers(metavar="<command>", title="commands")


def _group(
    groups: dict[tuple[str, ...], tuple[argparse.ArgumentParser, Commands]],
    path: tuple[str, ...],
) -> tuple[argparse.ArgumentParser, Commands]:
    if path not in groups:
        help_text = _GROUP_HELP.get(path)
        _, parent = _group(groups, path[:-1])
        parser = parent.add_parser(
            path[-1], help=help_text, description=help_text, formatter_class=argparse_formatter
        )
        groups[path] = (parser, _commands(parser))
    return groups[path]


def main(args: Sequence[str] | None = None, prog_name: str = PROG) -> None:
    run_command(prog_name, lambda: _main(sys.argv[1:] if args is None else list(args), prog_name))


def _main(args: list[str], prog: str) -> None:
    options = build_parser(PORTAL_TOOLS, prog).parse_args(args)
    spec: ToolSpec | None = getattr(options, SPEC)
    if spec is None:
        options.group_parser.print_help(sys.stderr)
        raise SystemExit(2)
    from svc_mcp.cli.terminal import run_tool

    run_tool(prog, spec, arguments(spec, options))
