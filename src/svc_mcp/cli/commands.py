"""The one generator of tool commands: a row becomes an argparse command whose options are the
row's parameters, for `svc-mcp <tool>` (svc_mcp.cli.main) and `svc-portal <group> <command>`
(svc_mcp.cli.portal) alike. Running one is `svc_mcp.cli.terminal.run_tool`.

argparse, not typer: listing and calling stay free of typer's start-up cost, and a command is
built from the row's data instead of a function signature forged for typer to read.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.tools.service import INTEL_MAX_BYTES
from svc_serving.help_style import argparse_formatter

MAX_FILE_BYTES = INTEL_MAX_BYTES
SPEC = "tool_spec"
"""Where a parsed command's row is (`options.tool_spec`)."""

Commands = Any
"""argparse's sub-parser action (`ArgumentParser.add_subparsers()`)."""


def add_tool_command(commands: Commands, name: str, spec: ToolSpec) -> argparse.ArgumentParser:
    """The row's command, `name` in `commands`: its title as help, its description, `--json`,
    one option per parameter."""
    command: argparse.ArgumentParser = commands.add_parser(
        name,
        help=spec.title,
        description=spec.description,
        epilog=_EPILOGS.get(spec.name),
        # The description as written: a command in the text stays whole.
        formatter_class=argparse_formatter,
    )
    command.set_defaults(**{SPEC: spec})
    command.add_argument(
        "--json", action="store_true", help="print JSON (always: results are JSON)"
    )
    for param in spec.params:
        # Values stay text here: the row's Param checks them when the call runs, so a bad
        # one fails as `invalid_argument`, the same kind as over MCP.
        command.add_argument(
            param.option,
            dest=param.name,
            type=_json_file if param.json_type == "object" else param.parse,
            required=param.required,
            metavar=param.metavar,
            help=param.help,
        )
    return command


def arguments(spec: ToolSpec, options: argparse.Namespace) -> dict[str, object]:
    """The row's arguments from a parsed command."""
    return {param.name: getattr(options, param.name) for param in spec.params}


_EPILOGS = {
    "submit_intel": "The envelope comes from whoever holds the signing key, e.g. `svc-stub intel "
    "sign --file draft.json` with SERVICE_INTEL_HMAC set there (never in svc-mcp's environment).",
}


def _json_file(source: str) -> object:
    """The JSON object in the file `source`, or on standard input for `-`; at most
    `MAX_FILE_BYTES`, the most the service's intake accepts, is read."""
    import json
    from pathlib import Path

    try:
        if source == "-":
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            with Path(source).open("rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {source}: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise argparse.ArgumentTypeError(
            f"{source} holds more than {MAX_FILE_BYTES // 1024} KiB, the most the service accepts"
        )
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise argparse.ArgumentTypeError(f"{source} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{source} must hold a JSON object")
    return value
